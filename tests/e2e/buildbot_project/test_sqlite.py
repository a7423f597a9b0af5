import sqlite3

from scratchspace import Scratch


def _connect(scratch: Scratch) -> sqlite3.Connection:
    db = sqlite3.connect(scratch / "app.db")
    db.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    return db


def test_insert_and_select(scratch: Scratch) -> None:
    with _connect(scratch) as db:
        db.executemany("INSERT INTO items (name) VALUES (?)", [("a",), ("b",), ("c",)])
    db = _connect(scratch)
    try:
        assert [row[0] for row in db.execute("SELECT name FROM items ORDER BY id")] == ["a", "b", "c"]
    finally:
        db.close()


def test_rollback_discards_writes(scratch: Scratch) -> None:
    db = _connect(scratch)
    try:
        db.execute("INSERT INTO items (name) VALUES ('kept')")
        db.commit()
        db.execute("INSERT INTO items (name) VALUES ('dropped')")
        db.rollback()
        assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 1
    finally:
        db.close()


def test_wal_mode(scratch: Scratch) -> None:
    db = _connect(scratch)
    try:
        assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        db.execute("INSERT INTO items (name) VALUES ('x')")
        db.commit()
    finally:
        db.close()
