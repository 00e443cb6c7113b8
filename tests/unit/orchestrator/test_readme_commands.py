"""README's copy-paste lines work as written: every `harness-probe ...` line names a real command and real options."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def _command_lines() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for line in doc.read_text().splitlines():
            m = re.match(r"^ {4}(?:\.venv/bin/)?harness-probe (.+?)(?:\s+#.*)?$", line)
            if m and "<" not in m.group(1) and "..." not in m.group(1):
                found.append((doc.name, m.group(1).split(" > ")[0].split(" | ")[0]))
    return found


LINES = _command_lines()


def test_the_readme_has_its_tour() -> None:
    assert sum(1 for doc, _ in LINES if doc == "README.md") >= 15
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


@pytest.mark.parametrize(("doc", "line"), LINES, ids=[f"{d}: {c}" for d, c in LINES])
def test_each_command_line_parses(doc: str, line: str) -> None:
    words = shlex.split(line)
    # --help is eager: the command and every option before it must exist, nothing runs.
    res = CliRunner().invoke(app, [*words, "--help"])
    assert res.exit_code == 0, f"{doc}: harness-probe {line}\n{res.output}"
