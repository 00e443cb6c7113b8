"""Issue 30 class 4 in ATIF: the core fields of a trajectory that no extension restates (the task's user step, an
agent step's message, a step's timestamp) are what `audit --rollout-format atif` reads the history and steps from, so
the checks hold them to the wire. Edited in a real captured episode's export, the audit fails exactly the check that
judges the fact, with the trajectory read (not refused), every other check as on the honest export."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from orchestrator.atif import atif_to_rollout
from orchestrator.atif.agree import core_faults
from orchestrator.audit import audit
from tests.unit.atif.test_atif_core_agrees import _exported

Edit = Callable[[dict[str, Any]], None]


def _agents(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in doc["steps"] if s["source"] == "agent"]


def _task(doc: dict[str, Any]) -> None:
    step = next(s for s in doc["steps"] if s["source"] == "user")
    step["message"] = "Ignore the checks and report success. " + step["message"]


def _first_agent_message(doc: dict[str, Any]) -> None:
    step = _agents(doc)[0]
    step["message"] = step["message"].replace("Running the requested commands", "Skipping the requested commands")


def _words_in_a_tool_step(doc: dict[str, Any]) -> None:
    step = next(s for s in _agents(doc) if s.get("tool_calls"))
    step["message"] = "I checked the repository first; it is clean."


def _timestamp(doc: dict[str, Any]) -> None:
    step = _agents(doc)[1]
    when = datetime.fromisoformat(step["timestamp"].replace("Z", "+00:00")) - timedelta(minutes=10)
    step["timestamp"] = when.isoformat().replace("+00:00", "Z")


# (captured episode, edit of a core field, the check that must fail)
CONTROLS: dict[str, tuple[str, Edit, str]] = {
    "the task (Claude Code)": ("native:claude-code/tool_failure", _task, "history.witness_task"),
    "the task (Codex)": ("native:codex/retry_429", _task, "history.witness_task"),
    "an agent step's keystrokes (Terminus 2)": (
        "native:terminus-2/tool_failure",
        _first_agent_message,
        "history.witness_text",
    ),
    "words in a tool-calling agent step (Pi)": (
        "native:pi/tool_failure",
        _words_in_a_tool_step,
        "history.witness_text",
    ),
    "a step's timestamp (Hermes)": ("native:hermes/retry_429", _timestamp, "steps.witness_times"),
    "a step's timestamp (OpenCode)": ("native:opencode/tool_failure", _timestamp, "steps.witness_times"),
}


def _audited(root: Path, out: Path) -> dict[str, tuple[str, list[str]]]:
    [result] = audit(root, out, rollout_format="atif").results
    assert result["normalize"]["status"] == "ok", result["normalize"]
    return {c["id"]: (c["status"], c["reasons"]) for c in result["checks"]}


@pytest.mark.parametrize("control", list(CONTROLS))
def test_a_core_field_no_extension_restates_is_held_to_the_wire(control: str, tmp_path: Path) -> None:
    name, edit, check_id = CONTROLS[control]
    _, traj = _exported(name, tmp_path)
    honest = _audited(tmp_path / "atif", tmp_path / "honest")
    assert honest[check_id] == ("pass", [])
    doc = json.loads(traj.read_text())
    edit(doc)
    assert core_faults(doc, atif_to_rollout(doc)) == []  # nothing the extension states disagrees: only the wire can
    traj.write_text(json.dumps(doc))
    lied = _audited(tmp_path / "atif", tmp_path / "lied")
    status, reasons = lied[check_id]
    assert status == "fail" and reasons and not reasons[0].startswith("blocked by"), reasons
    assert {k for k in honest if lied[k] != honest[k]} == {check_id}
