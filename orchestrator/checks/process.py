"""Process status, kept apart from the artifacts: the harness's exit status against how its episode really ended."""

from __future__ import annotations

from orchestrator.checks.attempts import witness_key
from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


@check(
    "process.exit_status",
    kind=Kind.PROCESS,
    tier="P1",
    # No E label: the evidence labels grade artifacts, and exit status must never count for or against them.
    evidence=(),
    location="$.execution.exit_code",
    needs=("witness", "execution"),
    # Only a harness that exited on its own has an exit status to judge: a timeout or a scenario deadline is
    # reported as the execution status, never read as an exit code.
    scope=("exited",),
)
def exit_status(ev: Evidence) -> list[str]:
    """After a terminal provider error (per the witness) the harness exits non-zero; after completing, it exits 0."""
    assert ev.execution is not None
    code = ev.execution["exit_code"]
    if ev.w.final_reply() is not None:
        if code != 0:
            return [f"exited with code {code} although it received its final answer (the episode completed)"]
        return []
    model = ev.w.attempts("model")
    if model and witness_key(model[-1])[0] != "ok":
        last = model[-1]
        if code == 0:
            what = (
                f"HTTP {last.get('status')}"
                if witness_key(last)[0] == "error"
                else f"a 200 no client can use ({last.get('fault')})"
                if last.get("ended") == "complete"
                else f"ended {last.get('ended')}"
            )
            return [
                f"exited with code 0 although its last model attempt failed ({what}) and no reply followed: "
                "a terminal error reported as a success"
            ]
    return []
