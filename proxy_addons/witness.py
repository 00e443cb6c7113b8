"""Witness recorder: appends fsync'd `probe-witness/v1` lines and filters request headers."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

WITNESS_SCHEMA = "probe-witness/v1"

# Request headers worth keeping: they identify the client and its session without carrying the body.
ALLOWED_HEADERS = frozenset(
    {
        "content-type",
        "user-agent",
        "accept",
        "anthropic-version",
        "anthropic-beta",
        # Session ids, by which the witness groups attempts into sessions (E8): Codex `session-id`, Pi's
        # underscore form, OpenCode `x-session-id` / `x-session-affinity`, Claude Code (v2.1.86 on) its own.
        "session-id",
        "session_id",
        "x-session-id",
        "x-session-affinity",
        "x-claude-code-session-id",
        "x-client-request-id",
        "thread-id",
    }
)
ALLOWED_PREFIXES = ("x-stainless-", "openai-", "x-codex-")
# Kept only as a hash: enough to tell whether two attempts used the same key, useless to a reader.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "openai-api-key"})


class WitnessWriteError(RuntimeError):
    """A witness line could not be written durably; the proxy must stop serving traffic."""


def utc_timestamp(when: datetime | None = None) -> str:
    """UTC ISO-8601 with microseconds and a `Z` suffix."""
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def witness_headers(pairs: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Allow-listed headers by lower-cased name, secrets as `sha256:<hex>`, repeats joined by `, `."""
    kept: dict[str, list[str]] = {}
    for raw_name, raw_value in pairs:
        name = raw_name.decode("latin-1").strip().lower()
        if name in SECRET_HEADERS:
            value = f"sha256:{sha256_hex(raw_value)}"
        elif name in ALLOWED_HEADERS or name.startswith(ALLOWED_PREFIXES):
            value = raw_value.decode("utf-8", errors="replace")
        else:
            continue
        kept.setdefault(name, []).append(value)
    return {name: ", ".join(values) for name, values in kept.items()}


class WitnessRecorder:
    """Appends witness events with a gap-free `seq` that equals the line's position in the file."""

    def __init__(self, path: str | Path, clock: Callable[[], str] = utc_timestamp) -> None:
        self.path = Path(path)
        self._clock = clock
        self._file: BinaryIO | None = None
        self._broken = False
        self.seq = 0
        self.attempts_written = 0
        self._open()

    def _open(self) -> None:
        try:
            # Only a regular file has earlier lines to count (a device such as /dev/full reads forever).
            existing = self.path.read_bytes() if self.path.is_file() else b""
            self._file = self.path.open("ab")
        except OSError as exc:
            self._broken = True
            raise WitnessWriteError(f"cannot open witness file {self.path}: {exc}") from exc
        # Appending to an earlier witness (a restarted proxy) must keep seq equal to the line
        # position; a torn last line is terminated so our first line stays parseable.
        self.seq = existing.count(b"\n")
        if existing and not existing.endswith(b"\n"):
            try:
                self._append(b"\n")
            except WitnessWriteError:
                self.close()
                raise
            self.seq += 1

    @property
    def broken(self) -> bool:
        return self._broken

    def now(self) -> str:
        return self._clock()

    def write(self, event: str, fields: Mapping[str, Any], at: str | None = None) -> dict[str, Any]:
        """Write one event durably and return it. Raises WitnessWriteError when it cannot."""
        if self._broken or self._file is None:
            raise WitnessWriteError(f"witness file {self.path} is not writable")
        record: dict[str, Any] = {
            "schema": WITNESS_SCHEMA,
            "event": event,
            "seq": self.seq,
            "at": at or self.now(),
        }
        record.update(fields)
        # Serialisation errors are bugs in the caller and leave the file untouched, so they stay
        # ordinary exceptions; only I/O failures poison the recorder.
        line = json.dumps(record, allow_nan=False, separators=(",", ":")).encode("ascii") + b"\n"
        self._append(line)
        self.seq += 1
        if event == "attempt":
            self.attempts_written += 1
        return record

    def _append(self, data: bytes) -> None:
        assert self._file is not None
        try:
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())
        except (OSError, ValueError) as exc:
            self._broken = True
            raise WitnessWriteError(f"cannot write witness file {self.path}: {exc}") from exc

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
