"""The pod: the harness's only network is the proxy's loopback; nothing else on it answers or is reached."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from orchestrator.episode import WITNESS_DIR, WITNESS_TMPFS
from orchestrator.runtime import ContainerSpec, Engine, PodSpec, create_labels
from orchestrator.runtime.collect import Collection
from orchestrator.scenarios import load_scenario
from tests.integration.conftest import Images, labelled

pytestmark = pytest.mark.docker

# Runs inside the harness container. Only loopback exists, so a connect elsewhere must fail at once (no route);
# nothing is ever sent anywhere but loopback. Every LISTEN socket of the namespace is listed (it is the proxy's).
_PROBE = r"""
import json, os, socket, sys, time
def dial(host, port):
    t0 = time.monotonic()
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "open", time.monotonic() - t0
    except OSError as exc:
        return type(exc).__name__ + ":" + str(exc.errno), time.monotonic() - t0
def listening():
    ports = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(name).read().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A":
                ports.add(int(f[1].rsplit(":", 1)[1], 16))
    return sorted(ports)
def foreign_request(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-probe-plan: " + b"0" * 32 +
              b"\r\ncontent-length: 5\r\n\r\nhello")
    s.settimeout(15)
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except OSError as exc:
        data += ("<" + type(exc).__name__ + ">").encode()
    return data.decode("latin-1")
out = {"interfaces": sorted(os.listdir("/sys/class/net")), "provider": dial("provider", 8080)[0]}
out["targets"] = {f"{h}:{p}": dial(h, p) for h in sys.argv[1:] for p in (22, 80, 2375)}
out["listening"] = listening()
out["responder"] = {p: foreign_request(p) for p in out["listening"] if p not in (53, 8080)}
try:
    out["dns"] = socket.gethostbyname("example.com")
except OSError as exc:
    out["dns"] = type(exc).__name__
print(json.dumps(out))
"""


def host_addresses(engine: Engine) -> list[str]:
    """The engine's bridge gateway, every IPv4 address of this host, the metadata address, a public one."""
    addrs = {"169.254.169.254", "1.1.1.1"}
    bridge = engine.client.networks.get("bridge").attrs
    addrs.update(c["Gateway"] for c in bridge["IPAM"]["Config"] if "Gateway" in c)
    try:
        out = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        out = ""
    for line in out.splitlines():
        addr = line.split()[3].split("/")[0]
        if not addr.startswith("127."):
            addrs.add(addr)
    return sorted(addrs)


def proxy_spec(images: Images, name: str, labels: dict[str, str], scenario_json: bytes) -> ContainerSpec:
    return ContainerSpec(
        image=images.proxy.tag,
        name=f"{name}-proxy",
        command=["--set", "probe_scenario=/probe/scenario/scenario.json", "--set",
                 "probe_witness=/probe/witness/witness.jsonl"],
        files={"/probe/scenario/scenario.json": scenario_json},
        files_base="/probe/scenario",
        labels=labels,
        sysctls={"net.ipv4.ip_unprivileged_port_start": "0"},
    )  # fmt: skip


def test_harness_reaches_only_the_provider(engine: Engine, images: Images, tmp_path: Path) -> None:
    run_id = f"isolation-{uuid.uuid4().hex[:6]}"
    labels = create_labels(run_id)
    targets = host_addresses(engine)
    spec = PodSpec(
        name=run_id,
        labels=labels,
        proxy=proxy_spec(images, run_id, labels, load_scenario("tool_success").provider_json()),
        harness=ContainerSpec(
            image=images.reference.tag,
            name=f"{run_id}-harness",
            command=["python3", "-c", _PROBE, *targets],
            user="probe",
            labels=labels,
        ),
        shared="/probe/markers",
        writable={"/home/probe": "64m", "/tmp": "64m"},
        proxy_writable={WITNESS_DIR: WITNESS_TMPFS},
        ready_log=b"DNS server listening at",
    )
    with engine.pod(spec) as pod:
        pod.harness.start()
        assert pod.harness.wait(120) == 0, pod.harness.logs().decode(errors="replace")
        out = json.loads(pod.harness.logs().decode().strip().splitlines()[-1])
        limits = pod.limits()
        pod.proxy.stop(10)
        pod.proxy.copy_out("/probe/witness/witness.jsonl", tmp_path, Collection())
    assert out["interfaces"] == ["lo"]
    assert out["provider"] == "open"
    for target, (result, seconds) in out["targets"].items():
        # ENETUNREACH (101): refused by the kernel at once, not filtered somewhere after a packet left.
        assert result == "OSError:101", f"{target}: {result}"
        assert seconds < 1.0, f"{target} took {seconds:.2f}s"
    # mitmproxy listens on 8080 (and DNS on UDP 53); the only other listener is the streaming responder.
    assert 8080 in out["listening"]
    assert len(out["responder"]) == 1, out["listening"]
    assert list(out["responder"].values()) == [""], "the responder answered a request without a live plan token"
    assert out["dns"] == "gaierror"
    assert limits["harness"]["read_only_rootfs"] is True
    assert limits["harness"]["network"] == "container:proxy"
    assert limits["proxy"]["network"] == "none"
    assert limits["harness"]["memory_swap_bytes"] == limits["harness"]["memory_bytes"]
    events = [json.loads(line) for line in (tmp_path / "witness.jsonl").read_text().splitlines()]
    assert ("example.com", "A") in {(e["target"], e["detail"]) for e in events if e["event"] == "egress"}
    assert events[-1]["event"] == "end", "the proxy did not survive the foreign requests to its responder"
    for kind in ("ps", "network", "volume"):
        assert labelled(kind, run_id) == []
