"""How the CLI ends: once a command has finished, a late interrupt cannot change its exit code."""

from __future__ import annotations

import signal
import sys

import pytest

from orchestrator import cli


def test_after_the_command_ends_interrupts_are_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An interrupt during the interpreter's shutdown, after Python's own handlers are gone, would make the run die by
    # the signal (exit -2, seen once in CI) instead of exiting with its result; ignored handlers stay in place.
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(sys, "argv", ["harness-probe", "scenarios", "list"])
    try:
        with pytest.raises(SystemExit) as ended:
            cli.main()
        assert ended.value.code == 0
        assert "tool_success" in capsys.readouterr().out
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
