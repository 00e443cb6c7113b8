"""How the CLI ends: once a command has finished, however it ended, a late interrupt cannot change its exit code."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog

from orchestrator import cli


def _main_exit() -> object:
    """cli.main()'s exit code; what main() sets for the process (signal handlers, logging) is put back after."""
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    logging_config, root_handlers = structlog.get_config(), logging.root.handlers[:]
    try:
        with pytest.raises(SystemExit) as ended:
            cli.main()
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
        structlog.configure(**logging_config)
        logging.root.handlers[:] = root_handlers
    return ended.value.code


@pytest.mark.parametrize(("argv", "code"), [(["scenarios", "list"], 0), (["no-such-command"], 2)])
def test_after_the_command_ends_interrupts_are_ignored(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], code: int
) -> None:
    # An interrupt during the interpreter's shutdown, after Python's own handlers are gone, would make the run die by
    # the signal (exit -2, seen once in CI) instead of exiting with its result; ignored handlers stay in place.
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    # main() configures logging for the process: what it sets is put back, so later tests log where they did.
    logging_config, root_handlers = structlog.get_config(), logging.root.handlers[:]
    monkeypatch.setattr(sys, "argv", ["harness-probe", *argv])
    try:
        with pytest.raises(SystemExit) as ended:
            cli.main()
        assert ended.value.code == code
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
        structlog.configure(**logging_config)
        logging.root.handlers[:] = root_handlers


def test_an_interrupted_run_prints_what_it_started_says_how_far_it_got_and_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from orchestrator.cli import run as run_cli
    from orchestrator.stop import RunInterrupted, SuiteResult
    from orchestrator.verdict import interrupted_result
    from tests.unit.report.conftest import checks, result

    cut = interrupted_result(result("reference", "tool_failure", "fail", checks()), "SIGTERM")
    done = [result("reference", "tool_success", "pass", checks()), cut]

    def stopped(cfg: Any, *_: Any, **__: Any) -> Any:
        raise RunInterrupted(SuiteResult("r", cfg.output, done, 130), 3, "SIGTERM")

    monkeypatch.setattr(run_cli, "connect", lambda *_: object())
    monkeypatch.setattr(run_cli, "run_suite", stopped)
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["harness-probe", "run", "-H", "reference", "-s", "tool_success", "-o", str(out)])
    ended = _main_exit()
    assert ended == 130
    printed = capsys.readouterr()
    told = " ".join(printed.err.split())
    assert "interrupted by SIGTERM: 1 of 3 episode(s) finished, 1 interrupted (cut short, not judged)" in told
    assert "1 did not run" in told and str(out.resolve()) in told and "what the run created was removed" in told
    row = next(line for line in printed.out.splitlines() if "tool_failure" in line and "│" in line)
    assert "│ interrupted │" in row and "│ fail │" not in row


@pytest.mark.parametrize("stopped", ["plain", "run"])
def test_an_interrupt_in_any_command_says_so_and_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, stopped: str
) -> None:
    # Typer's own main turns an interrupt into a silent exit 130; a stopped run inside another command (drift plays
    # episodes too) must still say how far it got.
    from orchestrator.cli import scenarios as scenarios_cli
    from orchestrator.stop import RunInterrupted, SuiteResult

    def interrupted() -> Any:
        if stopped == "run":
            raise RunInterrupted(SuiteResult("r", tmp_path / "out", [], 130), 3, "SIGINT")
        raise KeyboardInterrupt

    monkeypatch.setattr(scenarios_cli, "list_scenarios", interrupted)
    monkeypatch.setattr(sys, "argv", ["harness-probe", "scenarios", "list"])
    ended = _main_exit()
    assert ended == 130
    told = " ".join(capsys.readouterr().err.split())
    if stopped == "run":
        assert "interrupted by SIGINT: 0 of 3 episode(s) finished" in told
    else:
        assert "harness-probe: interrupted; what the run created was removed" in told
