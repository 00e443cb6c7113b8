"""junit.xml: a testsuite per harness, a testcase per scenario x check, shown natively by CI runners."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from typing import Any

from orchestrator.report.table import HarnessView, clean, execution_text, listed, shorten, views

__all__ = ["junit_chunks", "render_junit"]

_COUNTS = ("tests", "failures", "errors", "skipped")


def _text(text: str) -> str:
    # ElementTree escapes markup but writes control characters raw, which no XML parser accepts.
    return clean(text)


def _case(suite: ET.Element, counts: dict[str, int], classname: str, name: str) -> ET.Element:
    counts["tests"] += 1
    return ET.SubElement(suite, "testcase", {"classname": _text(classname), "name": _text(name), "time": "0"})


def _execution_case(suite: ET.Element, counts: dict[str, int], classname: str, episode: dict[str, Any]) -> None:
    verdict = episode["verdict"]
    if verdict not in ("error", "skipped", "interrupted"):
        return
    case = _case(suite, counts, classname, "execution")
    case.set("time", f"{episode['execution']['seconds']:g}")
    # Cut short by the run's stop: neither the harness's failure nor an error of ours, and its checks never ran.
    if verdict in ("skipped", "interrupted"):
        counts["skipped"] += 1
        ET.SubElement(case, "skipped", {"message": _text(shorten(execution_text(episode), 500))})
        return
    counts["errors"] += 1
    ff = episode["first_failure"]
    reason = ff["reason"] if ff else execution_text(episode)
    err = ET.SubElement(case, "error", {"message": _text(shorten(reason, 500)), "type": "execution"})
    lines = [f"execution: {execution_text(episode)}", f"normalize: {episode['normalize']['status']}"]
    if episode["normalize"]["message"]:
        lines.append(f"normalize message: {episode['normalize']['message']}")
    lines += [f"input unavailable: {k}: {v}" for k, v in sorted(episode["inputs_unavailable"].items())]
    err.text = _text("\n".join(lines))


def _check_case(suite: ET.Element, counts: dict[str, int], classname: str, check: dict[str, Any]) -> None:
    case = _case(suite, counts, classname, check["id"])
    status = check["status"]
    if status == "not_applicable":
        counts["skipped"] += 1
        ET.SubElement(case, "skipped", {"message": "not applicable: outside the scenario's declared scope"})
    elif status == "fail":
        counts["failures"] += 1
        reasons = check["reasons"] or ["failed (no reason given)"]
        # The type names the tier: a P1 failure is reported here but does not fail the run's exit code.
        fail = ET.SubElement(
            case,
            "failure",
            {"message": _text(shorten(reasons[0], 500)), "type": f"{check['tier']} {check['kind']}"},
        )
        shown, more = listed(reasons)
        # Each reason shortened as report.html's are (one may quote a tool output of megabytes); the result has all.
        lines = [*(shorten(r, 1000) for r in shown), *([more] if more else []), f"location: {check['location']}"]
        fail.text = _text("\n".join(lines))


def _tag(name: str, attrs: dict[str, str]) -> str:
    # ElementTree's own escaping of attribute values, for a start tag written ahead of its children.
    return ET.tostring(ET.Element(name, attrs), encoding="unicode").removesuffix(" />") + ">"


def _child(el: ET.Element, level: int) -> str:
    ET.indent(el, level=level)
    el.tail = None
    return ET.tostring(el, encoding="unicode")


def _cases(
    t: HarnessView, missing: list[str], counts: dict[str, int], not_run: list[str] | None = None
) -> Iterator[ET.Element]:
    """The testcases of one harness in order: each episode's execution and checks, then its missing episodes, then
    those an interrupted run never started."""
    holder = ET.Element("testsuite")
    for e in t.episodes():
        classname = f"{t.name}.{e['scenario']}"
        _execution_case(holder, counts, classname, e)
        for c in e["checks"]:
            _check_case(holder, counts, classname, c)
        yield from holder
        holder.clear()
    for scenario in missing:
        case = _case(holder, counts, f"{t.name}.{scenario}", "execution")
        counts["errors"] += 1
        ET.SubElement(case, "error", {"message": "no scenario_result: the episode is missing", "type": "execution"})
        yield from holder
        holder.clear()
    for scenario in not_run or []:
        case = _case(holder, counts, f"{t.name}.{scenario}", "execution")
        counts["skipped"] += 1
        ET.SubElement(case, "skipped", {"message": "not run: the run was interrupted before this episode started"})
        yield from holder
        holder.clear()


def junit_chunks(summary: dict[str, Any], tables: Iterable[HarnessView]) -> Iterator[bytes]:
    """junit.xml in pieces, as ElementTree would write the whole tree indented: each suite's counts are taken in a
    first pass over its episodes, its cases written in a second."""
    missing: dict[str, list[str]] = {}
    for m in summary["missing"]:
        missing.setdefault(m["harness"], []).append(m["scenario"])
    not_run: dict[str, list[str]] = {}
    for m in summary.get("interrupted", {}).get("not_run", []):
        not_run.setdefault(m["harness"], []).append(m["scenario"])
    by_name = {t.name: t for t in tables}
    # Harnesses with episodes first (in order), then those only missing (or not run) episodes, as first named.
    suites = [*by_name, *(h for h in [*missing, *not_run] if h not in by_name)]
    suites = list(dict.fromkeys(suites))
    counted = {}
    for name in suites:
        t = by_name.get(name) or HarnessView(name, "", {}, 0, (), lambda: iter(()), lambda: iter(()))
        counts = dict.fromkeys(_COUNTS, 0)
        for _ in _cases(t, missing.get(name, []), counts, not_run.get(name)):
            pass
        counted[name] = (t, counts)
    totals = {k: sum(c[k] for _, c in counted.values()) for k in _COUNTS}
    root = _tag("testsuites", {"name": "harness-probe", **{k: str(totals[k]) for k in _COUNTS}})
    yield b"<?xml version='1.0' encoding='utf-8'?>\n"
    if not suites:
        yield (root.removesuffix(">") + " />\n").encode()
        return
    yield root.encode()
    props = ET.Element("properties")
    for key in ("run_id", "profile", "tool_version"):
        ET.SubElement(props, "property", {"name": key, "value": _text(str(summary[key]))})
    properties = _child(props, 2)
    for name in suites:
        t, counts = counted[name]
        yield f"\n  {_tag('testsuite', {'name': _text(name), **{k: str(counts[k]) for k in _COUNTS}})}".encode()
        yield f"\n    {properties}".encode()
        for case in _cases(t, missing.get(name, []), dict.fromkeys(_COUNTS, 0), not_run.get(name)):
            yield f"\n    {_child(case, 2)}".encode()
        yield b"\n  </testsuite>"
    yield b"\n</testsuites>\n"


def render_junit(summary: dict[str, Any]) -> bytes:
    return b"".join(junit_chunks(summary, views(summary)))
