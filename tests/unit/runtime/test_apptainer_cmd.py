"""The Apptainer backend's commands, as it would run them (Apptainer itself cannot be installed here; the shipped
workflow runs it for real on a GitHub runner)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from orchestrator.runtime import apptainer_cmd as a


def test_sif_is_cached_by_the_content_hash_tag() -> None:
    assert a.sif_name("harness-probe/proxy:0123456789abcdef") == "proxy-0123456789abcdef.sif"
    with pytest.raises(ValueError, match="not a content-hash tag"):
        a.sif_name("docker.io/library/alpine:latest")


def test_sif_builds_from_a_docker_archive() -> None:
    cmd = a.build_sif_command("apptainer", Path("/c/proxy.tar"), Path("/c/proxy.sif"))
    assert cmd == ["apptainer", "build", "--force", "/c/proxy.sif", "docker-archive:///c/proxy.tar"]


def test_exec_joins_the_holder_and_is_hardened(tmp_path: Path) -> None:
    spec = a.ExecSpec(
        sif=Path("/c/harness.sif"),
        command=["probe-agent", "--task", "say hi"],
        binds=[a.Bind(tmp_path / "markers", "/probe/markers", read_only=False)],
        env_file=tmp_path / "env",
        workdir="/work",
    )
    cmd = a.exec_command("apptainer", 4242, spec)
    assert cmd[:6] == ["nsenter", "--target=4242", "--user", "--net", "--preserve-credentials", "--"]
    assert cmd[6:8] == ["apptainer", "run"]  # the image's entrypoint, as Docker would start it
    flags = cmd[6:]
    for flag in ("--containall", "--cleanenv", "--no-home", "--no-privs", "--writable-tmpfs"):
        assert flag in flags
    assert f"{tmp_path / 'markers'}:/probe/markers:rw" in flags
    assert flags[flags.index("--env-file") + 1] == str(tmp_path / "env")
    assert cmd[-4:] == ["/c/harness.sif", "probe-agent", "--task", "say hi"]


def test_proxy_sees_the_markers_read_only() -> None:
    assert a.Bind(Path("/run/m"), "/probe/markers").arg() == "/run/m:/probe/markers:ro"


@pytest.mark.parametrize("bad", ["/a:b", "/a,b"])
def test_bind_paths_that_apptainer_would_split_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="may not contain"):
        a.Bind(Path(bad), "/x").arg()


def test_env_file_keeps_every_value_whole(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://provider:8080/v1", "ODD": "a,b c'$(x)\"", "EMPTY": ""}
    text = a.env_file_text(env)
    # Apptainer reads the file with a shell interpreter: a real shell gives back each value exactly.
    f = tmp_path / "env"
    f.write_text(text)
    for key, value in env.items():
        out = subprocess.run(["sh", "-c", f'. {shlex.quote(str(f))}; printf %s "${key}"'], capture_output=True)
        assert out.stdout.decode() == value
    with pytest.raises(ValueError, match="not an environment variable name"):
        a.env_file_text({"BAD-NAME": "x"})


def test_holder_brings_loopback_up_in_a_new_user_and_network_namespace() -> None:
    cmd = a.holder_command("/usr/bin/python3")
    assert cmd[:6] == ["unshare", "--user", "--map-root-user", "--net", "--fork", "--kill-child"]
    assert cmd[6:8] == ["/usr/bin/python3", "-c"]
    compile(cmd[8], "<holder>", "exec")


def test_a_spec_with_its_own_entrypoint_is_exec() -> None:
    spec = a.ExecSpec(sif=Path("/c/x.sif"), command=["/bin/true"], use_entrypoint=False)
    assert a.exec_command("apptainer", 1, spec)[6:8] == ["apptainer", "exec"]
