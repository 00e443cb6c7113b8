"""Witness recorder: appends `probe-witness/v1` lines, fsync'd by a group-committing writer thread; filters headers."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from collections import deque
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
        # The Gemini SDKs' client and version, as the x-stainless-* headers are the OpenAI and Anthropic SDKs'.
        "x-goog-api-client",
    }
)
ALLOWED_PREFIXES = ("x-stainless-", "openai-", "x-codex-")
# Kept only as a hash: enough to tell whether two attempts used the same key, useless to a reader.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "openai-api-key", "x-goog-api-key"})

# Durability (what changed for latency): a line is written and flushed to the kernel before `write` returns,
# so it is in the page cache before the reply it records leaves and a crash of the proxy process loses
# nothing; a writer thread fsyncs it behind the reply (group commit: one fsync covers every line written since the
# last). Every line is still fsync'd, only no longer before the reply is sent: a machine crash can lose the
# lines not yet fsync'd, which `write` bounds. No write proceeds while a line written more than SYNC_LAG_BOUND
# seconds earlier is not yet fsync'd, and `close` returns only once every line is, so the `end` line and the
# proxy's exit still come after the whole witness is on disk. A failed fsync poisons the recorder: the next
# `write`, `sync` or `close` raises WitnessWriteError (the proxy then stops serving and exits 74), so what was
# served past a failed fsync is at most the lines of that one group.
# The writer waits COMMIT_DELAY after the first line of a group before its fsync, unless someone waits for it
# (the bound, `sync`, `close`), so one fsync covers the lines of the next few replies: an fsync here costs
# 0.3-1 ms of kernel time charged to the proxy's one CPU, and one per reply was as much CPU again as the reply.
SYNC_LAG_BOUND = 0.010
COMMIT_DELAY = 0.004
# What a witness may grow to with bodies in full (request bodies, tool results as the model saw them): a probe's
# witness is a few MiB at most, and a harness sending 16 MiB bodies in a loop must not fill the disk (nor the memory of
# the orchestrator, which reads the witness whole: at 64 MiB of bodies its peak RSS passed 320 MB). Beyond it each
# body is recorded as its size and sha256 only (`<field>_withheld`), and the witness says so once (a `violation`
# with code `witness_budget`); every event is still written, so the witness stays gap-free.
WITNESS_BUDGET_BYTES = 32 * 1024 * 1024
BUDGET_VIOLATION = "witness_budget"
# json.dumps (ASCII) writes every code point past U+FFFF as a surrogate pair, and a lone surrogate as one escape: only
# a line with such an escape can hold a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\ud[89a-f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class WitnessWriteError(RuntimeError):
    """A witness line could not be written durably; the proxy must stop serving traffic."""


def utc_timestamp(when: datetime | None = None) -> str:
    """UTC ISO-8601 with microseconds and a `Z` suffix."""
    moment = datetime.now(UTC) if when is None else when.astimezone(UTC)
    # isoformat of an aware UTC time ends in "+00:00"; it is twice as fast as strftime, and this runs twice a reply.
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"


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


def _line(record: Mapping[str, Any]) -> bytes:
    text = json.dumps(record, allow_nan=False, separators=(",", ":"))
    if _SURROGATE_ESCAPE.search(text) is not None and not _is_unicode(record):
        # A string the harness sent that is not Unicode text (a path's bytes that are not UTF-8, which mitmproxy
        # decodes with surrogateescape): the reader refuses a line holding one, and with it the whole witness. Each
        # such code point is written as U+FFFD, as header values that are not UTF-8 are.
        text = json.dumps(_replaced(record), allow_nan=False, separators=(",", ":"))
    return text.encode("ascii") + b"\n"


def _is_unicode(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # one C pass; only a lone surrogate fails it
    except UnicodeEncodeError:
        return False
    return True


def _replaced(value: Any) -> Any:
    """`value` with every surrogate code point in its strings (keys included) replaced by U+FFFD; the nesting is
    bounded by the body's depth cap (limits.MAX_JSON_DEPTH) plus the event's own."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, Mapping):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replaced(v) for v in value]
    return value


def _holds_body(record: Mapping[str, Any], bodies: Mapping[str, bytes]) -> bool:
    return any(record.get(key) is not None for key in bodies)


def _withheld(record: dict[str, Any], bodies: Mapping[str, bytes]) -> dict[str, Any]:
    """`record` with each body in `bodies` it holds replaced by null and `<field>_withheld` {size, sha256}."""
    copy = dict(record)
    for key in (key for key in bodies if record.get(key) is not None):
        raw = bodies[key]
        copy[key] = None
        copy[f"{key}_withheld"] = {"size": len(raw), "sha256": sha256_hex(raw)}
    return copy


class WitnessRecorder:
    """Appends witness events with a gap-free `seq` that equals the line's position in the file."""

    def __init__(
        self,
        path: str | Path,
        clock: Callable[[], str] = utc_timestamp,
        lag_bound: float = SYNC_LAG_BOUND,
        commit_delay: float = COMMIT_DELAY,
        budget: int | None = WITNESS_BUDGET_BYTES,
    ) -> None:
        self.path = Path(path)
        # None: no budget. Bytes of the file so far (earlier lines of a restarted proxy's witness included).
        self.budget = budget
        self.bytes_written = 0
        self.budget_reached = False
        self._clock = clock
        self._lag_bound = lag_bound
        # Half the bound at most, so that a group's fsync normally ends before any write has to wait for it.
        self._commit_delay = min(commit_delay, lag_bound / 2)
        self._file: BinaryIO | None = None
        self._broken = False
        # Raised to a caller at least once: `close` need not raise a failure someone already saw.
        self._reported = False
        self.seq = 0
        self.attempts_written = 0
        # Group commit state, guarded by _cond: lines written and fsync'd so far (counted by appends), the
        # monotonic time of each append not yet fsync'd, the writer thread's failure, whether the writer sleeps
        # until a first line (only then an append wakes it) and whether someone waits for the next fsync.
        self._cond = threading.Condition()
        self._appended = 0
        self._synced = 0
        self._pending: deque[tuple[int, float]] = deque()
        self._failure: BaseException | None = None
        self._stopping = False
        self._idle = False
        self._urgent = False
        self._syncer: threading.Thread | None = None
        self._open()

    def _open(self) -> None:
        try:
            # Only a regular file has earlier lines to count (a device such as /dev/full reads forever).
            existing = self.path.read_bytes() if self.path.is_file() else b""
            self._file = self.path.open("ab")
        except OSError as exc:
            self._broken = self._reported = True
            raise WitnessWriteError(f"cannot open witness file {self.path}: {exc}") from exc
        self._syncer = threading.Thread(target=self._sync_loop, name="witness-fsync", daemon=True)
        self._syncer.start()
        # Appending to an earlier witness (a restarted proxy) must keep seq equal to the line
        # position; a torn last line is terminated so our first line stays parseable.
        self.seq = existing.count(b"\n")
        self.bytes_written = len(existing)
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

    def write(
        self,
        event: str,
        fields: Mapping[str, Any],
        at: str | None = None,
        bodies: Mapping[str, bytes] | None = None,
    ) -> dict[str, Any]:
        """Write one event (flushed to the kernel; fsync'd by the writer thread) and return it.

        `bodies`: the fields of `fields` that hold a body the harness sent, each with the bytes it was made from;
        once the line would take the witness past its budget, each is written as null and `<field>_withheld`
        {size, sha256} of those bytes instead. Raises WitnessWriteError when it cannot write, or when an earlier
        line's fsync failed."""
        if self._broken or self._file is None:
            self._reported = True
            raise WitnessWriteError(f"witness file {self.path} is not writable{self._failure_detail()}")
        record: dict[str, Any] = {
            "schema": WITNESS_SCHEMA,
            "event": event,
            "seq": self.seq,
            "at": at or self.now(),
        }
        record.update(fields)
        # Serialisation errors are bugs in the caller and leave the file untouched, so they stay
        # ordinary exceptions; only I/O failures poison the recorder.
        line = None if self.budget_reached and bodies else _line(record)
        if bodies and (line is None or not self._fits(len(line))) and _holds_body(record, bodies):
            self._note_budget(record)  # a line of its own, first: this event's seq moves past it
            record["seq"] = self.seq
            record = _withheld(record, bodies)
            line = _line(record)
        if line is None:
            line = _line(record)
        self._append(line)
        self.bytes_written += len(line)
        self.seq += 1
        if event == "attempt":
            self.attempts_written += 1
        return record

    def _fits(self, size: int) -> bool:
        return self.budget is None or self.bytes_written + size <= self.budget

    def _note_budget(self, record: Mapping[str, Any]) -> None:
        """Once, before the first line with a body withheld: the witness reached its budget."""
        if self.budget_reached:
            return
        self.budget_reached = True
        attempt_id = record.get("attempt_id")
        detail = (
            f"the witness reached its budget of {self.budget} bytes: from here on the bodies the harness sends are "
            "recorded as their size and sha256 only"
        )
        self.write(
            "violation",
            {
                "attempt_id": attempt_id if isinstance(attempt_id, str) else None,
                "code": BUDGET_VIOLATION,
                "detail": detail,
            },
        )

    def _append(self, data: bytes) -> None:
        assert self._file is not None
        try:
            self._file.write(data)
            self._file.flush()
        except (OSError, ValueError) as exc:
            self._broken = self._reported = True
            raise WitnessWriteError(f"cannot write witness file {self.path}: {exc}") from exc
        now = time.monotonic()
        with self._cond:
            self._appended += 1
            self._pending.append((self._appended, now))
            if self._idle:
                self._cond.notify_all()
            # The bound on what a machine crash can take: wait while an older line still awaits its fsync.
            oldest = self._pending[0]
            if now - oldest[1] > self._lag_bound:
                self._wait_synced(oldest[0])

    def _wait_synced(self, count: int) -> None:
        """Wait (holding _cond) until the first `count` appends are fsync'd; raise if that cannot happen."""
        while self._synced < count and self._failure is None and self._syncer is not None:
            if not self._urgent:
                self._urgent = True
                self._cond.notify_all()
            self._cond.wait()
        if self._synced < count:
            self._broken = self._reported = True
            raise WitnessWriteError(f"cannot fsync witness file {self.path}{self._failure_detail()}")

    def _failure_detail(self) -> str:
        return f": {self._failure}" if self._failure is not None else ""

    def _sync_loop(self) -> None:
        file = self._file
        assert file is not None
        fd = file.fileno()
        while True:
            with self._cond:
                while self._synced == self._appended and not self._stopping:
                    self._idle = True
                    self._cond.wait()
                self._idle = False
                if self._synced == self._appended:
                    return
                # Gather the lines of the next few replies into this fsync, unless someone needs it now.
                deadline = self._pending[0][1] + self._commit_delay
                while not (self._stopping or self._urgent) and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
                self._urgent = False
                target = self._appended
            try:
                os.fsync(fd)
            except (OSError, ValueError) as exc:
                with self._cond:
                    self._failure = exc
                    self._broken = True
                    self._cond.notify_all()
                return
            with self._cond:
                self._synced = target
                while self._pending and self._pending[0][0] <= target:
                    self._pending.popleft()
                self._cond.notify_all()

    def sync(self) -> None:
        """Return once every line written so far is fsync'd. Raises WitnessWriteError when it cannot be."""
        with self._cond:
            self._wait_synced(self._appended)

    def close(self) -> None:
        """Stop the writer thread once every line is fsync'd, then close the file.

        Raises WitnessWriteError when a line could not be fsync'd and no caller was told yet."""
        syncer, self._syncer = self._syncer, None
        if syncer is not None:
            with self._cond:
                self._stopping = True
                self._cond.notify_all()
            syncer.join()
        unsynced = self._synced < self._appended
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if unsynced:
            self._broken = True
        if self._broken and not self._reported:
            self._reported = True
            raise WitnessWriteError(f"cannot fsync witness file {self.path}{self._failure_detail()}")
