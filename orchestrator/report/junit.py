"""junit.xml: a testsuite per harness, a testcase per scenario x check, shown natively by CI runners."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from typing import Any

from orchestrator.report.table import clean, execution_text, shorten

__all__ = ["render_junit"]

_COUNTS = ("tests", "failures", "errors", "skipped")


def _text(text: str) -> str:
    # ElementTree escapes markup but writes control characters raw, which no XML parser accepts.
    return clean(text)


def _case(suite: ET.Element, counts: dict[str, int], classname: str, name: str) -> ET.Element:
    counts["tests"] += 1
    return ET.SubElement(suite, "testcase", {"classname": _text(classname), "name": _text(name), "time": "0"})


def _execution_case(suite: ET.Element, counts: dict[str, int], classname: str, episode: dict[str, Any]) -> None:
    verdict = episode["verdict"]
    if verdict not in ("error", "skipped"):
        return
    case = _case(suite, counts, classname, "execution")
    case.set("time", f"{episode['execution']['seconds']:g}")
    if verdict == "skipped":
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
        fail.text = _text("\n".join([*reasons, f"location: {check['location']}"]))


def render_junit(summary: dict[str, Any]) -> bytes:
    root = ET.Element("testsuites", {"name": "harness-probe"})
    totals = dict.fromkeys(_COUNTS, 0)
    suites: dict[str, tuple[ET.Element, dict[str, int]]] = {}

    def suite_for(harness: str) -> tuple[ET.Element, dict[str, int]]:
        if harness not in suites:
            el = ET.SubElement(root, "testsuite", {"name": _text(harness)})
            props = ET.SubElement(el, "properties")
            for key in ("run_id", "profile", "tool_version"):
                ET.SubElement(props, "property", {"name": key, "value": _text(str(summary[key]))})
            suites[harness] = (el, dict.fromkeys(_COUNTS, 0))
        return suites[harness]

    for h in summary["harnesses"]:
        suite, counts = suite_for(h["name"])
        for e in h["scenarios"]:
            classname = f"{h['name']}.{e['scenario']}"
            _execution_case(suite, counts, classname, e)
            for c in e["checks"]:
                _check_case(suite, counts, classname, c)
    for m in summary["missing"]:
        suite, counts = suite_for(m["harness"])
        case = _case(suite, counts, f"{m['harness']}.{m['scenario']}", "execution")
        counts["errors"] += 1
        ET.SubElement(case, "error", {"message": "no scenario_result: the episode is missing", "type": "execution"})

    for el, counts in suites.values():
        for key in _COUNTS:
            el.set(key, str(counts[key]))
            totals[key] += counts[key]
    for key in _COUNTS:
        root.set(key, str(totals[key]))
    ET.indent(root)
    buf = io.BytesIO()
    ET.ElementTree(root).write(buf, encoding="utf-8", xml_declaration=True)
    return buf.getvalue() + b"\n"
