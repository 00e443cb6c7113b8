"""Each class of lie issue 30 found passing, as a mutation of a real captured episode, and the one check that must
now name it (its dependants may fail only as `blocked by`, every other check keeps its honest status)."""

from __future__ import annotations

from typing import Any

import pytest

# The module, not its test function: imported by name, the function would be collected here a second time.
from tests.unit.checks import test_negative_controls as controls
from tests.unit.checks.conftest import Episode


def lie_no_run_ids(ep: Episode) -> None:
    # Class 8: the schema requires both keys (null allowed); a rollout without them is not a probe-rollout/v1.
    del ep.rollout["task_id"], ep.rollout["rollout_id"]


LIES: list[tuple[str, str, str, Any]] = [
    ("rollout without task_id and rollout_id", "rollout.format", "native:codex/retry_429", lie_no_run_ids),
]


@pytest.mark.parametrize(("lie", "check_id", "fixture", "mutate"), LIES, ids=[x[0] for x in LIES])
def test_each_class_of_lie_fails_the_check_that_names_it(lie: str, check_id: str, fixture: str, mutate: Any) -> None:
    controls.test_mutation_fails_exactly_its_check(check_id, fixture, mutate)
