"""`harness-probe view`: the page's path without a browser, named errors, and --serve on loopback until Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from orchestrator.cli import app


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "R"
    (run / "h" / "s").mkdir(parents=True)
    (run / "report.html").write_text("<html>report</html>")
    (run / "h" / "s" / "scenario.json").write_text("{}")
    (run / "h" / "s" / "episode.html").write_text("<html>episode</html>")
    return run


def test_prints_the_report_or_episode_path_without_a_browser(tmp_path: Path) -> None:
    run = _run(tmp_path)
    res = CliRunner().invoke(app, ["view", str(run), "--no-browser"])
    assert res.exit_code == 0 and res.output.strip() == str((run / "report.html").resolve())
    res = CliRunner().invoke(app, ["view", str(run), "h/s", "--no-browser"])
    assert res.exit_code == 0 and res.output.strip() == str((run / "h" / "s" / "episode.html").resolve())


def test_missing_run_and_episode_are_named_errors(tmp_path: Path) -> None:
    run = _run(tmp_path)
    res = CliRunner().invoke(app, ["view", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no run directory" in res.output
    res = CliRunner().invoke(app, ["view", str(run), "h/other"])
    assert res.exit_code == 2 and "has no episode h/other" in res.output and "h/s" in res.output
    res = CliRunner().invoke(app, ["view", str(run), "../etc"])
    assert res.exit_code == 2 and "is not HARNESS/SCENARIO" in res.output


def test_serve_answers_on_loopback_until_interrupted(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from orchestrator.cli import main; main()",
            "view",
            str(run),
            "h/s",
            "--serve",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith(f"serving {run.resolve()} at http://127.0.0.1:"), line
            url = line.split(" at ")[1].split()[0]
            assert url.endswith("/h/s/episode.html")
            with urllib.request.urlopen(url, timeout=10) as reply:
                assert reply.read() == b"<html>episode</html>"
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)
    assert proc.returncode == 0
