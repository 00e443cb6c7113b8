"""What a run stopped by Ctrl-C or SIGTERM leaves: its cut-short episodes as `interrupted`, and its own account."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.episode import EpisodePlan
from orchestrator.errors import EXIT_INTERRUPTED
from orchestrator.output import now_iso, write_json
from orchestrator.paths import EpisodePaths
from orchestrator.runtime import deferred_interrupts, received_signal

__all__ = ["RunInterrupted", "SuiteResult", "cut_short", "drop_unplayed", "partial_run"]


@dataclass
class SuiteResult:
    run_id: str
    output: Path
    results: list[dict[str, Any]]
    exit_code: int  # decided by the summary: 0 every P0 gate passes, 1 a check failed, 2 an error, 130 interrupted


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the run once its episodes had begun; its partial reports are written (summary.json
    marked interrupted). `result.results`: the episodes it started, finished or cut short (verdict `interrupted`)."""

    def __init__(self, result: SuiteResult, planned: int, signal: str | None) -> None:
        super().__init__(f"interrupted by {signal}" if signal else "interrupted")
        self.result, self.signal = result, signal
        self.interrupted = sum(r["verdict"] == "interrupted" for r in result.results)
        self.finished = len(result.results) - self.interrupted
        self.not_run = planned - len(result.results)
        self.cleaned = True  # False when the run's clean-up after the stop could not remove everything

    def message(self) -> str:
        """What the terminal says: how far the run got, whether it left anything, where the partial results are."""
        by = f" by {self.signal}" if self.signal else ""
        total = self.finished + self.interrupted + self.not_run
        left = "what the run created was removed" if self.cleaned else "some of what it created is left (see above)"
        return (
            f"harness-probe: interrupted{by}: {self.finished} of {total} episode(s) finished, {self.interrupted} "
            f"interrupted (cut short, not judged), {self.not_run} did not run; {left}; partial results "
            f"(summary.json marked interrupted): {self.result.output.resolve()}"
        )


def cut_short(
    paths: EpisodePaths, harness: str, scenario: str, run_id: str, plan: EpisodePlan | None
) -> dict[str, Any]:
    """The result of an episode the stop landed in (its pod is removed by then): `interrupted`, never judged."""
    from orchestrator.verdict import interrupted_result, result_skeleton

    paths.root.mkdir(parents=True, exist_ok=True)
    if plan is not None:
        execution, episode_id, started = dict(plan.execution), plan.episode_id, plan.started
    else:
        execution = {"status": "error", "exit_code": None, "seconds": 0.0, "timeout_seconds": 0.0, "error": None}
        episode_id, started = f"hp-{run_id}-interrupted", now_iso()
    result = result_skeleton(harness, scenario, run_id, episode_id, started, execution)
    result = interrupted_result(result, received_signal())
    result["finished_at"] = now_iso()
    write_json(paths.result, result)
    return result


def partial_run(
    run_id: str,
    output: Path,
    suite: dict[str, Any],
    results: list[dict[str, Any]],
    planned: int,
    full_suite: bool,
    started_at: str,
) -> RunInterrupted:
    """The reports of a stopped run (`results`: the episodes it started, in the grid's order), written now, and the
    exception that ends the run with them."""
    from orchestrator.report import Interruption, report_run

    signal = received_signal()
    try:
        # A second Ctrl-C waits until the partial reports are whole; the run ends as interrupted either way.
        with deferred_interrupts():
            code = report_run(
                output,
                suite,
                results,
                full_suite=full_suite,
                started_at=started_at,
                finished_at=now_iso(),
                interrupted=Interruption(signal),
            )
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    return RunInterrupted(SuiteResult(run_id, output, results, code), planned, signal)


def drop_unplayed(folders: list[Path]) -> None:
    """Remove the folders of episodes that never began: a plan made ahead (scenario.json, runtime.json) while the
    episode before ran holds nothing of a harness, and left behind it would pass for half an episode. They are
    `interrupted.not_run` in the summary."""
    for folder in folders:
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
