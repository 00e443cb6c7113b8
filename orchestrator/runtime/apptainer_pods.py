"""What an Apptainer pod leaves on the host while it lives, and how a later run finds and ends it.

A pod is a work directory (`<work_root>/<pod name>-xxxx/`) holding `pod.json` (its labels and the holder's pid);
the holder owns the pod's namespaces, so killing it ends every process in the pod. This needs no Apptainer, so
`cleanup` works on a machine where Apptainer has since gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path

from orchestrator.runtime.spec import RUN_LABEL, Owner, live_owner

__all__ = ["HOLDER_MARK", "POD_FILE", "cleanup_apptainer_pods", "write_pod_file"]

POD_FILE = "pod.json"
HOLDER_MARK = (
    b"pod-ready"  # in the holder's command line (apptainer_cmd.LOOPBACK_UP): tells our holder from a reused pid
)


def write_pod_file(work: Path, labels: dict[str, str], holder_pid: int) -> None:
    (work / POD_FILE).write_text(json.dumps({"labels": labels, "holder": holder_pid}))


def _is_our_holder(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return cmdline[:1] == [b"unshare"] and HOLDER_MARK in b" ".join(cmdline)


def cleanup_apptainer_pods(work_root: Path, run_id: str | None, spared: dict[str, str] | None = None) -> dict[str, int]:
    """End the holders and remove the work directories of pods (all runs', or one run's); with `spared`, leave the
    pods whose owner process may still be alive and name their runs there."""
    here = Owner.this_process()
    removed = 0
    pod_files = sorted(work_root.glob(f"*/{POD_FILE}")) if work_root.is_dir() else []
    for pod_file in pod_files:
        try:
            info = json.loads(pod_file.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        labels = info.get("labels") if isinstance(info, dict) else None
        if run_id is not None and (not isinstance(labels, dict) or labels.get("harness-probe.run") != run_id):
            continue
        if spared is not None and isinstance(labels, dict) and (owner := live_owner(labels, here)) is not None:
            spared[str(labels.get(RUN_LABEL, "?"))] = owner
            continue
        pid = info.get("holder")
        if isinstance(pid, int) and _is_our_holder(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        shutil.rmtree(pod_file.parent, ignore_errors=True)
        removed += 1
    return {"pods": removed}
