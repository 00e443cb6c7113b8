"""Turns Codex's native records into a probe-rollout/v1 dict, using only what Codex itself recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.harnesses.base import content_text, tool_arguments
from orchestrator.harnesses.codex.failures import Failure, Retry, outcome, stdout_retries, terminal_failure
from orchestrator.harnesses.codex.native import Gap, Line, NativeLog, tokens
from orchestrator.harnesses.values import integer, nonempty
from orchestrator.records import Message, RequestedCall, Rollout, RolloutBuilder, ToolRecord, exit_status, tool_record

__all__ = ["build_rollout"]

# Codex speaks only the Responses API (`wire_api = "responses"` is the one value it accepts).
PROTOCOL = "responses"
_MODEL_OUTPUT = frozenset({"function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call"})
_TOOL_REQUEST = frozenset({"function_call", "custom_tool_call"})
_TOOL_RESULT = frozenset({"function_call_output", "custom_tool_call_output"})
_ROLES = {"developer": "system", "system": "system", "user": "user", "assistant": "assistant"}
_ALWAYS_GAPS = (
    Gap(
        "model_calls.failed_attempts_unrecorded",
        "Codex's HTTP request layer retries 5xx, 504 and transport errors (request_max_retries) and records nothing "
        "of them; only stream-layer retries are printed, as stdout 'Reconnecting... n/m' events with no time, no "
        "error body and the HTTP status only inside their text",
        ("E1", "E7"),
    ),
    Gap(
        "model_calls.started_at_unrecorded",
        "no request start time is recorded; a success's completed_at is when its token usage record (or last output "
        "item) was written, a failure printed on stdout has no time at all",
    ),
    Gap(
        "model_calls.status_code_implied",
        "Codex records the items of a reply it streamed, not the HTTP status: a recorded reply is reported as 200",
    ),
)


@dataclass
class _Response:
    """The output items of one streamed reply and the token usage record written when it completed."""

    step_start: str | None
    entry: Message  # its assistant turn in the conversation
    items: list[tuple[Line, dict[str, Any]]] = field(default_factory=list)
    usage: Line | None = None


def build_rollout(native: NativeLog) -> Rollout:
    meta = native.meta
    session = nonempty(meta.get("id")) or nonempty(meta.get("session_id")) or native.rollout_name
    b = _Session(session)
    base = meta.get("base_instructions")
    if isinstance(base, dict) and nonempty(base.get("text")):
        # Sent as the request's `instructions`: the first thing the model sees.
        b.conversation.append({"role": "system", "content": base["text"]})
    for line in native.lines:
        b.read(line)
    b.close()
    retries = stdout_retries(native.events or [])
    terminal = terminal_failure(b.task_complete, native.events or [])
    out = RolloutBuilder("codex", nonempty(meta.get("cli_version")))
    b.calls_and_steps(out, retries, terminal)
    for record in b.tools.values():
        out.tool(record)
    gaps = [*_ALWAYS_GAPS, *native.gaps]
    gaps += [
        Gap("tool_calls.exit_code_unrecorded", f"{t['tool_call_id']}: Codex recorded no command result", ("E5",))
        for t in b.tools.values()
        if t["exit_code"] is None
    ]
    if any(r.usage is None for r in b.responses):
        gaps.append(
            Gap(
                "model_calls.response_id_unrecorded",
                "a reply without usage leaves no token usage record, the only record of its response id",
                ("E1",),
            )
        )
    out.gaps += [g.to_json() for g in dict.fromkeys(gaps)]
    out.invocation(session, b.conversation)
    return out.build(
        outcome(b.task_complete, native.events),
        rollout_id=session,
        # Codex prints stream retries on stdout apart from its session items: each joins the step of the reply after it.
        provenance={"retry_placement": "inferred"},
        extensions={"codex": _extension(native, meta)},
    )


class _Session:
    """One pass over the session file, in order: replies, the conversation, tool records and command results."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.responses: list[_Response] = []
        self.conversation: list[Message] = []
        self.tools: dict[str, ToolRecord] = {}  # by id: a command's result may come before its request
        self.task_complete: Line | None = None
        self._open: _Response | None = None
        self._last_input: str | None = None  # when Codex wrote the last input a next request would carry
        self._commands: dict[str, dict[str, Any]] = {}  # call_id -> CommandExecution item

    def read(self, line: Line) -> None:
        p = line.payload
        kind = nonempty(p.get("type"))
        if line.type == "response_item":
            if kind in _MODEL_OUTPUT or (kind == "message" and p.get("role") == "assistant"):
                self._output(line, p)
            else:
                self.close()
                self._input(line, p, kind)
        elif line.type == "token_usage_record":
            # Written when a reply completed: it closes that reply (or stands alone for a reply with no items).
            if self._open is None:
                self._open = self._response(line.timestamp)
            self._open.usage = line
            self.close()
        elif line.type == "event_msg" and kind == "task_started":
            self._last_input = self._last_input or line.timestamp
        elif line.type == "event_msg" and kind == "item_completed":
            item = p.get("item")
            if isinstance(item, dict) and item.get("type") == "CommandExecution" and isinstance(item.get("id"), str):
                self._commands[item["id"]] = item
                self._exit_code(item["id"])
        elif line.type == "event_msg" and kind == "task_complete":
            self.close()
            self.task_complete = line

    def close(self) -> None:
        if self._open is not None:
            self.responses.append(self._open)
            self._open = None

    def _response(self, at: str | None) -> _Response:
        entry: Message = {"role": "assistant", "content": None, "tool_calls": []}
        self.conversation.append(entry)
        return _Response(self._last_input or at, entry)

    def _output(self, line: Line, p: dict[str, Any]) -> None:
        if self._open is None:
            self._open = self._response(line.timestamp)
        response = self._open
        response.items.append((line, p))
        if p.get("type") == "message":
            said = content_text(p.get("content"))
            if said is not None:
                response.entry["content"] = (response.entry["content"] or "") + said
        elif p.get("type") in _TOOL_REQUEST and isinstance(p.get("call_id"), str):
            request: RequestedCall = {
                "tool_call_id": p["call_id"],
                "tool_name": nonempty(p.get("name")) or "",
                "arguments": tool_arguments(p.get("arguments", p.get("input"))),
            }
            response.entry["tool_calls"].append(request)
            self.tools.setdefault(p["call_id"], tool_record(request, self.session, len(self.responses) + 1))
            self._exit_code(p["call_id"])

    def _input(self, line: Line, p: dict[str, Any], kind: str | None) -> None:
        self._last_input = line.timestamp
        if kind in _TOOL_RESULT:
            cid = nonempty(p.get("call_id"))
            output = content_text(p.get("output"))
            self.conversation.append({"role": "tool", "tool_call_id": cid, "content": output})
            if cid in self.tools:
                self.tools[cid]["output"] = output  # exactly what went back to the model
        elif kind == "message" and isinstance(p.get("role"), str) and p["role"] in _ROLES:
            self.conversation.append({"role": _ROLES[p["role"]], "content": content_text(p.get("content"))})

    def _exit_code(self, call_id: str) -> None:
        tool, command = self.tools.get(call_id), self._commands.get(call_id)
        code = integer(command.get("exit_code")) if command else None
        if tool is not None and code is not None:
            tool["exit_code"], tool["status"] = code, exit_status(code)

    def calls_and_steps(self, out: RolloutBuilder, retries: list[Retry], terminal: Failure | None) -> None:
        """Each reply is one step; a stdout retry joins the step of the first reply whose items it precedes."""
        failures: dict[int, list[Failure]] = {}
        for r in retries:
            failures.setdefault(self._step_after(r.commands_seen, r.messages_seen), []).append(r.failure)
        if terminal is not None:
            failures.setdefault(len(self.responses), []).append(terminal)
        for index in range(max(len(self.responses), max(failures, default=-1) + 1)):
            refs = [self._failed_call(f, out) for f in failures.get(index, [])]
            if index < len(self.responses):
                refs.append(self._reply_call(self.responses[index], out))
                at = self.responses[index].step_start
            else:
                at = self._last_input
            out.step(index + 1, self.session, at, refs)

    def _step_after(self, commands_seen: int, messages_seen: int) -> int:
        # The stdout stream numbers nothing; what was already shown there tells which reply the retry was waiting
        # for. A reply that stdout does not show (reasoning only, a non-shell tool) is taken as already seen.
        commands = messages = 0
        for index, r in enumerate(self.responses):
            commands += sum(1 for _, p in r.items if p.get("call_id") in self._commands)
            messages += sum(1 for _, p in r.items if p.get("type") == "message")
            if commands > commands_seen or messages > messages_seen:
                return index
        return len(self.responses)

    def _reply_call(self, r: _Response, out: RolloutBuilder) -> str:
        usage = r.usage.payload if r.usage else {}
        done = r.usage.timestamp if r.usage else (r.items[-1][0].timestamp if r.items else None)
        return out.call(
            {
                "model_call_id": out.next_call_id(),
                "started_at": None,
                "completed_at": done,
                "protocol": PROTOCOL,
                "status_code": 200,
                "response_id": nonempty(usage.get("response_id")),
                # Codex writes a usage record only on `response.completed`: that record is its finish status.
                "finish_reason": "completed" if r.usage else None,
                "error_category": None,
                "token_stats": tokens(usage.get("usage")),
                "invocation_id": self.session,
            }
        )

    def _failed_call(self, f: Failure, out: RolloutBuilder) -> str:
        return out.call(
            {
                "model_call_id": out.next_call_id(),
                "started_at": None,
                "completed_at": f.completed_at,
                "protocol": PROTOCOL,
                "status_code": f.status,
                "response_id": None,
                "finish_reason": None,
                "error_category": f.category,
                "error": f.error,
                "token_stats": tokens(None),
                "invocation_id": self.session,
            }
        )


def _extension(native: NativeLog, meta: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "cli_version", "originator", "source", "model_provider", "cwd")
    return {"rollout_file": native.rollout_name, "session_meta": {k: meta.get(k) for k in keys}}
