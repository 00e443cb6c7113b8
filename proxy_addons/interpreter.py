"""Scenario interpreter: routes each request and plays the script (position, guards, issued calls) for it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from proxy_addons import compaction, fault_quota, wire
from proxy_addons.attempts import Attempt, AttemptLog
from proxy_addons.auxiliary import AuxiliaryReplies
from proxy_addons.call_ids import id_codec
from proxy_addons.chat import ChatCodec
from proxy_addons.delivery import Refusal, delivery_for
from proxy_addons.exchange import SSE_HEADERS, Answer, IncomingRequest, OutgoingResponse, parse_json_body
from proxy_addons.fault_quota import QuotaWindow, Refused
from proxy_addons.fault_replies import FaultReplies, UnrenderedFault, alter_reply, error_shape
from proxy_addons.fault_shapes import AlteredReply, ErrorShape
from proxy_addons.faults import ARGS_TRUNCATED, HTTP_ERROR, LENGTH_CUT, STEP_FAULTS
from proxy_addons.gemini import GeminiCodec
from proxy_addons.issued_calls import CallState, tool_call_fields
from proxy_addons.limits import (
    MAX_BODIES_IN_FLIGHT,
    MAX_BODY_BYTES,
    PATH_SHOWN,
    body_over_cap,
    check_marker,
    head_over_cap,
)
from proxy_addons.messages import MessagesCodec
from proxy_addons.protocol import Codec, IssuedToolCall, ModelRequest, RequestShapeError, ScriptedReply
from proxy_addons.responses import ResponsesCodec
from proxy_addons.routes import RouteKind, match_route
from proxy_addons.scenario import CUT, RESET, WITHHOLD, Fault, Scenario
from proxy_addons.witness import WitnessRecorder, WitnessWriteError, sha256_hex

# Importers (the addon, tests) take the exchange types from here, the interpreter's public surface.
__all__ = ["CODECS", "Answer", "IncomingRequest", "Interpreter", "OutgoingResponse"]

logger = logging.getLogger(__name__)

CODECS: dict[str, Codec] = {
    codec.protocol: codec for codec in (ChatCodec(), ResponsesCodec(), MessagesCodec(), GeminiCodec())
}


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
        self._log = AttemptLog(recorder)
        self._faults = FaultReplies(self._log)
        self._auxiliary = AuxiliaryReplies(scenario, self._log, seconds, CODECS["messages"])
        self.markers_dir = markers_dir
        self._seconds = seconds
        self._attempts = 0
        self._model_attempts = 0
        self._step = 0
        self._final_sent = False
        # Issued calls: replies delivered whole. Only these gate the script (results, markers).
        self._calls: dict[str, CallState] = {}
        # Every call any reply carried, cut ones included: their results and markers are still evidence.
        self._sent: dict[str, CallState] = {}
        # Whether a model request with tools has reached the script: from then on, a model request with no
        # tools at all is a side request (title, summary) and gets a canned reply.
        self._tools_seen = False
        # The harness has compacted (a summarization request, or a history that left a seen result out): from
        # then on replies report plain usage, as a provider would after the history shrank.
        self._compacted = False
        # How a step reaches this harness (native tool calls unless harness_profile.delivery says otherwise).
        self._delivery = delivery_for(scenario)
        quota = scenario.quota
        self._quota = QuotaWindow(quota.requests, quota.window_seconds, seconds) if quota is not None else None
        # Calls whose arguments reached the harness cut off (not JSON): whether it ran one is checked at the end.
        self._malformed: set[str] = set()

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
        # A final-submit call's result never comes back (the harness ends after running it), so its marker is
        # checked here, once the harness has stopped, rather than when a later request shows the result.
        # So is every call of a delivery whose results never come back (SciCode runs the blocks after its last
        # request, if at all).
        unreturned = not self._delivery.returns_results
        checked = [(i, s) for i, s in self._calls.items() if s.call.final_submit or unreturned]
        # A call whose arguments arrived cut off must not have run: its marker is looked for once more, at the end.
        checked += [(i, self._sent[i]) for i in sorted(self._malformed)]
        for call_id, state in checked:
            if not state.verified:
                present, matches = check_marker(state.call.marker_path, state.call.token)
                self.recorder.write("marker", {"tool_call_id": call_id, "present": present, "matches": matches})
                state.marker = (present, matches)
        self.recorder.write("end", {"attempts": self.recorder.attempts_written, "finished": self._final_sent})

    # -- requests --------------------------------------------------------------------------------

    def handle(self, request: IncomingRequest) -> Answer:
        """Answer one request; failures become a recorded 500 (only unrecordable ones escape)."""
        attempt = Attempt(f"attempt-{self._attempts}", self.recorder.now(), request)
        self._attempts += 1
        head = head_over_cap(request.method, request.path, request.headers)
        if head is not None:
            attempt.request = _bounded_head(request)
            return self._reject(attempt, "head_over_cap", head[0], {"size": head[1]})
        wire_body = request.body if request.raw_body is None else request.raw_body
        over = body_over_cap(request.body) or (body_over_cap(wire_body) if wire_body is not request.body else None)
        if request.inflates_past_cap:
            over = f"request body inflates (its content-encoding removed) past the {MAX_BODY_BYTES}-byte cap"
        if over is not None:
            # Neither parsed nor kept: the witness gets its size and hash, so no reader of it can be sunk by it.
            extra = {"size": len(wire_body), "sha256": sha256_hex(wire_body)}
            return self._reject(attempt, "body_over_cap", over, extra)
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

    def refuse_oversized(self, request: IncomingRequest, content_length: str | None) -> None:
        """Witness a request whose body the proxy refused while it arrived, past its body limit (mitmproxy answered
        it with a 413 of its own): only the head is known, and the body's declared length when it had one."""
        declared = content_length.strip() if content_length is not None else ""
        size = int(declared) if declared.isascii() and declared.isdigit() and len(declared) <= 18 else None
        sent = f"of {size} bytes" if size is not None else "sent without a length"
        detail = f"request body {sent} went past the {MAX_BODY_BYTES}-byte cap and was refused while it arrived"
        self._refuse_head(request, "body_over_cap", detail, 413, {"size": size} if size is not None else {})

    def refuse_unfinished(self, request: IncomingRequest, why: str, status: int | None) -> None:
        """Witness a request whose head arrived and which never did whole (mitmproxy's reason in `why`): closed with
        no reply (status None), or answered by mitmproxy itself at its head (400)."""
        answer = "closed unanswered" if status is None else f"answered {status} by the proxy's HTTP layer"
        self._refuse_head(request, "bad_request", f"request never arrived whole, {answer}: {why[:300]}", status)

    def refuse_crowded(self, request: IncomingRequest, in_flight: int) -> None:
        """Witness a request refused unanswered at its head: the bodies still arriving on other connections already
        held the proxy's budget for bodies in flight (each request body is buffered whole before it is answered)."""
        detail = (
            f"request refused unanswered at its head: {in_flight} bytes of request bodies were already arriving on "
            f"other connections, and the proxy holds at most {MAX_BODIES_IN_FLIGHT} at once"
        )
        self._refuse_head(request, "bodies_in_flight", detail, None)

    def _refuse_head(
        self, request: IncomingRequest, code: str, detail: str, status: int | None, extra: Mapping[str, Any] = {}
    ) -> None:
        """A request known by its head alone, refused before the interpreter saw it: its violation, then its rejected
        attempt (no reply when status is None)."""
        attempt = Attempt(f"attempt-{self._attempts}", self.recorder.now(), _bounded_head(request))
        self._attempts += 1
        self.recorder.write("violation", {"attempt_id": attempt.attempt_id, "code": code, "detail": detail, **extra})
        ended = wire.RESET if status is None else wire.COMPLETE
        self._log.record(attempt, kind="rejected", status=status, response=None, ended=ended)

    def _dispatch(self, attempt: Attempt) -> Answer:
        request = attempt.request
        route = match_route(request.method, request.path)
        if route.kind is RouteKind.MODEL and route.protocol in CODECS:
            return self._model_call(attempt, CODECS[route.protocol], route.stream)
        if route.kind in (RouteKind.MODEL_LIST, RouteKind.MODEL_GET):
            return self._auxiliary.models(attempt, route)
        if route.kind is RouteKind.COUNT_TOKENS:
            # An estimate is all a harness can use it for; the count is not part of any join.
            estimate = max(1, len(request.body) // 4)
            count = {"totalTokens": estimate} if route.protocol == "gemini" else {"input_tokens": estimate}
            return self._auxiliary.json_reply(attempt, 200, count)
        if route.kind is RouteKind.PROBE:
            message = f"{request.method} {request.path} is not served by this provider"
            return self._auxiliary.json_reply(
                attempt, 404, {"error": {"message": message, "type": "not_found", "code": None}}
            )
        detail = f"no provider route for {request.method} {request.path}"
        return self._reject(attempt, "unknown_route", detail)

    def _model_call(self, attempt: Attempt, codec: Codec, stream: bool | None = None) -> Answer:
        attempt.protocol = codec.protocol
        body = attempt.parsed
        if not isinstance(body, dict):
            detail = "request body is not JSON" if body is None else "request body must be a JSON object"
            return self._reject(attempt, "bad_request", detail)
        attempt.stream = stream if stream is not None else body.get("stream") is True
        try:
            model_request = codec.parse_request(body)
        except RequestShapeError as exc:
            return self._reject(attempt, "bad_request", str(exc))
        if stream is not None:
            # The path says whether to stream (Gemini's `:streamGenerateContent`), not the body.
            model_request = replace(model_request, stream=stream)
        attempt.stream = model_request.stream
        model_request = self._delivery.adapt(body, model_request, {k: s.call for k, s in self._sent.items()})

        # Evidence first: what the history shows is recorded even when the request is then refused.
        self._observe_history(attempt, model_request)
        summary = self._tools_seen and compaction.asks_for_summary(self.scenario, model_request)
        if summary or (not model_request.has_tools and self._tools_seen):
            if summary or compaction.is_summarization(self.scenario, attempt.parsed):
                self._note_summarized()
                self._compacted = True
            return self._auxiliary.side_reply(attempt, codec, model_request)
        violation = self._guard(model_request)
        if violation is not None:
            return self._reject(attempt, *violation)
        model_attempt_before = self._model_attempts

        answer = self._scripted(attempt, codec, model_request)
        if self._model_attempts > model_attempt_before and model_request.has_tools:
            self._tools_seen = True
        return answer

    def _scripted(self, attempt: Attempt, codec: Codec, model_request: ModelRequest) -> Answer:
        """The script's answer to a model request that passed the guards: a fault or the due step."""
        model_attempt = self._model_attempts
        fault = self.scenario.fault_for(model_attempt)
        quota = self.scenario.quota
        if fault is None and quota is not None and self._quota is not None and model_attempt >= quota.attempt:
            left = self._quota.admit()
            if left is not None:
                self._model_attempts += 1
                refused = Refused(self.scenario.model, quota.requests, quota.window_seconds, left)
                render = fault_quota_render(codec.protocol)
                return self._faults.shaped(attempt, quota, model_attempt, render(refused))
        if fault is not None and fault.kind not in STEP_FAULTS:
            self._model_attempts += 1
            if fault.kind == WITHHOLD:
                return self._faults.withhold(attempt, fault, model_attempt)
            if fault.kind == RESET:
                return self._faults.reset(attempt, fault, model_attempt)
            if fault.kind == HTTP_ERROR:
                return self._faults.http_error(attempt, codec, fault, model_attempt)
            return self._faults.shaped(attempt, fault, model_attempt, error_shape(fault.kind, codec.protocol))
        if self._step >= len(self.scenario.steps):
            detail = f"all {len(self.scenario.steps)} scripted replies were already sent"
            return self._reject(attempt, "script_exhausted", detail)
        return self._play(attempt, codec, model_request, model_attempt, fault)

    def _observe_history(self, attempt: Attempt, model_request: ModelRequest) -> None:
        results = model_request.latest_results()
        for call_id, state in self._sent.items():
            output = results.get(call_id)
            if output is None:
                self._compacted = self._compacted or state.last_output is not None
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
                    # What the harness sent as the result: past the witness budget, its size and sha256 only.
                    bodies={"output": output.encode("utf-8", "surrogatepass")},
                )
                state.last_output = output
            # The marker is checked once the result shows the tool ran; an unproven marker is
            # re-checked on later requests and recorded again only if what we see changes.
            self._check_marker(call_id, state)

    def _check_marker(self, call_id: str, state: CallState) -> None:
        if not state.verified:
            observation = check_marker(state.call.marker_path, state.call.token)
            if observation != state.marker:
                present, matches = observation
                self.recorder.write("marker", {"tool_call_id": call_id, "present": present, "matches": matches})
                state.marker = observation

    def _note_summarized(self) -> None:
        """A harness may compact before it ever sends a result back (OpenCode summarizes the history, result
        included, then continues from the summary): each call whose command provably ran may then be dropped."""
        for call_id, state in self._sent.items():
            if state.last_output is None and not state.summarized:
                self._check_marker(call_id, state)
                state.summarized = state.verified

    def _guard(self, model_request: ModelRequest) -> tuple[str, str] | None:
        if self._final_sent:
            return ("after_final", "the final answer was already sent; the script allows no further request")
        if not self._delivery.returns_results:
            return None  # no result ever comes back, so none can be missing
        results = model_request.latest_results()
        missing = [
            call_id
            for call_id, state in self._calls.items()
            if call_id not in results and not compaction.may_drop(self.scenario, state.last_output, state.summarized)
        ]
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

    # -- scripted replies ------------------------------------------------------------------------

    def _play(
        self, attempt: Attempt, codec: Codec, model_request: ModelRequest, model_attempt: int, fault: Fault | None
    ) -> Answer:
        step_index = self._step
        issuer = id_codec(codec, self.scenario.tool_call_ids)
        played = self._delivery.play(self.scenario.steps[step_index], model_request, issuer, self.markers_dir)
        if isinstance(played, Refusal):
            return self._reject(attempt, played.code, played.detail)
        calls, answer = played.calls, played.answer
        usage = compaction.reply_usage(self.scenario, model_attempt, self._compacted)
        reply = ScriptedReply(
            response_id=codec.new_response_id(),
            tool_calls=played.wire_calls,
            text=played.text,
            usage=usage,
        )
        rendered = codec.render_reply(reply, model_request, self.scenario.model, int(self._seconds()))
        altered = alter_reply(fault.kind, codec.protocol, rendered) if fault and fault.kind != CUT else None
        self._model_attempts += 1

        # Calls are witnessed before the reply that carries them can leave the proxy, a cut one included:
        # a harness may still run a call it got in part, and its marker must then be explainable.
        for call in calls:
            self.recorder.write("tool_call", _call_fields(attempt.attempt_id, call, fault, altered))
            self._sent[call.call_id] = CallState(call=call, attempt_id=attempt.attempt_id)
            if fault is not None and fault.kind in (ARGS_TRUNCATED, LENGTH_CUT):
                self._malformed.add(call.call_id)
        reply_facts: dict[str, Any] = {
            "reply_kind": "final_answer" if answer is not None else "tool_calls",
            "answer": answer,
            "tool_call_ids": [call.call_id for call in calls],
        }
        if fault is not None and altered is not None:
            return self._faults.altered(attempt, altered, fault, model_attempt, step_index, reply_facts)
        if fault is not None:
            return self._faults.cut(attempt, rendered, fault, model_attempt, step_index, reply_facts)

        self._log.record(
            attempt,
            kind="model",
            status=200,
            response=rendered.response,
            model_attempt=model_attempt,
            sse_events=list(rendered.sse_events) if rendered.sse_events is not None else None,
            response_id=rendered.response_id,
            finish_reason=rendered.finish_reason,
            usage=rendered.usage.to_witness() if rendered.usage is not None else None,
            step=step_index,
            **reply_facts,
        )
        # State moves only once the reply is durably witnessed.
        for call in calls:
            self._calls[call.call_id] = self._sent[call.call_id]
        self._delivery.delivered(played)
        if played.consumes_step:
            self._step += 1
            if answer is not None:
                self._final_sent = True
        headers = dict(SSE_HEADERS) if rendered.sse_events is not None else {"content-type": rendered.content_type}
        return OutgoingResponse(200, headers, rendered.body)

    # -- refusals --------------------------------------------------------------------------------

    def _reject(
        self, attempt: Attempt, code: str, detail: str, extra: Mapping[str, Any] | None = None
    ) -> OutgoingResponse:
        codec = CODECS.get(attempt.protocol) if attempt.protocol is not None else None
        return self._log.reject(attempt, codec, code, detail, extra)


def _bounded_head(request: IncomingRequest) -> IncomingRequest:
    """`request` as a refused one is witnessed: a head past its cap by a prefix of its path and no headers (no
    witness budget bounds a head, so the witness must not carry what the cap refused)."""
    if head_over_cap(request.method, request.path, request.headers) is None:
        return request
    return replace(request, path=request.path[:PATH_SHOWN], headers=())


def fault_quota_render(protocol: str) -> Callable[[Refused], ErrorShape]:
    """The quota's 429 in `protocol`."""
    render = fault_quota.RENDER.get(protocol)
    if render is None:
        raise UnrenderedFault(f"fault quota has no rendering for the {protocol} protocol")
    return render


def _call_fields(attempt_id: str, call: IssuedToolCall, fault: Fault | None, altered: AlteredReply | None) -> Any:
    """The `tool_call` event; a call the fault cut is `malformed`, with the arguments text as it was sent."""
    fields = tool_call_fields(attempt_id, call)
    if fault is not None and fault.kind in (ARGS_TRUNCATED, LENGTH_CUT):
        fields["malformed"] = True
        if altered is not None and call.call_id in altered.cut_arguments:
            fields["arguments_text"] = altered.cut_arguments[call.call_id]
        if altered is not None and call.call_id in altered.dropped_calls:
            fields["not_sent"] = True
    return fields
