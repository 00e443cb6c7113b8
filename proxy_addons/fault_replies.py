"""The replies of scripted faults: HTTP errors (now or after a delay), withheld and reset attempts, cut replies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy_addons import wire
from proxy_addons.attempts import Attempt, AttemptLog
from proxy_addons.exchange import JSON_HEADERS, SSE_HEADERS, Answer, OutgoingResponse, json_bytes
from proxy_addons.protocol import Codec, RenderedReply
from proxy_addons.scenario import Fault
from proxy_addons.wire import ResetResponse, TimedReply, TimedResponse, WireOutcome

# The comment line a withheld stream sends after its headers, as real providers' keep-alives do.
WITHHOLD_PREAMBLE = b": probe wait\n\n"
# Protocols whose provider sends no comment lines: Google's SSE readers take any line that is not `data:` for JSON
# (google-genai fails on it at once, the JS SDK never matches an event again), so a withheld Gemini stream is silent.
SILENT_STREAMS = frozenset({"gemini"})


def format_seconds(value: float) -> str:
    """Retry-After value: `0`, `2`, `1.5`."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class FaultReplies:
    """Makes each fault's reply and records its attempt once the outcome is known; it moves no script state."""

    def __init__(self, log: AttemptLog) -> None:
        self._log = log

    def http_error(self, attempt: Attempt, codec: Codec, fault: Fault, model_attempt: int) -> Answer:
        assert fault.status is not None
        body = codec.error_body(fault.status, fault.message, fault.error_type, str(fault.status))
        headers = dict(JSON_HEADERS)
        if fault.retry_after is not None:
            headers["retry-after"] = format_seconds(fault.retry_after)
        if fault.delay_seconds <= 0:
            self._log.record(
                attempt,
                kind="model",
                status=fault.status,
                response=body,
                model_attempt=model_attempt,
                fault=fault.kind,
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
            )

        reply = TimedReply(
            status=fault.status, headers=headers, pieces=(json_bytes(body),), delay_seconds=fault.delay_seconds
        )
        return TimedResponse(reply, finish)

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
