"""The witness pre-check agrees with jsonschema on every real line and on thousands of mutations of them."""

from __future__ import annotations

import copy
import json
import lzma
import random
from pathlib import Path
from typing import Any

from orchestrator.evidence import fragment_precheck
from orchestrator.evidence.fastcheck import compile_schema
from orchestrator.evidence.validate import _fragment_validator, _precheck, _validator


def _valid(instance: Any, fmt: str, pointer: str | None = None) -> bool:
    """jsonschema's own verdict, not the pre-checked one `faults`/`fragment_faults` give."""
    v = _validator(fmt) if pointer is None else _fragment_validator(fmt, pointer)
    return next(v.iter_errors(instance), None) is None


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ODD_VALUES: list[Any] = [None, True, False, 0, -1, 1.0, 1.5, "", "x", "attempt-1", "a" * 64, [], [1], {}, {"a": 1}]


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
    else:
        target[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return e


def _agree(event: dict[str, Any]) -> None:
    kind = event.get("event")
    pointer = f"/$defs/{kind}"
    fast = fragment_precheck("probe-witness/v1", pointer)(event)
    if fast is not None:
        assert fast == _valid(event, "probe-witness/v1", pointer), event


def test_every_real_line_is_accepted_fast() -> None:
    lines = _lines()
    assert len(lines) > 50
    kinds = {e["event"] for e in lines}
    assert {"start", "attempt", "tool_call", "tool_result_seen", "marker", "end"} <= kinds
    for e in lines:
        assert fragment_precheck("probe-witness/v1", f"/$defs/{e['event']}")(e) is True, e


def test_mutations_never_pass_fast_when_jsonschema_fails() -> None:
    rng = random.Random(20261201)
    lines = _lines()
    rejected = 0
    for _ in range(4000):
        e = _mutate(rng.choice(lines), rng)
        kinds = {"start", "attempt", "tool_call", "tool_result_seen", "marker", "end", "egress"}
        if not isinstance(e.get("event"), str) or e["event"] not in kinds:
            continue
        _agree(e)
        rejected += fragment_precheck("probe-witness/v1", f"/$defs/{e['event']}")(e) is not True
    assert rejected > 1000  # the mutations really produced invalid lines


def test_subset_semantics() -> None:
    integer = compile_schema({"type": "integer", "minimum": 0})
    assert [integer(v) for v in (0, 3, 2.0, 2.5, True, -1, "1")] == [True, True, True, False, False, False, False]
    const = compile_schema({"const": 1})
    assert [const(v) for v in (1, 1.0, True)] == [True, True, False]
    one = compile_schema({"oneOf": [{"type": "integer"}, {"type": "number"}]})
    assert [one(v) for v in (1, 1.5)] == [False, True]  # 1 matches both branches
    assert compile_schema({"type": "string", "maxLength": 3})("abcd") is False
    assert compile_schema({"type": "string", "minLength": 1})("é") is True
    assert compile_schema({"type": "array", "uniqueItems": True})([]) is None  # unknown keyword: not decided
    assert compile_schema({"minItems": 1, "maxItems": 2})([]) is False
    cond = compile_schema(
        {"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"not": {"required": ["c"]}}}
    )
    assert [cond(v) for v in ({"a": 1, "b": 2}, {"a": 1}, {}, {"c": 1})] == [True, False, True, False]
    assert compile_schema({"allOf": [{"maximum": 3}, {"minimum": 1}]})(4) is False


def test_scenarios_agree_with_jsonschema() -> None:
    """The scenario schema uses if/then/else, allOf and not: every catalogue file and mutations of them agree."""
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
        fast = check(d)
        if fast is not None:
            assert fast == _valid(d, "probe-scenario/v1"), d
    assert compile_schema({"items": {"type": "string"}})(["a", 1]) is False
    assert compile_schema({"properties": {"a": {"type": "string"}}, "additionalProperties": False})({"b": 1}) is False
