"""Gemini `generateContent` codec: parses `models/{model}:generateContent` requests and renders replies as JSON or
as the SSE stream of `:streamGenerateContent?alt=sse`, in the shapes Google's API and SDKs use.

What the wire carries, and why: every field name is the JSON (camelCase) one; a reply's function calls have `id`s
(the API's `FunctionCall.id`, which a client echoes in `functionResponse.id`); `finishReason` is `STOP` for text and
function calls alike, as the API sends it. Usage follows Google's split: `thoughtsTokenCount` is apart from
`candidatesTokenCount` and `totalTokenCount` is their sum with the prompt, so the witness's `completion` (which holds
the reasoning count, as OpenAI's does) is `candidatesTokenCount + thoughtsTokenCount`. Counts of 0 are left out, as
proto3 JSON leaves out every default. A stream is one event per part (each function call, each piece of text), the
earlier ones carrying only the prompt count (as the API's do), then a last event with an empty text part, the
finish reason and the whole usage: a client that keeps the first usage or the last event's parts is caught.
Events end in CRLF CRLF, as Google's do.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from proxy_addons import sse
from proxy_addons.chat import split_pieces
from proxy_addons.protocol import (
    ModelRequest,
    RenderedReply,
    RequestShapeError,
    ScriptedReply,
    ToolResult,
    Usage,
    compact_json,
    rendered_reply,
)
from proxy_addons.shell_tool import ToolSpec

PROTOCOL = "gemini"
STOP = "STOP"
MODEL_ROLE = "model"
# google.rpc canonical status names by HTTP status (google/rpc/code.proto's mapping); others by class.
RPC_STATUS: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    # No canonical code: Google answers an oversized request as an invalid argument.
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
EVENT_END = b"\r\n\r\n"
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


class GeminiCodec:
    """The Gemini API's `generateContent` as the scripted provider speaks it (Gemini CLI, google-genai)."""

    protocol = PROTOCOL

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        return parse_gemini_request(body)

    def new_response_id(self) -> str:
        return uuid.uuid4().hex

    def new_tool_call_id(self) -> str:
        return f"fc_{uuid.uuid4().hex}"

    def render_reply(self, reply: ScriptedReply, request: ModelRequest, model: str, created: int) -> RenderedReply:
        response = response_object(reply, model)
        return gemini_rendered(response, request.stream, reply.response_id, STOP, reply.usage)

    def error_body(self, status: int, message: str, error_type: str, code: str) -> dict[str, Any]:
        # Google's error shape: the HTTP status as `code` and its canonical name; it has no type field.
        return {"error": {"code": status, "message": message, "status": rpc_status(status)}}


def gemini_frame(data: str) -> bytes:
    """One event as Google frames it: a `data:` line ended by CRLF CRLF."""
    return b"data: " + data.encode("utf-8") + EVENT_END


def gemini_rendered(
    response: Mapping[str, Any], stream: bool, response_id: str, finish_reason: str | None, usage: Usage | None
) -> RenderedReply:
    """`response` on the wire: one JSON body, or the events of `response_chunks` in Google's framing."""
    if not stream:
        return rendered_reply(response, None, response_id, finish_reason, usage)
    return gemini_events(response, [compact_json(chunk) for chunk in response_chunks(response)], finish_reason, usage)


def gemini_events(
    response: Mapping[str, Any], events: Sequence[str], finish_reason: str | None, usage: Usage | None
) -> RenderedReply:
    """The stream of the event payloads `events` (whatever they hold) in Google's framing; `response` is the reply
    they stand for."""
    frames = tuple(gemini_frame(event) for event in events)
    return RenderedReply(
        content_type=sse.CONTENT_TYPE,
        body=b"".join(frames),
        response=response,
        sse_events=tuple(events),
        frames=frames,
        response_id=str(response.get("responseId", "")),
        finish_reason=finish_reason,
        usage=usage,
    )


def retry_delay(seconds: float) -> str:
    """A `google.protobuf.Duration` in its JSON form, to the millisecond and rounded up (a client that waits exactly
    this long is never early): `3s`, `0.601s`."""
    millis = math.ceil(seconds * 1000)
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis / 1000:.3f}".rstrip("0") + "s"


def with_retry_info(body: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    """An error body with Google's `google.rpc.RetryInfo` detail asking for a wait of `seconds`: where Google's API
    says how long to wait (it sends no Retry-After header), and what Gemini CLI reads."""
    error = dict(body["error"])
    error["details"] = [*error.get("details", []), {"@type": RETRY_INFO, "retryDelay": retry_delay(seconds)}]
    return {**body, "error": error}


def rpc_status(status: int) -> str:
    if status in RPC_STATUS:
        return RPC_STATUS[status]
    return "FAILED_PRECONDITION" if 400 <= status < 500 else "UNKNOWN"


def _field(mapping: Mapping[str, Any], camel: str, snake: str) -> Any:
    """A field by its JSON name or its proto name: the API takes both."""
    return mapping.get(camel, mapping.get(snake))


def parse_gemini_request(body: Mapping[str, Any]) -> ModelRequest:
    """Advertised function declarations and the function responses of the history (streaming is in the path)."""
    contents = body.get("contents", [])
    if not isinstance(contents, list):
        raise RequestShapeError("`contents` must be a list")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RequestShapeError("`tools` must be a list")
    return ModelRequest(
        stream=False,
        stream_usage=True,
        tools=gemini_tool_specs(tools),
        tool_results=gemini_tool_results(contents),
        has_tools=bool(tools),
        closing_prompt=gemini_closing_prompt(contents),
    )


def gemini_closing_prompt(contents: Sequence[object]) -> str | None:
    """The text parts of the last content when it is a user turn after a model turn (beside function responses or
    not): how a harness asks for a side task, a summary of the conversation so far, on the same history."""
    if not contents or not isinstance(last := contents[-1], Mapping) or last.get("role", "user") != "user":
        return None
    if not any(isinstance(c, Mapping) and c.get("role") == "model" for c in contents[:-1]):
        return None
    parts = last.get("parts")
    texts = (
        [p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        if isinstance(parts, list)
        else []
    )
    return "\n".join(texts) or None


def gemini_tool_specs(tools: Sequence[object]) -> tuple[ToolSpec, ...]:
    """Function declarations of every tool, with `parametersJsonSchema` (JSON Schema) or `parameters` (Google's
    OpenAPI subset, whose type names are upper case) as their parameters."""
    specs: list[ToolSpec] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        declarations = _field(tool, "functionDeclarations", "function_declarations")
        for declaration in declarations if isinstance(declarations, list) else []:
            if not isinstance(declaration, Mapping) or not isinstance(declaration.get("name"), str):
                continue
            schema = _field(declaration, "parametersJsonSchema", "parameters_json_schema")
            if not isinstance(schema, Mapping):
                schema = openapi_to_json_schema(declaration.get("parameters"))
            specs.append(ToolSpec(name=declaration["name"], parameters=schema if isinstance(schema, Mapping) else {}))
    return tuple(specs)


def openapi_to_json_schema(schema: object, depth: int = 0) -> Any:
    """Google's Schema (`type: STRING`, ...) with its type names in JSON Schema's lower case, nested ones too."""
    if depth > 32:
        return {}
    if isinstance(schema, list):
        return [openapi_to_json_schema(item, depth + 1) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            converted[key] = value.lower()
        elif key == "properties" and isinstance(value, Mapping):
            converted[key] = {name: openapi_to_json_schema(sub, depth + 1) for name, sub in value.items()}
        elif key in ("items", "anyOf", "any_of"):
            converted["anyOf" if key == "any_of" else key] = openapi_to_json_schema(value, depth + 1)
        else:
            converted[key] = value
    return converted


def function_response_text(response: object) -> str:
    """What the model reads of a `functionResponse.response`: the `output` text when that is all it holds (the
    API's convention for a function's output, and how Gemini CLI and google-genai send a tool's text), else the
    object as compact JSON."""
    if isinstance(response, Mapping) and set(response) == {"output"} and isinstance(response["output"], str):
        return response["output"]
    try:
        return compact_json(response)
    except (TypeError, ValueError):
        return ""


def gemini_tool_results(contents: Sequence[object]) -> tuple[ToolResult, ...]:
    """`functionResponse` parts carrying an id, in history order (one without an id names no call)."""
    results: list[ToolResult] = []
    for content in contents:
        if not isinstance(content, Mapping):
            continue
        parts = content.get("parts")
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, Mapping):
                continue
            answer = _field(part, "functionResponse", "function_response")
            if isinstance(answer, Mapping) and isinstance(answer.get("id"), str):
                results.append(ToolResult(call_id=answer["id"], output=function_response_text(answer.get("response"))))
    return tuple(results)


def gemini_usage(usage: Usage) -> dict[str, Any]:
    """`usageMetadata` as Google sends it: thoughts apart from the candidates, zero counts left out."""
    details = [{"modality": "TEXT", "tokenCount": usage.prompt}]
    reasoning = usage.reasoning or 0
    metadata: dict[str, Any] = {"promptTokenCount": usage.prompt}
    if usage.completion - reasoning:
        metadata["candidatesTokenCount"] = usage.completion - reasoning
    metadata["totalTokenCount"] = usage.total
    if usage.cached:
        metadata["cachedContentTokenCount"] = usage.cached
    metadata["promptTokensDetails"] = details
    if usage.cached:
        metadata["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage.cached}]
    if reasoning:
        metadata["thoughtsTokenCount"] = reasoning
    return metadata


def _parts(reply: ScriptedReply) -> list[dict[str, Any]]:
    if reply.tool_calls:
        return [
            {"functionCall": {"id": call.call_id, "name": call.name, "args": dict(call.arguments)}}
            for call in reply.tool_calls
        ]
    return [{"text": reply.text or ""}]


def _response(
    parts: list[dict[str, Any]] | None, finish: str | None, usage: dict[str, Any] | None, model: str, response_id: str
) -> dict[str, Any]:
    # A candidate without parts (a call dropped at the token limit) has a content holding the role alone.
    content: dict[str, Any] = {"parts": parts, "role": MODEL_ROLE} if parts else {"role": MODEL_ROLE}
    candidate: dict[str, Any] = {"content": content}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    response: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        response["usageMetadata"] = usage
    response["modelVersion"] = model
    response["responseId"] = response_id
    return response


def response_object(reply: ScriptedReply, model: str) -> dict[str, Any]:
    """The `GenerateContentResponse` of a scripted reply; `usageMetadata` is left out entirely without usage."""
    usage = gemini_usage(reply.usage) if reply.usage is not None else None
    return _response(_parts(reply), STOP, usage, model, reply.response_id)


def response_chunks(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of a stream that encodes `response`: one per part (text split in pieces), then the last one with
    an empty text part, the candidate's finish reason and the whole usage."""
    candidate = response["candidates"][0]
    usage = response.get("usageMetadata")
    # Before the last event only the prompt is counted, and the total so far is that count.
    early = (
        {
            "promptTokenCount": usage["promptTokenCount"],
            "totalTokenCount": usage["promptTokenCount"],
            "promptTokensDetails": usage["promptTokensDetails"],
        }
        if usage is not None
        else None
    )
    model, response_id = response["modelVersion"], response["responseId"]
    pieces: list[dict[str, Any]] = []
    for part in candidate.get("content", {}).get("parts", []):
        if "text" in part:
            pieces.extend({"text": piece} for piece in split_pieces(part["text"]))
        else:
            pieces.append(part)
    chunks = [_response([piece], None, early, model, response_id) for piece in pieces]
    chunks.append(_response([{"text": ""}], candidate.get("finishReason", STOP), usage, model, response_id))
    return chunks
