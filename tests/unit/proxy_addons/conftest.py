"""Fixtures driving the scripted-provider addon in-process through mitmproxy's test helpers."""

from __future__ import annotations

import json
import subprocess
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

# mitmproxy's import chain (proxyauth -> ldap3 -> pyasn1) warns about pyasn1 renames; the project
# turns warnings into errors, and that one is neither ours nor actionable here.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import mitmproxy.addons  # noqa: F401

from mitmproxy import http
from mitmproxy.test import taddons, tflow

from proxy_addons.provider import ScriptedProvider

REPO = Path(__file__).resolve().parents[3]
WITNESS_SCHEMA_PATH = REPO / "orchestrator" / "evidence" / "schemas" / "probe-witness.v1.json"
TOOL_SUCCESS_YAML = REPO / "scenarios" / "tool_success.yaml"

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
            "required": ["command"],
        },
    },
}
READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}


def tool_success_scenario() -> dict[str, Any]:
    """scenarios/tool_success.yaml as the orchestrator hands it to the proxy (JSON, defaults filled)."""
    document: dict[str, Any] = yaml.safe_load(TOOL_SUCCESS_YAML.read_text())
    document.setdefault("overrides", {})
    return document


def witness_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(WITNESS_SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_valid_witness(path: Path) -> list[dict[str, Any]]:
    """Every line validates against the witness schema; seq is gap-free; timestamps are UTC `Z`."""
    validator = witness_validator()
    events = read_events(path)
    for index, event in enumerate(events):
        errors = sorted(validator.iter_errors(event), key=lambda e: list(e.path))
        assert not errors, f"line {index} ({event.get('event')}) invalid: {[e.message for e in errors][:3]}"
        assert event["seq"] == index
        assert event["at"].endswith("Z")
    return events


def run_command(command: str | list[str]) -> subprocess.CompletedProcess[str]:
    """Execute a scripted command the way a harness's shell tool would."""
    argv = command if isinstance(command, list) else ["bash", "-lc", command]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)


@dataclass
class Provider:
    """One configured addon plus helpers to talk to it like a harness would."""

    addon: ScriptedProvider
    witness: Path
    markers: Path
    scenario_path: Path
    context: taddons.context | None = None

    def send(
        self,
        method: str,
        path: str,
        body: object = None,
        headers: dict[str, str] | None = None,
    ) -> http.HTTPFlow:
        if body is None:
            content = b""
        elif isinstance(body, bytes):
            content = body
        else:
            content = json.dumps(body).encode()
        all_headers = {"content-type": "application/json", **(headers or {})}
        request = http.Request.make(method, f"http://provider:8080{path}", content, all_headers)
        flow = tflow.tflow(req=request)
        self.addon.request(flow)
        return flow

    def chat(self, body: object, headers: dict[str, str] | None = None) -> http.HTTPFlow:
        return self.send("POST", "/v1/chat/completions", body, headers)

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        events = read_events(self.witness)
        return [e for e in events if kind is None or e["event"] == kind]


def chat_body(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "model": "probe-model",
        "messages": messages,
        "tools": [BASH_TOOL] if tools is None else tools,
        **extra,
    }


def response_json(flow: http.HTTPFlow) -> dict[str, Any]:
    assert flow.response is not None
    return json.loads(flow.response.content or b"")  # type: ignore[no-any-return]


def execute_tool_calls(provider: Provider, reply: dict[str, Any]) -> list[dict[str, Any]]:
    """Run every tool call of a chat reply for real and return the history messages a harness appends."""
    message = reply["choices"][0]["message"]
    history: list[dict[str, Any]] = [message]
    for call in message["tool_calls"]:
        arguments = json.loads(call["function"]["arguments"])
        command = arguments.get("command", arguments.get("cmd"))
        result = run_command(command)
        history.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": f"{result.stdout}\n[exit code {result.returncode}]",
            }
        )
    return history


MakeProvider = Callable[..., Provider]


@pytest.fixture
def make_provider(tmp_path: Path) -> Iterator[MakeProvider]:
    """Build a configured addon for a scenario (tool_success with overrides by default).

    On teardown the addon's `done` hook runs and the whole witness must validate, so every test
    also checks the witness format.
    """
    created: list[tuple[taddons.context, Provider]] = []

    def factory(scenario: dict[str, Any] | None = None, **overrides: Any) -> Provider:
        document = scenario if scenario is not None else tool_success_scenario()
        document = {**document, **overrides}
        index = len(created)
        scenario_path = tmp_path / f"scenario{index}.json"
        scenario_path.write_text(json.dumps(document))
        witness = tmp_path / f"witness{index}.jsonl"
        markers = tmp_path / f"markers{index}"
        addon = ScriptedProvider()
        context = taddons.context(addon)
        context.configure(
            addon,
            probe_scenario=str(scenario_path),
            probe_witness=str(witness),
            probe_markers=str(markers),
        )
        provider = Provider(addon, witness, markers, scenario_path, context)
        created.append((context, provider))
        return provider

    yield factory
    for context, provider in created:
        if provider.addon.interpreter is not None:
            provider.addon.done()
        with context:
            pass
        events = assert_valid_witness(provider.witness)
        assert events[0]["event"] == "start"
