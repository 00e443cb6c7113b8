"""On a real terminal (tmux) log lines go above the live panel, which is redrawn in place, at every verbosity."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# A catalogue's console as `run` makes it: the CLI's logging set-up, the stderr console, the live panel; log lines
# (structlog and the stdlib's, as the docker SDK writes them) arrive while the panel refreshes.
DRIVER = """
import logging, sys, time
from pathlib import Path
import structlog
from rich.console import Console
from orchestrator.logs import LogFormat, configure_logging
from orchestrator.progress import Progress

configure_logging(LogFormat.human, int(sys.argv[2]))
log = structlog.get_logger("probe")
console = Console(stderr=True)
assert console.is_terminal
grid = [("reference", f"scenario_{i}") for i in range(6)]
with Progress(console, len(grid), 2, live=True) as progress:
    for n, (h, s) in enumerate(grid):
        progress.on_episode(h, s, None)
        time.sleep(0.3)
        log.warning("log line", n=n)
        logging.getLogger("docker.thirdparty").warning("stdlib line %d", n)
        time.sleep(0.3)
        if n < 4:
            progress.on_episode(h, s, {"verdict": "pass", "execution": {"status": "exited", "seconds": 1.0}})
    Path(sys.argv[1]).write_text("ready")
    time.sleep(30)
"""


def _capture(tmp_path: Path, verbosity: int) -> list[str]:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    ready = tmp_path / "ready"
    return capture_in_tmux(f"cd {ROOT} && {sys.executable} {driver} {ready} {verbosity}", ready, f"{verbosity}", 60)


def capture_in_tmux(cmd: str, ready: Path, tag: str, timeout: float) -> list[str]:
    """Run `cmd` in a 160 x 40 tmux pane of a server of its own; once `ready` exists, the pane and its history."""
    session = f"hp-progress-{ready.parent.name[-12:]}-{tag}".replace(".", "-")
    tmux = ["tmux", "-L", session]  # a server of its own: nothing of anyone else's session is touched
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "160", "-y", "40", cmd], check=True)
    try:
        deadline = time.monotonic() + timeout
        while not ready.exists():
            assert time.monotonic() < deadline, "the driver did not get to its end"
            time.sleep(0.2)
        time.sleep(1.0)  # a few more refreshes of the panel
        shown = subprocess.run([*tmux, "capture-pane", "-p", "-S", "-1000", "-t", session], capture_output=True,
                               text=True, check=True).stdout  # fmt: skip
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    return [line.rstrip() for line in shown.splitlines() if line.strip()]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("verbosity", [0, 2, -1])
def test_logs_go_above_the_panel_which_is_redrawn_in_place(tmp_path: Path, verbosity: int) -> None:
    lines = _capture(tmp_path, verbosity)
    panel = [i for i, line in enumerate(lines) if line.startswith("episodes: ")]
    assert len(panel) == 1, "\n".join(lines)  # drawn once, in place, never re-printed
    head = panel[0]
    assert lines[head].startswith("episodes: 4 done, 2 running, 0 left of 6"), lines[head]
    assert lines[-1].startswith("running: reference/scenario_4, reference/scenario_5"), "\n".join(lines)
    above = lines[:head]
    logged = [line for line in above if "log line" in line]
    stdlib = [line for line in above if "stdlib line" in line]
    finished = [line for line in above if line.startswith("[")]
    # Each log line whole, on a line of its own, in order, and nothing of the panel glued to any of them.
    assert len(logged) == 6 and len(stdlib) == 6, "\n".join(lines)
    assert [int(line.rsplit("n=", 1)[1]) for line in logged] == list(range(6))
    assert [line.rsplit(" ", 1)[1] for line in stdlib] == [str(n) for n in range(6)]
    assert [line.split("]")[0] for line in finished] == [f"[{n}/6" for n in range(1, 5)]
    for line in above:
        assert "episodes:" not in line and "running:" not in line, line
        assert line.count("log line") + line.count("stdlib line") + line.count("/6]") <= 1, line
