"""Reads Gemini CLI's chat recordings (`~/.gemini/tmp/<project>/chats/session-*.jsonl`) as Gemini CLI itself loads them.

Each line is a record: the session's metadata (`sessionId`, `projectHash`, `kind`, ...); a message (`id`, `type`
user | gemini | info | error | ..., `timestamp`, `content`; a gemini message also `tokens`, `model`, `thoughts` and
`toolCalls`, each with its `result` parts and `status`), written again whole each time it changes (the last
record of an id wins, in the place of its first); `{"$set": {...}}` metadata updates, whose `messages`, when
present, replace every message so far; and `{"$rewindTo": id}`, which drops that message and all after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.evidence.jsonread import JsonFault, loads, read_bytes
from orchestrator.harnesses.values import nonempty

__all__ = ["ChatSession", "read_sessions"]

SESSION_GLOB = "session-*.jsonl"


@dataclass
class ChatSession:
    """One recorded conversation: its metadata and its messages in order."""

    file: str
    metadata: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def session_id(self) -> str | None:
        return nonempty(self.metadata.get("sessionId"))

    @property
    def kind(self) -> str | None:
        return nonempty(self.metadata.get("kind"))


def _apply(session: ChatSession, messages: dict[str, dict[str, Any]], record: Mapping[str, Any]) -> None:
    rewind = record.get("$rewindTo")
    if isinstance(rewind, str):
        ids = list(messages)
        for dropped in ids[ids.index(rewind) :] if rewind in messages else ids:
            del messages[dropped]
    elif isinstance(record.get("id"), str):
        messages[record["id"]] = dict(record)
    elif isinstance(record.get("$set"), Mapping):
        update = record["$set"]
        if isinstance(update.get("messages"), list):
            messages.clear()
            for m in update["messages"]:
                if isinstance(m, Mapping) and isinstance(m.get("id"), str):
                    messages[m["id"]] = dict(m)
        session.metadata.update({k: v for k, v in update.items() if k != "messages"})
    elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
        session.metadata.update({k: v for k, v in record.items() if k != "messages"})
        for m in record.get("messages") or []:
            if isinstance(m, Mapping) and isinstance(m.get("id"), str):
                messages[m["id"]] = dict(m)
    else:
        session.problems.append("a record that is no message, metadata, update or rewind")


def read_session(path: Path, root: Path) -> ChatSession:
    session = ChatSession(file=str(path.relative_to(root)))
    try:
        text = read_bytes(path).decode("utf-8", errors="replace")
    except (OSError, JsonFault) as exc:
        session.problems.append(f"unreadable: {exc}")
        return session
    messages: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except (JsonFault, ValueError, RecursionError) as exc:
            # Gemini CLI skips such a line too; a line cut off when the process was killed is the usual one.
            session.problems.append(f"line {n} is not JSON ({str(exc)[:100]})")
            continue
        if isinstance(record, Mapping):
            _apply(session, messages, record)
        else:
            session.problems.append(f"line {n} is not an object")
    session.messages = list(messages.values())
    return session


def read_sessions(gemini_dir: Path) -> list[ChatSession]:
    """Every chat recording under `~/.gemini/tmp/*/chats/`, the main session first, then by file name."""
    tmp = gemini_dir / "tmp"
    found = sorted(p for p in tmp.glob(f"*/chats/{SESSION_GLOB}") if p.is_file() and not p.is_symlink())
    sessions = [read_session(p, gemini_dir) for p in found]
    return sorted(sessions, key=lambda s: (s.kind != "main", s.file))
