"""Every protocol x {JSON, SSE} through the official SDKs (`openai`, `anthropic`): the bytes parse as they expect.

Each test plays scripted steps (tool calls, final answer) or a fault through the addon's request hook and
checks what the SDK assembled against what the witness recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import openai
import pytest
import yaml
from conftest import (
    BASH_TOOL,
    MESSAGES_BASH_TOOL,
    MESSAGES_SERVER_TOOL,
    REPO,
    RESPONSES_EXEC_TOOL,
    RESPONSES_NAMESPACE_TOOL,
    MakeProvider,
    Provider,
    mock_transport,
    run_command,
)

PROTOCOLS = ["chat", "responses", "messages"]
MODES = [False, True]
TASK = "Run the shell commands you are asked to run."


@dataclass
class Turn:
    """One model reply as the SDK assembled it."""

    response_id: str
    finish: str | None
    text: str | None
    calls: list[dict[str, Any]] = field(default_factory=list)  # id, name, arguments (dict), namespace
    usage: dict[str, int] | None = None
    # Streams only: how many argument deltas the first tool call arrived in.
    deltas: int = 0


class Driver:
    """A harness's side of one protocol: send the history, assemble the reply, append tool results."""

    protocol: str

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def turn(self, stream: bool, tools: bool = True) -> Turn:
        raise NotImplementedError

    def feed(self, turn: Turn, outputs: dict[str, str]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class ChatDriver(Driver):
    protocol = "chat"

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        self.sdk = openai.OpenAI(
            api_key="sk-probe",
            base_url="http://provider:8080/v1",
            max_retries=0,
            http_client=httpx.Client(transport=mock_transport(provider)),
        )
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]

    def turn(self, stream: bool, tools: bool = True) -> Turn:
        extra: dict[str, Any] = {"tools": [BASH_TOOL]} if tools else {}
        deltas = 0
        if stream:
            with self.sdk.chat.completions.stream(
                model="probe-model",
                messages=self.messages,  # type: ignore[arg-type]
                stream_options={"include_usage": True},
                **extra,
            ) as events:
                for event in events:
                    if event.type == "tool_calls.function.arguments.delta" and event.index == 0:
                        deltas += 1
                completion = events.get_final_completion()
        else:
            completion = self.sdk.chat.completions.create(model="probe-model", messages=self.messages, **extra)  # type: ignore[arg-type]
        choice = completion.choices[0]
        usage = completion.usage
        return Turn(
            response_id=completion.id,
            finish=choice.finish_reason,
            text=choice.message.content,
            calls=[
                {"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments), "namespace": None}  # type: ignore[union-attr]
                for c in choice.message.tool_calls or []
            ],
            usage=None
            if usage is None
            else {
                "prompt": usage.prompt_tokens,
                "completion": usage.completion_tokens,
                "cached": usage.prompt_tokens_details.cached_tokens or 0,  # type: ignore[union-attr]
                "reasoning": usage.completion_tokens_details.reasoning_tokens or 0,  # type: ignore[union-attr]
            },
            deltas=deltas,
        )

    def feed(self, turn: Turn, outputs: dict[str, str]) -> None:
        calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in turn.calls
        ]
        self.messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        self.messages.extend({"role": "tool", "tool_call_id": i, "content": out} for i, out in outputs.items())

    def close(self) -> None:
        self.sdk.close()


class ResponsesDriver(Driver):
    protocol = "responses"

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        self.sdk = openai.OpenAI(
            api_key="sk-probe",
            base_url="http://provider:8080/v1",
            max_retries=0,
            http_client=httpx.Client(transport=mock_transport(provider)),
        )
        self.input: list[dict[str, Any]] = [{"role": "user", "content": TASK}]

    def turn(self, stream: bool, tools: bool = True) -> Turn:
        # Codex sends its shell inside a namespace (and always streams); plain function tools otherwise.
        extra: dict[str, Any] = (
            {"tools": [RESPONSES_NAMESPACE_TOOL if stream else RESPONSES_EXEC_TOOL]} if tools else {}
        )
        deltas = 0
        if stream:
            with self.sdk.responses.stream(model="probe-model", input=self.input, **extra) as events:  # type: ignore[arg-type]
                first_item = None
                for event in events:
                    if event.type == "response.output_item.added" and first_item is None:
                        first_item = event.item.id
                    if event.type == "response.function_call_arguments.delta" and event.item_id == first_item:
                        deltas += 1
                response = events.get_final_response()
        else:
            response = self.sdk.responses.create(model="probe-model", input=self.input, **extra)  # type: ignore[arg-type]
        calls = []
        for item in response.output:
            if item.type == "function_call":
                raw = item.model_dump()
                calls.append(
                    {
                        "id": item.call_id,
                        "name": item.name,
                        "arguments": json.loads(item.arguments),
                        "namespace": raw.get("namespace"),
                    }
                )
        usage = response.usage
        return Turn(
            response_id=response.id,
            finish=response.status,
            text=response.output_text if not calls else None,
            calls=calls,
            usage=None
            if usage is None
            else {
                "prompt": usage.input_tokens,
                "completion": usage.output_tokens,
                "cached": usage.input_tokens_details.cached_tokens,
                "reasoning": usage.output_tokens_details.reasoning_tokens,
            },
            deltas=deltas,
        )

    def feed(self, turn: Turn, outputs: dict[str, str]) -> None:
        for call in turn.calls:
            item = {
                "type": "function_call",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": json.dumps(call["arguments"]),
            }
            if call["namespace"]:
                item["namespace"] = call["namespace"]
            self.input.append(item)
        # Codex sends text outputs as a string; content parts are accepted too.
        for n, (call_id, out) in enumerate(outputs.items()):
            output: Any = out if n % 2 == 0 else [{"type": "input_text", "text": out}]
            self.input.append({"type": "function_call_output", "call_id": call_id, "output": output})

    def close(self) -> None:
        self.sdk.close()


class MessagesDriver(Driver):
    protocol = "messages"

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        self.client = anthropic.Anthropic(
            api_key="sk-ant-probe",
            base_url="http://provider:8080",
            max_retries=0,
            http_client=httpx.Client(transport=mock_transport(provider)),
        )
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]

    def turn(self, stream: bool, tools: bool = True) -> Turn:
        extra: dict[str, Any] = {"tools": [MESSAGES_SERVER_TOOL, MESSAGES_BASH_TOOL]} if tools else {}
        deltas = 0
        if stream:
            with self.client.messages.stream(
                model="probe-model",
                max_tokens=4096,
                messages=self.messages,  # type: ignore[arg-type]
                **extra,
            ) as events:
                for event in events:
                    if (
                        event.type == "content_block_delta"
                        and event.index == 0
                        and event.delta.type == "input_json_delta"
                    ):
                        deltas += 1
                message = events.get_final_message()
        else:
            message = self.client.messages.create(
                model="probe-model",
                max_tokens=4096,
                messages=self.messages,  # type: ignore[arg-type]
                **extra,
            )
        calls = [
            {"id": b.id, "name": b.name, "arguments": b.input, "namespace": None}
            for b in message.content
            if b.type == "tool_use"
        ]
        texts = [b.text for b in message.content if b.type == "text"]
        usage = message.usage
        return Turn(
            response_id=message.id,
            finish=message.stop_reason,
            text="".join(texts) if texts else None,
            calls=calls,
            usage=None
            if usage is None
            else {
                # Anthropic's three input counts are disjoint; the witness's prompt is their sum.
                "prompt": usage.input_tokens
                + (usage.cache_read_input_tokens or 0)
                + (usage.cache_creation_input_tokens or 0),
                "completion": usage.output_tokens,
                "cached": usage.cache_read_input_tokens or 0,
                "reasoning": None,  # Messages has no reasoning count
            },
            deltas=deltas,
        )

    def feed(self, turn: Turn, outputs: dict[str, str]) -> None:
        content = [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]} for c in turn.calls]
        self.messages.append({"role": "assistant", "content": content})
        # Claude Code sends a string; text blocks are the other allowed form.
        results = [
            {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": out if n % 2 == 0 else [{"type": "text", "text": out}],
            }
            for n, (call_id, out) in enumerate(outputs.items())
        ]
        self.messages.append({"role": "user", "content": results})

    def close(self) -> None:
        self.client.close()


DRIVERS: dict[str, type[Driver]] = {"chat": ChatDriver, "responses": ResponsesDriver, "messages": MessagesDriver}


@pytest.fixture
def drive(make_provider: MakeProvider) -> Iterator[Any]:
    drivers: list[Driver] = []

    def factory(protocol: str, **scenario: Any) -> Driver:
        driver = DRIVERS[protocol](make_provider(**scenario))
        drivers.append(driver)
        return driver

    yield factory
    for driver in drivers:
        driver.close()


def execute(turn: Turn) -> dict[str, str]:
    """Run each call's command for real, as the harness's shell would; output as the model sees it."""
    outputs = {}
    for call in turn.calls:
        arguments = call["arguments"]
        result = run_command(arguments.get("command", arguments.get("cmd")))
        outputs[call["id"]] = result.stdout
    return outputs


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_calls_then_final_answer(drive: Any, protocol: str, stream: bool) -> None:
    driver: Driver = drive(protocol)
    turns = []
    for _ in range(3):
        turn = driver.turn(stream)
        turns.append(turn)
        if turn.calls:
            driver.feed(turn, execute(turn))
    tool_finish, final_finish = {
        "chat": ("tool_calls", "stop"),
        "responses": ("completed", "completed"),
        "messages": ("tool_use", "end_turn"),
    }[protocol]
    assert [t.finish for t in turns] == [tool_finish, tool_finish, final_finish]
    assert turns[-1].text == "PROBE_DONE" and not turns[-1].calls
    assert all(len(t.calls) == 1 for t in turns[:2])
    if stream:
        assert all(t.deltas >= 2 for t in turns[:2]), "tool-call arguments arrive split over several deltas"

    attempts = driver.provider.events("attempt")
    assert [a["protocol"] for a in attempts] == [protocol] * 3
    assert [a["stream"] for a in attempts] == [stream] * 3
    assert [a["response_id"] for a in attempts] == [t.response_id for t in turns]
    assert [a["finish_reason"] for a in attempts] == [t.finish for t in turns]
    assert [a["reply_kind"] for a in attempts] == ["tool_calls", "tool_calls", "final_answer"]
    assert [a["answer"] for a in attempts] == [None, None, "PROBE_DONE"]
    assert [a["tool_call_ids"] for a in attempts] == [[c["id"] for c in t.calls] for t in turns]
    for attempt, turn in zip(attempts, turns, strict=True):
        witnessed = attempt["usage"]
        assert turn.usage == {k: witnessed[k] for k in ("prompt", "completion", "cached", "reasoning")}
        if stream:
            assert attempt["sse_events"] and attempt["response"]["id"] == turn.response_id
        else:
            assert attempt["sse_events"] is None
    issued = driver.provider.events("tool_call")
    assert [c["tool_call_id"] for c in issued] == [t.calls[0]["id"] for t in turns[:2]]
    assert [c["arguments"] for c in issued] == [t.calls[0]["arguments"] for t in turns[:2]]
    namespaces = {c.get("namespace") for c in issued}
    assert namespaces == ({"functions"} if protocol == "responses" and stream else {None})
    assert all(t.calls[0]["namespace"] == c.get("namespace") for t, c in zip(turns, issued, strict=False))
    seen = driver.provider.events("tool_result_seen")
    assert [e["tool_call_id"] for e in seen] == [c["tool_call_id"] for c in issued]
    assert all(e["token_present"] for e in seen)
    assert all(m["present"] and m["matches"] for m in driver.provider.events("marker"))


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_http_error_fault_surfaces_in_the_sdk_and_the_retry_gets_the_step(
    drive: Any, protocol: str, stream: bool
) -> None:
    fault = {"attempt": 0, "kind": "http_error", "status": 500, "error_type": "api_error", "message": "boom"}
    driver: Driver = drive(protocol, faults=[fault])
    with pytest.raises((openai.InternalServerError, anthropic.InternalServerError)) as raised:
        driver.turn(stream)
    error = raised.value
    assert error.status_code == 500
    if protocol == "messages":
        assert error.body == {"type": "error", "error": {"type": "api_error", "message": "boom"}}
    else:
        assert error.body == {
            "message": "boom",
            "type": "api_error",
            "code": "500",
            **({"param": None} if protocol == "responses" else {}),
        }
    retried = driver.turn(stream)
    assert len(retried.calls) == 1
    first, second = driver.provider.events("attempt")
    assert (first["status"], first["fault"], first["response_id"], first["reply_kind"]) == (
        500,
        "http_error",
        None,
        None,
    )
    assert first["response"] == error.body if protocol == "messages" else first["response"]["error"] == error.body
    assert (second["status"], second["step"], second["model_attempt"]) == (200, 0, 1)
    assert second["usage"]["prompt"] == 110  # usage follows the model attempt, faults included


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_usage_omitted_streams_carry_no_usage(drive: Any, protocol: str) -> None:
    driver: Driver = drive(protocol, usage=False)
    events: list[Any] = []
    if isinstance(driver, ChatDriver):
        stream = driver.sdk.chat.completions.create(
            model="probe-model",
            messages=driver.messages,  # type: ignore[arg-type]
            tools=[BASH_TOOL],  # type: ignore[list-item]
            stream=True,
            stream_options={"include_usage": True},
        )
        events = [chunk.usage for chunk in stream]
    elif isinstance(driver, ResponsesDriver):
        stream = driver.sdk.responses.create(
            model="probe-model",
            input=driver.input,  # type: ignore[arg-type]
            tools=[RESPONSES_EXEC_TOOL],  # type: ignore[list-item]
            stream=True,
        )
        events = [e.response.usage for e in stream if e.type == "response.completed"]
    else:
        assert isinstance(driver, MessagesDriver)
        # The SDK's accumulating helper needs usage in a Messages stream; the raw event stream does not.
        raw = driver.client.messages.create(
            model="probe-model",
            max_tokens=4096,
            messages=driver.messages,  # type: ignore[arg-type]
            tools=[MESSAGES_BASH_TOOL],  # type: ignore[list-item]
            stream=True,
        )
        for event in raw:
            if event.type == "message_start":
                events.append(event.message.model_dump().get("usage"))
            if event.type == "message_delta":
                events.append(event.model_dump().get("usage"))
    assert events and all(usage is None for usage in events)
    (attempt,) = driver.provider.events("attempt")
    assert attempt["usage"] is None and attempt["status"] == 200


@pytest.mark.parametrize("stream", MODES, ids=["json", "sse"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_less_side_request_mid_run_gets_a_canned_auxiliary_reply(drive: Any, protocol: str, stream: bool) -> None:
    driver: Driver = drive(protocol)
    first = driver.turn(stream)
    side = driver.turn(stream, tools=False)  # title generation, say: no tools, no tool results
    assert side.text == "Probe session" and not side.calls
    driver.feed(first, execute(first))
    second = driver.turn(stream)
    assert len(second.calls) == 1
    attempts = driver.provider.events("attempt")
    assert [(a["kind"], a["model_attempt"], a["step"]) for a in attempts] == [
        ("model", 0, 0),
        ("auxiliary", None, None),
        ("model", 1, 1),
    ]
    assert attempts[1]["response_id"] == side.response_id and attempts[1]["reply_kind"] is None
    assert attempts[1]["usage"]["prompt"] == 50  # a range of its own: never joins a model attempt
    assert driver.provider.events("violation") == []


IN_PROCESS_SCENARIOS = [
    "tool_success",
    "tool_failure",
    "usage_omitted",
    "retry_429",
    "retry_500",
    "model_error",
    "wrong_answer",
    "parallel_tools",
]


def play(driver: Driver, stream: bool, max_errors: int = 3) -> tuple[list[Turn], list[int]]:
    """An honest harness: retry failed attempts a few times, run every tool call, stop at a text answer."""
    turns: list[Turn] = []
    errors: list[int] = []
    while len(turns) + len(errors) < 12:
        try:
            turn = driver.turn(stream)
        except (openai.APIStatusError, anthropic.APIStatusError) as error:
            errors.append(error.status_code)
            if len(errors) > max_errors:
                break
            continue
        turns.append(turn)
        if not turn.calls:
            break
        driver.feed(turn, execute(turn))
    return turns, errors


@pytest.mark.parametrize(
    ("name", "protocol", "stream"),
    [(name, PROTOCOLS[n % 3], n % 2 == 1) for n, name in enumerate(IN_PROCESS_SCENARIOS)],
)
def test_shipped_scenario_played_by_an_honest_harness(drive: Any, name: str, protocol: str, stream: bool) -> None:
    document: dict[str, Any] = yaml.safe_load((REPO / "scenarios" / f"{name}.yaml").read_text())
    driver: Driver = drive(protocol, **document)
    turns, errors = play(driver, stream)
    script = document["script"]
    faults = document["faults"]
    if any(f.get("repeat") for f in faults):
        assert turns == [] and errors == [faults[0]["status"]] * 4
    else:
        assert errors == [f["status"] for f in faults]
        assert turns[-1].text == script[-1]["final_answer"]
        assert [len(t.calls) for t in turns] == [len(s.get("tool_calls", [])) for s in script]
    attempts = driver.provider.events("attempt")
    # The scripted faults come first, then one successful attempt per reply.
    assert [a["status"] for a in attempts] == errors + [200] * len(turns)
    assert all(a["kind"] == "model" and a["ended"] == "complete" for a in attempts)
    assert all((a["usage"] is None) == (not document["usage"] or a["status"] != 200) for a in attempts)
    issued = driver.provider.events("tool_call")
    assert [c["exit_code"] for c in issued] == [c["exit_code"] for s in script for c in s.get("tool_calls", [])][
        : len(issued)
    ]
    assert driver.provider.events("violation") == []
    driver.provider.addon.done()
    assert driver.provider.events("end")[0]["finished"] is bool(turns)
