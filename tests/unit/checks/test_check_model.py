"""The check runner: scope, dependencies (blocked checks never read input), missing input, crashes, gates."""

from __future__ import annotations

from orchestrator.checks import REGISTRY, Evidence, Kind, Status, Witness, gate, run_checks
from orchestrator.checks.model import Check, CheckResult

SCENARIO = {"scope": {"tools": True}, "script": []}


def _check(id: str, fn, *, depends_on=(), scope=(), needs=("witness",), tier="P0") -> Check:  # type: ignore[no-untyped-def]
    return Check(id, Kind.SEMANTIC, tier, ("E1",), "$", "test", needs, fn, tuple(depends_on), tuple(scope))


def _by_id(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.id: r for r in results}


def test_blocked_check_never_reads_its_input() -> None:
    calls = []

    def dependent(ev: Evidence) -> list[str]:
        calls.append(1)
        return []

    checks = [_check("a", lambda ev: ["broken"]), _check("b", dependent, depends_on=("a",))]
    res = _by_id(run_checks(Evidence(SCENARIO, witness=Witness([])), {"tools": True}, checks))
    assert res["a"].status == Status.FAIL
    assert res["b"].status == Status.FAIL and res["b"].reasons == ["blocked by a"]
    assert calls == []


def test_missing_input_fails_with_required_input_unavailable() -> None:
    checks = [_check("a", lambda ev: [], needs=("rollout",))]
    ev = Evidence(SCENARIO, witness=Witness([]))
    ev.errors["rollout"] = "rollout.json does not exist"
    (res,) = run_checks(ev, {}, checks)
    assert res.status == Status.FAIL
    assert res.reasons == ["required input unavailable: rollout.json does not exist"]


def test_scope_makes_a_check_not_applicable_and_dependents_still_run() -> None:
    checks = [_check("a", lambda ev: ["x"], scope=("tools",)), _check("b", lambda ev: [], depends_on=("a",))]
    res = _by_id(run_checks(Evidence(SCENARIO, witness=Witness([])), {"tools": False}, checks))
    assert res["a"].status == Status.NOT_APPLICABLE
    assert res["b"].status == Status.PASS


def test_a_crashing_check_fails_alone() -> None:
    def boom(ev: Evidence) -> list[str]:
        raise KeyError("model_calls")

    checks = [_check("a", boom), _check("b", lambda ev: [])]
    res = _by_id(run_checks(Evidence(SCENARIO, witness=Witness([])), {}, checks))
    assert res["a"].status == Status.FAIL and res["a"].reasons[0].startswith("checker error: KeyError")
    assert res["b"].status == Status.PASS


def test_gate_counts_only_its_tier() -> None:
    checks = [_check("p1", lambda ev: ["bad"], tier="P1"), _check("p0", lambda ev: [])]
    results = run_checks(Evidence(SCENARIO, witness=Witness([])), {}, checks)
    assert gate(results, "P0") is True
    assert gate(results, "P1") is False


def test_registry_is_in_dependency_order_with_described_checks() -> None:
    seen: set[str] = set()
    for check in REGISTRY.values():
        assert set(check.depends_on) <= seen, check.id
        assert check.description, f"{check.id} has no description"
        assert check.kind in tuple(Kind)
        # Artifact checks speak for evidence labels; process checks never do (exit status is kept apart).
        assert bool(check.evidence) == (check.kind != Kind.PROCESS), check.id
        assert all(label in {f"E{i}" for i in range(1, 11)} for label in check.evidence)
        seen.add(check.id)


def test_a_check_outside_its_scope_applies_to_what_the_evidence_claims() -> None:
    """A scoped check with `claims` applies outside its scope only when the claim is true of the evidence."""
    claimed = Check(
        "c",
        Kind.SEMANTIC,
        "P1",
        ("E1",),
        "$",
        "test",
        ("witness",),
        lambda ev: ["judged"],
        (),
        ("compaction",),
        lambda ev: bool(ev.witness and ev.witness.events),
    )
    nothing = _by_id(run_checks(Evidence(SCENARIO, witness=Witness([])), {"compaction": False}, [claimed]))
    assert nothing["c"].status == Status.NOT_APPLICABLE and nothing["c"].reasons == []
    event = {"event": "start", "seq": 0}
    claims = _by_id(run_checks(Evidence(SCENARIO, witness=Witness([event])), {"compaction": False}, [claimed]))
    assert claims["c"].status == Status.FAIL and claims["c"].reasons == ["judged"]


def test_a_reason_quoting_a_huge_value_is_bounded() -> None:
    from orchestrator.checks.model import REASON_CHARS, Unverifiable

    huge = "x" * 5_000_000

    def gap(ev: Evidence) -> list[str]:
        raise Unverifiable(f"gap g: {huge} end")

    checks = [
        _check("a", lambda ev: [f"the value {huge} is wrong", "short"]),
        _check("b", gap),
        _check("c", lambda ev: [], needs=("rollout",)),
    ]
    ev = Evidence(SCENARIO, witness=Witness([]))
    ev.errors["rollout"] = f"rollout.json: {huge} is not JSON"
    res = _by_id(run_checks(ev, {}, checks))
    long, short = res["a"].reasons
    assert short == "short"
    for reason in (long, res["b"].reasons[0], res["c"].reasons[0]):
        assert len(reason) < REASON_CHARS + 60
        assert "characters left out" in reason
    assert long.startswith("the value xxx") and long.endswith("x is wrong")
    assert res["b"].reasons[0].startswith("gap g: ") and res["c"].reasons[0].startswith("required input unavailable")
