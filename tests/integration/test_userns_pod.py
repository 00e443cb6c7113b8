"""The pod as the Apptainer backend makes it, for real, without Apptainer: one user + network namespace (the
holder), the real proxy (mitmproxy 12.3.1 with our addon, the proxy image's pin and entry point) and the real
reference agent entering it with `nsenter`, each in its own mount namespace. What must hold: only loopback,
`provider` and the proxy's DNS on 127.0.0.1, every other name witnessed, no route out, and the witness unreachable
from the harness. Apptainer adds the images' root filesystems on top of this; the shipped workflow runs that
part."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.runtime.apptainer_cmd import holder_command, join_command
from orchestrator.runtime.discover import user_namespaces_reason
from orchestrator.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("unshare") is None or shutil.which("nsenter") is None
    or user_namespaces_reason() is not None or not (VENV_BIN / "mitmdump").exists(),
    reason="needs Linux user namespaces, util-linux unshare/nsenter and mitmdump in the test venv",
)  # fmt: skip


@pytest.fixture
def holder() -> Iterator[int]:
    proc = subprocess.Popen(holder_command(sys.executable), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "pod-ready"
        # `unshare --fork` runs the Python holder as its child; that child is inside the namespaces.
        child = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
        yield child
    finally:
        # unshare --kill-child takes the holder (and with it the namespaces) down when unshare itself dies.
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def in_pod(holder: int, mounts: str, command: list[str]) -> list[str]:
    """Join the pod, then in a mount namespace of this process's own: apply `mounts`, then exec the command."""
    script = f"set -e; {mounts} exec {shlex.join(command)}"
    return [*join_command(holder), "unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def test_loopback_pod_runs_a_real_episode_and_hides_the_witness(holder: int, tmp_path: Path) -> None:
    scenario = load_scenario("tool_success")
    proxy_dir, shared = tmp_path / "proxy", tmp_path / "markers"
    home = tmp_path / "home"
    for d in (proxy_dir / "witness", shared, home / ".probe-reference"):
        d.mkdir(parents=True)
    (proxy_dir / "scenario.json").write_bytes(scenario.provider_json())
    # The proxy answers `provider` with its own address, which it finds by its host name.
    (tmp_path / "hosts").write_text(f"127.0.0.1 localhost provider {socket.gethostname()}\n")
    (tmp_path / "resolv.conf").write_text("nameserver 127.0.0.1\n")
    etc = f"mount --bind {tmp_path / 'hosts'} /etc/hosts; mount --bind {tmp_path / 'resolv.conf'} /etc/resolv.conf;"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": str(home), "PYTHONUNBUFFERED": "1"}
    proxy_cmd = [
        # As the proxy image starts it (images/proxy/Dockerfile): our entry point, from PYTHONPATH.
        str(VENV_BIN / "python"), "-P", "-m", "proxy_addons.serve",
        "--mode", "reverse:http://upstream.invalid/@8080", "--mode", "dns@53",
        "--set", "connection_strategy=lazy", "--set", "flow_detail=0",
        "--set", f"probe_scenario={proxy_dir / 'scenario.json'}",
        "--set", f"probe_witness={proxy_dir / 'witness' / 'witness.jsonl'}",
        "--set", f"probe_markers={shared}",
    ]  # fmt: skip
    proxy_log = (tmp_path / "proxy.log").open("w+")
    proxy = subprocess.Popen(in_pod(holder, etc, proxy_cmd), stdout=proxy_log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while b"DNS server listening at" not in Path(proxy_log.name).read_bytes():
            assert proxy.poll() is None and time.monotonic() < deadline, Path(proxy_log.name).read_text()
            time.sleep(0.2)
        # The harness's view: the proxy's files are covered by an empty tmpfs in its own mount namespace.
        hide = f"{etc} mount -t tmpfs -o size=1m none {proxy_dir};"
        harness_env = {
            **env,
            "PYTHONPATH": str(ROOT / "images" / "reference"),
            "OPENAI_BASE_URL": "http://provider:8080/v1",
            "OPENAI_API_KEY": "sk-probe",
        }
        agent = [
            sys.executable, "-m", "probe_reference", "--task", scenario.task, "--task-id", scenario.name,
            "--model", scenario.model, "--rollout", str(home / ".probe-reference" / "rollout.json"),
            "--mode", "honest", "--protocol", "chat", "--timeout", "15",
        ]  # fmt: skip
        run = subprocess.run(in_pod(holder, hide, agent), env=harness_env, capture_output=True, timeout=120)
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        probe = (
            "import os, socket\n"
            f"print('witness', os.listdir({str(proxy_dir)!r}))\n"
            "print('ifaces', socket.if_nameindex())\n"
            "for addr in ('192.0.2.1', '169.254.169.254'):\n"
            "    try:\n"
            "        socket.create_connection((addr, 80), timeout=3); print('connected', addr)\n"
            "    except OSError as e:\n"
            "        print('refused', addr, e.errno)\n"
            "try:\n"
            "    socket.getaddrinfo('telemetry.example.com', 443); print('resolved')\n"
            "except socket.gaierror:\n"
            "    print('nxdomain')\n"
            "print('provider', socket.gethostbyname('provider'))\n"
        )
        seen = subprocess.run(in_pod(holder, hide, [sys.executable, "-c", probe]), capture_output=True, timeout=60)
        out = seen.stdout.decode()
        assert seen.returncode == 0, seen.stderr.decode()
    finally:
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(20)
        proxy_log.close()
    assert "witness []" in out  # the harness side sees an empty directory where the witness is
    assert "ifaces [(1, 'lo')]" in out
    assert "refused 192.0.2.1 101" in out and "refused 169.254.169.254 101" in out  # ENETUNREACH: no route
    assert "nxdomain" in out and "provider 127.0.0.1" in out
    events = [json.loads(line) for line in (proxy_dir / "witness" / "witness.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("attempt") >= 2 and kinds[-1] == "end"
    assert any(e["event"] == "egress" and "telemetry.example.com" in json.dumps(e) for e in events)
    assert any(e["event"] == "marker" and e.get("present") for e in events)
    rollout = json.loads((home / ".probe-reference" / "rollout.json").read_text())
    assert rollout["outcome"]["final_answer"] == scenario.final_answer()
