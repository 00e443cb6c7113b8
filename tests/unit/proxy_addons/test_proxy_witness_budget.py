"""The witness byte budget (bodies past it kept as size and sha256, noted once) and the body limit refusing early."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import exceptions

from proxy_addons.witness import BUDGET_VIOLATION, WitnessRecorder
from tests.unit.proxy_addons.conftest import (
    REPO,
    MakeProvider,
    Mitmdump,
    assert_valid_witness,
    ca_confdir,
    chat_body,
    execute_tool_calls,
    read_events,
    response_json,
    tool_success_scenario,
    wait_listening,
)

BODY = b"x" * 1000


def _attempt(n: int, request: Any) -> dict[str, Any]:
    return {"attempt_id": f"attempt-{n}", "request": request}


def test_bodies_are_whole_until_a_line_would_pass_the_budget(tmp_path: Path) -> None:
    recorder = WitnessRecorder(tmp_path / "w.jsonl", budget=3000)
    recorder.write("start", {"scenario": "s", "addon_version": "0"})
    recorder.write("attempt", _attempt(0, "x" * 1000), bodies={"request": BODY})
    assert not recorder.budget_reached
    over = recorder.write("attempt", _attempt(1, "y" * 2000), bodies={"request": b"y" * 2000})
    small = recorder.write("attempt", _attempt(2, "z"), bodies={"request": b"z"})
    recorder.write("end", {"attempts": 3, "finished": False})
    recorder.close()
    events = read_events(tmp_path / "w.jsonl")
    assert [e["event"] for e in events] == ["start", "attempt", "violation", "attempt", "attempt", "end"]
    assert [e["seq"] for e in events] == list(range(6))
    assert events[1]["request"] == "x" * 1000 and "request_withheld" not in events[1]
    (note,) = [e for e in events if e["event"] == "violation"]
    assert note["code"] == BUDGET_VIOLATION and note["attempt_id"] == "attempt-1" and "3000 bytes" in note["detail"]
    # Past the budget every body is withheld, a small one too: the witness then says nothing in part.
    for event, raw in ((events[3], b"y" * 2000), (events[4], b"z")):
        assert event["request"] is None
        assert event["request_withheld"] == {"size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    assert over == events[3] and small == events[4]
    assert recorder.bytes_written == (tmp_path / "w.jsonl").stat().st_size


def test_events_without_bodies_and_null_bodies_are_never_changed(tmp_path: Path) -> None:
    recorder = WitnessRecorder(tmp_path / "w.jsonl", budget=10)
    recorder.write("egress", {"kind": "dns", "target": "example.com", "detail": "A"})
    recorder.write("attempt", _attempt(0, None), bodies={"request": b"not json"})
    recorder.close()
    events = read_events(tmp_path / "w.jsonl")
    assert not recorder.budget_reached
    assert [e["event"] for e in events] == ["egress", "attempt"] and "request_withheld" not in events[1]


def test_no_budget_keeps_every_body(tmp_path: Path) -> None:
    recorder = WitnessRecorder(tmp_path / "w.jsonl", budget=None)
    for n in range(5):
        recorder.write("attempt", _attempt(n, "x" * 100_000), bodies={"request": b"x" * 100_000})
    recorder.close()
    assert not recorder.budget_reached
    assert all(e["request"] == "x" * 100_000 for e in read_events(tmp_path / "w.jsonl"))


def test_a_restarted_witness_counts_its_earlier_lines(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    first = WitnessRecorder(path, budget=2500)
    first.write("attempt", _attempt(0, "x" * 2000), bodies={"request": b"x" * 2000})
    first.close()
    again = WitnessRecorder(path, budget=2500)
    again.write("attempt", _attempt(1, "y" * 1000), bodies={"request": b"y" * 1000})
    again.close()
    assert again.budget_reached and read_events(path)[-1]["request"] is None


def test_the_interpreter_withholds_requests_and_results_past_the_budget(make_provider: MakeProvider) -> None:
    provider = make_provider()
    assert provider.context is not None
    provider.context.configure(provider.addon, probe_witness_budget=4000)
    task = [{"role": "user", "content": "Run the check. " + "p" * 5000}]
    reply = response_json(provider.chat(chat_body(task)))
    history = task + execute_tool_calls(provider, reply)
    provider.chat(chat_body(history))
    attempts = provider.events("attempt")
    assert [a["request"] for a in attempts] == [None, None]
    assert all(a["request_withheld"]["size"] > 5000 for a in attempts)
    (seen,) = provider.events("tool_result_seen")
    output = history[-1]["content"]
    assert seen["output"] is None and seen["token_present"] is True
    assert seen["output_withheld"] == {
        "size": len(output.encode()),
        "sha256": hashlib.sha256(output.encode()).hexdigest(),
    }
    assert [v["code"] for v in provider.events("violation")] == [BUDGET_VIOLATION]


def test_a_negative_budget_is_refused(make_provider: MakeProvider) -> None:
    provider = make_provider()
    assert provider.context is not None
    with pytest.raises(exceptions.OptionsError, match="probe_witness_budget"):
        provider.context.configure(provider.addon, probe_witness_budget=-1)


def _start_limited(directory: Path) -> Mitmdump:
    """The proxy with the image's body limit (images/proxy/Dockerfile), on a random local port."""
    directory.mkdir(parents=True, exist_ok=True)
    scenario = directory / "scenario.json"
    scenario.write_text(json.dumps(tool_success_scenario()))
    log = directory / "mitmdump.log"
    witness = directory / "witness.jsonl"
    command = [
        sys.executable, "-m", "proxy_addons.serve",
        "--mode", "reverse:http://upstream.invalid/@0", "--listen-host", "127.0.0.1",
        "--set", "connection_strategy=lazy", "--set", f"confdir={ca_confdir()}", "--set", "body_size_limit=16m",
        "--set", f"probe_scenario={scenario}", "--set", f"probe_witness={witness}",
        "--set", f"probe_markers={directory / 'markers'}",
    ]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=directory,
            env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
        )
    try:
        return wait_listening(Mitmdump(process, 0, witness, directory / "markers", log))
    except BaseException:
        process.kill()
        process.wait()
        raise


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_huge_chunked_body_is_refused_while_it_arrives(tmp_path: Path) -> None:
    proxy = _start_limited(tmp_path / "proxy")
    try:
        before = _rss_kib(proxy.process.pid)
        peak = [before]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _rss_kib(proxy.process.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("transfer-encoding", "chunked")
        conn.endheaders()
        chunk = b"a" * (1 << 20)
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        sent = 0
        try:
            while sent < 256 * (1 << 20):  # 256 MiB offered; the proxy must stop reading at 16 MiB
                conn.send(frame)
                sent += len(chunk)
        except OSError:
            pass
        status = None
        with contextlib.suppress(OSError, http.client.HTTPException):
            status = conn.getresponse().status
        conn.close()
        done.set()
        sampler.join()
        assert sent < 256 * (1 << 20) or status == 413, (sent, status)
        # Never the body buffered whole: well under the 256 MiB offered (16 MiB buffered, plus mitmproxy's own).
        assert peak[0] - before < 96 * 1024, (before, peak[0])
        deadline = time.monotonic() + 10
        while not proxy.events("violation") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        events = proxy.stop()
    (violation,) = [e for e in events if e["event"] == "violation"]
    assert violation["code"] == "body_over_cap" and "size" not in violation
    (attempt,) = [e for e in events if e["event"] == "attempt"]
    assert attempt["kind"] == "rejected" and attempt["status"] == 413 and attempt["request"] is None
    assert violation["attempt_id"] == attempt["attempt_id"]
    assert_valid_witness(proxy.witness)
