"""`-a KEY=VALUE`: each key once, each pair a pair; a refusal names the option."""

from __future__ import annotations

import pytest
import typer

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
