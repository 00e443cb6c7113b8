"""Every real harness through the whole catalogue: its scenario x check verdict table equals its committed golden
(tests/golden/<harness>/verdicts.json), and the checks of its own (own.py) hold on the same run.

One table: the harnesses with a golden. Each harness's catalogue runs once (a module-scoped fixture per harness);
`pytest tests/harnesses -k pi` runs only Pi's. Regenerate a golden after a deliberate change (see golden.py):
    .venv/bin/harness-probe run -H NAME -o /tmp/NAME-run
    .venv/bin/python -m tests.harnesses.golden NAME /tmp/NAME-run
or run this test with HARNESS_PROBE_UPDATE_GOLDEN=1. A golden is never written by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.harnesses import HARNESSES, IMAGE_FROM_OPTIONS
from tests.harnesses.golden import GOLDEN_DIR, UPDATE, assert_matches_golden, golden_path, run_catalogue
from tests.harnesses.own import OWN
from tests.integration.conftest import Images, engine, images

pytestmark = [pytest.mark.docker, pytest.mark.harness]
__all__ = ["engine", "images"]  # fixtures, re-exported so pytest finds them here

# Every built-in harness but the control (its catalogue is the integration tests'), plus any golden recorded.
# The generic harnesses (their image a run's option, e.g. -H atif) have no pinned image to hold a golden of.
TABLE = sorted(
    (set(HARNESSES) - {"reference"} - IMAGE_FROM_OPTIONS) | {p.name for p in GOLDEN_DIR.iterdir() if p.is_dir()}
)


@dataclass(frozen=True)
class Run:
    harness: str
    out: Path
    code: int


@pytest.fixture(scope="module", params=TABLE)
def run(request: pytest.FixtureRequest, images: Images, tmp_path_factory: pytest.TempPathFactory) -> Run:
    harness: str = request.param
    if not golden_path(harness).is_file() and not UPDATE:
        pytest.skip(f"no golden verdict table of {harness} from a real run yet (HARNESS_PROBE_UPDATE_GOLDEN=1)")
    out = tmp_path_factory.mktemp(harness) / "out"
    return Run(harness, out, run_catalogue(harness, out))


def test_verdict_table_equals_the_golden(run: Run) -> None:
    assert_matches_golden(run.out, run.code, run.harness)


def _own(harness: str, check: Callable[[Path], None]) -> str:
    return f"{harness}-{check.__name__.removeprefix(harness.replace('-', '_') + '_')}"


OWN_CHECKS = [(h, check) for h in TABLE for check in OWN.get(h, ())]


@pytest.mark.parametrize(("run", "check"), OWN_CHECKS, indirect=["run"], ids=[_own(h, c) for h, c in OWN_CHECKS])
def test_its_own_checks(run: Run, check: Callable[[Path], None]) -> None:
    check(run.out)
