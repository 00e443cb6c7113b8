"""A real catalogue at the default verbosity on a terminal (tmux): log lines above the panel, the panel drawn once."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.unit.suite.test_progress_terminal import ROOT, capture_in_tmux


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_catalogue_on_a_terminal_keeps_its_panel_in_place(tmp_path: Path) -> None:
    out, ready = tmp_path / "out", tmp_path / "ready"
    hp = Path(sys.executable).parent / "harness-probe"
    # Three episodes, two at once; `exit` lets the pane stay until it is read.
    cmd = (f"cd {ROOT} && {hp} run -H reference -s tool_success -s retry_429 -s tool_failure --jobs 2 -o {out}; "
           f"echo exit=$? > {ready}; sleep 60")  # fmt: skip
    lines = capture_in_tmux(cmd, ready, "catalogue", 600)
    text = "\n".join(lines)
    assert ready.read_text().strip() in ("exit=0", "exit=1"), text
    # transient panel: gone once the run ends, and never re-printed into the scrollback while it ran
    assert not any(line.startswith("episodes: ") for line in lines), text
    finished = [line for line in lines if line.startswith("[") and "/3] reference / " in line]
    assert len(finished) == 3, text
    infos = [line for line in lines if " [info     ] " in line]
    assert infos, text  # the default verbosity logs info lines, and each is whole on its own line
    for line in lines:
        assert line.count("[info") + line.count("/3] reference") <= 1, line
        assert "running: " not in line, line
