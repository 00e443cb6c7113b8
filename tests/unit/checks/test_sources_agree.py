"""sources.agree: what a harness's second record says of a fact is what the rollout holds; it applies only where a
rollout corroborates. (Its negative control on a real Gemini CLI episode is in test_negative_controls.py.)"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from orchestrator.checks import REGISTRY, Status
from orchestrator.checks.sources import resolve_pointer
from tests.unit.checks.conftest import load_episode

CHECK = "sources.agree"


def _with(provenance: dict[str, Any]) -> Any:
    ep = load_episode("gemini_tool_success")
    ep.rollout["provenance"] = provenance
    return ep


def _result(ep: Any) -> tuple[Status, list[str]]:
    return ep.evaluate()[CHECK]


def _tokens(ep: Any, n: int) -> dict[str, Any]:
    return copy.deepcopy(ep.rollout["model_calls"][n]["token_stats"])


@pytest.mark.parametrize(
    ("pointer", "found"),
    [
        ("", "root"),
        ("/a/b~1c/0", 1),
        ("/a/t~0x", 2),
        ("/a/b~1c/1", None),
        ("/a/b~1c/01", None),
        ("/a/missing", None),
        ("a/b", None),
        ("/a/b~1c/-", None),
    ],
)
def test_json_pointers_resolve_as_rfc_6901_says(pointer: str, found: Any) -> None:
    document = {"a": {"b/c": [1], "t~x": 2}}
    value = resolve_pointer(document, pointer)
    if found == "root":
        assert value is document
    elif found is None:
        assert value is not None and not isinstance(value, int | dict | list)  # the absent marker
    else:
        assert value == found


def test_not_applicable_without_corroboration_and_unnamed() -> None:
    ep = load_episode("gemini_tool_success")
    assert _result(ep) == (Status.NOT_APPLICABLE, [])
    assert _result(_with({"sources": {"session": "x"}, "facts": {"": "session"}})) == (Status.NOT_APPLICABLE, [])
    assert REGISTRY[CHECK].tier == "P1"


def test_agreeing_records_pass_and_a_contradiction_names_both() -> None:
    ep = load_episode("gemini_tool_success")
    sources = {"session": "chat recording", "otel": "telemetry"}
    facts = {"": "session", "/model_calls": "otel", "/model_calls/0/token_stats": "session"}
    agree = {"fact": "/model_calls/0/token_stats", "source": "otel", "value": _tokens(ep, 0)}
    ep = _with({"sources": sources, "facts": facts, "corroboration": [agree]})
    assert _result(ep) == (Status.PASS, [])
    other = {**agree, "value": {**agree["value"], "prompt": 1}}
    status, reasons = _result(_with({"sources": sources, "facts": facts, "corroboration": [other]}))
    assert status == Status.FAIL and reasons[0].startswith("/model_calls/0/token_stats: session records {")
    assert '"prompt": 1' in reasons[0] and "otel records" in reasons[0]


def test_a_fact_one_record_lacks_and_an_unlisted_source_fail() -> None:
    sources = {"session": "chat recording", "otel": "telemetry"}
    extra = {"fact": "/tool_calls/9", "source": "otel", "value": {"tool_call_id": "x"}}
    status, reasons = _result(_with({"sources": sources, "facts": {"": "session"}, "corroboration": [extra]}))
    assert status == Status.FAIL and reasons == [
        'otel records /tool_calls/9 = {"tool_call_id": "x"}, which the rollout does not hold'
    ]
    made_up = {"fact": "/task_id", "source": "logs", "value": None}
    status, reasons = _result(_with({"sources": sources, "facts": {"": "ghost"}, "corroboration": [made_up]}))
    assert status == Status.FAIL
    assert reasons == [
        "provenance.facts names a source 'ghost' not in provenance.sources",
        "corroboration[0] names a source 'logs' not in provenance.sources",
    ]
