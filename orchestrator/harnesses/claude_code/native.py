"""Reads what Claude Code itself wrote (session transcripts, sub-agent transcripts, stream-json) into plain records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import read_jsonl, read_stream, session_file, stream_session

__all__ = ["CONFIG_NAME", "PROBE_NAME", "STREAM_NAME", "NativeLog", "Transcript", "read_native"]

# Folder names under native/: CLAUDE_CONFIG_DIR and our own folder holding the redirected stdout.
CONFIG_NAME = ".claude"
PROBE_NAME = ".claude-probe"
STREAM_NAME = "stream.jsonl"


@dataclass
class Transcript:
    """One JSONL transcript: the session's own, or one sub-agent's (`<session>/subagents/agent-*.jsonl`)."""

    path: Path
    entries: list[dict[str, Any]]
    agent_id: str | None = None  # None for the session transcript itself

    @property
    def session_id(self) -> str | None:
        for e in self.entries:
            if isinstance(e.get("sessionId"), str) and e["sessionId"]:
                return str(e["sessionId"])
        return None


@dataclass
class NativeLog:
    main: Transcript
    subagents: list[Transcript]
    stream: list[dict[str, Any]]  # stdout stream-json events, in order (empty when none were collected)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (gap code, detail) found while reading

    @property
    def result(self) -> dict[str, Any] | None:
        """The last `result` event Claude Code printed: how the headless run ended, in its own words."""
        found = [e for e in self.stream if e.get("type") == "result"]
        return found[-1] if found else None

    @property
    def version(self) -> str | None:
        for e in self.main.entries:
            if isinstance(e.get("version"), str) and e["version"]:
                return str(e["version"])
        return None


def read_native(native_dir: Path) -> NativeLog:
    """native/ -> NativeLog; NormalizeError when there is no usable session transcript at all."""
    problems: list[tuple[str, str]] = []
    stream = read_stream(native_dir, f"{PROBE_NAME}/{STREAM_NAME}", problems)
    projects = native_dir / CONFIG_NAME / "projects"
    candidates = sorted(projects.glob("*/*.jsonl")) if projects.is_dir() else []
    if not candidates:
        raise NormalizeError(f"Claude Code wrote no session transcript ({CONFIG_NAME}/projects/<cwd>/<session>.jsonl)")
    main_path = session_file(candidates, stream_session(stream), "session transcripts")
    main = Transcript(main_path, read_jsonl(main_path, "transcript", problems))
    if not main.entries:
        raise NormalizeError(f"the session transcript {main_path.name} holds no readable record")
    for other in candidates:
        if other != main_path:
            problems.append(("native.other_session_ignored", f"transcript {other.name} is not this run's session"))
    subagents = [
        Transcript(p, read_jsonl(p, "sub-agent transcript", problems), agent_id=p.stem.removeprefix("agent-"))
        for p in sorted((main_path.parent / main_path.stem / "subagents").glob("*.jsonl"))
    ]
    return NativeLog(main, subagents, stream, problems)
