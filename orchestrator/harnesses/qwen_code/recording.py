"""Reads what Qwen Code itself wrote (its chat recording JSONL and its stream-json stdout) into plain records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.harnesses.base import NormalizeError
from orchestrator.harnesses.jsonl import loads_line, read_jsonl, read_stream, session_file, stream_session
from orchestrator.harnesses.values import integer, nonempty

__all__ = ["PROBE_NAME", "QWEN_DIR", "STREAM_NAME", "QwenNative", "read_native"]

# Folder names under native/: Qwen's home folder, and ours holding the redirected stdout.
QWEN_DIR = ".qwen"
PROBE_NAME = ".qwen-probe"
STREAM_NAME = "events.jsonl"


@dataclass
class QwenNative:
    path: str  # the chat recording read, relative to native/
    records: list[dict[str, Any]]  # its lines in the order Qwen appended them
    stream: list[dict[str, Any]]  # the stream-json events on stdout, in order (empty when none were collected)
    sdk_retries: int | None  # model.generationConfig.maxRetries from settings.json; None: Qwen's default
    problems: list[tuple[str, str]] = field(default_factory=list)  # (gap code, detail) found while reading

    @property
    def session_id(self) -> str | None:
        return next((s for r in self.records if (s := nonempty(r.get("sessionId")))), None)

    @property
    def version(self) -> str | None:
        """The version Qwen stamps on every record it appends."""
        return next((v for r in self.records if (v := nonempty(r.get("version")))), None)

    @property
    def result(self) -> dict[str, Any] | None:
        """The last `result` event Qwen printed: how the headless run ended, in its own words."""
        found = [e for e in self.stream if e.get("type") == "result"]
        return found[-1] if found else None


def read_native(native_dir: Path) -> QwenNative:
    """native/ -> QwenNative; NormalizeError when there is no chat recording with a readable record."""
    problems: list[tuple[str, str]] = []
    stream = read_stream(native_dir, f"{PROBE_NAME}/{STREAM_NAME}", problems)
    projects = native_dir / QWEN_DIR / "projects"
    candidates = sorted(projects.glob("*/chats/*.jsonl")) if projects.is_dir() else []
    if not candidates:
        # Qwen creates the file with its first record, the user's prompt: none means it never got that far.
        raise NormalizeError(f"Qwen Code wrote no chat recording ({QWEN_DIR}/projects/<cwd>/chats/<session>.jsonl)")
    chosen = session_file(candidates, stream_session(stream), "chat recordings")
    for other in candidates:
        if other != chosen:
            problems.append(("native.other_session_ignored", f"chat recording {other.name} is not this run's session"))
    records = read_jsonl(chosen, "recording", problems)
    if not records:
        raise NormalizeError(f"the chat recording {chosen.name} holds no readable record")
    retries = _sdk_retries(native_dir / QWEN_DIR / "settings.json", problems)
    return QwenNative(chosen.relative_to(native_dir).as_posix(), records, stream, retries, problems)


def _sdk_retries(path: Path, problems: list[tuple[str, str]]) -> int | None:
    # Qwen's own settings as it ran: they say whether the provider SDK may retry out of Qwen's sight.
    if not path.is_file():
        return None
    try:
        settings = loads_line(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        problems.append(("settings.unreadable", f"{QWEN_DIR}/settings.json: {exc}"))
        return None
    model = settings.get("model") if isinstance(settings, dict) else None
    config = model.get("generationConfig") if isinstance(model, dict) else None
    return integer(config.get("maxRetries")) if isinstance(config, dict) else None
