"""Failed model attempts and the outcome, as Codex reported them (task_complete errors, stdout retry events)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orchestrator.harnesses.codex.native import Line
from orchestrator.harnesses.values import nonempty, string
from orchestrator.records import Outcome
from orchestrator.records import outcome as outcome_of

__all__ = ["Failure", "outcome", "stdout_retries", "terminal_failure"]

# Stream-layer retries are printed (never written to the rollout) as "Reconnecting... 2/5 (reason)".
_RETRY = re.compile(r"^Reconnecting\.\.\.")
_LAST_STATUS = re.compile(r"last status: (\d{3})\b")


@dataclass(frozen=True)
class Failure:
    """One failed attempt as Codex worded it: a status only when Codex names one, and its message."""

    status: int | None
    category: str
    error: Any
    completed_at: str | None = None


@dataclass(frozen=True)
class Retry:
    """A stdout retry event, with how many commands and agent messages stdout had shown before it."""

    commands_seen: int
    messages_seen: int
    failure: Failure


def stdout_retries(events: list[dict[str, Any]]) -> list[Retry]:
    """Each 'Reconnecting...' error event of `codex exec --json`, in order."""
    commands: set[str | None] = set()
    messages = 0
    out = []
    for e in events:
        raw = e.get("item")
        item: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if item.get("type") == "command_execution":
            commands.add(string(item.get("id")))  # an id that is no string counts as a missing one
        elif e.get("type") == "item.completed" and item.get("type") == "agent_message":
            messages += 1
        message = e.get("message")
        if e.get("type") == "error" and isinstance(message, str) and _RETRY.match(message):
            out.append(Retry(len(commands), messages, _failure_of_text(message)))
    return out


def _failure_of_text(message: str) -> Failure:
    # The event is plain text: the status is taken only where Codex wrote one ("last status: 429 ...").
    status = _LAST_STATUS.search(message)
    if status:
        return Failure(int(status.group(1)), f"http_{status.group(1)}", message)
    if "idle timeout" in message:
        return Failure(None, "timeout", message)
    if "stream disconnected" in message:
        return Failure(None, "stream_cut", message)
    return Failure(None, "connection", message)


def terminal_failure(task_complete: Line | None, events: list[dict[str, Any]]) -> Failure | None:
    """The attempt a failed turn ended on: task_complete's error, or stdout's turn.failed when the rollout has none.

    Codex records a turn's terminal error only once, so it is taken as the failure of the turn's last attempt.
    """
    error = task_complete.payload.get("error") if task_complete else None
    at = task_complete.timestamp if task_complete else None
    if task_complete is None:
        failed = [e.get("error") for e in events if e.get("type") == "turn.failed"]
        error = failed[-1] if failed else None
    if not isinstance(error, dict):
        return None
    info = error.get("codex_error_info")
    kind = _error_kind(info)
    details = info.get(kind) if isinstance(info, dict) and kind else None
    status = details.get("http_status_code") if isinstance(details, dict) else None
    if isinstance(status, int) and not isinstance(status, bool):
        return Failure(status, f"http_{status}", error.get("message"), at)
    return Failure(None, kind or "error", error.get("message"), at)


def outcome(task_complete: Line | None, events: list[dict[str, Any]] | None) -> Outcome:
    """How the turn ended: task_complete's answer or error; stdout's turn.failed if the rollout stops before it."""
    if task_complete is None:
        failure = terminal_failure(None, events or [])
        if failure is not None:
            return _failed(failure.category, failure.error)
        return outcome_of("unknown")
    p = task_complete.payload
    error = p.get("error")
    if isinstance(error, dict):
        return _failed(_error_kind(error.get("codex_error_info")) or "error", error.get("message"))
    answer = nonempty(p.get("last_agent_message"))
    status = "completed" if answer else "unknown"
    return outcome_of(status, final_answer=answer)


def _failed(kind: str, reason: Any) -> Outcome:
    return outcome_of("error", failure_kind=kind, failure_reason=nonempty(reason))


def _error_kind(info: Any) -> str | None:
    # codex_error_info is a plain name ("other") or a one-key object ({"http_connection_failed": {...}}).
    if isinstance(info, str):
        return info
    if isinstance(info, dict) and len(info) == 1:
        return str(next(iter(info)))
    return None
