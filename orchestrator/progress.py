"""Run progress: a live rich panel on a terminal, plain lines otherwise (or with --log-format json)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from types import TracebackType
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

__all__ = ["Progress"]


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"


class Progress:
    """Fed by the suite's on_episode callback (from worker threads); thread-safe."""

    def __init__(self, console: Console, total: int, jobs: int, live: bool) -> None:
        self.console, self.total, self.jobs = console, total, jobs
        self.running: set[tuple[str, str]] = set()  # their harness runs
        self.finishing: set[tuple[str, str]] = set()  # their harness ended: being collected and checked
        self.done = 0
        self.per_harness: dict[str, Counter[str]] = {}
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._live = (
            Live(console=console, refresh_per_second=4, transient=True, get_renderable=self.render) if live else None
        )

    def __enter__(self) -> Progress:
        if self._live:
            self._live.__enter__()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._live:
            self._live.__exit__(et, ev, tb)

    def on_episode(self, harness: str, scenario: str, result: dict[str, Any] | None) -> None:
        with self._lock:
            if result is None:
                self.running.add((harness, scenario))
                return
            self.running.discard((harness, scenario))
            self.finishing.discard((harness, scenario))
            self.done += 1
            self.per_harness.setdefault(harness, Counter())[result["verdict"]] += 1
            line = (
                f"[{self.done}/{self.total}] {harness} / {scenario}: {result['verdict']} "
                f"({result['execution']['status']}, {result['execution']['seconds']:.1f}s)"
            )
        # Finished episodes are printed above the live panel (or as plain lines): a log of the run either way.
        self.console.print(line, highlight=False, markup=False)

    def on_harness_ended(self, harness: str, scenario: str) -> None:
        """The episode's harness ended; it is collected and checked while the next harness may run."""
        with self._lock:
            if (harness, scenario) in self.running:
                self.running.discard((harness, scenario))
                self.finishing.add((harness, scenario))

    def eta(self) -> float | None:
        if not self.done:
            return None
        elapsed = time.monotonic() - self.t0
        return elapsed / self.done * (self.total - self.done)

    def render(self) -> RenderableType:
        with self._lock:
            left = self.total - self.done - len(self.running) - len(self.finishing)
            eta = self.eta()
            checking = f", {len(self.finishing)} being checked" if self.finishing else ""
            head = Text(
                f"episodes: {self.done} done, {len(self.running)} running{checking}, {left} left of {self.total} "
                f"(--jobs {self.jobs})   elapsed {_clock(time.monotonic() - self.t0)}"
                + (f", about {_clock(eta)} to go" if eta is not None else "")
            )
            table = Table(box=None, show_header=True, pad_edge=False)
            for col in ("harness", "pass", "fail", "error", "skipped"):
                table.add_column(col)
            for h, c in sorted(self.per_harness.items()):
                table.add_row(h, str(c["pass"]), str(c["fail"]), str(c["error"]), str(c["skipped"]))
            running = Text("running: " + ", ".join(f"{h}/{s}" for h, s in sorted(self.running)), style="dim")
        return Group(head, table, running)
