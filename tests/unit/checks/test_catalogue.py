"""The catalogue: every check has a question and a lie, every label its checks, and docs/evidence.md is generated."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from orchestrator.checks import REGISTRY
from orchestrator.checks.catalogue import LABELS, LIES, checks_of, explain, near
from orchestrator.cli import app
from orchestrator.report.evidence_doc import question, render_evidence_doc

ROOT = Path(__file__).resolve().parents[3]


def test_every_registered_check_has_a_question_and_a_lie() -> None:
    assert set(LIES) == set(REGISTRY), "a check without a lie, or a lie for no check"
    for c in REGISTRY.values():
        assert question(c.description), f"{c.id} has no question (docstring)"
        assert LIES[c.id].strip(), f"{c.id} has an empty lie"


def test_every_label_maps_to_checks_and_every_check_label_is_defined() -> None:
    ids = [label.id for label in LABELS]
    assert ids == [f"E{i}" for i in range(1, 11)]
    for label in LABELS:
        assert checks_of(label.id), f"no check carries {label.id}"
        assert label.name and label.meaning
    for c in REGISTRY.values():
        assert set(c.evidence) <= set(ids), f"{c.id} carries an undefined label"


def test_explain_reads_the_registry() -> None:
    x = explain("attempts.multiset")
    assert x.check.tier == "P0"
    assert [label.id for label in x.labels] == ["E1", "E7"]
    assert "missing from its record" in x.lie


def test_committed_evidence_doc_is_the_generated_one() -> None:
    committed = (ROOT / "docs" / "evidence.md").read_text()
    assert committed == render_evidence_doc(), "docs/evidence.md is stale: run `harness-probe checks docs`"


def test_checks_explain_prints_question_tier_labels_and_lie() -> None:
    res = CliRunner().invoke(app, ["checks", "explain", "attempts.multiset"])
    assert res.exit_code == 0, res.output
    for part in ("question:", "P0", "E1 (attempts)", "E7 (error payloads)", "lie caught:", "missing from its record"):
        assert part in res.output


def test_checks_explain_unknown_id_is_a_named_error_with_near_matches() -> None:
    res = CliRunner().invoke(app, ["checks", "explain", "attempts.multset"])
    assert res.exit_code == 2
    assert "unknown check 'attempts.multset'" in res.output
    assert "attempts.multiset" in res.output
    assert near("multiset") == ["attempts.multiset"]


def test_checks_list_has_every_check_once() -> None:
    res = CliRunner().invoke(app, ["checks", "list"])
    assert res.exit_code == 0
    firsts = [line.split()[0] for line in res.output.splitlines()]
    assert firsts == list(REGISTRY)
