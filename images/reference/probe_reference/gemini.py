"""Gemini `generateContent` through Google's google-genai SDK: one policy call turned into a uniform reply, streamed
or not."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

import httpx
from google.genai import Client, errors, types

from probe_reference.attempts import ObservingClient
from probe_reference.compaction import SUMMARY_PREFIX, SUMMARY_REQUEST
from probe_reference.replies import (
    ASK_AGAIN,
    INVALID_PREFIX,
    ErrorReply,
    MalformedReply,
    ModelReply,
    ReplyFailed,
    RequestedToolCall,
    count,
    optional_text,
)
from probe_reference.rollout import TokenStats
from probe_reference.tools import BASH_DESCRIPTION, BASH_PARAMETERS, TOOL_NAME, parse_arguments

BASH_TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(name=TOOL_NAME, description=BASH_DESCRIPTION, parameters_json_schema=BASH_PARAMETERS)
    ]
)
# google-genai's own retries wait a fixed backoff whatever the error asks for, so the dialog retries itself, as the
# openai and anthropic SDKs do by default: 2 retries on Google's retryable statuses (408, 429, 5xx) and on failures
# before any status, waiting what the error asks for (RetryInfo, else retry-after-ms / Retry-After, up to 60 s) or
# else a backoff of about half a second, doubling.
RETRIES = 2
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
BACKOFF_S, BACKOFF_MAX_S, ASKED_MAX_S = 0.5, 8.0, 60.0
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
# Where the SDK sends without a base URL; the model's description (its window, `inputTokenLimit`) is under v1beta.
GOOGLE_API = "https://generativelanguage.googleapis.com"

# A body (or a stream event) that is not JSON reaches the caller as UnknownApiResponseError or the json module's own.
GEMINI_FAILURES = (
    errors.APIError,
    errors.UnknownApiResponseError,
    json.JSONDecodeError,
    httpx.HTTPError,
    MalformedReply,
    ErrorReply,
)


class ObservingGeminiHttpClient(ObservingClient):
    """The httpx client google-genai sends through (it takes one in `HttpOptions.httpx_client`), every attempt
    recorded."""


def gemini_client(log: Any, *, base_url: str | None, api_key: str, timeout_s: float | None) -> Client:
    """google-genai over an observing httpx client; `timeout_s` bounds each HTTP request (None: the SDK's)."""
    options = types.HttpOptions(
        base_url=base_url,
        httpx_client=ObservingGeminiHttpClient(log),
        timeout=None if timeout_s is None else int(timeout_s * 1000),
    )
    return Client(api_key=api_key, http_options=options)


def base_url(client: Client) -> str:
    """The root the client sends to (the SDK's default when none was given)."""
    options = getattr(getattr(client, "_api_client", None), "_http_options", None)
    url = getattr(options, "base_url", None)
    return url if isinstance(url, str) and url else GOOGLE_API


def gemini_failure(exc: BaseException) -> ReplyFailed:
    """Name how the turn failed, with the payload retained for a 2xx attempt that yielded no reply."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, ErrorReply):
        return ReplyFailed(reason, exc.category, exc.payload, unusable=True)
    if isinstance(exc, errors.UnknownApiResponseError | MalformedReply | json.JSONDecodeError):
        return ReplyFailed(INVALID_PREFIX + reason, "invalid_response", str(exc), unusable=True)
    if isinstance(exc, errors.APIError) and _from_stream(exc):
        # An error event inside a 200 stream: google-genai raises it as an APIError of the event's code.
        return ReplyFailed(exc.message or reason, "stream_error", exc.details, unusable=True)
    if isinstance(exc, errors.APIError):
        return ReplyFailed(reason, f"http_{exc.code}", exc.details)
    # Transport errors reach here only from a body being streamed (before the status line the SDK retries them);
    # an HTTP error's attempts are already recorded by the observing client.
    broken = isinstance(exc, httpx.TransportError)
    return ReplyFailed(reason, "stream_cut", f"{type(exc).__name__}: {exc}", broken_stream=broken)


class GeminiDialog:
    """Stateless use of `models/{model}:generateContent`: the system instruction apart, the whole history each time."""

    protocol: Literal["gemini"] = "gemini"

    def __init__(
        self,
        client: Client,
        *,
        model: str,
        system_prompt: str,
        task: str,
        log: Any = None,
        max_retries: int | None = None,
    ) -> None:
        self._client = client
        # The retries the dialog makes itself (google-genai's own are off); 0 where the agent retries (impatient).
        self._max_retries = RETRIES if max_retries is None else max_retries
        self._log = log
        self._model = model
        # A summary is asked for without tools: a side request without tools is what providers see as compaction.
        self._summary_config = types.GenerateContentConfig(
            system_instruction=system_prompt,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        self._config = types.GenerateContentConfig(
            system_instruction=system_prompt,
            tools=[BASH_TOOL],
            # The SDK would otherwise run Python callables itself; the agent runs its own tool.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        self.contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=task)])]
        # The function responses answering the latest model turn all go in one user content (the last one).
        self._results: list[types.Part] | None = None

    def request(self, *, stream: bool) -> ModelReply:
        return self._retrying(lambda: self._request(stream))

    def _retrying(self, ask: Callable[[], ModelReply]) -> ModelReply:
        retries = 0
        while True:
            try:
                return ask()
            except ReplyFailed as failed:
                wait = self._retry_wait(failed.__cause__, retries)
                if wait is None:
                    raise
                retries += 1
                if self._log is not None:
                    self._log.note_retry_wait(wait)
                time.sleep(wait)

    def _retry_wait(self, exc: BaseException | None, retries: int) -> float | None:
        """The wait before retrying a failed HTTP attempt, None when it is not retried."""
        if retries >= self._max_retries or exc is None:
            return None
        if isinstance(exc, errors.APIError):
            if _from_stream(exc) or exc.code not in RETRY_STATUSES:
                return None
        elif not (isinstance(exc, httpx.TransportError) and self._no_status()):
            return None
        asked = asked_wait(exc)
        if asked is not None and 0 < asked <= ASKED_MAX_S:
            return asked
        return float(min(BACKOFF_S * 2**retries, BACKOFF_MAX_S) * (1 - 0.25 * random.random()))

    def _no_status(self) -> bool:
        """Whether the attempt that failed last got no status line (a refused or reset connection)."""
        attempts = getattr(self._log, "attempts", None) or []
        return bool(attempts) and attempts[-1].status_code is None

    def _request(self, stream: bool) -> ModelReply:
        try:
            if stream:
                chunks = self._client.models.generate_content_stream(
                    model=self._model, contents=list(self.contents), config=self._config
                )
                return assemble_stream(chunks)
            response = self._client.models.generate_content(
                model=self._model, contents=list(self.contents), config=self._config
            )
            return assemble_stream([response])
        except GEMINI_FAILURES as exc:
            raise gemini_failure(exc) from exc

    def model_lookup(self, model: str, api_key: str | None) -> tuple[str, dict[str, str]]:
        headers = {"x-goog-api-key": api_key} if api_key else {}
        return f"{base_url(self._client).rstrip('/')}/v1beta/models/{model}", headers

    def compactable(self) -> bool:
        return self._last_model() > 1

    def summarize(self) -> ModelReply:
        contents = [*self.contents, types.Content(role="user", parts=[types.Part(text=SUMMARY_REQUEST)])]

        def ask() -> ModelReply:
            try:
                response = self._client.models.generate_content(
                    model=self._model, contents=contents, config=self._summary_config
                )
                return assemble_stream([response])
            except GEMINI_FAILURES as exc:
                raise gemini_failure(exc) from exc

        return self._retrying(ask)

    def replace_older(self, summary: str) -> None:
        # The task first, then the summary in place of every turn before the last model turn and its results.
        last = self._last_model()
        self.contents[1:last] = [types.Content(role="user", parts=[types.Part(text=SUMMARY_PREFIX + summary)])]

    def _last_model(self) -> int:
        return max((n for n, c in enumerate(self.contents) if c.role == "model"), default=-1)

    def add_own_turn(self, content: str) -> None:
        self.contents.append(types.Content(role="model", parts=[types.Part(text=content)]))
        self._results = None

    def add_reply(self, reply: ModelReply) -> None:
        parts: list[types.Part] = []
        if reply.content:
            parts.append(types.Part(text=reply.content))
        for call in reply.tool_calls:
            arguments = parse_arguments(call.raw_arguments)
            # The API takes an object only; arguments that were not one are sent back empty.
            args = arguments if isinstance(arguments, dict) else {}
            parts.append(
                types.Part(function_call=types.FunctionCall(id=call.tool_call_id, name=call.tool_name, args=args))
            )
        if parts:
            # A reply with nothing in it (a call that did not parse, dropped whole) is no turn to send back: the API
            # refuses a content without parts.
            self.contents.append(types.Content(role="model", parts=parts))
        self._results = None

    def add_tool_result(self, call: RequestedToolCall, output: str) -> None:
        # `output` is the API's key for a function's output: the model reads exactly this text.
        response = types.FunctionResponse(id=call.tool_call_id, name=call.tool_name, response={"output": output})
        if self._results is None:
            self._results = []
            self.contents.append(types.Content(role="user", parts=[]))
        self._results.append(types.Part(function_response=response))
        # A Content keeps a copy of the list it was made with (pydantic): it is made again with every result.
        self.contents[-1] = types.Content(role="user", parts=list(self._results))

    def close(self) -> None:
        self._client.close()


def _from_stream(exc: errors.APIError) -> bool:
    """Whether the error came inside a 200 body (an error event) rather than as the HTTP status."""
    return not isinstance(exc.response, httpx.Response)


def asked_wait(exc: BaseException) -> float | None:
    """The wait an error asks for: Google's RetryInfo detail first (a Duration, `3s`), else retry-after-ms or
    Retry-After (seconds) as a gateway may send; None when it asks for none."""
    details = exc.details if isinstance(exc, errors.APIError) else None
    error = details.get("error") if isinstance(details, dict) else None
    for detail in (error.get("details") if isinstance(error, dict) else None) or []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) and detail.get("@type") == RETRY_INFO else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                break
    response = getattr(exc, "response", None)
    headers = response.headers if isinstance(response, httpx.Response) else {}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return float(headers[name]) / scale
        except (KeyError, ValueError):
            continue
    return None


def assemble_stream(chunks: Iterable[types.GenerateContentResponse]) -> ModelReply:
    """Fold the responses of a stream (one for a JSON reply): every part in order, the response id, the last finish
    reason and the last usage the stream carried (the earlier ones count the prompt only)."""
    seen = False
    response_id: str | None = None
    finish: str | None = None
    usage: types.GenerateContentResponseUsageMetadata | None = None
    texts: list[str] = []
    calls: list[RequestedToolCall] = []
    for chunk in chunks:
        seen = True
        response_id = optional_text(getattr(chunk, "response_id", None)) or response_id
        usage = getattr(chunk, "usage_metadata", None) or usage
        candidates = getattr(chunk, "candidates", None) or []
        if not candidates:
            continue
        candidate = candidates[0]
        reason = getattr(candidate, "finish_reason", None)
        if reason is not None:
            finish = optional_text(getattr(reason, "value", reason))
        content = getattr(candidate, "content", None)
        for part in getattr(content, "parts", None) or []:
            call = getattr(part, "function_call", None)
            if call is not None:
                raw = json.dumps(getattr(call, "args", None) or {}, ensure_ascii=False)
                calls.append(RequestedToolCall(getattr(call, "id", None) or "", getattr(call, "name", None) or "", raw))
            elif isinstance(getattr(part, "text", None), str) and not getattr(part, "thought", False):
                texts.append(part.text)
    if not seen:
        raise MalformedReply("the reply carried no response")
    if finish is None and not texts and not calls:
        # A 200 with no candidate at all (an error object in its place): nothing to take as a turn.
        raise MalformedReply("the reply has no candidates")
    text = "".join(texts)
    return ModelReply(
        response_id=response_id,
        finish_reason=finish,
        # No text is no answer where the reply held calls, or a call that did not parse (nothing to answer with).
        content=text if text or not (calls or finish in ASK_AGAIN) else None,
        tool_calls=tuple(calls),
        tokens=token_stats(usage),
    )


def token_stats(usage: types.GenerateContentResponseUsageMetadata | None) -> TokenStats:
    """Google's usage in the rollout's convention: the thoughts are part of the completion (Google counts them apart
    from the candidates), and a count the usage leaves out is 0 (proto3's default); no usage at all is unknown."""
    if usage is None:
        return {"prompt": None, "completion": None, "reasoning": None, "total": None, "cached": None}
    candidates = count(usage.candidates_token_count) or 0
    thoughts = count(usage.thoughts_token_count) or 0
    return {
        "prompt": count(usage.prompt_token_count) or 0,
        "completion": candidates + thoughts,
        "reasoning": thoughts,
        "total": count(usage.total_token_count) or 0,
        "cached": count(usage.cached_content_token_count) or 0,
    }
