"""The Lima templates in contrib/lima parse, use only keys Lima's own template knows, and forward the socket
`doctor` looks for. Lima itself cannot run here (no nested virtualization): this is what can be checked."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.runtime.discover import candidate_docker_sockets

LIMA = Path(__file__).resolve().parents[3] / "contrib" / "lima"
TEMPLATES = sorted(LIMA.glob("*.yaml"))

# Top-level keys of Lima's templates/default.yaml (lima-vm/lima @ 00d5b9fad31d67782135082aeba818ddcb21833c) and
# the `base`/`param` keys its templates use; a key outside this set is a typo Lima would refuse.
LIMA_KEYS = {
    "vmType", "arch", "images", "cpus", "memory", "disk", "mounts", "mountTypesUnsupported", "mountType",
    "mountInotify", "additionalDisks", "ssh", "caCerts", "upgradePackages", "containerd", "provision", "probes",
    "minimumLimaVersion", "vmOpts", "os", "cpuType", "rosetta", "timezone", "firmware", "audio", "video",
    "networks", "hostResolver", "portForwards", "copyToHost", "message", "env", "param", "propagateProxyEnv",
    "dns", "plain", "nestedVirtualization", "user", "guestInstallPrefix", "base", "portMonitors",
}  # fmt: skip
PROVISION_MODES = {"system", "user", "boot", "dependency", "ansible", "yq", "data"}


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def test_there_is_a_docker_and_an_apptainer_template() -> None:
    assert {p.name for p in TEMPLATES} == {"harness-probe-docker.yaml", "harness-probe-apptainer.yaml"}


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_template_uses_only_lima_keys(path: Path) -> None:
    data = load(path)
    assert set(data) <= LIMA_KEYS, set(data) - LIMA_KEYS
    assert data["minimumLimaVersion"] >= "1.1.0"
    assert any(str(b).startswith("template://_images/") for b in data["base"]), "no VM image"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_scripts_are_valid_bash(path: Path, tmp_path: Path) -> None:
    data = load(path)
    scripts = [p for p in data["provision"] if "script" in p] + list(data.get("probes", []))
    assert scripts
    for entry in data["provision"]:
        assert entry["mode"] in PROVISION_MODES, entry
    for entry in data.get("probes", []):
        assert entry.get("mode", "readiness") == "readiness"
    for i, entry in enumerate(scripts):
        script = entry["script"]
        assert script.startswith("#!"), "Lima runs scripts through their #! line"
        # Lima expands {{.User}} etc. before running; any value keeps the shell syntax, so check with one.
        f = tmp_path / f"s{i}.sh"
        f.write_text(script.replace("{{.User}}", "lima"))
        subprocess.run(["bash", "-n", str(f)], check=True)


def test_docker_template_forwards_the_socket_doctor_finds(tmp_path: Path) -> None:
    data = load(LIMA / "harness-probe-docker.yaml")
    forwards = data["portForwards"]
    assert {"guestSocket": "/var/run/docker.sock", "hostSocket": "{{.Dir}}/sock/docker.sock"} in forwards
    # {{.Dir}} is ~/.lima/<vm>: make that socket and check doctor's discovery offers it.
    import socket

    sock_dir = tmp_path / ".lima" / "hp" / "sock"
    sock_dir.mkdir(parents=True)
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock_dir / "docker.sock"))
        found = candidate_docker_sockets({"HOME": str(tmp_path)}, home=tmp_path)
    finally:
        s.close()
    assert f"unix://{sock_dir / 'docker.sock'}" in found


def test_apptainer_template_enables_user_namespaces() -> None:
    text = (LIMA / "harness-probe-apptainer.yaml").read_text()
    assert "apparmor_restrict_unprivileged_userns = 0" in text
    assert "unshare --user --map-root-user --net true" in text
