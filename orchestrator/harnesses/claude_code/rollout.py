"""Turns Claude Code's native records into a probe-rollout/v1 dict, using only what Claude Code recorded."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from orchestrator.harnesses.claude_code.attempts import Attempt, attempts_of, message_text
from orchestrator.harnesses.claude_code.native import NativeLog, Transcript
from orchestrator.harnesses.values import bounded
from orchestrator.records import (
    Gap,
    Message,
    Outcome,
    RequestedCall,
    Rollout,
    RolloutBuilder,
    ToolRecord,
    gap,
    outcome,
    unique_gaps,
)

__all__ = ["build_rollout"]

# Claude Code's Bash tool opens the result of a failed command with this line (what the model sees).
_EXIT_LINE = re.compile(r"\A(?:Error: )?Exit code (\d+)\b")
_STATUS_GAP: Gap = {
    "code": "model_calls.status_code_unrecorded",
    "detail": "the transcript stores replies without their HTTP status; a stored complete reply is taken as "
    "2xx (status_code 200)",
}


def build_rollout(native: NativeLog, harness_name: str) -> Rollout:
    session = native.main.session_id or native.main.path.stem
    b = RolloutBuilder(harness_name, native.version, [gap(c, d) for c, d in native.problems])
    for t in [native.main, *native.subagents]:
        iid = session if t.agent_id is None else f"{session}/agent-{t.agent_id}"
        attempts = attempts_of(t.entries)
        refs = [b.call(a.record(iid)) for a in attempts]
        b.invocation(iid, _conversation(t), parent=None if t.agent_id is None else session, refs=refs)
        step_of_message = _steps(b, iid, attempts)
        for record in _tool_calls(t, iid, step_of_message):
            b.tool(record)
        b.gaps += _attempt_gaps(t, attempts)
    if any(c["response_id"] for c in b.calls):
        b.gaps.append(_STATUS_GAP.copy())
    b.gaps = unique_gaps(b.gaps)
    return b.build(
        _outcome(native),
        rollout_id=session,  # Claude Code is given only the prompt: it records no task id
        # The transcript logs failed requests (api_error) apart from the replies: each is placed in the step of the
        # next reply.
        provenance={"retry_placement": "inferred"},
        extensions={"claude_code": _extensions(native)},
    )


def _attempt_gaps(t: Transcript, attempts: list[Attempt]) -> list[Gap]:
    gaps: list[Gap] = []
    where = t.path.name
    unrecorded = [a.call_id for a in attempts if a.open]
    if unrecorded:
        gaps.append(
            gap(
                "model_calls.attempt_outcome_unrecorded",
                f"{where}: {len(unrecorded)} request(s) logged as `api-request` have no reply, api_error "
                f"or error message after them ({', '.join(unrecorded)}): how they ended (status, payload, end time) "
                "is not recorded",
                ["E1", "E7"],
            )
        )
    if attempts and not any(e.get("type") == "api-request" for e in t.entries):
        # Without request records only replies and logged errors are known: a retried attempt may be missing.
        gaps.append(
            gap(
                "model_calls.failed_attempts_unrecorded",
                f"{where} holds no `api-request` records, so attempts that ended without a logged "
                "error are not recorded",
                ["E1", "E7"],
            )
        )
    return gaps


def _steps(b: RolloutBuilder, iid: str, attempts: list[Attempt]) -> dict[str, int]:
    """A step is the reply that ended it plus the attempts before it that did not (its retries); steps are numbered
    per invocation. Returns the step of each reply's message id."""
    number = 0
    step_of_message: dict[str, int] = {}
    pending: list[Attempt] = []
    for a in attempts:
        pending.append(a)
        if a.reply:
            number += 1
            if a.response_id:
                step_of_message[a.response_id] = number
            _step(b, iid, number, pending)
            pending = []
    if pending:
        _step(b, iid, number + 1, pending)
    return step_of_message


def _step(b: RolloutBuilder, iid: str, number: int, attempts: list[Attempt]) -> None:
    first = attempts[0]
    at = first.started_at or (first.reply[0].get("timestamp") if first.reply else first.error_at)
    b.step(number, iid, at, [a.call_id for a in attempts])


def _is_model_reply(e: dict[str, Any]) -> bool:
    return e.get("type") == "assistant" and isinstance(e.get("message"), dict) and not e.get("isApiErrorMessage")


def _blocks(message: dict[str, Any]) -> list[Any]:
    """A message's content blocks; a content that is no list (a string, or a hostile value) has none."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def _conversation(t: Transcript) -> list[Message]:
    """The model-visible turns: user prompts, assistant replies (blocks of one message merged), tool results."""
    conv: list[Message] = []
    last_id: str | None = None
    for e in t.entries:
        if _is_model_reply(e):
            m = e["message"]
            # Kept as recorded, a block without an id or name included: the schema checks then report it.
            calls = [
                cast(
                    RequestedCall,
                    {"tool_call_id": b.get("id"), "tool_name": b.get("name"), "arguments": tool_input(b)},
                )
                for b in _blocks(m)
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            text = message_text(m.get("content"))
            turn: Message
            if last_id is not None and m.get("id") == last_id and conv and conv[-1]["role"] == "assistant":
                turn = conv[-1]
                turn["content"] = "\n".join(x for x in (turn["content"], text) if x) or None
                turn["tool_calls"] = [*turn.get("tool_calls", []), *calls]
            else:
                turn = {"role": "assistant", "content": text}
                if calls:
                    turn["tool_calls"] = calls
                conv.append(turn)
            last_id = m.get("id")
        elif e.get("type") == "user" and isinstance(e.get("message"), dict):
            content = e["message"].get("content")
            blocks = content if isinstance(content, list) else []
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    conv.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _output(b)})
            prompt = (
                content
                if isinstance(content, str)
                else message_text([b for b in blocks if isinstance(b, dict) and b.get("type") == "text"])
            )
            if prompt:
                conv.append({"role": "user", "content": prompt})
            last_id = None
    return conv


def _tool_calls(t: Transcript, iid: str, step_of_message: dict[str, int]) -> list[ToolRecord]:
    results: dict[str, dict[str, Any]] = {}
    for e in t.entries:
        message = e.get("message")
        content = message.get("content") if e.get("type") == "user" and isinstance(message, dict) else None
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str):
                results.setdefault(b["tool_use_id"], b)
    out: list[ToolRecord] = []
    seen: set[str] = set()
    for e in t.entries:
        if not _is_model_reply(e):
            continue
        m = e["message"]
        for b in _blocks(m):
            if not (isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)):
                continue
            result = results.get(b["id"])
            if result is None or b["id"] in seen:
                continue  # requested but never run (or a repeated block): not an execution record
            seen.add(b["id"])
            output = _output(result)
            is_error = result.get("is_error")
            status = None if not isinstance(is_error, bool) else ("failed" if is_error else "succeeded")
            found = _EXIT_LINE.match(output or "") if is_error else None
            out.append(
                {
                    "tool_call_id": b["id"],
                    "tool_name": b.get("name") or "",
                    "arguments": tool_input(b),
                    "status": status,
                    "exit_code": int(found.group(1)) if found else None,
                    "output": output,
                    "invocation_id": iid,
                    "step_no": step_of_message.get(str(m.get("id"))),
                }
            )
    return out


# Claude Code's record of a tool input it could not parse as JSON: the text it received, kept under this key.
UNPARSED = "__unparsedToolInput"


def tool_input(block: dict[str, Any]) -> Any:
    """A tool_use block's input as Claude Code recorded it; where its record says the input could not be parsed
    (`{"__unparsedToolInput": {"raw": TEXT, "len": N}}`, seen on 2.1.328), the text it received, as it was."""
    given = block.get("input")
    if isinstance(given, dict) and set(given) == {UNPARSED} and isinstance(given[UNPARSED], dict):
        raw = given[UNPARSED].get("raw")
        if isinstance(raw, str):
            return raw
    return given


def _output(block: dict[str, Any]) -> str | None:
    # The tool_result block is exactly what went back to the model: a string, or text blocks joined.
    content = block.get("content")
    if content is None:
        return None
    return message_text(content) if isinstance(content, (str, list)) else json.dumps(content)


def _outcome(native: NativeLog) -> Outcome:
    result = native.result
    if result is not None:
        text = result.get("result") if isinstance(result.get("result"), str) else None
        if result.get("is_error") is True or result.get("subtype") not in (None, "success"):
            kind = result.get("terminal_reason") or result.get("api_error_type") or result.get("subtype")
            return outcome(
                "error", failure_kind=str(kind) if kind else "error", failure_reason=text or _first_error(result)
            )
        if text:
            return outcome("completed", final_answer=text)
    # No result event (the run was killed, or stdout was not kept): the transcript's last assistant record.
    replies = [e for e in native.main.entries if e.get("type") == "assistant" and isinstance(e.get("message"), dict)]
    last = replies[-1] if replies else None
    if last is not None and last.get("isApiErrorMessage"):
        reason = message_text(last["message"].get("content"))
        return outcome("error", failure_kind="api_error", failure_reason=reason)
    if last is not None and last["message"].get("stop_reason") == "end_turn":
        text = message_text(last["message"].get("content"))
        if text:
            return outcome("completed", final_answer=text)
    return outcome("unknown")


def _first_error(result: dict[str, Any]) -> str | None:
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        return str(errors[0])
    return None


def _extensions(native: NativeLog) -> dict[str, Any]:
    result = native.result or {}
    keep = ("subtype", "is_error", "terminal_reason", "num_turns", "stop_reason", "api_error_status", "usage")
    init = next((e for e in native.stream if e.get("type") == "system" and e.get("subtype") == "init"), {})
    return {
        "transcript": native.main.path.name,
        "subagent_transcripts": [t.path.name for t in native.subagents],
        "query_sources": sorted({str(e.get("querySource")) for e in native.main.entries if e.get("querySource")}),
        "model": init.get("model"),
        "result": {k: bounded(result[k]) for k in keep if k in result},
    }
