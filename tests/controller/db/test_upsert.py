"""Insert-or-ignore counts and the runner upsert, the same on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from controller.db import tables
from controller.db.upsert import insert_ignore_rows, insert_one_returning_id, upsert_runners

COLUMNS = (
    "dedup_key",
    "test_id",
    "outcome",
    "time_ms",
    "runner_id",
    "machine",
    "pool",
    "ephemeral",
    "ingested_ms",
)


def row(key: str, ephemeral: bool = False) -> tuple[Any, ...]:
    return (key, "t", "failed", 1, "r1", "m1", "linux", ephemeral, 1)


def test_insert_ignore_rows_counts_only_new_rows(engine: Engine) -> None:
    with engine.begin() as conn:
        assert insert_ignore_rows(conn, tables.results, COLUMNS, [row("a"), row("b", True)], "dedup_key") == 2
    with engine.begin() as conn:
        again = [row("a"), row("c"), row("b"), row("d")]
        assert insert_ignore_rows(conn, tables.results, COLUMNS, again, "dedup_key") == 2
        assert insert_ignore_rows(conn, tables.results, COLUMNS, [], "dedup_key") == 0
    with engine.connect() as conn:
        stored = conn.execute(select(tables.results.c.dedup_key, tables.results.c.ephemeral)).all()
    assert sorted(stored) == [("a", False), ("b", True), ("c", False), ("d", False)]


def test_insert_one_returning_id_is_none_for_a_stored_key(engine: Engine) -> None:
    report = {
        "agent_id": "a",
        "boot_id": "b",
        "seq": 1,
        "runner_id": "r1",
        "observed_ms": 1,
        "ingested_ms": 1,
    }
    keys = ("agent_id", "boot_id", "seq")
    with engine.begin() as conn:
        first = insert_one_returning_id(conn, tables.reports, report, keys)
        second = insert_one_returning_id(conn, tables.reports, report | {"seq": 2}, keys)
        assert insert_one_returning_id(conn, tables.reports, report, keys) is None
    assert isinstance(first, int) and isinstance(second, int) and second > first


def runner(**fields: Any) -> dict[str, Any]:
    base = {"id": "r1", "name": None, "machine": None, "pool": None, "image": None, "shard": None}
    return base | {"labels": "[]", "provider": None, "ephemeral": False} | fields


def stored_runner(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        return dict(conn.execute(select(tables.runners)).mappings().one())


def test_runner_identity_follows_the_newest_event(engine: Engine) -> None:
    with engine.begin() as conn:
        upsert_runners(
            conn,
            [runner(pool="linux", image="img-2", labels='["a"]', first_seen_ms=200, last_seen_ms=300)],
        )
    with engine.begin() as conn:  # a backfill of older history
        upsert_runners(
            conn, [runner(pool="old", image="img-1", ephemeral=True, first_seen_ms=100, last_seen_ms=150)]
        )
    got = stored_runner(engine)
    assert (got["pool"], got["image"], got["labels"], got["ephemeral"]) == ("linux", "img-2", '["a"]', False)
    assert (got["first_seen_ms"], got["last_seen_ms"]) == (100, 300)
    with engine.begin() as conn:  # newer, but knowing less: keeps what is known
        upsert_runners(conn, [runner(image="img-3", first_seen_ms=400, last_seen_ms=400, last_report_ms=400)])
    got = stored_runner(engine)
    assert (got["pool"], got["image"], got["labels"]) == ("linux", "img-3", '["a"]')
    assert (got["first_seen_ms"], got["last_seen_ms"], got["last_report_ms"]) == (100, 400, 400)
