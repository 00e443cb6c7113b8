"""Replies to auxiliary requests: model lists, token counts, other dialects' probes, tool-less side requests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from proxy_addons import compaction
from proxy_addons.attempts import Attempt, AttemptLog
from proxy_addons.exchange import JSON_HEADERS, SSE_HEADERS, OutgoingResponse, json_bytes
from proxy_addons.protocol import Codec, ModelRequest, ScriptedReply, usage_for_auxiliary
from proxy_addons.routes import Route, RouteKind
from proxy_addons.scenario import Scenario

# The canned reply to side requests (titles, summaries): short, and plainly not the scripted answer.
AUXILIARY_TEXT = "Probe session"
# `created_at` of the Anthropic model object: any fixed RFC 3339 time.
MODEL_CREATED_AT = "2025-01-01T00:00:00Z"


class AuxiliaryReplies:
    """Answers requests that neither use nor move the script; it counts only its own side replies."""

    def __init__(
        self, scenario: Scenario, log: AttemptLog, seconds: Callable[[], float], anthropic_errors: Codec
    ) -> None:
        self._scenario = scenario
        self._log = log
        self._seconds = seconds
        # The Messages codec, whose error shape an Anthropic client expects for an unknown model.
        self._anthropic_errors = anthropic_errors
        self._side_replies = 0

    def models(self, attempt: Attempt, route: Route) -> OutgoingResponse:
        # Anthropic clients send `anthropic-version` on every request and expect their own model shape; Google's
        # ask under `/v1beta/models` (or send `x-goog-api-key`) and expect theirs.
        names = {name.lower() for name, _ in attempt.request.headers}
        if route.protocol == "gemini" or b"x-goog-api-key" in names:
            return self._gemini_models(attempt, route)
        anthropic = b"anthropic-version" in names
        model = self._scenario.model
        if anthropic:
            entry: dict[str, Any] = {
                "type": "model",
                "id": model,
                "display_name": model,
                "created_at": MODEL_CREATED_AT,
            }
            listing: dict[str, Any] = {"data": [entry], "has_more": False, "first_id": model, "last_id": model}
        else:
            entry = {"id": model, "object": "model", "created": 0, "owned_by": "probe"}
            listing = {"object": "list", "data": [entry]}
        entry.update(compaction.window_fields(self._scenario, anthropic))
        if route.kind is RouteKind.MODEL_LIST:
            return self.json_reply(attempt, 200, listing)
        if route.model_id == model:
            return self.json_reply(attempt, 200, entry)
        message = f"The model {route.model_id!r} does not exist"
        if anthropic:
            error = self._anthropic_errors.error_body(404, message, "not_found_error", "model_not_found")
        else:
            error = {"error": {"message": message, "type": "invalid_request_error", "code": "model_not_found"}}
        return self.json_reply(attempt, 404, error)

    def _gemini_models(self, attempt: Attempt, route: Route) -> OutgoingResponse:
        """The Gemini API's `Model` (`models/ID`), its window as `inputTokenLimit` when the scenario has one."""
        model = self._scenario.model
        entry: dict[str, Any] = {
            "name": f"models/{model}",
            "version": "001",
            "displayName": model,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }
        if self._scenario.context_window is not None:
            entry["inputTokenLimit"] = self._scenario.context_window
        if route.kind is RouteKind.MODEL_LIST:
            return self.json_reply(attempt, 200, {"models": [entry]})
        if route.model_id in (model, f"models/{model}"):
            return self.json_reply(attempt, 200, entry)
        message = f"models/{route.model_id} is not found for API version v1beta, or is not supported"
        return self.json_reply(attempt, 404, {"error": {"code": 404, "message": message, "status": "NOT_FOUND"}})

    def side_reply(self, attempt: Attempt, codec: Codec, model_request: ModelRequest) -> OutgoingResponse:
        """A canned text reply to a tool-less side request; it neither uses nor moves the script."""
        usage = usage_for_auxiliary(self._side_replies) if self._scenario.usage else None
        self._side_replies += 1
        reply = ScriptedReply(response_id=codec.new_response_id(), tool_calls=(), text=AUXILIARY_TEXT, usage=usage)
        rendered = codec.render_reply(reply, model_request, self._scenario.model, int(self._seconds()))
        self._log.record(
            attempt,
            kind="auxiliary",
            status=200,
            response=rendered.response,
            sse_events=list(rendered.sse_events) if rendered.sse_events is not None else None,
            response_id=rendered.response_id,
            finish_reason=rendered.finish_reason,
            usage=rendered.usage.to_witness() if rendered.usage is not None else None,
        )
        headers = dict(SSE_HEADERS) if rendered.sse_events is not None else {"content-type": rendered.content_type}
        return OutgoingResponse(200, headers, rendered.body)

    def json_reply(self, attempt: Attempt, status: int, body: Mapping[str, Any]) -> OutgoingResponse:
        self._log.record(attempt, kind="auxiliary", status=status, response=body)
        return OutgoingResponse(status, dict(JSON_HEADERS), json_bytes(body))
