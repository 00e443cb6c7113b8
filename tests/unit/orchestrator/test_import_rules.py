"""The import rules of docs/architecture.md: the addon never imports the package; `run` loads no other command."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_proxy_addons_never_import_the_orchestrator() -> None:
    files = sorted((ROOT / "proxy_addons").rglob("*.py"))
    assert len(files) > 5
    offending = {str(f.relative_to(ROOT)): sorted(n for n in _imported(f) if n.split(".")[0] == "orchestrator")
                 for f in files}  # fmt: skip
    assert {f: n for f, n in offending.items() if n} == {}


def test_the_orchestrator_never_imports_proxy_addons() -> None:
    files = sorted((ROOT / "orchestrator").rglob("*.py"))
    offending = [
        str(f.relative_to(ROOT)) for f in files if any(n.split(".")[0] == "proxy_addons" for n in _imported(f))
    ]
    assert offending == []


def test_the_cli_loads_no_other_commands_code_before_a_command_runs() -> None:
    # What `run` needs is what the CLI imports at start; the other commands' modules load inside those commands.
    code = "import sys, json, orchestrator.cli; print(json.dumps(sorted(sys.modules)))"
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                           check=True, cwd=ROOT).stdout))  # fmt: skip
    assert "orchestrator.cli" in loaded
    for module in ("orchestrator.audit", "orchestrator.atif", "orchestrator.merge", "orchestrator.report.results"):
        assert module not in loaded, module
