"""Reading a harness's SQLite store from collected evidence without ever writing to the evidence, with a deadline."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from orchestrator.harnesses.base import NormalizeError
from orchestrator.tempdirs import owned_tempdir

__all__ = ["QUERY_SECONDS", "readonly_copy"]

QUERY_SECONDS = 30.0  # everything a normalizer asks of one store; real ones answer in milliseconds
_MAX_VALUE_BYTES = 64 * 1024 * 1024
_PROGRESS_STEPS = 10_000  # SQLite VM instructions between deadline checks
_REFUSED = re.compile(r"malformed database schema \((.+?)\) - unsafe use of ")
_UNUSED_PAGE = re.compile(r"Page \d+ is never used")


@contextmanager
def readonly_copy(
    folder: Path, db_name: str, tables: tuple[str, ...] = (), seconds: float = QUERY_SECONDS
) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a copy of `folder/db_name` (with its -wal and -shm), checked for corruption.

    The harness wrote this file: every name in `tables` must be a plain table (a view named like one could run
    an endless recursive query), and every statement on the connection is interrupted at the deadline.
    """
    # A copy, so nothing (not even SQLite's WAL recovery writing -shm) touches the collected evidence.
    with owned_tempdir("probe-sqlite-") as tmp:
        for name in (db_name, f"{db_name}-wal", f"{db_name}-shm"):
            _copy_regular(folder / name, Path(tmp) / name, db_name)
        uri = (Path(tmp) / db_name).as_uri() + "?mode=ro"
        deadline = time.monotonic() + seconds
        try:
            stripped = _strip_refused_indexes(Path(tmp) / db_name, deadline)
            with closing(sqlite3.connect(uri, uri=True)) as conn:
                # Read-only: triggers cannot fire. Views and generated columns may only call harmless functions.
                conn.execute("PRAGMA trusted_schema = OFF")
                conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
                conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
                conn.row_factory = sqlite3.Row
                verdict = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
                if verdict != ["ok"] and not (stripped and _only_unused_pages(verdict)):
                    raise NormalizeError(f"{db_name} is corrupt: {'; '.join(verdict[:3])}")
                _plain_tables(conn, db_name, tables)
                yield conn
        except sqlite3.OperationalError as exc:
            if time.monotonic() > deadline:
                raise NormalizeError(f"{db_name}: reading it took longer than {seconds:g}s (interrupted)") from None
            raise NormalizeError(f"{db_name} is unreadable: {exc}") from None
        except sqlite3.DatabaseError as exc:
            # Truncated files, garbage, or a schema without the tables/columns the normalizer reads.
            raise NormalizeError(f"{db_name} is unreadable: {exc}") from None


def _strip_refused_indexes(copy: Path, deadline: float) -> list[str]:
    """Drop from our copy's schema each index SQLite refuses to load with an untrusted schema; their names.

    Kilo indexes expressions of json_extract(), which SQLite (3.40) does not count as harmless, so the whole schema
    would be refused. An index is never read by the reader's table scans: leaving it out of the copy loses nothing,
    and the rest of the schema is still loaded with trusted_schema off.
    """
    if _schema_loads(copy, deadline):
        return []
    stripped: list[str] = []
    with closing(sqlite3.connect(copy.as_uri() + "?mode=rw", uri=True)) as conn:
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
        while True:
            try:
                conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
                return stripped
            except sqlite3.DatabaseError as exc:
                refused = _REFUSED.search(str(exc))
                if refused is None:
                    raise
                # Writable schema: the refused entry is deleted as a row, never loaded (or run). A table, view or
                # trigger SQLite refuses is not deleted: the error stands.
                conn.execute("PRAGMA writable_schema = ON")
                gone = conn.execute("DELETE FROM sqlite_schema WHERE type = 'index' AND name = ?", (refused[1],))
                if gone.rowcount != 1:
                    raise
                conn.commit()
                conn.execute("PRAGMA writable_schema = RESET")
                stripped.append(refused[1])


def _schema_loads(copy: Path, deadline: float) -> bool:
    """Whether the schema loads as the reader opens it (read-only, untrusted). A writable connection parses more:
    OpenClaw's tables CHECK json_valid(), which SQLite refuses untrusted only where the table could be written."""
    with closing(sqlite3.connect(copy.as_uri() + "?mode=ro", uri=True)) as conn:
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
        try:
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        except sqlite3.DatabaseError as exc:
            if _REFUSED.search(str(exc)) is None:
                raise
            return False
    return True


def _only_unused_pages(verdict: list[str]) -> bool:
    """quick_check's verdict on a copy whose refused indexes were dropped: their pages, and nothing else, unused."""
    lines = [line for r in verdict for line in r.splitlines() if line != "*** in database main ***"]
    return bool(lines) and all(_UNUSED_PAGE.fullmatch(line) for line in lines)


def _copy_regular(src: Path, dest: Path, db_name: str) -> None:
    """Copy src if it is a regular file (not a link, FIFO or device); absent is fine."""
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise NormalizeError(f"{db_name}: {src.name} is not a regular file")
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f_in, dest.open("wb") as f_out:
        shutil.copyfileobj(f_in, f_out)


def _plain_tables(conn: sqlite3.Connection, db_name: str, tables: tuple[str, ...]) -> None:
    for table in tables:
        row = conn.execute("SELECT type, sql FROM sqlite_schema WHERE name = ? COLLATE NOCASE", (table,)).fetchone()
        if row is None:
            continue  # the normalizer's own query names what is missing
        kind, sql = str(row[0]), str(row[1] or "")
        if kind != "table":
            raise NormalizeError(f"{db_name}: `{table}` is a {kind}, not a table; refused (it could run any query)")
        if sql.lstrip().upper().startswith("CREATE VIRTUAL"):
            raise NormalizeError(f"{db_name}: `{table}` is a virtual table, not a table; refused")
