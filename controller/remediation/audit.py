"""The audit log: every action is written here before it is attempted, under an idempotency key.

`begin()` inserts the row (status `intended`) and tells the caller whether this key is new; only then
may the caller talk to the provider, and `finish()` records what happened. A key that already exists
means the action was attempted before, by this process or one that crashed: the caller decides from its
status whether repeating it is safe (a pause is, a rebuild is not).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from common.timeutil import iso
from controller.db import tables

FINAL = ("done", "failed", "refused", "skipped", "dry-run")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Entry:
    id: int
    key: str
    status: str
    new: bool  # False: the key was recorded before (the action may already have happened)


def begin(
    engine: Engine,
    key: str,
    action: str,
    *,
    actor: str,
    runner_id: str | None = None,
    incident_id: str | None = None,
    job_id: str | None = None,
    mode: str | None = None,
    reason: str | None = None,
    status: str = "intended",
    detail: str | None = None,
    fence: Callable[[Connection], None] | None = None,
) -> Entry:
    """Record the action under `key` (committed before this returns), or return the existing record."""
    t = tables.actions
    stamp = now_ms()
    row = {
        "key": key,
        "action": action,
        "status": status,
        "runner_id": runner_id,
        "incident_id": incident_id,
        "job_id": job_id,
        "actor": actor,
        "mode": mode,
        "reason": reason,
        "detail": detail,
        "created_ms": stamp,
        "updated_ms": stamp,
    }
    try:
        with engine.begin() as conn:
            if fence is not None:
                fence(conn)
            new_id = conn.execute(t.insert().values(**row)).inserted_primary_key
        return Entry(int(new_id[0]) if new_id else 0, key, status, True)
    except IntegrityError:
        with engine.connect() as conn:
            found = conn.execute(select(t.c.id, t.c.status).where(t.c.key == key)).one()
        return Entry(int(found.id), key, str(found.status), False)


def note(engine: Engine, key: str, action: str, status: str, **fields: Any) -> Entry:
    """A decision that is not an attempt (refused, skipped, a storm): recorded once per key."""
    return begin(engine, key, action, status=status, **fields)


def finish(engine: Engine, entry_id: int, status: str, detail: str | None = None) -> None:
    values: dict[str, Any] = {"status": status, "updated_ms": now_ms()}
    if detail is not None:
        values["detail"] = detail
    with engine.begin() as conn:
        conn.execute(update(tables.actions).where(tables.actions.c.id == entry_id).values(**values))


def retry(engine: Engine, entry_id: int) -> None:
    """A deferred action is attempted again: `intended` once more, committed before the provider is called."""
    finish(engine, entry_id, "intended")


def status_of(conn: Connection, key: str) -> str | None:
    found = conn.execute(select(tables.actions.c.status).where(tables.actions.c.key == key)).scalar()
    return None if found is None else str(found)


def mode_and_actor(conn: Connection, key: str) -> tuple[str | None, str | None]:
    """The mode and actor recorded under `key`; (None, None) when nothing is."""
    t = tables.actions
    found = conn.execute(select(t.c.mode, t.c.actor).where(t.c.key == key)).first()
    return (None, None) if found is None else (found.mode, found.actor)


def intended(conn: Connection, key_prefix: str) -> list[Any]:
    """Entries under keys starting with `key_prefix` still `intended`: attempts a crash interrupted."""
    t = tables.actions
    query = select(t).where(t.c.key.startswith(key_prefix, autoescape=True), t.c.status == "intended")
    return list(conn.execute(query.order_by(t.c.id)))


def listing(
    conn: Connection,
    *,
    runner_id: str | None = None,
    incident_id: str | None = None,
    action: str | None = None,
    status: str | None = None,
    limit: int = 500,
) -> list[dict[str, Any]]:
    t = tables.actions
    query = select(t).order_by(t.c.id.desc()).limit(limit)
    for column, value in (
        (t.c.runner_id, runner_id),
        (t.c.incident_id, incident_id),
        (t.c.action, action),
        (t.c.status, status),
    ):
        if value is not None:
            query = query.where(column.in_(value.split(",")))
    return [
        {
            "id": row.id,
            "key": row.key,
            "action": row.action,
            "status": row.status,
            "runner": row.runner_id,
            "incident": row.incident_id,
            "job": row.job_id,
            "actor": row.actor,
            "mode": row.mode,
            "reason": row.reason,
            "detail": row.detail,
            "at": iso(row.created_ms),
            "updated": iso(row.updated_ms),
        }
        for row in conn.execute(query)
    ]
