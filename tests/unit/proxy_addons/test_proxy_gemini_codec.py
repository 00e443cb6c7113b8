"""The Gemini codec and routes on their own: paths, request parsing, reply objects, stream events, error shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import MakeProvider, response_json

from proxy_addons.gemini import (
    GeminiCodec,
    function_response_text,
    parse_gemini_request,
    response_chunks,
    response_object,
    rpc_status,
)
from proxy_addons.protocol import IssuedToolCall, ModelRequest, RequestShapeError, ScriptedReply, Usage
from proxy_addons.routes import RouteKind, match_route
from proxy_addons.shell_tool import find_shell_tool

USAGE = Usage(prompt=100, completion=7, reasoning=2, cached=3)
STREAM = ModelRequest(stream=True, stream_usage=True, tools=(), tool_results=())
JSON_REQUEST = ModelRequest(stream=False, stream_usage=True, tools=(), tool_results=())
GENERATE = "/v1beta/models/probe-model:generateContent"
STREAM_PATH = "/v1beta/models/probe-model:streamGenerateContent?alt=sse"
SHELL = {
    "name": "run_shell_command",
    "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


def calls(count: int) -> tuple[IssuedToolCall, ...]:
    return tuple(
        IssuedToolCall(
            call_id=f"fc_{n}",
            name="run_shell_command",
            arguments={"command": f"echo {n}"},
            command=f"echo {n}",
            marker_path=f"/probe/markers/fc_{n}.txt",
            token=f"probe_{n}",
            exit_code=0,
            expected_output=f"probe_{n}\n",
        )
        for n in range(count)
    )


@pytest.mark.parametrize(
    ("method", "path", "kind", "stream"),
    [
        ("POST", GENERATE, RouteKind.MODEL, False),
        ("POST", "/v1/models/probe-model:generateContent", RouteKind.MODEL, False),
        ("POST", STREAM_PATH, RouteKind.MODEL, True),
        ("POST", "/v1beta/models/probe-model:streamGenerateContent?key=k&alt=sse", RouteKind.MODEL, True),
        # The JSON-array stream (no `alt=sse`) is not served: a refused unknown route, not a guessed format.
        ("POST", "/v1beta/models/probe-model:streamGenerateContent", RouteKind.UNKNOWN, None),
        ("POST", "/v1beta/models/probe-model:embedContent", RouteKind.UNKNOWN, None),
        ("POST", "/v1beta/models/probe-model:countTokens", RouteKind.COUNT_TOKENS, None),
        ("GET", "/v1beta/models", RouteKind.MODEL_LIST, None),
        ("GET", "/v1beta/models/probe-model", RouteKind.MODEL_GET, None),
        ("GET", GENERATE, RouteKind.UNKNOWN, None),
    ],
)
def test_gemini_routes(method: str, path: str, kind: RouteKind, stream: bool | None) -> None:
    route = match_route(method, path)
    assert route.kind is kind and route.stream is stream
    if kind is not RouteKind.UNKNOWN:
        assert route.protocol == "gemini"
    if kind in (RouteKind.MODEL, RouteKind.MODEL_GET, RouteKind.COUNT_TOKENS):
        assert route.model_id == "probe-model"


def test_request_reads_declarations_in_both_schema_forms_and_function_responses() -> None:
    request = parse_gemini_request(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "run_shell_command", "args": {}}}]},
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a\n"}}},
                        {"function_response": {"id": "c2", "name": "x", "response": {"error": "boom"}}},
                        {"functionResponse": {"name": "no_id", "response": {"output": "lost"}}},
                    ],
                },
            ],
            "tools": [
                {"googleSearch": {}},
                {
                    "function_declarations": [
                        {
                            "name": "shell",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {"command": {"type": "STRING"}, "dir": {"type": "STRING"}},
                                "required": ["command", "dir"],
                            },
                        }
                    ]
                },
            ],
        }
    )
    assert [(r.call_id, r.output) for r in request.tool_results] == [("c1", "a\n"), ("c2", '{"error":"boom"}')]
    assert request.has_tools and not request.stream
    (spec,) = request.tools
    assert spec.parameters["properties"]["command"] == {"type": "string"}
    shell = find_shell_tool(request.tools)
    assert shell is not None and shell.extra == {"dir": "."}


@pytest.mark.parametrize("body", [{"contents": "hi"}, {"contents": [], "tools": {"a": 1}}])
def test_request_shape_errors(body: dict[str, Any]) -> None:
    with pytest.raises(RequestShapeError):
        parse_gemini_request(body)


@pytest.mark.parametrize(
    ("response", "text"),
    [({"output": "x"}, "x"), ({"output": "x", "error": "y"}, '{"output":"x","error":"y"}'), ({}, "{}"), (None, "null")],
)
def test_function_response_text(response: Any, text: str) -> None:
    assert function_response_text(response) == text


def test_json_reply_with_parallel_calls_and_googles_usage_split() -> None:
    reply = ScriptedReply(response_id="r1", tool_calls=calls(2), text=None, usage=USAGE)
    rendered = GeminiCodec().render_reply(reply, JSON_REQUEST, "probe-model", 0)
    body = json.loads(rendered.body)
    assert list(body) == ["candidates", "usageMetadata", "modelVersion", "responseId"]
    (candidate,) = body["candidates"]
    assert candidate["finishReason"] == "STOP" and candidate["content"]["role"] == "model"
    assert [p["functionCall"]["id"] for p in candidate["content"]["parts"]] == ["fc_0", "fc_1"]
    assert body["usageMetadata"] == {
        "promptTokenCount": 100,
        "candidatesTokenCount": 5,
        "totalTokenCount": 107,
        "cachedContentTokenCount": 3,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 100}],
        "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 3}],
        "thoughtsTokenCount": 2,
    }
    assert (rendered.response_id, rendered.finish_reason, rendered.usage) == ("r1", "STOP", USAGE)
    assert rendered.sse_events is None and rendered.content_type == "application/json"


def test_stream_is_one_event_per_part_framed_in_crlf() -> None:
    reply = ScriptedReply(response_id="r2", tool_calls=calls(2), text=None, usage=USAGE)
    rendered = GeminiCodec().render_reply(reply, STREAM, "probe-model", 0)
    assert rendered.frames is not None and rendered.sse_events is not None
    assert all(f.startswith(b"data: {") and f.endswith(b"}\r\n\r\n") for f in rendered.frames)
    assert rendered.body == b"".join(rendered.frames)
    events = [json.loads(e) for e in rendered.sse_events]
    assert [e["candidates"][0]["content"]["parts"] for e in events] == [
        [{"functionCall": {"id": "fc_0", "name": "run_shell_command", "args": {"command": "echo 0"}}}],
        [{"functionCall": {"id": "fc_1", "name": "run_shell_command", "args": {"command": "echo 1"}}}],
        [{"text": ""}],
    ]
    assert ["finishReason" in e["candidates"][0] for e in events] == [False, False, True]
    assert [e["usageMetadata"]["totalTokenCount"] for e in events] == [100, 100, 107]
    assert {e["responseId"] for e in events} == {"r2"}
    assert rendered.response == response_object(reply, "probe-model")


def test_text_stream_splits_the_answer_and_carries_no_usage_without_it() -> None:
    reply = ScriptedReply(response_id="r3", tool_calls=(), text="PROBE_DONE", usage=None)
    chunks = response_chunks(response_object(reply, "m"))
    texts = [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]
    assert "".join(texts) == "PROBE_DONE" and len(texts) == 4 and texts[-1] == ""
    assert all("usageMetadata" not in c for c in chunks)


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (400, "INVALID_ARGUMENT"),
        (409, "ABORTED"),
        (429, "RESOURCE_EXHAUSTED"),
        (504, "DEADLINE_EXCEEDED"),
        (418, "FAILED_PRECONDITION"),
        (502, "UNKNOWN"),
    ],
)
def test_error_body_is_googles(status: int, name: str) -> None:
    assert rpc_status(status) == name
    assert GeminiCodec().error_body(status, "m", "t", "c") == {
        "error": {"code": status, "message": "m", "status": name}
    }


def test_model_list_count_tokens_and_unknown_model_in_googles_shapes(make_provider: MakeProvider) -> None:
    provider = make_provider(context_window=200000)
    listing = response_json(provider.send("GET", "/v1beta/models"))
    (model,) = listing["models"]
    assert (model["name"], model["inputTokenLimit"]) == ("models/probe-model", 200000)
    assert response_json(provider.send("GET", "/v1beta/models/probe-model")) == model
    # A Google client asking under /v1 (it sends x-goog-api-key) gets Google's shape too.
    assert response_json(provider.send("GET", "/v1/models", headers={"x-goog-api-key": "k"})) == listing
    missing = provider.send("GET", "/v1beta/models/other")
    assert missing.response is not None and missing.response.status_code == 404
    assert response_json(missing)["error"]["status"] == "NOT_FOUND"
    counted = response_json(provider.send("POST", "/v1beta/models/probe-model:countTokens", {"contents": []}))
    assert counted == {"totalTokens": len(b'{"contents": []}') // 4}
    attempts = provider.events("attempt")
    assert {a["kind"] for a in attempts} == {"auxiliary"}
    assert [a["protocol"] for a in attempts] == [None] * len(attempts)


def test_stream_path_sets_the_attempts_stream_flag_even_on_a_refused_body(make_provider: MakeProvider) -> None:
    provider = make_provider()
    flow = provider.send("POST", STREAM_PATH, {"contents": "x", "tools": [{"functionDeclarations": [SHELL]}]})
    assert flow.response is not None and flow.response.status_code == 400
    assert response_json(flow)["error"]["status"] == "INVALID_ARGUMENT"
    (attempt,) = provider.events("attempt")
    assert (attempt["protocol"], attempt["stream"], attempt["kind"]) == ("gemini", True, "rejected")


def test_googles_key_is_kept_as_its_hash_and_its_client_header_as_is(make_provider: MakeProvider) -> None:
    provider = make_provider()
    headers = {"x-goog-api-key": "probe-key", "x-goog-api-client": "google-genai-sdk/3.6.1 gl-python/3.13"}
    provider.send("POST", GENERATE, {"contents": [], "tools": [{"functionDeclarations": [SHELL]}]}, headers)
    (attempt,) = provider.events("attempt")
    assert attempt["headers"]["x-goog-api-key"].startswith("sha256:") and "probe-key" not in json.dumps(attempt)
    assert attempt["headers"]["x-goog-api-client"] == headers["x-goog-api-client"]
