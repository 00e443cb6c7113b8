"""Run modes: honest, and deliberate misbehaviours used as negative controls for the orchestrator's checks.

A misreporting mode is a pure rewrite of the honest rollout just before it is written: the agent
behaves the same on the wire, only its self-report lies, and the result is still a valid
probe-rollout/v1 (the lie must be caught against the witness, not by the schema). Each rewrite
touches the first matching record only, and leaves the rollout unchanged (with a note on stderr)
when the run produced nothing it could lie about.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from probe_reference import hostile_bodies, hostile_files, hostile_readers
from probe_reference.hostile_sandbox import burn_cpu, escape_attempts, fork_bomb
from probe_reference.progress import say
from probe_reference.rollout import ModelCall, Rollout
from probe_reference.tools import ToolResult

Transform = Callable[[Rollout], Rollout]

EDIT_SUFFIX = " (edited)"
WRONG_ANSWER = "The task is finished; nothing needed to be run."
DUPLICATE_SUFFIX = "-dup"
SWALLOWED = "the run did not finish"
WAIT_CLAIMED_MS = 10_000.0
# What modes own_turn and unmarked_turn write as an assistant turn of their own, ahead of the first call.
OWN_TURN = "I will run each command I am asked to run, one at a time, and then give the final answer."
IMPATIENT_RETRY_S = 0.2


def unchanged(rollout: Rollout) -> Rollout:
    return rollout


def hang_forever(_rollout_dir: Path) -> NoReturn:
    """Never call the model; only a signal (the orchestrator's timeout) ends the run."""
    say("mode hang: sleeping before the first model call until killed")
    while True:
        time.sleep(3600)


def _failed_http(call: ModelCall) -> bool:
    status = call["status_code"]
    return status is not None and not 200 <= status < 300


def _nothing(mode: str, why: str, rollout: Rollout) -> Rollout:
    say(f"mode {mode}: nothing to misreport ({why}); the rollout is the honest one")
    return rollout


def _drop_refs(rollout: Rollout, model_call_id: str) -> None:
    for holder in (*rollout["steps"], *rollout["invocations"]):
        holder["model_call_refs"] = [ref for ref in holder["model_call_refs"] if ref != model_call_id]


def drop_failed_attempt(honest: Rollout) -> Rollout:
    """Forget the first attempt that got a non-2xx status, everywhere it is referenced."""
    rollout = copy.deepcopy(honest)
    call = next((c for c in rollout["model_calls"] if _failed_http(c)), None)
    if call is None:
        return _nothing("drop_failed_attempt", "no non-2xx model call", rollout)
    rollout["model_calls"].remove(call)
    _drop_refs(rollout, call["model_call_id"])
    return rollout


def wrong_tokens(honest: Rollout) -> Rollout:
    """Over-report the total of the first call whose total is known by one token."""
    rollout = copy.deepcopy(honest)
    for call in rollout["model_calls"]:
        total = call["token_stats"]["total"]
        if total is not None:
            call["token_stats"]["total"] = total + 1
            return rollout
    return _nothing("wrong_tokens", "no call with a known total", rollout)


def alter_tool_output(honest: Rollout) -> Rollout:
    """Edit the first recorded tool output, in the tool record and in the history alike (consistently)."""
    rollout = copy.deepcopy(honest)
    tool = next((t for t in rollout["tool_calls"] if t["output"] is not None), None)
    if tool is None or tool["output"] is None:
        return _nothing("alter_tool_output", "no recorded tool output", rollout)
    tool["output"] += EDIT_SUFFIX
    for invocation in rollout["invocations"]:
        if invocation["invocation_id"] != tool["invocation_id"]:
            continue
        for entry in invocation["conversation"]:
            content = entry.get("content")
            if entry["role"] == "tool" and entry.get("tool_call_id") == tool["tool_call_id"] and content is not None:
                entry["content"] = content + EDIT_SUFFIX
                break
    return rollout


def drop_tool_record(honest: Rollout) -> Rollout:
    """Forget the first tool execution record; the history still shows its call and result."""
    rollout = copy.deepcopy(honest)
    if not rollout["tool_calls"]:
        return _nothing("drop_tool_record", "no tool call", rollout)
    del rollout["tool_calls"][0]
    return rollout


def lost_ownership(honest: Rollout) -> Rollout:
    """The first model call belongs to no invocation (its step still lists it)."""
    rollout = copy.deepcopy(honest)
    if not rollout["model_calls"]:
        return _nothing("lost_ownership", "no model call", rollout)
    call = rollout["model_calls"][0]
    owner, call["invocation_id"] = call["invocation_id"], None
    for invocation in rollout["invocations"]:
        if invocation["invocation_id"] == owner:
            invocation["model_call_refs"] = [r for r in invocation["model_call_refs"] if r != call["model_call_id"]]
    return rollout


def wrong_answer_report(honest: Rollout) -> Rollout:
    """Report a final answer the model never gave."""
    rollout = copy.deepcopy(honest)
    answer = rollout["outcome"]["final_answer"]
    rollout["outcome"]["final_answer"] = WRONG_ANSWER if answer != WRONG_ANSWER else WRONG_ANSWER + " Really."
    return rollout


def duplicate_attempt(honest: Rollout) -> Rollout:
    """Report the first failed attempt twice: the copy gets a new id and sits right after the original."""
    rollout = copy.deepcopy(honest)
    calls = rollout["model_calls"]
    index = next((i for i, c in enumerate(calls) if c["error_category"] is not None), None)
    if index is None:
        return _nothing("duplicate_attempt", "no failed model call", rollout)
    original = calls[index]["model_call_id"]
    taken = {c["model_call_id"] for c in calls}
    new_id = original + DUPLICATE_SUFFIX
    while new_id in taken:
        new_id += DUPLICATE_SUFFIX
    duplicate = copy.deepcopy(calls[index])
    duplicate["model_call_id"] = new_id
    calls.insert(index + 1, duplicate)
    for holder in (*rollout["steps"], *rollout["invocations"]):
        refs = holder["model_call_refs"]
        if original in refs:
            refs.insert(refs.index(original) + 1, new_id)
    return rollout


def swallow_error(honest: Rollout) -> Rollout:
    """An error outcome that names nothing: the status and category of what failed left out."""
    rollout = copy.deepcopy(honest)
    if rollout["outcome"]["status"] != "error":
        return _nothing("swallow_error", "the run did not end in an error", rollout)
    rollout["outcome"]["failure_kind"] = "error"
    rollout["outcome"]["failure_reason"] = SWALLOWED
    return rollout


def wrong_wait(honest: Rollout) -> Rollout:
    """Claim a longer wait before the first retry than was taken (10 s more)."""
    rollout = copy.deepcopy(honest)
    for call in rollout["model_calls"]:
        if call.get("retry_delay_ms") is not None:
            call["retry_delay_ms"] = float(call["retry_delay_ms"]) + WAIT_CLAIMED_MS
            return rollout
    return _nothing("wrong_wait", "no call records a wait before a retry", rollout)


def _repaired(arguments: object) -> object:
    """Cut-off arguments JSON read as a lenient parser would: closed up until it parses."""
    if not isinstance(arguments, str):
        return arguments
    for tail in ("", '"}', "}", '"}}', "]}"):
        try:
            return json.loads(arguments + tail)
        except ValueError:
            continue
    return arguments


def repair_arguments(honest: Rollout) -> Rollout:
    """Record cut-off tool arguments as the object a lenient parser makes of them, in tool records and history."""
    rollout = copy.deepcopy(honest)
    changed = False
    for holder in [
        *rollout["tool_calls"],
        *(tc for inv in rollout["invocations"] for m in inv["conversation"] for tc in m.get("tool_calls", [])),
    ]:
        fixed = _repaired(holder["arguments"])
        if fixed is not holder["arguments"]:
            holder["arguments"], changed = fixed, True
    return rollout if changed else _nothing("repair_arguments", "no tool arguments that are not JSON", rollout)


def stream_mislabel(honest: Rollout) -> Rollout:
    """Streamed only: every success recorded as finishing with `stop`, whatever the reply said."""
    rollout = copy.deepcopy(honest)
    for call in rollout["model_calls"]:
        if call["error_category"] is None and call["finish_reason"] is not None:
            call["finish_reason"] = "stop"
    return rollout


@dataclass(frozen=True)
class Mode:
    name: str
    summary: str
    transform: Transform = unchanged
    before_first_call: Callable[[Path], None] | None = None  # gets the rollout's folder
    # Hostile modes (hostile_files.py): after the rollout is written, and in place of running a tool call.
    after_write: Callable[[Path], None] | None = None
    run_tool: Callable[[str, str], ToolResult] | None = None
    # Applied after `transform` when the agent streamed (the misreporting differs with the transport).
    stream_transform: Transform | None = None
    # The SDK retries nothing; the agent retries a failed HTTP attempt itself after this many seconds.
    own_retry_s: float | None = None
    # An assistant turn the agent writes into the history itself before its first call; marked as its own in the
    # record when `own_turn_marked` (honest), else recorded as the model's.
    own_turn: str | None = None
    own_turn_marked: bool = False


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("honest", "report exactly what happened"),
        Mode(
            "hang",
            "sleep before the first model call until killed (orchestrator timeout)",
            unchanged,
            hang_forever,
        ),
        Mode("drop_failed_attempt", "omit the first non-2xx model call from the report", drop_failed_attempt),
        Mode("wrong_tokens", "report total tokens + 1 for the first call with a known total", wrong_tokens),
        Mode(
            "alter_tool_output", "append ' (edited)' to the first tool output (record and history)", alter_tool_output
        ),
        Mode("drop_tool_record", "omit the first tool execution record", drop_tool_record),
        Mode("lost_ownership", "the first model call is owned by no invocation", lost_ownership),
        Mode("wrong_answer_report", "report a final answer the model never gave", wrong_answer_report),
        Mode("duplicate_attempt", "report the first failed model call twice", duplicate_attempt),
        Mode("swallow_error", "end an error outcome with no word of what failed", swallow_error),
        Mode("wrong_wait", "claim 10 s more wait before the first retry than was taken", wrong_wait),
        Mode(
            "impatient",
            "retry a 429 or 5xx itself after 0.2 s, whatever Retry-After asks (and record that honestly)",
            own_retry_s=IMPATIENT_RETRY_S,
        ),
        Mode(
            "repair_arguments", "record cut-off tool arguments as the object a lenient parser makes", repair_arguments
        ),
        Mode(
            "own_turn",
            "write an assistant turn of its own before the first call, and record it marked as its own (honest)",
            own_turn=OWN_TURN,
            own_turn_marked=True,
        ),
        Mode(
            "unmarked_turn",
            "write an assistant turn of its own before the first call, recorded as the model's",
            own_turn=OWN_TURN,
        ),
        Mode(
            "stream_mislabel",
            "when streaming, record every success as finishing with `stop`",
            stream_transform=stream_mislabel,
        ),
        Mode(
            "hostile-network",
            "try to leave the pod (host, metadata and public addresses; the proxy's other ports), then do the task",
            unchanged,
            escape_attempts,
        ),
        Mode("hostile-cpu", "burn every CPU until killed", unchanged, lambda _dir: burn_cpu()),
        Mode("hostile-fork", "fork until the pids limit stops it", unchanged, lambda _dir: fork_bomb()),
        Mode("hostile-version", "a --version that never ends (then the task, honestly)"),
        Mode(
            "hostile-files",
            "leave links, `..` loops, a FIFO and a device in native/ and markers",
            after_write=hostile_files.plant_files,
        ),
        Mode(
            "hostile-sparse",
            "leave a 100 GiB sparse file before the rollout in native/",
            after_write=hostile_files.plant_sparse,
        ),
        Mode("hostile-marker", "make each marker a FIFO or a link to /dev/zero", run_tool=hostile_files.marker_tool),
        Mode(
            "hostile-deep-body",
            "send one request nested 3000 levels deep first",
            before_first_call=lambda _dir: hostile_files.deep_body(),
        ),
        Mode(
            "hostile-body-flood",
            "send 24 request bodies of 16 MiB first (to fill the witness)",
            before_first_call=lambda _dir: hostile_bodies.body_flood(),
        ),
        Mode(
            "hostile-chunked-body",
            "stream one 1.5 GiB chunked request body first (to fill the proxy's memory)",
            before_first_call=lambda _dir: hostile_bodies.chunked_body(),
        ),
        *(Mode(name, summary, after_write=act) for name, summary, act in hostile_readers.AFTER_WRITE),
    )
}

# Honest modes: they report what happened (own_turn also does something of its own on the wire, and says so).
HONEST = ("honest", "own_turn")
MISREPORTING = tuple(name for name in MODES if name not in (*HONEST, "hang") and not name.startswith("hostile-"))
HOSTILE = tuple(name for name in MODES if name.startswith("hostile-"))
