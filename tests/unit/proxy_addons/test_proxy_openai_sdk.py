"""The official `openai` SDK as the client: the addon's JSON and SSE bytes must parse as it expects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from conftest import BASH_TOOL, MakeProvider, Provider, run_command

MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "Run the shell commands you are asked to run."}]


def sdk_client(provider: Provider, max_retries: int = 0) -> openai.OpenAI:
    """An OpenAI client whose transport hands each request to the addon's `request` hook."""

    def handler(request: httpx.Request) -> httpx.Response:
        flow = provider.send(
            request.method, request.url.raw_path.decode(), request.read(), headers=dict(request.headers)
        )
        assert flow.response is not None
        return httpx.Response(
            flow.response.status_code,
            headers=list(flow.response.headers.fields),
            content=flow.response.content,
        )

    return openai.OpenAI(
        api_key="sk-probe",
        base_url="http://provider:8080/v1",
        max_retries=max_retries,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


@pytest.fixture
def client(make_provider: MakeProvider) -> Iterator[tuple[openai.OpenAI, Provider]]:
    provider = make_provider()
    with sdk_client(provider) as sdk:
        yield sdk, provider


def stream_turn(sdk: openai.OpenAI, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Consume one streamed turn like a harness: assemble content and tool calls from deltas."""
    stream = sdk.chat.completions.create(
        model="probe-model",
        messages=messages,  # type: ignore[arg-type]
        tools=[BASH_TOOL],  # type: ignore[list-item]
        stream=True,
        stream_options={"include_usage": True},
    )
    content = ""
    calls: dict[int, dict[str, Any]] = {}
    deltas: dict[int, int] = {}
    finish_reason = None
    usage = None
    ids = set()
    roles = []
    with stream:
        for chunk in stream:
            ids.add(chunk.id)
            if chunk.usage is not None:
                assert chunk.choices == []
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.delta.role:
                    roles.append(choice.delta.role)
                content += choice.delta.content or ""
                for delta in choice.delta.tool_calls or []:
                    call = calls.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
                    deltas[delta.index] = deltas.get(delta.index, 0) + 1
                    if delta.id:
                        call["id"] = delta.id
                    if delta.function and delta.function.name:
                        call["name"] += delta.function.name
                    if delta.function and delta.function.arguments:
                        call["arguments"] += delta.function.arguments
                if choice.finish_reason:
                    finish_reason = choice.finish_reason
    assert roles == ["assistant"] and len(ids) == 1
    return {
        "content": content,
        "calls": [calls[i] for i in sorted(calls)],
        "deltas": deltas,
        "finish_reason": finish_reason,
        "usage": usage,
        "id": ids.pop(),
    }


def test_streamed_tool_success_through_the_openai_sdk(client: tuple[openai.OpenAI, Provider]) -> None:
    sdk, provider = client
    messages = list(MESSAGES)
    turns = []
    for _ in range(3):
        turn = stream_turn(sdk, messages)
        turns.append(turn)
        if turn["finish_reason"] != "tool_calls":
            break
        (call,) = turn["calls"]
        assert turn["deltas"][0] >= 3  # id/name delta, then the arguments in at least two pieces
        arguments = json.loads(call["arguments"])
        result = run_command(arguments["command"])
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": result.stdout},
        ]
    assert [t["finish_reason"] for t in turns] == ["tool_calls", "tool_calls", "stop"]
    assert turns[-1]["content"] == "PROBE_DONE"
    assert [t["usage"].prompt_tokens for t in turns] == [100, 110, 120]
    assert turns[0]["usage"].prompt_tokens_details.cached_tokens == 3
    assert turns[0]["usage"].completion_tokens_details.reasoning_tokens == 2

    attempts = provider.events("attempt")
    assert [a["response_id"] for a in attempts] == [t["id"] for t in turns]
    for attempt, turn in zip(attempts, turns, strict=True):
        assert attempt["stream"] is True and attempt["sse_events"][-1] == "[DONE]"
        assert attempt["response"]["object"] == "chat.completion"
        assert attempt["usage"]["prompt"] == turn["usage"].prompt_tokens
    tool_calls = provider.events("tool_call")
    assert [c["tool_call_id"] for c in tool_calls] == [t["calls"][0]["id"] for t in turns[:2]]
    headers = attempts[0]["headers"]
    assert headers["authorization"].startswith("sha256:") and "sk-probe" not in json.dumps(attempts)
    assert headers["x-stainless-lang"] == "python"


def test_non_streamed_reply_parses_with_the_sdk(client: tuple[openai.OpenAI, Provider]) -> None:
    sdk, _ = client
    completion = sdk.chat.completions.create(
        model="probe-model",
        messages=MESSAGES,  # type: ignore[arg-type]
        tools=[BASH_TOOL],  # type: ignore[list-item]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert choice.message.tool_calls is not None
    assert json.loads(choice.message.tool_calls[0].function.arguments)["command"].startswith("mkdir -p ")  # type: ignore[union-attr]
    assert completion.usage is not None and completion.usage.total_tokens == 107


def test_sdk_retries_a_scripted_429_and_gets_the_step(make_provider: MakeProvider) -> None:
    provider = make_provider(
        faults=[
            {
                "attempt": 0,
                "kind": "http_error",
                "status": 429,
                "retry_after": 0.01,
                "error_type": "rate_limit",
            }
        ]
    )
    with sdk_client(provider, max_retries=1) as sdk:
        completion = sdk.chat.completions.create(
            model="probe-model",
            messages=MESSAGES,  # type: ignore[arg-type]
            tools=[BASH_TOOL],  # type: ignore[list-item]
        )
    assert completion.choices[0].finish_reason == "tool_calls"
    attempts = provider.events("attempt")
    assert [(a["status"], a["model_attempt"]) for a in attempts] == [(429, 0), (200, 1)]
    assert attempts[1]["headers"]["x-stainless-retry-count"] == "1"


def test_sdk_surfaces_a_terminal_error(make_provider: MakeProvider) -> None:
    provider = make_provider(faults=[{"attempt": 0, "kind": "http_error", "status": 400, "message": "bad input"}])
    with sdk_client(provider) as sdk, pytest.raises(openai.BadRequestError) as raised:
        sdk.chat.completions.create(model="probe-model", messages=MESSAGES)  # type: ignore[arg-type]
    assert raised.value.status_code == 400
    assert raised.value.body == {"message": "bad input", "type": "probe_error", "code": "400"}
