"""The run's progress: counts, per-harness verdicts and plain lines, fed from several threads."""

from __future__ import annotations

import io
import threading
from typing import Any

from rich.console import Console

from orchestrator.progress import Progress


def _result(verdict: str) -> dict[str, Any]:
    return {"verdict": verdict, "execution": {"status": "exited", "seconds": 1.25}}


def test_counts_lines_and_panel() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    with Progress(console, total=4, jobs=2, live=False) as p:
        p.on_episode("hermes", "tool_success", None)
        p.on_episode("pi", "tool_success", None)
        p.on_episode("hermes", "tool_success", _result("fail"))
        panel = Console(file=io.StringIO(), width=200)
        panel.print(p.render())
        text = panel.file.getvalue()  # type: ignore[attr-defined]
    assert "1 done, 1 running, 2 left of 4 (--jobs 2)" in text
    assert "about" in text  # an estimate once one episode finished
    assert "running: pi/tool_success" in text
    assert buf.getvalue() == "[1/4] hermes / tool_success: fail (exited, 1.2s)\n"


def test_thread_safe_counts() -> None:
    p = Progress(Console(file=io.StringIO()), total=400, jobs=8, live=False)

    def feed(h: str) -> None:
        for i in range(100):
            p.on_episode(h, f"s{i}", None)
            p.on_episode(h, f"s{i}", _result("pass"))

    threads = [threading.Thread(target=feed, args=(f"h{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert p.done == 400 and not p.running
    assert all(c["pass"] == 100 for c in p.per_harness.values())


def test_an_episode_whose_harness_ended_is_shown_as_being_checked_not_running() -> None:
    # With --jobs 2 the next harness starts while an ended one is collected and checked: the panel must not say
    # that more harnesses run than --jobs lets run.
    p = Progress(Console(file=io.StringIO()), total=5, jobs=2, live=False)
    for s in ("a", "b", "c"):
        p.on_episode("pi", s, None)
    p.on_harness_ended("pi", "a")
    p.on_harness_ended("pi", "zz")  # never started: ignored
    panel = Console(file=io.StringIO(), width=200)
    panel.print(p.render())
    text = panel.file.getvalue()  # type: ignore[attr-defined]
    assert "0 done, 2 running, 1 being checked, 2 left of 5 (--jobs 2)" in text
    assert "running: pi/b, pi/c" in text
    p.on_episode("pi", "a", _result("pass"))
    assert p.done == 1 and not p.finishing and p.running == {("pi", "b"), ("pi", "c")}
