"""E10 on the wire: the proxy is the harness's resolver; `provider` resolves, every other name is witnessed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from orchestrator.episode import WITNESS_DIR, WITNESS_TMPFS
from orchestrator.runtime import ContainerSpec, Engine, PodSpec, create_labels
from orchestrator.runtime.collect import Collection
from orchestrator.scenarios import load_scenario
from tests.integration.conftest import Images, labelled

pytestmark = pytest.mark.docker

_LOOKUPS = """
import socket
for name in ("provider", "telemetry.example.com"):
    try:
        print(name, socket.gethostbyname(name))
    except OSError as exc:
        print(name, type(exc).__name__)
"""


def test_lookups_of_other_names_are_refused_and_witnessed(engine: Engine, images: Images, tmp_path: Path) -> None:
    run_id = f"egress-{uuid.uuid4().hex[:6]}"
    labels = create_labels(run_id)
    scenario = load_scenario("tool_success")
    spec = PodSpec(
        name=run_id,
        labels=labels,
        proxy=ContainerSpec(
            image=images.proxy.tag,
            name=f"{run_id}-proxy",
            command=["--set", "probe_scenario=/probe/scenario/scenario.json", "--set",
                     "probe_witness=/probe/witness/witness.jsonl"],
            files={"/probe/scenario/scenario.json": scenario.provider_json()},
            files_base="/probe/scenario",
            labels=labels,
            sysctls={"net.ipv4.ip_unprivileged_port_start": "0"},
        ),
        harness=ContainerSpec(
            image=images.reference.tag,
            name=f"{run_id}-harness",
            command=["python3", "-c", _LOOKUPS],
            user="probe",
            labels=labels,
        ),
        shared="/probe/markers",
        proxy_writable={WITNESS_DIR: WITNESS_TMPFS},
        ready_log=b"DNS server listening at",
    )  # fmt: skip
    with engine.pod(spec) as pod:
        pod.harness.start()
        assert pod.harness.wait(60) == 0
        out = dict(line.split(" ", 1) for line in pod.harness.logs().decode().strip().splitlines())
        pod.proxy.stop(10)
        pod.proxy.copy_out("/probe/witness/witness.jsonl", tmp_path, Collection())
    assert out["provider"] == "127.0.0.1"
    assert out["telemetry.example.com"] == "gaierror"
    events = [json.loads(line) for line in (tmp_path / "witness.jsonl").read_text().splitlines()]
    egress = {(e["target"], e["detail"]) for e in events if e["event"] == "egress"}
    assert ("telemetry.example.com", "A") in egress
    assert not any(e["target"].startswith("provider") for e in events if e["event"] == "egress")
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == []
