"""The "Harness conformance P0" check: probe outputs -> a row per harness (pass/fail/unavailable), Markdown, exit."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from orchestrator.evidence import FormatError, load_json

__all__ = ["CHECK_NAME", "EXIT", "Row", "check_run", "collect", "exit_code", "render_markdown"]

CHECK_NAME = "Harness conformance P0"
# 2 wins over 1: a missing measurement means the check cannot speak for every selected harness.
EXIT = {"pass": 0, "fail": 1, "unavailable": 2}
_ICON = {"pass": "✅ pass", "fail": "❌ fail", "unavailable": "⚠️ unavailable"}
_REASON_CHARS = 300
# GitHub refuses a check-run summary over 65,535 characters.
_CHECK_LIMIT = 60_000


@dataclass
class Row:
    harness: str
    runtime: str
    status: str  # pass | fail | unavailable
    source: str  # the directory this row was read from
    scenarios_run: int = 0
    scenarios_failed: list[str] = field(default_factory=list)
    first_failure: str | None = None  # "scenario: check-or-execution: reason"
    note: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    def unsafe_args(self) -> bool:
        """Whether an argument of the rerun command holds a control character (a line break ends a code fence)."""
        words = [self.harness, self.runtime, *self.scenarios_failed, *self.options, *self.options.values()]
        return any(_CONTROL.search(w) for w in words)

    def rerun(self) -> str | None:
        """The command that measures this row again, or None when the row names no harness this tool knows."""
        from orchestrator.harnesses import registry  # loaded on use: only a non-passing row needs it

        if self.harness not in registry() or self.unsafe_args():
            return None
        cmd = ["harness-probe", "run", "-H", self.harness]
        for key, value in sorted(self.options.items()):
            cmd += ["-a", f"{key}={value}"]
        for s in self.scenarios_failed:
            cmd += ["-s", s]
        if self.runtime not in ("docker", "", "?"):
            cmd += ["--runtime", self.runtime]
        cmd += ["-o", f"probe-out/{self.harness}-rerun"]
        return shlex.join(cmd)


def _runtime_of(suite: dict[str, Any] | None) -> str:
    try:
        words = shlex.split(str((suite or {}).get("command", "")))
    except ValueError:  # an unbalanced quote: the runtime is unknown
        return "?"
    for i, w in enumerate(words):
        if w == "--runtime" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--runtime="):
            return w.partition("=")[2]
    return "docker"


def _read_json(path: Path, fmt: str) -> tuple[dict[str, Any] | None, str | None]:
    if not path.is_file():
        return None, f"no {path.name}"
    try:
        data: dict[str, Any] = load_json(path, fmt)
    except (FormatError, ValueError, OSError) as exc:
        return None, f"{path.name} unreadable: {str(exc).splitlines()[0]}"
    return data, None


def _from_summary(summary: dict[str, Any], runtime: str, source: str) -> list[Row]:
    rows = []
    # Errors not tied to one harness (e.g. an image that did not build) leave every harness of the run unmeasured.
    named = {h["name"] for h in summary["harnesses"]} | {m["harness"] for m in summary["missing"]}
    global_errors = [e for e in summary["errors"] if not any(e.startswith(f"{n}/") for n in named)]
    # A summary that says exit 2 with no harness to blame (no error, no missing episode named under one) leaves
    # every harness unmeasured: whatever failed, no row may pass over it.
    blamed = any(
        h["verdict"] == "error" or any(e.startswith(f"{h['name']}/") for e in summary["errors"])
        for h in summary["harnesses"]
    )
    unexplained = summary["exit_code"] == 2 and not blamed and not summary["missing"]
    for h in summary["harnesses"]:
        episodes = h["scenarios"]
        own_errors = [e for e in summary["errors"] if e.startswith(f"{h['name']}/")]
        missing = sorted(m["scenario"] for m in summary["missing"] if m["harness"] == h["name"])
        failed = [e["scenario"] for e in episodes if e["verdict"] in ("fail", "error")]
        first = next((e for e in episodes if e["verdict"] in ("fail", "error") and e["first_failure"]), None)
        row = Row(h["name"], runtime, "pass", source, len(episodes), failed + missing, options=dict(h["options"]))
        if first:
            ff = first["first_failure"]
            row.first_failure = f"{first['scenario']}: {ff['source']}: {ff['reason']}"
        stopped = summary.get("interrupted")
        if stopped is not None:
            # A stopped run measured part of the grid, and what it cut short not at all: no pass, no fail.
            not_run = sum(m["harness"] == h["name"] for m in stopped["not_run"])
            cut = sum(e["verdict"] == "interrupted" for e in episodes)
            row.status = "unavailable"
            row.note = f"the run was interrupted: {cut} episode(s) cut short, {not_run} not run"
        elif h["verdict"] == "error" or missing or global_errors or own_errors or unexplained:
            row.status = "unavailable"
            row.note = (
                (global_errors[0] if global_errors else None)
                or (own_errors[0] if own_errors else None)
                or (
                    f"no result for {', '.join(missing)}"
                    if missing
                    else "an episode could not be run or checked"
                    if h["verdict"] == "error"
                    else f"the probe's summary says exit {summary['exit_code']}"
                )
            )
        elif h["verdict"] == "fail":
            row.status = "fail"
        if not summary["full_suite"] and row.status == "pass":
            row.note = "partial run: not every scenario of the catalogue"
        rows.append(row)
    for m in summary["missing"]:
        if m["harness"] not in {h["name"] for h in summary["harnesses"]}:
            rows.append(Row(m["harness"], runtime, "unavailable", source, note="no episode produced a result"))
    for m in summary.get("interrupted", {}).get("not_run", []):
        if m["harness"] not in {h["name"] for h in summary["harnesses"]}:
            rows.append(Row(m["harness"], runtime, "unavailable", source, note="the run was interrupted before it ran"))
    # One row per harness even when a harness lost every episode and is only named in `missing`.
    merged: dict[str, Row] = {}
    for r in rows:
        merged.setdefault(r.harness, r)
    return list(merged.values())


def _leg(directory: Path) -> tuple[Path, dict[str, Any] | None, str | None]:
    """A CI leg folder (leg.json + run/) or a bare run directory -> (run dir, leg record, why it is unusable)."""
    leg_file = directory / "leg.json"
    if not leg_file.is_file():
        return directory, None, None
    leg, why = _read_json(leg_file, "ci-leg/v1")
    return directory / "run", leg, why


def read_dir(directory: Path) -> list[Row]:
    """Rows for one probe output. Anything but a readable summary backed by exit 0 or 1 is `unavailable`."""
    source = directory.name
    run_dir, leg, leg_error = _leg(directory)
    if leg_error:
        return [Row(source, "?", "unavailable", source, note=leg_error)]
    suite, _ = _read_json(run_dir / "suite.json", "suite/v1")
    runtime = leg["runtime"] if leg else _runtime_of(suite)
    announced = [h["name"] for h in suite["harnesses"]] if suite else ([leg["harness"]] if leg else [source])
    summary, why = _read_json(run_dir / "summary.json", "probe-summary/v1")
    code = leg["exit_code"] if leg else None
    if summary is None:
        what = f"the probe exited {code}" if code is not None else "the probe did not finish"
        return [Row(h, runtime, "unavailable", source, note=f"{what} ({why})") for h in announced]
    rows = _from_summary(summary, runtime, source)
    if leg is not None and code != summary["exit_code"]:
        # A summary that disagrees with the process that wrote it (killed after writing it, or an older one)
        # cannot stand for this job.
        for r in rows:
            r.status, r.note = "unavailable", f"the probe exited {code}, its summary says {summary['exit_code']}"
    return rows


def collect(dirs: list[Path], expected: list[str | tuple[str, str]]) -> list[Row]:
    """Every row found in `dirs`, plus an `unavailable` row for each expected harness (or harness and runtime,
    one matrix leg) that no directory measured."""
    rows: list[Row] = []
    for d in dirs:
        # A directory named but absent (an artifact that never came) is a measurement unavailable, not silence.
        rows += read_dir(d) if d.is_dir() else [_absent(d)]
    for want in expected:
        harness, runtime = (want, None) if isinstance(want, str) else want
        if not any(r.harness == harness and runtime in (None, r.runtime) for r in rows):
            why = "no output (the probe job produced nothing)"
            rows.append(Row(harness, runtime or "docker", "unavailable", "-", note=why))
    return sorted(rows, key=lambda r: (r.harness, r.runtime, r.source))


# The shipped workflow's artifact name: harness-conformance-<harness>-<runtime>-<run id>-<attempt>.
_ARTIFACT = re.compile(r"harness-conformance-(?P<harness>.+)-(?P<runtime>docker|podman|apptainer)-\d+-\d+")


def _absent(d: Path) -> Row:
    # An artifact's folder names its harness and runtime, so its row can be rerun; any other name is kept as given.
    m = _ARTIFACT.fullmatch(d.name)
    harness, runtime = (m["harness"], m["runtime"]) if m else (d.name, "?")
    return Row(harness, runtime, "unavailable", d.name, note=f"no such directory: {d}")


def exit_code(rows: list[Row]) -> int:
    return max((EXIT[r.status] for r in rows), default=0)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def md_text(text: str, limit: int = _REASON_CHARS) -> str:
    """Harness-controlled text made inert in Markdown: no markup, links, HTML, mentions or line breaks."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    flat = _MD_SPECIAL.sub(r"\\\1", flat)
    # Entities last, so their own `#` is not escaped; `@` as an entity mentions nobody.
    return flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")


def _title(rows: list[Row]) -> str:
    if not rows:
        return "no harness selected"
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("pass", "fail", "unavailable")}
    return ", ".join(f"{n} {'passed' if s == 'pass' else 'failed' if s == 'fail' else s}" for s, n in counts.items())


def render_markdown(rows: list[Row], artifact_url: str | None = None) -> str:
    lines = [f"## {CHECK_NAME}: {_title(rows)}", ""]
    if not rows:
        lines.append("The change selected no harness (documentation only), so nothing was probed.")
        return "\n".join(lines) + "\n"
    lines += ["| harness | runtime | result | failed scenarios | first failure |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        failed = f"{len(r.scenarios_failed)} of {r.scenarios_run}" if r.scenarios_run else "—"
        first = md_text(r.first_failure) if r.first_failure else (md_text(r.note) if r.note else "—")
        lines.append(
            f"| {md_text(r.harness, 80)} | {md_text(r.runtime, 40)} | {_ICON[r.status]} | {failed} | {first} |"
        )
    lines.append("")
    for r in rows:
        if r.status == "pass" and not r.note:
            continue
        lines += [f"### {md_text(r.harness, 80)} ({md_text(r.runtime, 40)}): {r.status}", ""]
        if r.note:
            lines.append(f"- {md_text(r.note)}")
        if r.first_failure:
            lines.append(f"- first failure: {md_text(r.first_failure)}")
        if r.scenarios_failed:
            lines.append(f"- failed scenarios: {', '.join(md_text(s, 80) for s in r.scenarios_failed)}")
        if artifact_url:
            url = (
                artifact_url.replace("{harness}", quote(r.harness, safe=""))
                .replace("{runtime}", quote(r.runtime, safe=""))
                .replace("{dir}", quote(r.source, safe=""))
            )
            lines.append(f"- evidence: [{md_text(r.source, 120)}]({url.replace(' ', '%20').replace(')', '%29')})")
        rerun = r.rerun()
        if rerun is None and r.unsafe_args():
            lines += ["- rerun locally: not given, an option, scenario or harness name holds a control character", ""]
        elif rerun is None:
            lines += [f"- rerun locally: {md_text(r.harness, 80)} is no harness this tool knows (`harness-probe "
                      "harnesses list` names them); check the directory given", ""]  # fmt: skip
        else:
            lines += ["- rerun locally:", "", "  ```sh", f"  {rerun.replace('`', '')}", "  ```", ""]
    lines += [
        "Exit 1 of a probe is a measured non-conformance; exit 2 or a missing summary is *unavailable*, never a pass.",
        "",
    ]
    return "\n".join(lines)


def check_run(rows: list[Row], markdown: str) -> dict[str, Any]:
    """The body of a GitHub check-run API call (POST /repos/{owner}/{repo}/check-runs) minus head_sha."""
    code = exit_code(rows)
    body = markdown if len(markdown) <= _CHECK_LIMIT else markdown[:_CHECK_LIMIT] + "\n\n(truncated)\n"
    return {
        "name": CHECK_NAME,
        "status": "completed",
        "conclusion": "success" if code == 0 else "failure",
        "output": {"title": _title(rows), "summary": body},
    }


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
