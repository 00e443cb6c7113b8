"""The Apptainer backend's guards (Apptainer cannot be installed here): no host Apptainer setting reaches a pod, no
configured bind path is mounted, the work root and SIF cache are this user's alone, a SIF is trusted by what it
was built from and its digest, never its name; cgroup limits only where declared."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator.runtime import apptainer_cmd as a
from orchestrator.runtime.apptainer_guard import (
    UnsafePath,
    child_environment,
    private_folder,
    record_sif,
    verified_sif,
)
from orchestrator.runtime.settings import RuntimeSettings

ENTRY: dict[str, Any] = {
    "tag": "harness-probe/proxy:0123456789abcdef",
    "image_id": "sha256:" + "a" * 64,
    "sha256": "b" * 64,
}


def test_no_host_apptainer_setting_reaches_the_child() -> None:
    host = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "APPTAINER_BINDPATH": "/data",
        "APPTAINER_BIND": "/scratch:/scratch:rw",
        "SINGULARITY_BIND": "/x",
        "APPTAINERENV_SECRET": "s",
        "SINGULARITYENV_TOKEN": "t",
        "apptainer_no_mount": "none",
        "APPTAINER_NO_MOUNT": "",
    }
    assert child_environment(host) == {"PATH": "/usr/bin", "HOME": "/home/u"}


def test_exec_disables_the_administrators_bind_paths_hostfs_and_cwd() -> None:
    cmd = a.exec_command("apptainer", 7, a.ExecSpec(sif=Path("/c/h.sif"), command=["x"]))
    assert cmd[cmd.index("--no-mount") + 1] == "bind-paths,hostfs,cwd"
    for flag in ("--containall", "--cleanenv", "--no-home", "--no-privs"):
        assert flag in cmd
    # Limits only when asked for (cgroups delegated): the negative control is the spec without them.
    assert not {"--memory", "--cpus", "--pids-limit"} & set(cmd)
    limited = a.exec_command(
        "apptainer", 7, a.ExecSpec(sif=Path("/c/h.sif"), command=["x"], memory="2g", cpus=1.5, pids=512)
    )
    assert limited[limited.index("--memory") + 1] == "2g"
    assert limited[limited.index("--cpus") + 1] == "1.5"
    assert limited[limited.index("--pids-limit") + 1] == "512"
    assert limited.index("--pids-limit") < limited.index("/c/h.sif")


def test_the_default_work_root_is_per_user() -> None:
    assert RuntimeSettings.from_environ({}).apptainer_work.name == f"harness-probe-apptainer-{os.getuid()}"
    assert RuntimeSettings().apptainer_work.name == f"harness-probe-apptainer-{os.getuid()}"


def test_a_private_folder_is_made_0700_and_checked(tmp_path: Path) -> None:
    made = private_folder(tmp_path / "work")
    assert (os.stat(made).st_mode & 0o777) == 0o700
    assert private_folder(made) == made  # as found, still ours


@pytest.mark.parametrize("plant", ["link", "open", "file", "foreign"])
def test_a_work_root_not_ours_alone_is_refused(tmp_path: Path, plant: str) -> None:
    root = tmp_path / "work"
    if plant == "link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        root.symlink_to(tmp_path / "elsewhere")
    elif plant == "file":
        root.write_text("x")
    else:
        root.mkdir(mode=0o700)
        if plant == "open":
            os.chmod(root, 0o1777)  # a shared temp folder, as another user would have made it
        elif os.getuid() == 0:
            os.chown(root, 12345, 12345)
        else:
            pytest.skip("chown to another user needs root")
    with pytest.raises(UnsafePath, match="not used"):
        private_folder(root)


def _sif(tmp_path: Path) -> Path:
    cache = private_folder(tmp_path / "sif", others_may_read=True)
    sif = cache / "proxy-0123456789abcdef.sif"
    sif.write_bytes(b"SIF built from the archive")
    return sif


def test_a_sif_is_trusted_by_its_record_and_digest_not_its_name(tmp_path: Path) -> None:
    sif = _sif(tmp_path)
    assert not verified_sif(sif, ENTRY)  # planted by name alone: built again
    record_sif(sif, ENTRY)
    assert verified_sif(sif, ENTRY)  # the negative control: what we built ourselves
    assert not verified_sif(sif, {**ENTRY, "image_id": "sha256:" + "c" * 64})  # another image under that tag
    assert not verified_sif(sif, {**ENTRY, "sha256": "d" * 64})  # another archive
    sif.write_bytes(b"a forged proxy")
    assert not verified_sif(sif, ENTRY)  # swapped since it was built


def test_a_linked_sif_or_record_is_not_trusted(tmp_path: Path) -> None:
    sif = _sif(tmp_path)
    record_sif(sif, ENTRY)
    real = sif.with_name("real.sif")
    sif.rename(real)
    sif.symlink_to(real)
    assert not verified_sif(sif, ENTRY)


def test_cgroup_limits_are_asked_for_only_where_declared() -> None:
    assert not RuntimeSettings.from_environ({}).apptainer_cgroups
    assert RuntimeSettings.from_environ({"HARNESS_PROBE_APPTAINER_CGROUPS": "1"}).apptainer_cgroups
