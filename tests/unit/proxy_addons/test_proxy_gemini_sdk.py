"""The Gemini protocol x {JSON, SSE} through Google's own SDK (`google-genai`): its bytes parse as the SDK expects.

As test_proxy_sdks.py does for the openai and anthropic SDKs: each test plays scripted steps or a fault through the
addon's request hook (an httpx mock transport, no network) and holds what the SDK assembled to what the witness
recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from conftest import REPO, MakeProvider, Provider, mock_transport
from google import genai
from google.genai import errors, types
from test_proxy_sdks import Driver, Turn, execute

TASK = "Run the shell commands you are asked to run."
# Gemini CLI's shell tool, as it declares it (JSON Schema under `parametersJsonSchema`).
SHELL_TOOL = types.FunctionDeclaration(
    name="run_shell_command",
    description="Executes a given shell command as `bash -c <command>`.",
    parameters_json_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Exact bash command to execute"},
            "description": {"type": "string"},
            "dir_path": {"type": "string"},
        },
        "required": ["command"],
    },
)
# The same tool in Google's own Schema (OpenAPI subset: upper-case type names), as older clients declare it.
OPENAPI_SHELL_TOOL = types.FunctionDeclaration(
    name="run_shell_command",
    description="Executes a given shell command.",
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"command": types.Schema(type=types.Type.STRING), "description": types.Schema(type="STRING")},
        required=["command", "description"],
    ),
)


class GeminiDriver(Driver):
    """A google-genai harness: the history as `Content`s, function responses echoing each call's id."""

    protocol = "gemini"

    def __init__(self, provider: Provider, declaration: types.FunctionDeclaration = SHELL_TOOL) -> None:
        super().__init__(provider)
        self.http = httpx.Client(transport=mock_transport(provider))
        self.client = genai.Client(
            api_key="probe-key",
            http_options=types.HttpOptions(base_url="http://provider:8080", httpx_client=self.http),
        )
        self.declaration = declaration
        self.contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=TASK)])]
        self.chunks: list[types.GenerateContentResponse] = []

    def config(self, tools: bool) -> types.GenerateContentConfig:
        return types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=[self.declaration])] if tools else None,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    def turn(self, stream: bool, tools: bool = True) -> Turn:
        config = self.config(tools)
        if stream:
            self.chunks = list(
                self.client.models.generate_content_stream(model="probe-model", contents=self.contents, config=config)
            )
            parts = [p for c in self.chunks for p in (c.candidates[0].content.parts or [])]  # type: ignore[index, union-attr]
            last = self.chunks[-1]
        else:
            last = self.client.models.generate_content(model="probe-model", contents=self.contents, config=config)
            self.chunks = [last]
            parts = list(last.candidates[0].content.parts or [])  # type: ignore[index, union-attr]
        calls = [p.function_call for p in parts if p.function_call is not None]
        texts = [p.text for p in parts if p.text]
        usage = last.usage_metadata
        candidate = last.candidates[0]  # type: ignore[index]
        return Turn(
            response_id=str(last.response_id),
            finish=candidate.finish_reason.value if candidate.finish_reason is not None else None,
            text="".join(texts) if texts else None,
            calls=[{"id": c.id, "name": c.name, "arguments": c.args, "namespace": None} for c in calls],
            usage=None
            if usage is None
            else {
                # Google's candidates count leaves the thoughts out; the witness's completion holds both.
                "prompt": usage.prompt_token_count,
                "completion": (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
                "cached": usage.cached_content_token_count or 0,
                "reasoning": usage.thoughts_token_count or 0,
            },
            deltas=len(self.chunks),
        )

    def feed(self, turn: Turn, outputs: dict[str, str]) -> None:
        calls = [types.FunctionCall(id=c["id"], name=c["name"], args=c["arguments"]) for c in turn.calls]
        self.contents.append(types.Content(role="model", parts=[types.Part(function_call=c) for c in calls]))
        responses = [
            types.Part(function_response=types.FunctionResponse(id=c["id"], name=c["name"], response={"output": out}))
            for c, out in zip(turn.calls, outputs.values(), strict=True)
        ]
        self.contents.append(types.Content(role="user", parts=responses))

    def close(self) -> None:
        self.client.close()
        self.http.close()


@pytest.fixture
def drive(make_provider: MakeProvider) -> Iterator[Any]:
    drivers: list[GeminiDriver] = []

    def factory(declaration: types.FunctionDeclaration = SHELL_TOOL, **scenario: Any) -> GeminiDriver:
        driver = GeminiDriver(make_provider(**scenario), declaration)
        drivers.append(driver)
        return driver

    yield factory
    for driver in drivers:
        driver.close()


@pytest.mark.parametrize("declaration", [SHELL_TOOL, OPENAPI_SHELL_TOOL], ids=["json_schema", "openapi"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_tool_calls_then_final_answer(drive: Any, stream: bool, declaration: types.FunctionDeclaration) -> None:
    driver: GeminiDriver = drive(declaration)
    turns = []
    for _ in range(3):
        turn = driver.turn(stream)
        turns.append(turn)
        if turn.calls:
            driver.feed(turn, execute(turn))
    assert [t.finish for t in turns] == ["STOP"] * 3  # Gemini ends function calls with STOP too
    assert turns[-1].text == "PROBE_DONE" and not turns[-1].calls
    assert all(len(t.calls) == 1 and t.calls[0]["id"] for t in turns[:2])
    if stream:
        assert all(t.deltas >= 2 for t in turns), "a stream is one event per part, then the finishing event"
    attempts = driver.provider.events("attempt")
    assert [(a["protocol"], a["stream"]) for a in attempts] == [("gemini", stream)] * 3
    assert all(a["path"].endswith(":streamGenerateContent?alt=sse" if stream else ":generateContent") for a in attempts)
    assert [a["response_id"] for a in attempts] == [t.response_id for t in turns]
    assert [a["finish_reason"] for a in attempts] == ["STOP"] * 3
    assert [a["tool_call_ids"] for a in attempts] == [[c["id"] for c in t.calls] for t in turns]
    for attempt, turn in zip(attempts, turns, strict=True):
        assert turn.usage == {k: attempt["usage"][k] for k in ("prompt", "completion", "cached", "reasoning")}
        assert attempt["usage"]["total"] == attempt["usage"]["prompt"] + attempt["usage"]["completion"]
    issued = driver.provider.events("tool_call")
    assert [c["arguments"] for c in issued] == [t.calls[0]["arguments"] for t in turns[:2]]
    if declaration is OPENAPI_SHELL_TOOL:
        # A required description is filled, which an upper-case `STRING` must not hide.
        assert issued[0]["arguments"]["description"]
    seen = driver.provider.events("tool_result_seen")
    assert [e["tool_call_id"] for e in seen] == [c["tool_call_id"] for c in issued]
    assert all(e["token_present"] and e["output"].startswith("probe_") for e in seen)
    assert all(m["present"] and m["matches"] for m in driver.provider.events("marker"))


def test_the_early_events_of_a_stream_count_the_prompt_only(drive: Any) -> None:
    driver: GeminiDriver = drive()
    driver.turn(stream=True)
    first, last = driver.chunks[0], driver.chunks[-1]
    assert first.usage_metadata is not None and last.usage_metadata is not None
    assert first.usage_metadata.candidates_token_count is None and first.usage_metadata.thoughts_token_count is None
    assert first.usage_metadata.total_token_count == first.usage_metadata.prompt_token_count == 100
    assert (last.usage_metadata.candidates_token_count, last.usage_metadata.thoughts_token_count) == (5, 2)
    assert [c.candidates[0].finish_reason for c in driver.chunks[:-1]] == [None] * (len(driver.chunks) - 1)  # type: ignore[index]
    assert last.candidates[0].content.parts[0].text == ""  # type: ignore[index, union-attr]


@pytest.mark.parametrize(
    ("status", "rpc", "error_class"),
    [(500, "INTERNAL", errors.ServerError), (429, "RESOURCE_EXHAUSTED", errors.ClientError)],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_http_error_fault_surfaces_in_the_sdk_and_the_retry_gets_the_step(
    drive: Any, stream: bool, status: int, rpc: str, error_class: type[errors.APIError]
) -> None:
    fault = {"attempt": 0, "kind": "http_error", "status": status, "error_type": "api_error", "message": "boom"}
    driver: GeminiDriver = drive(faults=[fault])
    with pytest.raises(error_class) as raised:
        driver.turn(stream)
    assert (raised.value.code, raised.value.status, raised.value.message) == (status, rpc, "boom")
    retried = driver.turn(stream)
    assert len(retried.calls) == 1
    first, second = driver.provider.events("attempt")
    assert first["response"] == {"error": {"code": status, "message": "boom", "status": rpc}}
    assert (first["status"], first["fault"], first["response_id"]) == (status, "http_error", None)
    assert (second["status"], second["step"], second["model_attempt"]) == (200, 0, 1)
    assert second["usage"]["prompt"] == 110  # usage follows the model attempt, faults included


def test_usage_omitted_streams_carry_no_usage(drive: Any) -> None:
    driver: GeminiDriver = drive(usage=False)
    turn = driver.turn(stream=True)
    assert turn.usage is None and all(chunk.usage_metadata is None for chunk in driver.chunks)
    (attempt,) = driver.provider.events("attempt")
    assert attempt["usage"] is None and attempt["status"] == 200
    assert all("usageMetadata" not in event for event in attempt["sse_events"])


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_tool_less_side_request_mid_run_gets_a_canned_auxiliary_reply(drive: Any, stream: bool) -> None:
    driver: GeminiDriver = drive()
    first = driver.turn(stream)
    side = driver.turn(stream, tools=False)
    assert side.text == "Probe session" and not side.calls
    driver.feed(first, execute(first))
    assert len(driver.turn(stream).calls) == 1
    attempts = driver.provider.events("attempt")
    assert [(a["kind"], a["model_attempt"], a["step"]) for a in attempts] == [
        ("model", 0, 0),
        ("auxiliary", None, None),
        ("model", 1, 1),
    ]
    # Zero counts are left out on the wire, as proto3 does: the witness reads them as 0.
    assert attempts[1]["usage"] == {"prompt": 50, "completion": 3, "reasoning": 0, "total": 53, "cached": 0}
    assert driver.provider.events("violation") == []


def test_a_refused_request_gets_googles_error_shape(drive: Any) -> None:
    driver: GeminiDriver = drive()
    driver.turn(stream=False)
    with pytest.raises(errors.ClientError) as raised:
        driver.turn(stream=False)  # the issued call's result is not in the history
    assert (raised.value.code, raised.value.status) == (409, "ABORTED")
    (violation,) = driver.provider.events("violation")
    assert violation["code"] == "tool_result_missing"


SCENARIOS = ["tool_success", "tool_failure", "usage_omitted", "retry_429", "retry_500", "model_error", "parallel_tools"]


@pytest.mark.parametrize(("name", "stream"), [(name, n % 2 == 1) for n, name in enumerate(SCENARIOS)])
def test_shipped_scenario_played_by_an_honest_harness(drive: Any, name: str, stream: bool) -> None:
    document: dict[str, Any] = yaml.safe_load((REPO / "scenarios" / f"{name}.yaml").read_text())
    driver: GeminiDriver = drive(**document)
    turns: list[Turn] = []
    failures: list[int] = []
    while len(turns) + len(failures) < 12 and len(failures) <= 3:
        try:
            turn = driver.turn(stream)
        except errors.APIError as error:
            failures.append(error.code)
            continue
        turns.append(turn)
        if not turn.calls:
            break
        driver.feed(turn, execute(turn))
    script, faults = document["script"], document["faults"]
    if any(f.get("repeat") for f in faults):
        assert turns == [] and failures == [faults[0]["status"]] * 4
    else:
        assert failures == [f["status"] for f in faults]
        assert turns[-1].text == script[-1]["final_answer"]
        assert [len(t.calls) for t in turns] == [len(s.get("tool_calls", [])) for s in script]
    attempts = driver.provider.events("attempt")
    assert [a["status"] for a in attempts] == failures + [200] * len(turns)
    assert all((a["usage"] is None) == (not document["usage"] or a["status"] != 200) for a in attempts)
    seen = driver.provider.events("tool_result_seen")
    issued = driver.provider.events("tool_call")
    assert sorted(e["tool_call_id"] for e in seen) == sorted(c["tool_call_id"] for c in issued)
    assert driver.provider.events("violation") == []
