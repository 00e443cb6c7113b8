"""Honest rewrites of real captured episodes leave every check status unchanged: a check that fails a document for
the way it is written, rather than for what it says, fails an honest harness.

Each episode's rollout and witness are written out in a form a JSON writer may fairly choose (keys in another
order; integers as `429.0` or `4.29E2`, which JSON Schema 2020-12 reads as the same integer; UTC times as `+00:00`;
fields the schema allows a writer to add) and read back through the readers an audit uses; every check must then
give the status it gives the plainly written episode. So must an ATIF round trip: the episode exported as
`harness-probe export` does and read back as `audit --rollout-format atif` reads it. Of mini-SWE-agent's captures,
only those that hold a witness are read (the others are its trajectory alone).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from orchestrator.atif import export_atif, read_atif_rollout
from orchestrator.checks import Status, run_checks, scope_of
from orchestrator.evidence import faults
from orchestrator.paths import EpisodePaths
from orchestrator.records import Execution
from orchestrator.verdict import collect_evidence, read_rollout
from tests.unit.checks.conftest import FIXTURES, Episode, load_episode
from tests.unit.harnesses import captured

NATIVE = (
    "claude-code",
    "cline",
    "codex",
    "copilot",
    "crewai",
    "gemini-cli",
    "hermes",
    "kilo",
    "mini-swe-agent",
    "nooa",
    "openclaw",
    "opencode",
    "pi",
    "qwen-code",
    "scicode",
    "stirrup",
    "terminus-2",
)


def _episodes() -> list[str]:
    names = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    for harness in NATIVE:
        for name in captured.captured(harness):
            src = captured.fixtures(harness) / name
            if any(src.glob("witness.jsonl*")):
                names.append(f"native:{harness}/{name}")
    return names


def _exponent(n: int) -> str:
    """4.29E2 for 429: the same number, as a float's text."""
    digits = str(abs(n))
    fraction = digits[1:].rstrip("0")
    return f"{'-' if n < 0 else ''}{digits[0]}{'.' + fraction if fraction else ''}E{len(digits) - 1}"


def _write(value: Any, number: Callable[[int], str], reverse: bool) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return json.dumps(value)
    if isinstance(value, int):
        return number(value) if abs(value) < 2**53 else str(value)
    if isinstance(value, list):
        return "[" + ",".join(_write(v, number, reverse) for v in value) + "]"
    items = list(value.items())
    if reverse:
        items.reverse()
    return "{" + ",".join(f"{json.dumps(k)}:{_write(v, number, reverse)}" for k, v in items) + "}"


_UTC = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z$")


def _offset_times(value: Any) -> Any:
    """Every UTC time written with the offset `+00:00` in place of `Z` (both the schemas' timestamp form)."""
    if isinstance(value, str):
        utc = _UTC.match(value)
        return f"{utc.group(1)}+00:00" if utc else value
    if isinstance(value, list):
        return [_offset_times(v) for v in value]
    if isinstance(value, dict):
        return {k: _offset_times(v) for k, v in value.items()}
    return value


def _times(ep: Episode) -> None:
    ep.rollout, ep.witness = _offset_times(ep.rollout), _offset_times(ep.witness)


def _extra_fields(ep: Episode) -> None:
    # Where the rollout schema allows keys of a writer's own: extensions, and each message of a history.
    ep.rollout["extensions"] = {**(ep.rollout.get("extensions") or {}), "writer": {"note": "rewritten"}}
    for inv in ep.rollout["invocations"]:
        for message in inv["conversation"]:
            message["x_writer_note"] = "rewritten"


def _bodies_as_text(ep: Episode) -> None:
    # A recorded response body kept as the JSON text it came in (other spacing, keys in another order): the same body.
    for call in ep.rollout["model_calls"]:
        if isinstance(call.get("response"), dict):
            call["response"] = json.dumps(dict(reversed(list(call["response"].items()))), indent=1)


def _unchanged(ep: Episode) -> None:
    pass


# Each honest rewrite: an edit of the episode (an equivalent form, or fields the schema allows), then how integers
# are written and whether every object's keys are written in reverse order.
REWRITES: dict[str, tuple[Callable[[Episode], None], Callable[[int], str], bool]] = {
    "keys reversed": (_unchanged, str, True),
    "integers as 429.0": (_unchanged, lambda n: f"{n}.0", False),
    "integers as 4.29E2": (_unchanged, _exponent, False),
    "times as +00:00": (_times, str, False),
    "extra fields the schema allows": (_extra_fields, str, False),
    "response bodies as JSON text": (_bodies_as_text, str, False),
}


def _save(ep: Episode, root: Path, number: Callable[[int], str], reverse: bool) -> EpisodePaths:
    root.mkdir(parents=True)
    (root / "scenario.json").write_text(json.dumps(ep.scenario))
    (root / "rollout.json").write_text(_write(ep.rollout, number, reverse))
    (root / "witness.jsonl").write_text("".join(_write(e, number, reverse) + "\n" for e in ep.witness))
    (root / "markers").mkdir()
    for name, text in ep.markers.items():
        (root / "markers" / name).write_text(text)
    return EpisodePaths(root)


def _judged(ep: Episode, paths: EpisodePaths, rollout: Any, why: str | None) -> dict[str, Status]:
    ev = collect_evidence(ep.scenario, paths, rollout, why)
    ev.execution = cast(Execution | None, ep.execution)
    return {r.id: r.status for r in run_checks(ev, scope_of(ep.scenario, ev.execution))}


def _statuses(ep: Episode, root: Path, number: Callable[[int], str], reverse: bool) -> dict[str, Status]:
    paths = _save(ep, root, number, reverse)
    rollout, why = read_rollout(paths.rollout)
    return _judged(ep, paths, rollout, why)


@pytest.mark.parametrize("name", _episodes())
def test_honest_rewrites_leave_every_status_unchanged(name: str, tmp_path: Path) -> None:
    ep = load_episode(name)
    plain = _statuses(ep, tmp_path / "plain", str, False)
    for n, (rewrite, (edit, number, reverse)) in enumerate(REWRITES.items()):
        rewritten = ep.copy()
        edit(rewritten)
        got = _statuses(rewritten, tmp_path / f"rewrite-{n}", number, reverse)
        changed = {k: (plain[k], got[k]) for k in plain if got[k] != plain[k]}
        assert changed == {}, f"{rewrite}: {changed}"


# Facts of a captured episode that an ATIF round trip cannot keep, per episode: (check id, status on the plain
# episode, status after the round trip, why ATIF has no place for the fact). None so far: the extension keeps each.
ATIF_EXPECTED: dict[str, dict[str, tuple[Status, Status, str]]] = {
    "native:qwen-code/messages_tool_success": {
        "tokens.totals_match": (
            Status.FAIL,
            Status.PASS,
            "ATIF metrics hold no reasoning count: the 0 reasoning tokens Qwen records for each Messages turn, "
            "where the wire carried none, does not survive the export (the import names "
            "model_calls.reasoning_tokens_unrecordable)",
        )
    },
}


@pytest.mark.parametrize("name", _episodes())
def test_an_atif_round_trip_leaves_every_status_unchanged(name: str, tmp_path: Path) -> None:
    ep = load_episode(name)
    plain = _statuses(ep, tmp_path / "plain", str, False)
    # Exported as `harness-probe export` writes it, read back as `audit --rollout-format atif` reads it.
    exported = export_atif([("h", "s", tmp_path / "plain")], tmp_path / "atif")
    if list(faults(ep.rollout, "probe-rollout/v1")):
        # A rollout its schema refuses (Copilot's call killed mid-dispatch names no protocol) is skipped, by name.
        assert [s.split(":", 1)[0] for s in exported.skipped] == ["h/s"] and exported.written == []
        return
    assert exported.skipped == []
    rollout, why = read_atif_rollout(tmp_path / "atif" / "h" / "s", "h")
    assert why is None
    got = _judged(ep, EpisodePaths(tmp_path / "atif" / "h" / "s"), rollout, why)
    changed = {k: (plain[k], got[k]) for k in plain if got[k] != plain[k]}
    expected = {k: (before, after) for k, (before, after, _) in ATIF_EXPECTED.get(name, {}).items()}
    assert changed == expected


def test_a_status_written_as_an_exponent_is_judged_as_the_integer(tmp_path: Path) -> None:
    """The example of issue 30: 4.29E2 is valid to the schema, so it must be 429 to every check."""
    ep = load_episode("retry_429")
    plain = _statuses(ep, tmp_path / "plain", str, False)
    as_exponent = _statuses(ep, tmp_path / "exp", lambda n: _exponent(n) if n == 429 else str(n), False)
    assert as_exponent == plain
    assert {plain[k] for k in ("calls.outcome", "attempts.multiset", "errors.payload_retained")} == {Status.PASS}
