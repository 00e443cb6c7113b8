"""Tool calls whose arguments arrived cut off: never run, and shown in the record as they were sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from orchestrator.checks.evidence import Evidence
from orchestrator.checks.model import Kind, check

__all__: list[str] = []


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    return (v for v in value if isinstance(v, dict)) if isinstance(value, list) else iter(())


def _ran(ev: Evidence, call: dict[str, Any]) -> str | None:
    """How the wire or the collected markers show the call ran, or None."""
    cid = call["tool_call_id"]
    if any(m.get("present") for m in ev.w.markers(cid)):
        return f"the proxy found its marker {call.get('marker_path')}"
    if f"{cid}.txt" in ev.markers:
        return "its marker file was collected"
    # Not the token in a result sent back: the token is in the command text, which a harness may quote in its error.
    return None


# A value this long found within the text sent is a part of the command read out of it.
_READ_OUT = 8


def _calls_in_replies(ev: Evidence) -> dict[str, dict[str, Any]]:
    """The tool calls in the replies the rollout kept (`model_calls[].response`: mini-SWE-agent keeps a reply it could
    not parse only there), by id, each as {"arguments": what the reply gave}: the record shows the call there too."""
    found: dict[str, dict[str, Any]] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            cid = value.get("call_id") if value.get("type") == "function_call" else value.get("id")
            function = value.get("function")
            if isinstance(cid, str) and isinstance(function, dict) and "arguments" in function:
                found.setdefault(cid, {"arguments": function["arguments"]})  # Chat
            elif isinstance(cid, str) and value.get("type") in ("function_call", "tool_use"):
                found.setdefault(cid, {"arguments": value.get("arguments", value.get("input"))})  # Responses, Messages
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for call in _dicts(ev.r.get("model_calls")):
        walk(call.get("response"))
    return found


def _shown(arguments: Any, sent: str | None, intended: Any) -> bool:
    """Whether recorded arguments show what was sent: the text itself or its start (or none kept: null, "" or {}), or
    a record of the failure that quotes the text (OpenCode's `invalid` tool's error); not an object repaired from it,
    one that holds the command (a value found within the text sent: kilo's `{"value": text}` too) or the arguments
    it was cut from, and not another text or object of the record's own (`ls`, `{"command": "true"}`)."""
    if arguments is None or sent is None or arguments in ("", {}):
        return True
    if isinstance(arguments, str):
        # As it came, or the start of it kept (a record may shorten a long text): not text of the record's own.
        return arguments == sent or (len(arguments) >= _READ_OUT and sent.startswith(arguments))
    if not isinstance(arguments, dict) or arguments == intended:
        return False
    if isinstance(intended, dict) and arguments.keys() & intended.keys():
        return False  # a value under the cut arguments' own key (`command`) is a command of the record's own
    values = [v for v in arguments.values() if isinstance(v, str)]
    if any(len(v) >= _READ_OUT and _within(v, sent) for v in values):
        return False  # a part of the command read out of the text: repaired
    return any(_within(sent, v) for v in values)  # an error quoting the text sent


def _within(value: str, sent: str) -> bool:
    """Whether `value` was read out of the JSON text `sent` (as it stands there, or as a JSON string holds it)."""
    return value in sent or json.dumps(value)[1:-1] in sent


@check(
    "tools.args_not_run",
    kind=Kind.BEHAVIORAL,
    evidence=("E5",),
    location="$.tool_calls[*].arguments",
    needs=("rollout", "witness"),
    scope=("args_cut",),
    claims=lambda ev: ev.witness is not None and bool(ev.w.malformed_calls()),
)
def args_not_run(ev: Evidence) -> list[str]:
    """A tool call whose arguments JSON arrived cut off is never run, and the record shows it as it was sent.

    Lies caught: a harness that repairs the cut JSON and runs the guessed command (its marker appears); a record that
    shows such a call with arguments it repaired (an object where the wire sent text no parser reads), or as a call
    that ran and succeeded; and a record that hides the call altogether (no tool record, no history turn, no reply it
    kept names it).
    Applies in `tool_args_truncated` and wherever a reply cut at the token limit carried a call; where steps reach the
    harness as text (no call id on the wire), or the reply dropped the call whole (Gemini sends no call it could not
    parse: witnessed `not_sent`), only whether the command ran is judged.
    """
    reasons = []
    # Ids that are strings only: a hostile record's id may be an object, which names no call (and hashes not).
    records = {t["tool_call_id"]: t for t in _dicts(ev.r.get("tool_calls")) if isinstance(t.get("tool_call_id"), str)}
    history: dict[Any, dict[str, Any]] = {}
    for inv in _dicts(ev.r.get("invocations")):
        for m in _dicts(inv.get("conversation")):
            for tc in _dicts(m.get("tool_calls")) if m.get("role") == "assistant" else ():
                if isinstance(tc.get("tool_call_id"), str):
                    history.setdefault(tc["tool_call_id"], tc)
    # Steps delivered as text (Terminus 2's keystrokes, SciCode's blocks) put no call id on the wire: there the record
    # cannot be joined to the call, and only whether the command ran is judged.
    by_text = bool((ev.scenario.get("harness_profile") or {}).get("delivery"))
    kept_replies = _calls_in_replies(ev)
    for call in ev.w.malformed_calls():
        cid, sent = call["tool_call_id"], call.get("arguments_text")
        ran = _ran(ev, call)
        if ran:
            cut = f"its arguments were cut off: {sent!r}" if sent else "its text was cut off"
            reasons.append(f"ran the truncated command of {cid}: {ran} ({cut})")
        # A call the reply dropped whole (Gemini's MALFORMED_FUNCTION_CALL, or MAX_TOKENS) put neither id nor
        # arguments on the wire: a record cannot show it, so there too only whether it ran is judged.
        if by_text or call.get("not_sent"):
            continue
        record, turn, reply = records.get(cid), history.get(cid), kept_replies.get(cid)
        if record is None and turn is None and reply is None:
            reasons.append(
                f"{cid}: the record does not show the malformed call (no tool record, no history turn, no kept reply)"
            )
            continue
        for where, entry in (("tool record", record), ("history", turn), ("kept reply", reply)):
            if entry is not None and not _shown(entry.get("arguments"), sent, call.get("arguments")):
                reasons.append(
                    f"{cid}: its {where} gives arguments {entry.get('arguments')!r}, repaired from what was sent "
                    f"({sent!r}, not JSON)"
                )
        # A record of another tool (OpenCode's `invalid`, which ran to tell the model the input did not parse) is no
        # claim that this call's command ran.
        same_tool = record is not None and record.get("tool_name") == call.get("name")
        if record is not None and same_tool and not ran:
            if record.get("status") == "succeeded" or record.get("exit_code") == 0:
                reasons.append(f"{cid}: its tool record says it ran and succeeded, and it never ran")
            elif record.get("exit_code") is not None:
                # A command that never started has no exit code: one recorded says it ran (and failed).
                reasons.append(f"{cid}: its tool record gives exit_code {record.get('exit_code')!r}, and it never ran")
    return reasons
