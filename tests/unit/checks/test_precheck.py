"""The schema pre-check (jsonschema_rs) never accepts what jsonschema rejects: real lines, mutations, crafted values."""

from __future__ import annotations

import copy
import json
import lzma
import random
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import faults, fragment_faults, fragment_precheck, holds_tuple
from orchestrator.evidence.validate import _compiled, _fragment_validator, _precheck, _validator

W = "probe-witness/v1"


def _valid(instance: Any, fmt: str, pointer: str | None = None) -> bool:
    """jsonschema's own verdict, not the pre-checked one `faults`/`fragment_faults` give."""
    v = _validator(fmt) if pointer is None else _fragment_validator(fmt, pointer)
    return next(v.iter_errors(instance), None) is None


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.0, 1.5, "", "x", "attempt-1", "a" * 64, "a" * 64 + "\n", "0" * 64 + "\n", [], [1],
    {}, {"a": 1}, 2**70, -(2**70), 10**39, float("nan"), float("inf"), "\u0661\u0662\u0663\u0664", "é\n",
]  # fmt: skip


def _lines() -> list[dict[str, Any]]:
    out = []
    for p in sorted(FIXTURES.glob("episodes/*/witness.jsonl")):
        out += [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()]
    for p in sorted(FIXTURES.glob("native/claude-code/*/witness.jsonl.xz"))[:3]:
        out += [json.loads(ln) for ln in lzma.decompress(p.read_bytes()).decode().splitlines() if ln.strip()]
    return out


def _mutate(event: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    e = copy.deepcopy(event)
    target: Any = e
    # Walk a little way into nested objects, then change one thing.
    for _ in range(rng.randint(0, 2)):
        children = [k for k, v in target.items() if isinstance(v, dict) and v]
        if not children:
            break
        target = target[rng.choice(children)]
    key = rng.choice(sorted(target))
    action = rng.random()
    if action < 0.3:
        del target[key]
    elif action < 0.5:
        target["unexpected_key"] = rng.choice(ODD_VALUES)
    elif action < 0.6 and isinstance(target[key], str):
        target[key] += rng.choice(["\n", "\u0661", " ", "é"])  # regex edges: trailing newline, non-ASCII digits
    else:
        target[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return e


def test_every_real_line_is_accepted_fast() -> None:
    lines = _lines()
    assert len(lines) > 50
    kinds = {e["event"] for e in lines}
    assert {"start", "attempt", "tool_call", "tool_result_seen", "marker", "end"} <= kinds
    for e in lines:
        assert fragment_precheck(W, f"/$defs/{e['event']}")(e, True) is True, e


def test_mutations_never_pass_fast_when_jsonschema_fails() -> None:
    rng = random.Random(20261201)
    lines = _lines()
    rejected = 0
    for _ in range(4000):
        e = _mutate(rng.choice(lines), rng)
        kinds = {"start", "attempt", "tool_call", "tool_result_seen", "marker", "end", "egress"}
        if not isinstance(e.get("event"), str) or e["event"] not in kinds:
            continue
        pointer = f"/$defs/{e['event']}"
        if fragment_precheck(W, pointer)(e):
            assert _valid(e, W, pointer), e
        else:
            rejected += 1
    assert rejected > 1000  # the mutations really produced invalid lines


def test_scenarios_agree_with_jsonschema() -> None:
    """The scenario schema uses if/then/else, allOf, not and a `^[^\\n]+$` pattern: every catalogue file passes,
    and no mutation jsonschema rejects passes the pre-check."""
    from orchestrator.scenarios import list_scenarios

    rng = random.Random(7)
    docs = [json.loads(s.provider_json()) for s in list_scenarios()]
    for d in docs:
        d.pop("harness_profile", None)
    check = _precheck("probe-scenario/v1")
    for d in docs:
        assert check(d) is True and _valid(d, "probe-scenario/v1")
    for _ in range(1500):
        d = _mutate(rng.choice(docs), rng)
        if check(d):
            assert _valid(d, "probe-scenario/v1"), d


# Values where Rust and Python could part: each pair is (schema, instance) with jsonschema's verdict asserted
# too, so a case that stops testing anything fails.
CRAFTED: list[tuple[dict[str, Any], Any, bool]] = [
    ({"type": "array"}, (1, 2), False),  # a tuple is no array to jsonschema; jsonschema_rs reads it as one
    ({"type": "object", "additionalProperties": {"type": "array"}}, {"a": (1,)}, False),
    ({"type": "integer"}, True, False),
    ({"type": "integer"}, 1.0, True),
    ({"type": "integer", "minimum": 0}, -(2**70), False),
    ({"type": "integer", "maximum": 255}, 2**64 + 1, False),
    ({"maximum": 9007199254740992}, 9007199254740993, False),  # beyond float precision
    ({"minimum": 400, "maximum": 599}, 399.99, False),
    ({"const": 1}, True, False),
    ({"enum": [0, 1]}, False, False),
    ({"enum": [True]}, 1, False),
    ({"const": {"a": 1}}, {"a": True}, False),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}], False),
    ({"uniqueItems": True}, ["a", "a"], False),
    ({"type": "string", "maxLength": 1}, "\U0001f600", True),  # one code point
    ({"type": "string", "minLength": 2}, "\U0001f600", False),
    ({"type": "string", "minLength": 1}, "\ud800", True),  # a lone surrogate (json.loads makes them)
    ({"type": "object"}, {1: 2}, True),  # a non-str key: jsonschema_rs refuses to read it, jsonschema judges
    ({"pattern": "^[0-9a-f]{64}$"}, "a" * 64 + "\n", True),  # Python's `$` matches before a final newline
    ({"pattern": "^\\d{4}$"}, "\u0661\u0662\u0663\u0664", True),  # Python's \d is Unicode
    ({"pattern": "^[^\\n]+$"}, "a\nb", False),
    ({"type": "string", "format": "date-time"}, "not a time", True),  # formats are annotations, as in jsonschema
    ({"type": "number"}, float("nan"), True),
]


@pytest.mark.parametrize(("schema", "instance", "valid"), CRAFTED)
def test_crafted_values_are_never_accepted_more_leniently(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    from jsonschema import Draft202012Validator

    assert Draft202012Validator(schema).is_valid(instance) is valid
    if not valid:
        assert _compiled(schema)(instance) is False


def test_tuples_are_judged_by_jsonschema_unless_the_value_was_parsed() -> None:
    stats = {"prompt": 1, "completion": 2, "reasoning": 0, "total": 3, "cached": 0}
    pointer = "/$defs/model_call/properties/token_stats"
    assert fragment_faults(stats, "probe-rollout/v1", pointer, "$.t") == []
    assert fragment_precheck("probe-rollout/v1", pointer)(stats) is True
    found = fragment_faults(("a",), "ci-selection/v1", "/properties/harnesses", "$.harnesses")
    assert [f.path for f in found] == ["$.harnesses"]
    assert fragment_faults(["a"], "ci-selection/v1", "/properties/harnesses", "$.harnesses") == []
    assert faults({"nested": [{"x": (1,)}]}, "ci-selection/v1")  # looked through at any depth
    assert _compiled({"type": "array"})((1,), True) is True  # `parsed` promises no tuple: the promise is trusted


class _Pair(tuple):  # type: ignore[type-arg]
    pass


class _Thing:
    def __init__(self) -> None:
        self.x = [1]


def test_holds_tuple_finds_a_tuple_at_any_depth_and_never_calls_json_values_tuples() -> None:
    json_values: list[Any] = [
        None,
        1,
        1.5,
        "x",
        [],
        {},
        {"a": [{"b": [1, "2", None, {"c": {}}]}]},
        [[[[[]]]]],
        {"k" * 9: 2**70},
    ]
    for value in json_values:
        assert holds_tuple(value) is False, value
    tuples: list[Any] = [(), (1,), {"a": [{"b": [1, (2,)]}]}, [[[[[()]]]]], {"a": _Pair((1,))}, [_Pair()]]
    for value in tuples:
        assert holds_tuple(value) is True, value
    # A value that is not JSON's at all is never vouched for: jsonschema judges it.
    assert holds_tuple({"a": _Thing()}) is True
    assert holds_tuple({(1, 2): "tuple key"}) is True


def test_a_tuple_in_a_python_built_rollout_is_still_judged_by_jsonschema() -> None:
    from orchestrator.checks import Evidence, run_checks, scope_of
    from tests.unit.checks.conftest import FIXTURES as EPISODES

    scenario = json.loads((EPISODES / "tool_success" / "scenario.json").read_text())
    rollout = json.loads((EPISODES / "tool_success" / "rollout.json").read_text())
    refs = rollout["steps"][0]["model_call_refs"]
    rollout["steps"][0]["model_call_refs"] = tuple(refs)  # an array to jsonschema_rs only
    by_id = {r.id: r for r in run_checks(Evidence(scenario, rollout=rollout), scope_of(scenario))}
    assert by_id["steps.numbering"].status == "fail"
    assert any("$.steps[0].model_call_refs" in r for r in by_id["steps.numbering"].reasons), by_id["steps.numbering"]
    rollout["steps"][0]["model_call_refs"] = list(refs)
    by_id = {r.id: r for r in run_checks(Evidence(scenario, rollout=rollout), scope_of(scenario))}
    assert by_id["steps.numbering"].status == "pass", by_id["steps.numbering"]


def test_real_schemas_reject_crafted_witness_lines() -> None:
    """Real witness lines made invalid where Rust and Python regexes and numbers differ: none passes."""
    lines = _lines()
    attempt = next(e for e in lines if e["event"] == "attempt" and e.get("request_sha256"))
    start = next(e for e in lines if e["event"] == "start")
    bad = [
        ("attempt", {**attempt, "request_sha256": attempt["request_sha256"] + "\n"}, True),  # `$` edge: see CRAFTED
        ("attempt", {**attempt, "seq": True}),
        ("attempt", {**attempt, "seq": -(2**70)}),
        ("attempt", {**attempt, "headers": ("a", "b")}),
        ("start", {**start, "at": ["2026"]}),
        ("start", {**start, "event": "end"}),
    ]
    for kind, event, *python_only in bad:
        pointer = f"/$defs/{kind}"
        if python_only:  # jsonschema accepts it (Python's `$`); the pre-check is stricter, never more lenient
            assert _valid(event, W, pointer) and fragment_precheck(W, pointer)(event) is False
            assert fragment_faults(event, W, pointer, "$") == []
        else:
            assert not _valid(event, W, pointer), event
            assert fragment_precheck(W, pointer)(event) is False, event
            assert fragment_faults(event, W, pointer, "$"), event


def test_every_schema_compiles_and_an_uncompilable_one_defers_to_jsonschema() -> None:
    from orchestrator.evidence.validate import SCHEMA_DIR, _inline, _schema

    compiled = 0
    for path in sorted(SCHEMA_DIR.glob("*.v*.json")):
        name, _, version = path.stem.rpartition(".")
        schema = _schema(f"{name}/{version}")
        if name == "atif":
            continue  # recursive: not inlined, validated by jsonschema alone (as before the pre-check existed)
        _compiled(_inline(schema, schema))
        compiled += 1
    assert compiled >= 10
    assert _compiled({"pattern": "^a\\Z"})("a") is False  # Python's \Z, no Rust syntax: never accepted fast
