"""Reading a harness's SQLite store from collected evidence without ever writing to the evidence."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from orchestrator.harnesses.base import NormalizeError

__all__ = ["readonly_copy"]


@contextmanager
def readonly_copy(folder: Path, db_name: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a copy of `folder/db_name` (with its -wal and -shm), checked for corruption."""
    # A copy, so nothing (not even SQLite's WAL recovery writing -shm) touches the collected evidence.
    with tempfile.TemporaryDirectory(prefix="probe-sqlite-") as tmp:
        for name in (db_name, f"{db_name}-wal", f"{db_name}-shm"):
            if (folder / name).is_file():
                shutil.copyfile(folder / name, Path(tmp) / name)
        uri = (Path(tmp) / db_name).as_uri() + "?mode=ro"
        try:
            with closing(sqlite3.connect(uri, uri=True)) as conn:
                conn.row_factory = sqlite3.Row
                verdict = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
                if verdict != ["ok"]:
                    raise NormalizeError(f"{db_name} is corrupt: {'; '.join(verdict[:3])}")
                yield conn
        except sqlite3.DatabaseError as exc:
            # Truncated files, garbage, or a schema without the tables/columns the normalizer reads.
            raise NormalizeError(f"{db_name} is unreadable: {exc}") from None
