"""Logging set-up: structlog for everything, human-readable on a terminal, JSON lines with --log-format json."""

from __future__ import annotations

import logging
import sys
from enum import StrEnum

import structlog

__all__ = ["LogFormat", "configure_logging"]


class LogFormat(StrEnum):
    human = "human"
    json = "json"


class _Stderr:
    """sys.stderr as it is at each write, not as it was when logging was set up.

    The live progress panel (rich's Live) swaps sys.stderr for a proxy that prints each line above the panel and
    redraws the panel below it; log lines written to the stderr captured at set-up would land inside the panel and
    be overdrawn by its next refresh."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


STDERR = _Stderr()


def configure_logging(fmt: LogFormat, verbosity: int) -> None:
    level = logging.INFO - 10 * verbosity
    level = max(logging.DEBUG, min(logging.ERROR, level))
    renderer: structlog.typing.Processor
    if fmt == LogFormat.json:
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=STDERR),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    # Third-party chatter (docker SDK, urllib3) only when asked for with -vv.
    logging.basicConfig(level=logging.WARNING if verbosity < 2 else logging.DEBUG, stream=STDERR)
