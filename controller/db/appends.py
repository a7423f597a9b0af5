"""Appends to the tables the analysis reads by id become visible in id order.

The analysis resumes after the last id it loaded (`id > last`). On PostgreSQL an id is drawn from a
sequence when the row is inserted but seen only when its transaction commits, so two concurrent
writers can make ids 1001–2000 visible before 1–1000, and the reader would skip 1–1000 for good.
"""

from __future__ import annotations

from sqlalchemy import Table, func, select
from sqlalchemy.engine import Connection

# pg_advisory_xact_lock(int4, int4): a namespace ('rctl') and one key per appended table.
_NAMESPACE = 0x7263746C
_KEYS = {"results": 1, "readings": 2, "jobs": 3}


def serialise_appends(conn: Connection, table: Table) -> None:
    """Hold `table`'s append lock until this transaction ends; call before the first insert.

    Writers to one table then draw ids and commit one after another, on every replica, and
    overlapping batches of unique keys cannot deadlock each other. SQLite has a single writer
    already, so there it is a no-op.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(_NAMESPACE, _KEYS[table.name])))
