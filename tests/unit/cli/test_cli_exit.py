"""How the CLI ends: once a command has finished, however it ended, a late interrupt cannot change its exit code."""

from __future__ import annotations

import logging
import signal
import sys

import pytest
import structlog

from orchestrator import cli


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
