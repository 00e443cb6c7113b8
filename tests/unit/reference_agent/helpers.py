"""Running the reference agent's CLI in-process and checking what it wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from probe_reference import __version__
from probe_reference.cli import main

ROOT = Path(__file__).resolve().parents[3]
REFERENCE_DIR = ROOT / "images" / "reference"  # put on sys.path by conftest.py
SCHEMA = json.loads((ROOT / "orchestrator/evidence/schemas/probe-rollout.v1.json").read_text())
NULL_TOKENS = {"prompt": None, "completion": None, "reasoning": None, "total": None, "cached": None}


def run_agent(base_url: str, tmp_path: Path, *extra: str, honest: bool = True) -> tuple[int, dict[str, Any]]:
    """Run the real CLI in-process; return its exit code and the rollout it wrote (schema-validated).

    `honest=False` (misreporting modes) checks the schema only, not the invariants an honest rollout keeps.
    """
    rollout_path = tmp_path / "state" / "rollout.json"
    argv = ["--task", "say hi", "--task-id", "t-1", "--base-url", base_url, "--api-key", "sk-test"]
    code = main([*argv, "--rollout", str(rollout_path), *extra])
    assert sorted(p.name for p in rollout_path.parent.iterdir()) == ["rollout.json"], "temporary file left"
    rollout: dict[str, Any] = json.loads(rollout_path.read_text())
    if honest:
        validate(rollout)
    else:
        validate_schema(rollout)
    return code, rollout


def validate_schema(rollout: dict[str, Any]) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in Draft202012Validator(SCHEMA).iter_errors(rollout)]
    assert not errors, errors


def validate(rollout: dict[str, Any]) -> None:
    """Schema validity plus the ownership invariants an honest rollout must satisfy (E8, E9)."""
    validate_schema(rollout)
    ids = [c["model_call_id"] for c in rollout["model_calls"]]
    assert len(ids) == len(set(ids))
    (invocation,) = rollout["invocations"]
    assert invocation["parent_invocation_id"] is None
    assert invocation["invocation_id"].startswith("inv-")
    assert invocation["model_call_refs"] == ids
    # Every call belongs to exactly one step, except a compaction's calls, which belong to none.
    helpers = [ref for c in rollout.get("compactions", []) for ref in c["model_call_refs"]]
    assert [ref for step in rollout["steps"] for ref in step["model_call_refs"]] == [i for i in ids if i not in helpers]
    assert [s["step_no"] for s in rollout["steps"]] == list(range(1, len(rollout["steps"]) + 1))
    protocols = {c["protocol"] for c in rollout["model_calls"]}
    assert len(protocols) <= 1, protocols
    for call in rollout["model_calls"]:
        assert call["invocation_id"] == invocation["invocation_id"]
        assert call["started_at"].endswith("Z") and call["completed_at"].endswith("Z")
        if call["error_category"] is None:
            assert call["response_id"] is not None and "error" not in call
        else:
            assert call["response_id"] is None and "error" in call
    assert rollout["gaps"] == []
    assert rollout["harness"] == {"name": "reference", "version": __version__}
    # Nothing in the rollout names the mode it was written in.
    assert "extensions" not in rollout
