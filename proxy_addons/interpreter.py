"""Scenario interpreter: answers each request from the script (reply, fault, rejection) and witnesses it."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxy_addons.chat import ChatCodec
from proxy_addons.protocol import (
    Codec,
    IssuedToolCall,
    ModelRequest,
    RequestShapeError,
    ScriptedReply,
    usage_for_attempt,
)
from proxy_addons.routes import RouteKind, match_route
from proxy_addons.scenario import Fault, FinalAnswerStep, Scenario, Step, ToolCallSpec
from proxy_addons.shell_tool import (
    ShellTool,
    build_arguments,
    expected_output,
    find_shell_tool,
    marker_path,
    scripted_command,
)
from proxy_addons.witness import WitnessRecorder, WitnessWriteError, sha256_hex, witness_headers

logger = logging.getLogger(__name__)

JSON_HEADERS = {"content-type": "application/json"}
PROTOCOL_ERROR_TYPE = "probe_protocol_error"

# HTTP status per violation code. 409 marks "valid request, wrong moment in the script"; 400 and 404
# are the statuses a real provider would use, so harnesses treat them as non-retryable.
VIOLATION_STATUS: dict[str, int] = {
    "unknown_route": 404,
    "bad_request": 400,
    "no_shell_tool": 400,
    "after_final": 409,
    "tool_result_missing": 409,
    "tool_not_executed": 409,
    "script_exhausted": 409,
    "internal_error": 500,
}

CODECS: dict[str, Codec] = {codec.protocol: codec for codec in (ChatCodec(),)}


@dataclass(frozen=True)
class IncomingRequest:
    """A provider request as the addon received it, free of mitmproxy types."""

    method: str
    path: str
    headers: tuple[tuple[bytes, bytes], ...]
    # Body with any content-encoding removed (what we parse).
    body: bytes
    # Body as on the wire, for the witness hash; None means identical to `body`.
    raw_body: bytes | None = None


@dataclass(frozen=True)
class OutgoingResponse:
    """The reply to hand to the client."""

    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass
class _CallState:
    """What the provider has observed about one issued tool call."""

    call: IssuedToolCall
    attempt_id: str
    last_output: str | None = None
    # (present, matches) of the last marker check, None before the first one.
    marker: tuple[bool, bool] | None = None

    @property
    def verified(self) -> bool:
        return self.marker == (True, True)


@dataclass
class _Attempt:
    """Per-request facts accumulated while answering, recorded in the attempt event."""

    attempt_id: str
    started_at: str
    request: IncomingRequest
    parsed: Any = None
    protocol: str | None = None
    stream: bool = False


class _NotJson(ValueError):
    pass


def _no_constants(name: str) -> Any:
    # NaN/Infinity are not JSON; accepting them would also make the witness line unserialisable.
    raise _NotJson(f"not JSON: {name}")


def parse_json_body(body: bytes) -> Any:
    """The body parsed as strict JSON; raises ValueError when it is empty or not JSON."""
    if not body.strip():
        raise _NotJson("empty body")
    return json.loads(body, parse_constant=_no_constants)


def check_marker(path: str, token: str) -> tuple[bool, bool]:
    """(present, content equals token) for a marker file."""
    marker = Path(path)
    try:
        content = marker.read_bytes()
    except FileNotFoundError:
        return (False, False)
    except OSError:
        # Present (we could stat it) but unreadable: it cannot prove the token.
        return (marker.exists(), False)
    return (True, content == token.encode("utf-8"))


def format_seconds(value: float) -> str:
    """Retry-After value: `0`, `2`, `1.5`."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Interpreter:
    """Plays one scenario: owns the script position, issued calls and attempt counters."""

    def __init__(
        self,
        scenario: Scenario,
        recorder: WitnessRecorder,
        markers_dir: str,
        seconds: Callable[[], float] = time.time,
    ) -> None:
        self.scenario = scenario
        self.recorder = recorder
        self.markers_dir = markers_dir
        self._seconds = seconds
        self._attempts = 0
        self._model_attempts = 0
        self._step = 0
        self._final_sent = False
        self._calls: dict[str, _CallState] = {}

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def final_sent(self) -> bool:
        return self._final_sent

    def start(self, addon_version: str) -> None:
        fields: dict[str, Any] = {"scenario": self.scenario.name, "addon_version": addon_version}
        if self.scenario.sha256 is not None:
            fields["scenario_sha256"] = self.scenario.sha256
        self.recorder.write("start", fields)

    def finish(self) -> None:
        self.recorder.write("end", {"attempts": self.recorder.attempts_written, "finished": self._final_sent})

    # -- requests --------------------------------------------------------------------------------

    def handle(self, request: IncomingRequest) -> OutgoingResponse:
        """Answer one request; failures become a recorded 500 (only unrecordable ones escape)."""
        attempt = _Attempt(f"attempt-{self._attempts}", self.recorder.now(), request)
        self._attempts += 1
        try:
            attempt.parsed = parse_json_body(request.body)
        except (ValueError, RecursionError):
            attempt.parsed = None
        try:
            return self._dispatch(attempt)
        except WitnessWriteError:
            raise
        except Exception as exc:
            logger.exception("internal error while answering %s", attempt.attempt_id)
            return self._reject(attempt, "internal_error", f"{type(exc).__name__}: {exc}")

    def _dispatch(self, attempt: _Attempt) -> OutgoingResponse:
        request = attempt.request
        route = match_route(request.method, request.path)
        if route.kind is RouteKind.MODEL_LIST:
            return self._auxiliary(attempt, 200, {"object": "list", "data": [self._model_object()]})
        if route.kind is RouteKind.MODEL_GET:
            if route.model_id == self.scenario.model:
                return self._auxiliary(attempt, 200, self._model_object())
            message = f"The model {route.model_id!r} does not exist"
            error = {"error": {"message": message, "type": "invalid_request_error", "code": "model_not_found"}}
            return self._auxiliary(attempt, 404, error)
        if route.kind is RouteKind.MODEL and route.protocol in CODECS:
            return self._model_call(attempt, CODECS[route.protocol])
        detail = f"no provider route for {request.method} {request.path}"
        return self._reject(attempt, "unknown_route", detail)

    def _model_object(self) -> dict[str, Any]:
        return {"id": self.scenario.model, "object": "model", "created": 0, "owned_by": "probe"}

    def _model_call(self, attempt: _Attempt, codec: Codec) -> OutgoingResponse:
        attempt.protocol = codec.protocol
        body = attempt.parsed
        if not isinstance(body, dict):
            detail = "request body is not JSON" if body is None else "request body must be a JSON object"
            return self._reject(attempt, "bad_request", detail)
        attempt.stream = body.get("stream") is True
        try:
            model_request = codec.parse_request(body)
        except RequestShapeError as exc:
            return self._reject(attempt, "bad_request", str(exc))
        attempt.stream = model_request.stream

        # Evidence first: what the history shows is recorded even when the request is then refused.
        self._observe_history(attempt, model_request)
        violation = self._guard(model_request)
        if violation is not None:
            return self._reject(attempt, *violation)

        model_attempt = self._model_attempts
        fault = self.scenario.fault_for(model_attempt)
        if fault is not None:
            return self._fault(attempt, codec, fault, model_attempt)
        if self._step >= len(self.scenario.steps):
            detail = f"all {len(self.scenario.steps)} scripted replies were already sent"
            return self._reject(attempt, "script_exhausted", detail)
        return self._play(attempt, codec, model_request, self.scenario.steps[self._step], model_attempt)

    def _observe_history(self, attempt: _Attempt, model_request: ModelRequest) -> None:
        results = model_request.latest_results()
        for call_id, state in self._calls.items():
            output = results.get(call_id)
            if output is None:
                continue
            if output != state.last_output:
                self.recorder.write(
                    "tool_result_seen",
                    {
                        "attempt_id": attempt.attempt_id,
                        "tool_call_id": call_id,
                        "output": output,
                        "token_present": state.call.token in output,
                    },
                )
                state.last_output = output
            # The marker is checked once the result shows the tool ran; an unproven marker is
            # re-checked on later requests and recorded again only if what we see changes.
            if not state.verified:
                observation = check_marker(state.call.marker_path, state.call.token)
                if observation != state.marker:
                    present, matches = observation
                    self.recorder.write("marker", {"tool_call_id": call_id, "present": present, "matches": matches})
                    state.marker = observation

    def _guard(self, model_request: ModelRequest) -> tuple[str, str] | None:
        if self._final_sent:
            return ("after_final", "the final answer was already sent; the script allows no further request")
        results = model_request.latest_results()
        missing = [call_id for call_id in self._calls if call_id not in results]
        if missing:
            return (
                "tool_result_missing",
                f"the request history has no tool result for issued call(s) {', '.join(missing)}",
            )
        unproven = [state for state in self._calls.values() if not state.verified]
        if unproven:
            reasons = [
                f"{state.call.call_id}: marker {state.call.marker_path} "
                + ("does not hold the call's token" if state.marker and state.marker[0] else "is missing")
                for state in unproven
            ]
            return ("tool_not_executed", "the scripted command did not run: " + "; ".join(reasons))
        return None

    def _fault(self, attempt: _Attempt, codec: Codec, fault: Fault, model_attempt: int) -> OutgoingResponse:
        body = codec.error_body(fault.status, fault.message, fault.error_type, str(fault.status))
        headers = dict(JSON_HEADERS)
        if fault.retry_after is not None:
            headers["retry-after"] = format_seconds(fault.retry_after)
        self._record_attempt(
            attempt,
            kind="model",
            status=fault.status,
            response=body,
            model_attempt=model_attempt,
            fault=fault.kind,
        )
        self._model_attempts += 1
        return OutgoingResponse(fault.status, headers, _json_bytes(body))

    def _play(
        self, attempt: _Attempt, codec: Codec, model_request: ModelRequest, step: Step, model_attempt: int
    ) -> OutgoingResponse:
        calls: tuple[IssuedToolCall, ...] = ()
        text: str | None = None
        if isinstance(step, FinalAnswerStep):
            text = step.answer
        else:
            shell = find_shell_tool(model_request.tools)
            if shell is None:
                names = ", ".join(tool.name for tool in model_request.tools) or "none"
                detail = f"the script needs a shell tool call but none usable was advertised (tools: {names})"
                return self._reject(attempt, "no_shell_tool", detail)
            calls = tuple(self._new_call(codec, shell, spec) for spec in step.calls)
        usage = usage_for_attempt(model_attempt) if self.scenario.usage else None
        reply = ScriptedReply(response_id=codec.new_response_id(), tool_calls=calls, text=text, usage=usage)
        rendered = codec.render_reply(reply, model_request, self.scenario.model, int(self._seconds()))

        # Calls are witnessed before the reply that carries them can leave the proxy.
        for call in calls:
            self.recorder.write(
                "tool_call",
                {
                    "attempt_id": attempt.attempt_id,
                    "tool_call_id": call.call_id,
                    "name": call.name,
                    "arguments": dict(call.arguments),
                    "command": call.command,
                    "marker_path": call.marker_path,
                    "token": call.token,
                    "exit_code": call.exit_code,
                    "expected_output": call.expected_output,
                },
            )
        self._record_attempt(
            attempt,
            kind="model",
            status=200,
            response=rendered.response,
            model_attempt=model_attempt,
            sse_events=list(rendered.sse_events) if rendered.sse_events is not None else None,
            response_id=rendered.response_id,
            finish_reason=rendered.finish_reason,
            usage=rendered.usage.to_witness() if rendered.usage is not None else None,
            step=self._step,
        )
        # State moves only once the reply is durably witnessed.
        for call in calls:
            self._calls[call.call_id] = _CallState(call=call, attempt_id=attempt.attempt_id)
        self._step += 1
        self._model_attempts += 1
        if text is not None:
            self._final_sent = True
        headers = {"content-type": rendered.content_type}
        if rendered.sse_events is not None:
            headers["cache-control"] = "no-cache"
        return OutgoingResponse(200, headers, rendered.body)

    def _new_call(self, codec: Codec, shell: ShellTool, spec: ToolCallSpec) -> IssuedToolCall:
        call_id = codec.new_tool_call_id()
        token = f"probe_{uuid.uuid4().hex}"
        command = scripted_command(self.markers_dir, call_id, token, spec.exit_code)
        return IssuedToolCall(
            call_id=call_id,
            name=shell.name,
            arguments=build_arguments(shell, command),
            command=command,
            marker_path=marker_path(self.markers_dir, call_id),
            token=token,
            exit_code=spec.exit_code,
            expected_output=expected_output(token),
        )

    def _auxiliary(self, attempt: _Attempt, status: int, body: Mapping[str, Any]) -> OutgoingResponse:
        self._record_attempt(attempt, kind="auxiliary", status=status, response=body)
        return OutgoingResponse(status, dict(JSON_HEADERS), _json_bytes(body))

    def _reject(self, attempt: _Attempt, code: str, detail: str) -> OutgoingResponse:
        status = VIOLATION_STATUS[code]
        codec = CODECS.get(attempt.protocol) if attempt.protocol is not None else None
        if codec is not None:
            body = codec.error_body(status, detail, PROTOCOL_ERROR_TYPE, code)
        else:
            body = {"error": {"message": detail, "type": PROTOCOL_ERROR_TYPE, "code": code}}
        logger.warning("%s rejected (%s): %s", attempt.attempt_id, code, detail)
        self.recorder.write("violation", {"attempt_id": attempt.attempt_id, "code": code, "detail": detail})
        self._record_attempt(attempt, kind="rejected", status=status, response=body)
        return OutgoingResponse(status, dict(JSON_HEADERS), _json_bytes(body))

    def _record_attempt(
        self,
        attempt: _Attempt,
        *,
        kind: str,
        status: int,
        response: Mapping[str, Any],
        model_attempt: int | None = None,
        sse_events: list[str] | None = None,
        response_id: str | None = None,
        finish_reason: str | None = None,
        usage: dict[str, int] | None = None,
        step: int | None = None,
        fault: str | None = None,
    ) -> None:
        request = attempt.request
        wire_body = request.body if request.raw_body is None else request.raw_body
        completed_at = self.recorder.now()
        self.recorder.write(
            "attempt",
            {
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
                "response": dict(response),
                "sse_events": sse_events,
                "ended": "complete",
                "response_id": response_id,
                "finish_reason": finish_reason,
                "usage": usage,
                "step": step,
                "fault": fault,
            },
            at=completed_at,
        )
        logger.info(
            "%s %s %s -> %d (%s%s)",
            attempt.attempt_id,
            request.method,
            request.path,
            status,
            kind,
            f", step {step}" if step is not None else (f", fault {fault}" if fault else ""),
        )


def _json_bytes(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
