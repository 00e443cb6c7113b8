"""Run the real `harness-probe` console script, so exit codes are the ones a CI step sees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HP = str(Path(sys.executable).with_name("harness-probe"))


def hp(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HP, *args], input=stdin, capture_output=True, text=True, timeout=120)
