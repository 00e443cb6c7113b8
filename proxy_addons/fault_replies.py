"""The replies of scripted faults: HTTP errors (now or after a delay), withheld and reset attempts, cut replies, and
the kinds rendered per protocol by their own modules (an overload, a quota's 429, a page that is not JSON; a step
altered: cut at the token limit, its arguments cut, a malformed event, an error event)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy_addons import (
    fault_arguments,
    fault_error_event,
    fault_length,
    fault_malformed,
    fault_not_json,
    fault_overloaded,
    gemini,
    wire,
)
from proxy_addons.attempts import Attempt, AttemptLog
from proxy_addons.exchange import JSON_HEADERS, SSE_HEADERS, Answer, OutgoingResponse, json_bytes
from proxy_addons.fault_shapes import AlteredReply, AlterFn, ErrorShape
from proxy_addons.faults import ARGS_TRUNCATED, ERROR_EVENT, LENGTH_CUT, NOT_JSON, OVERLOADED, SSE_MALFORMED, Fault
from proxy_addons.protocol import Codec, RenderedReply
from proxy_addons.wire import ResetResponse, TimedReply, TimedResponse, WireOutcome

# The comment line a withheld stream sends after its headers, as real providers' keep-alives do.
WITHHOLD_PREAMBLE = b": probe wait\n\n"
# Protocols whose provider sends no comment lines: Google's SSE readers take any line that is not `data:` for JSON
# (google-genai fails on it at once, the JS SDK never matches an event again), so a withheld Gemini stream is silent.
SILENT_STREAMS = frozenset({"gemini"})


# The kinds that alter the due step's reply, each rendered per protocol by its own module.
STEP_RENDERERS: dict[str, dict[str, AlterFn]] = {
    LENGTH_CUT: fault_length.RENDER,
    ARGS_TRUNCATED: fault_arguments.RENDER,
    SSE_MALFORMED: fault_malformed.RENDER,
    ERROR_EVENT: fault_error_event.RENDER,
}
# The kinds that answer in place of the step with a reply of their own, rendered per protocol.
ERROR_RENDERERS = {OVERLOADED: fault_overloaded.RENDER, NOT_JSON: fault_not_json.RENDER}


class UnrenderedFault(LookupError):
    """A fault kind the scenario scripts has no rendering for the request's protocol."""


def format_seconds(value: float) -> str:
    """Retry-After value: `0`, `2`, `1.5`."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def alter_reply(kind: str, protocol: str, rendered: RenderedReply) -> AlteredReply:
    """The due step's reply as the fault `kind` alters it in `protocol`."""
    render = STEP_RENDERERS[kind].get(protocol)
    if render is None:
        raise UnrenderedFault(f"fault {kind} has no rendering for the {protocol} protocol")
    return render(rendered)


def error_shape(kind: str, protocol: str) -> ErrorShape:
    """The reply the fault `kind` answers with in `protocol`."""
    render = ERROR_RENDERERS[kind].get(protocol)
    if render is None:
        raise UnrenderedFault(f"fault {kind} has no rendering for the {protocol} protocol")
    return render()


def retry_headers(fault: Fault) -> dict[str, str]:
    """The waits an http_error asks for: Retry-After in seconds, retry-after-ms in milliseconds."""
    headers: dict[str, str] = {}
    if fault.retry_after is not None:
        headers["retry-after"] = format_seconds(fault.retry_after)
    if fault.retry_after_ms is not None:
        headers["retry-after-ms"] = format_seconds(fault.retry_after_ms)
    return headers


def asked_wait(fault: Fault) -> float | None:
    """The shortest wait in seconds the headers ask for, None when they ask for none."""
    waits = [fault.retry_after] if fault.retry_after is not None else []
    if fault.retry_after_ms is not None:
        waits.append(fault.retry_after_ms / 1000)
    return min(waits) if waits else None


class FaultReplies:
    """Makes each fault's reply and records its attempt once the outcome is known; it moves no script state."""

    def __init__(self, log: AttemptLog) -> None:
        self._log = log

    def http_error(self, attempt: Attempt, codec: Codec, fault: Fault, model_attempt: int) -> Answer:
        assert fault.status is not None
        body = codec.error_body(fault.status, fault.message, fault.error_type, str(fault.status))
        extra = retry_headers(fault)
        headers = {**JSON_HEADERS, **extra}
        played: dict[str, Any] = {"headers": extra} if extra else {}
        wait = asked_wait(fault)
        if wait is not None:
            played["retry_after_seconds"] = wait
            if codec.protocol == gemini.PROTOCOL:
                # Google's clients read the wait from the body's RetryInfo, not from headers: the scripted wait is
                # asked for there too (the scripted headers stay, as a gateway in front might add them).
                body = gemini.with_retry_info(body, wait)
                played["retry_delay"] = gemini.retry_delay(wait)
        if fault.delay_seconds <= 0:
            self._log.record(
                attempt,
                kind="model",
                status=fault.status,
                response=body,
                model_attempt=model_attempt,
                fault=fault.kind,
                played=played,
            )
            return OutgoingResponse(fault.status, headers, json_bytes(body))

        def finish(outcome: WireOutcome) -> None:
            self._log.record(
                attempt,
                kind="model",
                status=outcome.status,
                # A client that gave up during the delay got nothing.
                response=body if outcome.status is not None else None,
                model_attempt=model_attempt,
                fault=fault.kind,
                ended=outcome.ended,
                outcome=outcome,
                played=played,
            )

        reply = TimedReply(
            status=fault.status, headers=headers, pieces=(json_bytes(body),), delay_seconds=fault.delay_seconds
        )
        return TimedResponse(reply, finish)

    def shaped(self, attempt: Attempt, fault: Fault, model_attempt: int, shape: ErrorShape) -> OutgoingResponse:
        """A reply of the fault's own in place of the due step (an overload, a quota's 429, a page not JSON)."""
        self._log.record(
            attempt,
            kind="model",
            status=shape.status,
            response=shape.response,
            model_attempt=model_attempt,
            fault=fault.kind,
            played=shape.played,
        )
        return OutgoingResponse(shape.status, dict(shape.headers), shape.body)

    def altered(
        self,
        attempt: Attempt,
        altered: AlteredReply,
        fault: Fault,
        model_attempt: int,
        step_index: int,
        reply_facts: Mapping[str, Any],
    ) -> OutgoingResponse:
        """The due step's reply as the fault altered it, sent whole: it consumes no step, issues none of its calls."""
        rendered = altered.rendered
        facts = dict(reply_facts)
        if altered.answer is not None or altered.cut_arguments or altered.dropped_calls:
            # What the reply now carries: the answer cut, or none where the cut hit a call (a finish tool's argument).
            facts["answer"] = altered.answer
        # The id the reply carried, where its bytes still carry it (an error body may not).
        carried = rendered.response_id.encode() in rendered.body
        self._log.record(
            attempt,
            kind="model",
            status=200,
            response=rendered.response,
            model_attempt=model_attempt,
            sse_events=list(rendered.sse_events) if rendered.sse_events is not None else None,
            response_id=rendered.response_id if carried else None,
            finish_reason=rendered.finish_reason if altered.usable else None,
            usage=rendered.usage.to_witness() if altered.usable and rendered.usage is not None else None,
            step=step_index,
            fault=fault.kind,
            played=altered.played,
            **facts,
        )
        headers = dict(SSE_HEADERS) if rendered.sse_events is not None else {"content-type": rendered.content_type}
        return OutgoingResponse(200, headers, rendered.body)

    def withhold(self, attempt: Attempt, fault: Fault, model_attempt: int) -> TimedResponse:
        stream = attempt.stream

        def finish(outcome: WireOutcome) -> None:
            self._log.record(
                attempt,
                kind="model",
                status=outcome.status,
                response=None,
                model_attempt=model_attempt,
                sse_events=[] if stream else None,
                fault=fault.kind,
                ended=outcome.ended,
                outcome=outcome,
            )

        if stream:
            # A stream that has started and then goes quiet: what idle-timeout logic has to catch.
            reply = TimedReply(
                status=200,
                headers=SSE_HEADERS,
                chunked=True,
                preamble=b"" if attempt.protocol in SILENT_STREAMS else WITHHOLD_PREAMBLE,
                ending=wire.WITHHELD,
                hold_seconds=fault.max_seconds,
            )
        else:
            reply = TimedReply(
                status=200, headers=JSON_HEADERS, send_head=False, ending=wire.WITHHELD, hold_seconds=fault.max_seconds
            )
        return TimedResponse(reply, finish)

    def reset(self, attempt: Attempt, fault: Fault, model_attempt: int) -> ResetResponse:
        self._log.record(
            attempt,
            kind="model",
            status=None,
            response=None,
            model_attempt=model_attempt,
            fault=fault.kind,
            ended=wire.RESET,
        )
        return ResetResponse()

    def cut(
        self,
        attempt: Attempt,
        rendered: RenderedReply,
        fault: Fault,
        model_attempt: int,
        step_index: int,
        reply_facts: Mapping[str, Any],
    ) -> TimedResponse:
        """The due step's reply, closed mid-way: it consumes no step and issues none of its calls."""
        events = rendered.sse_events
        if rendered.frames is not None and events is not None:
            pieces = rendered.frames
            count = len(pieces) // 2 if fault.after_events is None else fault.after_events
            reply = TimedReply(
                status=200,
                headers=SSE_HEADERS,
                pieces=pieces,
                chunked=True,
                send_pieces=count,
                ending=wire.CUT,
                hold_seconds=fault.pause_seconds,
            )
        else:
            half = len(rendered.body) // 2
            reply = TimedReply(
                status=200,
                headers={"content-type": rendered.content_type},
                pieces=(rendered.body[:half], rendered.body[half:]),
                send_pieces=1,
                ending=wire.CUT,
                hold_seconds=fault.pause_seconds,
            )

        def finish(outcome: WireOutcome) -> None:
            self._log.record(
                attempt,
                kind="model",
                status=outcome.status,
                response=rendered.response,
                model_attempt=model_attempt,
                sse_events=list(events[: outcome.pieces_sent]) if events is not None else None,
                response_id=rendered.response_id,
                step=step_index,
                fault=fault.kind,
                ended=outcome.ended,
                outcome=outcome,
                **reply_facts,
            )

        return TimedResponse(reply, finish)
