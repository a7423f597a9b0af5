"""Dialect-aware insert-or-ignore and the runner upsert, the two writes whose race safety matters."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, case, func
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from controller.db import tables

_IDENTITY = ("name", "machine", "pool", "image", "shard", "labels", "provider", "ephemeral")


def _insert(conn: Connection, table: Table) -> Any:
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def insert_ignore(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], keys: Sequence[str]
) -> None:
    """Insert rows; a row whose unique key a concurrent writer stored first is skipped, not an error."""
    if rows:
        conn.execute(_insert(conn, table).on_conflict_do_nothing(index_elements=list(keys)), list(rows))


def insert_ignore_rows(
    conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]], key: str
) -> int:
    """Bulk insert-or-ignore straight through the driver's executemany; returns how many were new.

    The hot ingest path: SQLAlchemy's per-row parameter processing cost more than the insert itself.
    """
    if not rows:
        return 0
    marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    quoted = ", ".join(conn.dialect.identifier_preparer.quote(c) for c in columns)
    sql = (
        f"INSERT INTO {table.name} ({quoted}) VALUES ({', '.join([marker] * len(columns))}) "
        f"ON CONFLICT ({key}) DO NOTHING"
    )
    driver = conn.connection.dbapi_connection
    cursor = driver.cursor()  # type: ignore[union-attr]
    try:
        cursor.executemany(sql, rows)
        return int(cursor.rowcount)
    except conn.dialect.loaded_dbapi.Error as exc:
        # The driver's own error, which SQLAlchemy wraps on every other path: wrap it the same way, so a
        # full disk (PostgreSQL fails the INSERT itself) is a 507 and a lost server a 503, never a 500.
        lost = conn.dialect.is_disconnect(exc, driver, cursor)
        if lost:
            conn.invalidate(exc)
        raise DBAPIError.instance(
            sql, None, exc, conn.dialect.loaded_dbapi.Error, connection_invalidated=lost, dialect=conn.dialect
        ) from exc
    finally:
        cursor.close()


def insert_one_returning_id(
    conn: Connection, table: Table, row: dict[str, Any], keys: Sequence[str]
) -> int | None:
    """Insert one row and return its id, or None when the unique key is already stored."""
    stmt = _insert(conn, table).on_conflict_do_nothing(index_elements=list(keys)).returning(table.c.id)
    found = conn.execute(stmt, row).scalar_one_or_none()
    return None if found is None else int(found)


def upsert_runners(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Create or update runners. Identity fields follow the newest event time seen, so a backfill
    of old history never overwrites what a runner is today."""
    if not rows:
        return
    full = [{"first_seen_ms": None, "last_seen_ms": None, "last_report_ms": None} | row for row in rows]
    # One statement per distinct key set keeps executemany valid; sort for a stable lock order.
    full.sort(key=lambda row: row["id"])
    conn.execute(_runner_upsert(conn.dialect.name), full)


@functools.cache
def _runner_upsert(dialect: str) -> Any:
    """Built once per dialect: every agent report upserts its runner, and building these expressions
    cost more than executing them (~2 ms a report)."""
    table = tables.runners
    stmt = postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)
    new = stmt.excluded
    newer = new.last_seen_ms >= func.coalesce(table.c.last_seen_ms, 0)
    # A sender that knows less (an agent report without the pool, say) must not erase what is known.
    updates: dict[str, Any] = {
        name: case(
            (newer, func.coalesce(getattr(new, name), getattr(table.c, name))),
            else_=func.coalesce(getattr(table.c, name), getattr(new, name)),
        )
        for name in _IDENTITY
        if name != "labels"
    }
    updates["labels"] = case((newer & (new.labels != "[]"), new.labels), else_=table.c.labels)
    updates["first_seen_ms"] = case(
        (table.c.first_seen_ms.is_(None), new.first_seen_ms),
        (new.first_seen_ms < table.c.first_seen_ms, new.first_seen_ms),
        else_=table.c.first_seen_ms,
    )
    updates["last_seen_ms"] = case(
        (table.c.last_seen_ms.is_(None), new.last_seen_ms),
        (new.last_seen_ms > table.c.last_seen_ms, new.last_seen_ms),
        else_=table.c.last_seen_ms,
    )
    updates["last_report_ms"] = case(
        (table.c.last_report_ms.is_(None), new.last_report_ms),
        (new.last_report_ms > table.c.last_report_ms, new.last_report_ms),
        else_=table.c.last_report_ms,
    )
    return stmt.on_conflict_do_update(index_elements=["id"], set_=updates)


def add_counts(
    conn: Connection,
    table: Table,
    rows: Sequence[dict[str, Any]],
    keys: Sequence[str],
    counters: Sequence[str],
) -> None:
    """Insert rows, or add their counters to the stored row with the same key."""
    if not rows:
        return
    stmt = _insert(conn, table)
    updates = {name: table.c[name] + stmt.excluded[name] for name in counters}
    conn.execute(stmt.on_conflict_do_update(index_elements=list(keys), set_=updates), list(rows))
