"""`-a KEY=VALUE`: each key once, each pair a pair; a refusal names the option."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from structlog.testing import capture_logs

from orchestrator.cli.run import parse_harness_args


def test_pairs_are_read_whole() -> None:
    assert parse_harness_args(["image=x", "command=a=b c", "writable="]) == {
        "image": "x",
        "command": "a=b c",
        "writable": "",
    }


@pytest.mark.parametrize(
    ("pairs", "named"),
    [
        # The last of two would have won silently: which of two trajectories was meant?
        (["trajectory=/tmp/x", "trajectory=/tmp/y"], "trajectory is given twice"),
        (["image"], "'image' is not KEY=VALUE"),
        (["=x"], "'=x' is not KEY=VALUE"),
        (["command=run\x00 it"], "'command' holds a NUL character"),
    ],
)
def test_a_bad_pair_is_named(pairs: list[str], named: str) -> None:
    with pytest.raises(typer.BadParameter, match=named):
        parse_harness_args(pairs)


def test_an_override_for_no_registered_harness_is_said(tmp_path: Path) -> None:
    from orchestrator.cli.run import warn_unknown_overrides
    from orchestrator.scenarios import list_scenarios, load_scenario, scenarios_dir

    text = (scenarios_dir() / "tool_success.yaml").read_text() + "overrides: {refrence: {skip: true, reason: slow}}\n"
    (tmp_path / "tool_success.yaml").write_text(text)
    with capture_logs() as said:
        warn_unknown_overrides([load_scenario(tmp_path / "tool_success.yaml")])
    [warning] = said
    assert warning["unknown"] == ["refrence"] and "reference" in warning["known"]
    with capture_logs() as said:
        warn_unknown_overrides(list_scenarios())  # the shipped ones name registered harnesses only
    assert said == []
