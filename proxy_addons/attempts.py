"""The witness's record of one attempt: the facts gathered while answering it, its `attempt` and `violation` events."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy_addons import wire
from proxy_addons.exchange import JSON_HEADERS, IncomingRequest, OutgoingResponse, json_bytes
from proxy_addons.protocol import Codec
from proxy_addons.wire import WireOutcome
from proxy_addons.witness import WitnessRecorder, sha256_hex, witness_headers

# Refusals are the interpreter's to log: the line keeps the logger name it had before the split.
logger = logging.getLogger("proxy_addons.interpreter")

PROTOCOL_ERROR_TYPE = "probe_protocol_error"

# HTTP status per violation code. 409 marks "valid request, wrong moment in the script"; 400 and 404
# are the statuses a real provider would use, so harnesses treat them as non-retryable.
VIOLATION_STATUS: dict[str, int] = {
    "unknown_route": 404,
    "bad_request": 400,
    "no_shell_tool": 400,
    "no_finish_tool": 400,
    "after_final": 409,
    "tool_result_missing": 409,
    "tool_not_executed": 409,
    "script_exhausted": 409,
    "internal_error": 500,
    "body_over_cap": 413,
    "head_over_cap": 431,
    "bodies_in_flight": 503,  # not sent: the connection is closed at the request's head
}


@dataclass
class Attempt:
    """Per-request facts accumulated while answering, recorded in the attempt event."""

    attempt_id: str
    started_at: str
    request: IncomingRequest
    parsed: Any = None
    protocol: str | None = None
    stream: bool = False


class AttemptLog:
    """Writes attempts and refusals to the witness; it holds no script state, so any reply may use it."""

    def __init__(self, recorder: WitnessRecorder) -> None:
        self.recorder = recorder

    def reject(
        self,
        attempt: Attempt,
        codec: Codec | None,
        code: str,
        detail: str,
        extra: Mapping[str, Any] | None = None,
    ) -> OutgoingResponse:
        """Refuse the request with `code`, in the dialect of `codec` when the route has one."""
        status = VIOLATION_STATUS[code]
        if codec is not None:
            body = codec.error_body(status, detail, PROTOCOL_ERROR_TYPE, code)
        else:
            body = {"error": {"message": detail, "type": PROTOCOL_ERROR_TYPE, "code": code}}
        logger.warning("%s rejected (%s): %s", attempt.attempt_id, code, detail)
        self.recorder.write(
            "violation", {"attempt_id": attempt.attempt_id, "code": code, "detail": detail, **(extra or {})}
        )
        self.record(attempt, kind="rejected", status=status, response=body)
        return OutgoingResponse(status, dict(JSON_HEADERS), json_bytes(body))

    def record(
        self,
        attempt: Attempt,
        *,
        kind: str,
        status: int | None,
        response: Mapping[str, Any] | None,
        model_attempt: int | None = None,
        sse_events: list[str] | None = None,
        response_id: str | None = None,
        finish_reason: str | None = None,
        usage: dict[str, int | None] | None = None,
        step: int | None = None,
        fault: str | None = None,
        ended: str = wire.COMPLETE,
        outcome: WireOutcome | None = None,
        reply_kind: str | None = None,
        answer: str | None = None,
        tool_call_ids: list[str] | None = None,
        played: Mapping[str, Any] | None = None,
    ) -> None:
        request = attempt.request
        wire_body = request.body if request.raw_body is None else request.raw_body
        completed_at = outcome.completed_at if outcome is not None else self.recorder.now()
        fields: dict[str, Any] = {
            "attempt_id": attempt.attempt_id,
            "kind": kind,
            "model_attempt": model_attempt,
            "started_at": attempt.started_at,
            "completed_at": completed_at,
            "method": request.method,
            "path": request.path,
            "protocol": attempt.protocol,
            "stream": attempt.stream,
            "headers": witness_headers(request.headers),
            "request": attempt.parsed,
            "request_sha256": sha256_hex(wire_body) if wire_body else None,
            "status": status,
            "response": dict(response) if response is not None else None,
            "sse_events": sse_events,
            "ended": ended,
            "response_id": response_id,
            "finish_reason": finish_reason,
            "usage": usage,
            "step": step,
            "fault": fault,
            "reply_kind": reply_kind,
            "answer": answer,
            "tool_call_ids": tool_call_ids or [],
        }
        if outcome is not None and outcome.client_disconnected_at is not None:
            fields["client_disconnected_at"] = outcome.client_disconnected_at
        if played:
            fields["played"] = dict(played)
        # The request body is the harness's: past the witness budget, only its size and sha256 are kept.
        self.recorder.write("attempt", fields, at=completed_at, bodies={"request": wire_body})
        # No log line per attempt: under mitmdump every record is also dispatched as an `add_log` event through
        # all of mitmproxy's addons (~700 Python calls, a tenth of a request's CPU in the proxy), and the witness
        # already says it (the proxy image also turns off mitmdump's own line per flow, flow_detail=0).
