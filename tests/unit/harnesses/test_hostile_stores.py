"""Hostile SQLite stores and normalizers: views, endless queries, hangs and memory hogs end as named errors."""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from orchestrator.harnesses import Harness, Launch, LaunchContext, NormalizeError, get_harness
from orchestrator.harnesses.isolated import NormalizeBudget, normalize_isolated
from orchestrator.harnesses.options import Text
from orchestrator.harnesses.sqlite_store import readonly_copy
from orchestrator.scenarios import Scenario
from orchestrator.verdict import normalize_native

ENDLESS = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r"


def _db(path: Path, *statements: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as conn:
        for sql in statements:
            conn.execute(sql)
        conn.commit()
    return path


def test_a_view_named_like_a_read_table_is_refused(tmp_path: Path) -> None:
    _db(tmp_path / "s.db", "CREATE TABLE sessions (id TEXT)", f"CREATE VIEW messages AS {ENDLESS}")
    with pytest.raises(NormalizeError, match="`messages` is a view"), readonly_copy(tmp_path, "s.db", ("messages",)):
        pass


def test_an_endless_query_is_interrupted_at_the_deadline(tmp_path: Path) -> None:
    _db(tmp_path / "s.db", f"CREATE VIEW v AS {ENDLESS}")
    t0 = time.monotonic()
    with pytest.raises(NormalizeError, match="longer than 1s"), readonly_copy(tmp_path, "s.db", (), seconds=1) as c:
        c.execute("SELECT count(*) FROM v").fetchall()
    assert time.monotonic() - t0 < 10


def test_triggers_cannot_fire_on_the_read_only_copy(tmp_path: Path) -> None:
    # Hermes's real store carries FTS triggers on `messages`; a read-only connection never runs them.
    _db(
        tmp_path / "s.db",
        "CREATE TABLE messages (id INTEGER)",
        "CREATE TABLE log (x)",
        "INSERT INTO messages VALUES (1)",
        "CREATE TRIGGER t AFTER INSERT ON messages BEGIN INSERT INTO log VALUES (1); END",
    )
    with readonly_copy(tmp_path, "s.db", ("messages",)) as conn:
        assert [tuple(r) for r in conn.execute("SELECT id FROM messages")] == [(1,)]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("INSERT INTO messages VALUES (2)")


def test_a_fifo_or_link_as_the_database_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f.db")
    (tmp_path / "l.db").symlink_to("/etc/passwd")
    for name in ("f.db", "l.db"):
        with pytest.raises(NormalizeError, match="not a regular file"), readonly_copy(tmp_path, name):
            pass


_JSON_INDEXES = (
    "CREATE TABLE part (id TEXT, data TEXT)",
    "CREATE INDEX part_type_idx ON part (json_extract(data, '$.type'))",
    "CREATE INDEX part_text_idx ON part (id, json_extract(data, '$.text')) WHERE json_valid(data)",
    "CREATE INDEX part_id_idx ON part (id)",
)


def _rows(n: int) -> list[str]:
    return [f'INSERT INTO part VALUES (\'p{i:04}\', \'{{"type": "text", "text": "{"x" * 200}"}}\')' for i in range(n)]


def test_indexes_sqlite_refuses_untrusted_are_left_out_of_the_copy_alone(tmp_path: Path) -> None:
    # Kilo's kilo.db indexes json_extract() expressions: SQLite refuses the whole schema with trusted_schema off.
    db = _db(tmp_path / "s.db", *_JSON_INDEXES, *_rows(50))
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA trusted_schema = OFF")
        with pytest.raises(sqlite3.DatabaseError, match="unsafe use of json_extract"):
            conn.execute("SELECT count(*) FROM part").fetchone()
    before = db.read_bytes()
    with readonly_copy(tmp_path, "s.db", ("part",)) as conn:
        assert conn.execute("SELECT count(*) FROM part").fetchone()[0] == 50
        indexes = [r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")]
    assert indexes == ["part_id_idx"]
    assert db.read_bytes() == before  # the evidence is untouched: only our copy lost the indexes


def test_a_table_sqlite_refuses_untrusted_stays_refused(tmp_path: Path) -> None:
    _db(tmp_path / "s.db", "CREATE TABLE part (data TEXT, kind TEXT AS (json_extract(data, '$.type')))")
    with pytest.raises(NormalizeError, match="unsafe use of json_extract"), readonly_copy(tmp_path, "s.db", ("part",)):
        pass


def test_corruption_beside_a_refused_index_is_still_corruption(tmp_path: Path) -> None:
    # The copy's quick_check may name the stripped indexes' pages unused; a freelist count that lies is more.
    db = _db(tmp_path / "s.db", *_JSON_INDEXES, *_rows(200))
    data = bytearray(db.read_bytes())
    data[36:40] = (3).to_bytes(4, "big")  # the header's count of free pages: there are none
    db.write_bytes(bytes(data))
    with pytest.raises(NormalizeError, match=r"(?s)corrupt: .*freelist"), readonly_copy(tmp_path, "s.db", ("part",)):
        pass


def test_hermes_store_with_a_recursive_view_is_a_named_normalization_error(tmp_path: Path) -> None:
    native = tmp_path / "native"
    _db(native / "state.db", "CREATE TABLE sessions (id TEXT)", f"CREATE VIEW messages AS {ENDLESS}")
    rollout, record = normalize_native(get_harness("hermes"), native)
    assert rollout is None and record["status"] == "error" and "`messages` is a view" in record["message"]


def test_opencode_store_with_a_recursive_view_is_a_named_normalization_error(tmp_path: Path) -> None:
    native = tmp_path / "native"
    _db(
        native / "opencode" / "opencode.db",
        "CREATE TABLE session (id TEXT, parent_id TEXT, version TEXT, time_created INTEGER)",
        "CREATE TABLE message (id TEXT, session_id TEXT, data TEXT)",
        f"CREATE VIEW part AS SELECT x AS id, x AS message_id, x AS time_created, x AS data FROM ({ENDLESS})",
    )
    rollout, record = normalize_native(get_harness("opencode"), native)
    assert rollout is None and "`part` is a view" in (record["message"] or "")


class Hostile(Harness):
    """A normalizer that misbehaves as native logs could make a real one misbehave."""

    name = "hostile-normalizer"
    image = "reference"
    description = "test only"
    options_declared = (Text("do", None, "what to do"),)

    def launch(self, scenario: Scenario, ctx: LaunchContext) -> Launch:
        raise NotImplementedError

    def normalize(self, native_dir: Path) -> dict[str, Any]:
        what = self.options["do"]
        if what == "hang":
            while True:
                time.sleep(1)
        if what == "memory":
            hog = [bytearray(1 << 20) for _ in range(10_000)]
            return {"n": len(hog)}
        if what == "deep":
            value: Any = 1
            for _ in range(1000):
                value = [value]
            return {"deep": value}
        if what == "nan":
            return {"x": float("nan")}
        if what == "recursion":
            return self.normalize(native_dir)
        return {"schema": "probe-rollout/v1"}


@pytest.mark.parametrize(
    ("do", "message"),
    [
        ("hang", "time budget (15s)"),
        ("memory", "memory budget"),
        ("deep", "nested 100"),
        ("nan", "rollout is not JSON"),
        ("recursion", "RecursionError"),
    ],
)
def test_normalizer_budget(tmp_path: Path, do: str, message: str) -> None:
    budget = NormalizeBudget(seconds=15, memory_bytes=512 << 20)
    t0 = time.monotonic()
    with pytest.raises(NormalizeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        normalize_isolated(Hostile({"do": do}), tmp_path, budget)
    assert time.monotonic() - t0 < 40


def test_normalizer_in_budget_returns_its_rollout(tmp_path: Path) -> None:
    assert normalize_isolated(Hostile({"do": "ok"}), tmp_path) == {"schema": "probe-rollout/v1"}
