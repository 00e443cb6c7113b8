"""Messages that say what happened: each case a user met, with the message and exit code it now gets."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.ci.report import collect, render_markdown
from orchestrator.cli import app
from orchestrator.harnesses import registry

EPISODE = Path(__file__).resolve().parents[2] / "fixtures" / "episodes" / "tool_success"


def _invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.output


def _saved(tmp_path: Path, name: str = "src", **replace: str) -> Path:
    src = tmp_path / name
    shutil.copytree(EPISODE, src / "reference" / "tool_success")
    for file, text in replace.items():
        (src / "reference" / "tool_success" / file.replace("_", ".", 1)).write_text(text)
    return src


def test_an_export_of_nothing_is_an_error_that_says_so(tmp_path: Path) -> None:
    src = _saved(tmp_path, rollout_json="{}")
    code, out = _invoke("export", str(src), "-o", str(tmp_path / "x"))
    assert code == 2, out
    assert "skipped reference/tool_success: rollout.json is not a valid probe-rollout/v1" in out
    assert "nothing exported: none of the 1 episode(s)" in out
    assert "exported 0" not in out
    assert not (tmp_path / "x").exists()  # nothing left behind that looks like an export


def test_an_atif_export_audited_as_probe_rollouts_gets_the_hint(tmp_path: Path) -> None:
    code, out = _invoke("export", str(_saved(tmp_path)), "-o", str(tmp_path / "atif"))
    assert code == 0, out
    code, out = _invoke("audit", str(tmp_path / "atif"), "-o", str(tmp_path / "a"))
    assert code == 2, out
    assert "holds ATIF trajectories" in out and "--rollout-format atif" in out
    assert not (tmp_path / "a").exists()
    code, out = _invoke("audit", str(tmp_path / "atif"), "--rollout-format", "atif", "-o", str(tmp_path / "b"))
    assert code == 0, out


def test_audit_and_merge_say_why_they_exit_2(tmp_path: Path) -> None:
    src = _saved(tmp_path, scenario_json='{"schema": "nope"}')
    code, out = _invoke("audit", str(src), "-o", str(tmp_path / "audited"))
    assert code == 2, out
    assert "exit 2 (1 error(s), all in" in out
    assert "reference/tool_success: episode error: audit failed: FormatError:" in out
    code, out = _invoke("merge", str(tmp_path / "audited"), "-o", str(tmp_path / "merged"))
    assert code == 2, out
    assert "exit 2 (1 error(s), all in" in out and "reference/tool_success: episode error" in out


def test_a_folder_without_witnesses_names_what_is_missing_and_skips_nothing_silently(tmp_path: Path) -> None:
    src = _saved(tmp_path)
    shutil.copytree(EPISODE, src / "reference" / "bare")
    for f in ("witness.jsonl", "rollout.json"):
        (src / "reference" / "bare" / f).unlink()
    shutil.copytree(EPISODE, src / "reference" / "no_witness")
    (src / "reference" / "no_witness" / "witness.jsonl").unlink()
    code, out = _invoke("audit", str(src), "-o", str(tmp_path / "a"))
    assert code == 1, out
    assert "skipped reference/bare: it has scenario.json but neither witness.jsonl nor rollout.json" in out
    assert "audited 2 episode(s)" in out

    only_bare = tmp_path / "only-bare"
    shutil.copytree(src / "reference" / "bare", only_bare / "reference" / "bare")
    code, out = _invoke("audit", str(only_bare), "-o", str(tmp_path / "b"))
    assert code == 2, out
    assert "witness.jsonl or rollout.json" in out and "reference/bare: it has scenario.json but neither" in out


def test_the_saved_episodes_missing_witness_is_named_by_its_own_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orchestrator.audit import audit
    from orchestrator.logs import LogFormat, configure_logging

    src = _saved(tmp_path)
    (src / "reference" / "tool_success" / "witness.jsonl").unlink()
    configure_logging(LogFormat.human, 0)
    audit(src, tmp_path / "a")
    err = capsys.readouterr().err
    assert "the saved episode has no witness" in err
    assert str(src / "reference" / "tool_success" / "witness.jsonl") in err


def test_ci_reports_rerun_hint_for_a_missing_folder_can_be_run(tmp_path: Path) -> None:
    artifact = tmp_path / "harness-conformance-mini-swe-agent-podman-123-1"
    other = tmp_path / "typo-dir"
    rows = collect([artifact, other], [])
    by = {r.source: r for r in rows}
    cmd = by[artifact.name].rerun()
    assert cmd is not None
    words = shlex.split(cmd)
    assert words[:4] == ["harness-probe", "run", "-H", "mini-swe-agent"] and words[1:] != []
    assert words[4:6] == ["--runtime", "podman"] and words[3] in registry()
    code, out = _invoke(*words[1:], "--help")  # every option of the hint is one `run` takes
    assert code == 0, out
    assert by[other.name].rerun() is None  # no harness is named: no command that cannot run
    md = render_markdown(rows)
    assert "--runtime '?'" not in md and "-H typo-dir" not in md
    assert "typo\\-dir is no harness this tool knows" in md


def test_say_why_reads_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli.common import say_why

    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"errors": [f"h/s{i}: episode error: x" for i in range(12)]}))
    say_why(summary, 1)
    assert capsys.readouterr().err == ""
    say_why(summary, 2)
    err = capsys.readouterr().err
    assert "exit 2 (12 error(s)" in err and "h/s9: episode error" in err and "and 2 more" in err
