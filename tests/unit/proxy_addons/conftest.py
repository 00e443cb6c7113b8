"""Fixtures driving the scripted-provider addon in-process through mitmproxy's test helpers."""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
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
# Responses tools: Codex advertises its shell inside a namespace, others as plain function tools.
EXEC_PARAMETERS = {
    "type": "object",
    "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"}},
    "required": ["cmd"],
}
RESPONSES_EXEC_TOOL = {"type": "function", "name": "exec_command", "parameters": EXEC_PARAMETERS, "strict": False}
RESPONSES_NAMESPACE_TOOL = {
    "type": "namespace",
    "name": "functions",
    "description": "Built-in tools",
    "tools": [
        {"type": "function", "name": "write_stdin", "parameters": {"type": "object", "properties": {}}},
        {"type": "function", "name": "exec_command", "parameters": EXEC_PARAMETERS, "strict": False},
    ],
}
# Messages tools: Claude Code's Bash (timeout in ms, optional description) next to a server tool.
MESSAGES_BASH_TOOL = {
    "name": "Bash",
    "description": "Executes a bash command",
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"},
            "description": {"type": "string"},
        },
        "required": ["command"],
    },
}
MESSAGES_SERVER_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 1}
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
    argv = command if isinstance(command, list) else ["bash", "-c", command]
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

    def responses(self, body: object, headers: dict[str, str] | None = None) -> http.HTTPFlow:
        return self.send("POST", "/v1/responses", body, headers)

    def messages(self, body: object, headers: dict[str, str] | None = None) -> http.HTTPFlow:
        return self.send("POST", "/v1/messages?beta=true", body, {"anthropic-version": "2023-06-01", **(headers or {})})

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


def mock_transport(provider: Provider) -> httpx.MockTransport:
    """An httpx transport that hands each request to the addon's `request` hook, as mitmproxy would."""

    def handler(request: httpx.Request) -> httpx.Response:
        flow = provider.send(
            request.method, request.url.raw_path.decode(), request.read(), headers=dict(request.headers)
        )
        assert flow.response is not None, "timed replies need the real proxy (test_proxy_wire.py)"
        return httpx.Response(
            flow.response.status_code,
            headers=list(flow.response.headers.fields),
            content=flow.response.content,
        )

    return httpx.MockTransport(handler)


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


def wait_fsync_failed(provider: Provider, timeout: float = 10.0) -> None:
    """Wait until the witness's writer thread has failed an fsync (it runs behind the reply)."""
    assert provider.addon.interpreter is not None
    recorder = provider.addon.interpreter.recorder
    deadline = time.monotonic() + timeout
    while not recorder.broken:
        assert time.monotonic() < deadline, "the fsync never failed"
        time.sleep(0.005)


# -- the real proxy on the wire -------------------------------------------------------------------

LISTENING = re.compile(rb"reverse proxy to \S+ listening at \S*:(\d+)")


@dataclass
class Mitmdump:
    """The real proxy (mitmdump's master with the addon) started as the proxy image does, on a random local port."""

    process: subprocess.Popen[bytes]
    port: int
    witness: Path
    markers: Path
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [e for e in read_events(self.witness) if kind is None or e["event"] == kind]

    def wait_for_attempts(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The attempt events, once `count` are written (timed replies are witnessed when they end)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            attempts = self.events("attempt") if self.witness.exists() else []
            if len(attempts) >= count:
                return attempts
            time.sleep(0.02)
        raise AssertionError(f"only {len(self.events('attempt'))} attempt(s) witnessed, expected {count}")

    def stop(self) -> list[dict[str, Any]]:
        """Stop like `docker stop` would (SIGTERM), then check the whole witness."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        events = assert_valid_witness(self.witness)
        assert events[-1]["event"] == "end", self.log.read_text()[-2000:]
        return events


@functools.cache
def ca_confdir() -> Path:
    """One mitmproxy confdir with its certificate authority already made, for every mitmdump of this process.

    Without it each mitmdump makes the authority in ~/.mitmproxy when it finds none there: on a fresh machine the
    proxies a fixture starts together race, and one reads another's half-written key and exits at start-up. (The
    proxy image, likewise, makes its authority once, when it is built: images/proxy/Dockerfile.)
    """
    from mitmproxy.certs import CertStore

    confdir = Path(tempfile.mkdtemp(prefix="harness-probe-mitmproxy-ca-"))
    atexit.register(shutil.rmtree, confdir, ignore_errors=True)
    CertStore.from_store(confdir, "mitmproxy", 2048)
    return confdir


def start_mitmdump(directory: Path, scenario: dict[str, Any]) -> Mitmdump:
    """Launch the proxy's entry point with `scenario` (not waiting for it to listen: see `wait_listening`)."""
    directory.mkdir(parents=True, exist_ok=True)
    scenario_path = directory / "scenario.json"
    scenario_path.write_text(json.dumps(scenario))
    log = directory / "mitmdump.log"
    command = [
        sys.executable,
        "-m",
        "proxy_addons.serve",
        "--mode",
        "reverse:http://upstream.invalid/@0",
        "--set",
        "connection_strategy=lazy",
        "--listen-host",
        "127.0.0.1",
        "--set",
        f"probe_scenario={scenario_path}",
        "--set",
        f"probe_witness={directory / 'witness.jsonl'}",
        "--set",
        f"probe_markers={directory / 'markers'}",
        "--set",
        f"confdir={ca_confdir()}",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=directory)
    return Mitmdump(process, 0, directory / "witness.jsonl", directory / "markers", log)


def wait_listening(proxy: Mitmdump, timeout: float = 20.0) -> Mitmdump:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = LISTENING.search(proxy.log.read_bytes())
        if found and b"streaming responder listening" in proxy.log.read_bytes():
            proxy.port = int(found.group(1))
            return proxy
        if proxy.process.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"mitmdump did not start: {proxy.log.read_text()[-2000:]}")
