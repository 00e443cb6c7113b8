"""Observes every HTTP attempt the provider SDK (openai or anthropic) makes, including its hidden retries."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from probe_reference.clock import utc_now
from probe_reference.progress import say
from probe_reference.rollout import TokenStats, unknown_tokens


@dataclass
class Attempt:
    """One HTTP request/response exchange with the provider, as this agent saw it."""

    model_call_id: str
    step_no: int | None
    started_at: str
    completed_at: str | None = None
    status_code: int | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    error_category: str | None = None
    error: object = None
    token_stats: TokenStats = field(default_factory=unknown_tokens)
    # The wait before the retry that followed this failed attempt, as planned (the SDK's, or the agent's own), in ms.
    retry_delay_ms: float | None = None
    # True once the agent attached the parsed reply; a 2xx attempt that never gets resolved did not
    # deliver a usable reply (stream error event, unparseable body, interruption) and is marked failed.
    resolved: bool = False

    @property
    def succeeded_http(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class AttemptLog:
    """The ordered record of attempts; the HTTP client writes to it, the agent completes 2xx entries.

    The client runs in a worker thread (interrupts.in_worker). When the agent is interrupted it closes the log,
    and whatever the abandoned worker does after that is not recorded: the rollout is written from a log that
    no longer changes.
    """

    def __init__(self) -> None:
        self.attempts: list[Attempt] = []
        # The policy turn that attempts made from now on belong to (set by the agent at each step).
        self.step_no: int | None = None
        self.open: Attempt | None = None
        self._lock = threading.RLock()  # finish() is called from begin() with it held
        self._closed = False

    def begin(self) -> Attempt:
        with self._lock:
            attempt = Attempt(model_call_id=f"mc-{len(self.attempts) + 1}", step_no=self.step_no, started_at=utc_now())
            if self._closed:
                return attempt  # not recorded: the run has ended
            if self.open is not None:
                # A new request while one is open means the client followed a redirect: that hop is done.
                self.finish(self.open)
            self.attempts.append(attempt)
            self.open = attempt
            return attempt

    def saw_status(self, status_code: int) -> None:
        with self._lock:
            if self.open is not None and not self._closed:
                self.open.status_code = status_code

    def close(self, error_category: str, error: object) -> None:
        """End the record: every attempt still under way (the open request, a reply body being streamed) failed with
        `error_category`; later changes are dropped."""
        with self._lock:
            for attempt in self.attempts:
                if attempt.completed_at is None:
                    self._finish(attempt, error_category, error)
            self._closed = True

    def finish(self, attempt: Attempt, *, error_category: str | None = None, error: object = None) -> None:
        with self._lock:
            if attempt.completed_at is None and not self._closed:
                self._finish(attempt, error_category, error)

    def _finish(self, attempt: Attempt, error_category: str | None, error: object) -> None:
        attempt.completed_at = utc_now()
        if error_category is not None:
            attempt.error_category = error_category
            attempt.error = error
        if self.open is attempt:
            self.open = None
        status = "no response" if attempt.status_code is None else f"HTTP {attempt.status_code}"
        suffix = f" ({attempt.error_category})" if attempt.error_category else ""
        say(f"model call {attempt.model_call_id} (step {attempt.step_no}): {status}{suffix}")

    def note_retry_wait(self, seconds: float) -> None:
        """The client is about to wait `seconds` before it retries: kept on the attempt that failed last."""
        with self._lock:
            if self._closed:
                return
            failed = next((a for a in reversed(self.attempts) if a.completed_at is not None), None)
            if failed is not None:
                failed.retry_delay_ms = round(seconds * 1000, 3)
        say(f"waiting {seconds:g} s before the retry")

    def resolve(self, step_no: int, *, response_id: str | None, finish_reason: str | None, tokens: TokenStats) -> None:
        """Attach the SDK's parsed reply to the attempt that delivered it: the step's last unresolved 2xx."""
        for attempt in reversed(self.attempts):
            if attempt.step_no == step_no and attempt.succeeded_http and not attempt.resolved:
                attempt.response_id = response_id
                attempt.finish_reason = finish_reason
                attempt.token_stats = tokens
                attempt.resolved = True
                return
        say(f"warning: step {step_no} got a reply but no 2xx attempt was observed for it")

    def settle_unresolved(self, error_category: str, error: object) -> None:
        """Mark 2xx attempts that never yielded a usable reply as failed, with the reason the turn failed."""
        for attempt in self.attempts:
            if attempt.succeeded_http and not attempt.resolved and attempt.error_category is None:
                attempt.error_category = error_category
                attempt.error = error
                if attempt.completed_at is None:
                    attempt.completed_at = utc_now()


def failure_category(exc: BaseException, *, status_seen: bool) -> str:
    """Name a transport-level failure the way the rollout format expects."""
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if not isinstance(exc, Exception):
        return "interrupted"  # KeyboardInterrupt or the SIGTERM exception
    # After the status line, a broken body is a cut reply; before it, the connection itself failed.
    return "stream_cut" if status_seen else "connection"


def error_body(response: httpx.Response) -> object:
    """The error payload as received: parsed JSON when it is JSON, else the text, None when empty."""
    if not response.content:
        return None
    try:
        return json.loads(response.content)
    except ValueError:
        return response.text


class _ObservedBody(httpx.SyncByteStream):
    """Wraps a streamed response body to learn when (and whether cleanly) it ended."""

    def __init__(self, inner: httpx.SyncByteStream, on_end: Callable[[BaseException | None], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._inner
        except Exception as exc:
            self._on_end(exc)
            raise
        self._on_end(None)

    def close(self) -> None:
        # The SDK closes the body right after `[DONE]` without draining it: that is a normal end.
        try:
            self._inner.close()
        finally:
            self._on_end(None)


class ObservingClient(httpx.Client):
    """An SDK's httpx client plus a record of each attempt; retries stay the SDK's own.

    Both SDKs build on httpx and accept an `http_client`: the concrete classes (chat.py, messages.py) put this
    behaviour in front of each SDK's default client, so its timeouts, limits and redirects stay. No SDK is
    imported here, so an episode loads only the SDK of its protocol (the two cost ~1 s of CPU together).
    """

    def __init__(self, log: AttemptLog, **kwargs: Any) -> None:
        # Event hooks fire once per HTTP hop, before the body is read: start time and status come from them.
        hooks: dict[str, list[Callable[..., Any]]] = {
            "request": [self._on_request],
            "response": [self._on_response],
        }
        super().__init__(event_hooks=hooks, **kwargs)
        self._log = log

    def _on_request(self, request: httpx.Request) -> None:
        attempt = self._log.begin()
        say(f"model call {attempt.model_call_id} (step {attempt.step_no}): {request.method} {request.url}")

    def _on_response(self, response: httpx.Response) -> None:
        self._log.saw_status(response.status_code)

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        # Failures (timeouts, resets) never reach the event hooks, and the SDK retries them silently:
        # catching them here is the only place this agent can see them.
        try:
            response = super().send(request, **kwargs)
        except BaseException as exc:
            self._fail_open(exc)
            raise
        attempt = self._log.open
        if attempt is None:  # pragma: no cover - the request hook always opens one
            return response
        if not attempt.succeeded_http:
            try:
                # The SDK closes streamed error bodies unread before retrying; read them to keep the payload.
                response.read()
            except BaseException as exc:
                self._fail_open(exc)
                raise
            category = f"http_{response.status_code}"
            self._log.finish(attempt, error_category=category, error=error_body(response))
        elif kwargs.get("stream", False) and isinstance(response.stream, httpx.SyncByteStream):
            response.stream = _ObservedBody(response.stream, lambda exc: self._end_body(attempt, exc))
            # From here the body wrapper finishes the attempt; the client is done with this hop.
            self._log.open = None
        else:
            self._log.finish(attempt)  # the body was read inside send()
        return response

    def _fail_open(self, exc: BaseException) -> None:
        attempt = self._log.open
        if attempt is not None:
            category = failure_category(exc, status_seen=attempt.status_code is not None)
            self._log.finish(attempt, error_category=category, error=f"{type(exc).__name__}: {exc}")

    def _end_body(self, attempt: Attempt, exc: BaseException | None) -> None:
        if exc is None:
            self._log.finish(attempt)
        else:
            category = failure_category(exc, status_seen=True)
            self._log.finish(attempt, error_category=category, error=f"{type(exc).__name__}: {exc}")
