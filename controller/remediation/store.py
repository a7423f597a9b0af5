"""Persisted remediation state: who holds each runner out of rotation, the reruns, the clearances.

Runner states: active → cordoned → draining → drained → active. Reruns: pending → submitted →
passed | failed (or `unknown` when a crash or a lost answer left it unclear whether the provider queued
it; `deferred` back to pending when the provider refused it with a 429 and nothing was queued).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Connection

from common.timeutil import iso
from controller.db import tables
from controller.remediation.audit import now_ms

OUT_OF_ROTATION = ("cordoned", "draining", "drained")
RERUN_DONE = ("passed", "failed", "unknown")
RERUN_OPEN = ("pending", "deferred", "submitted")


def cordon_of(conn: Connection, runner_id: str) -> dict[str, Any] | None:
    t = tables.runner_states
    row = conn.execute(select(t).where(t.c.runner_id == runner_id)).first()
    if row is None or row.state not in OUT_OF_ROTATION:
        return None
    return {
        "by": row.by,
        "reason": row.reason,
        "at": iso(row.at_ms),
        "expires": iso(row.expires_ms),
        "source": row.source,
        "state": row.state,
        "incident": row.incident_id,
    }


def out_of_rotation(conn: Connection) -> dict[str, Any]:
    """runner id -> its state row, for every runner held out of rotation."""
    t = tables.runner_states
    return {row.runner_id: row for row in conn.execute(select(t).where(t.c.state.in_(OUT_OF_ROTATION)))}


def set_cordoned(
    conn: Connection,
    runner_id: str,
    *,
    source: str,
    by: str,
    reason: str,
    incident_id: str | None = None,
    expires_ms: int | None = None,
) -> None:
    t = tables.runner_states
    stamp = now_ms()
    conn.execute(delete(t).where(t.c.runner_id == runner_id))
    conn.execute(
        t.insert().values(
            runner_id=runner_id,
            state="cordoned",
            source=source,
            by=by,
            reason=reason,
            incident_id=incident_id,
            at_ms=stamp,
            expires_ms=expires_ms,
            updated_ms=stamp,
        )
    )


def set_state(conn: Connection, runner_id: str, state: str) -> None:
    t = tables.runner_states
    conn.execute(update(t).where(t.c.runner_id == runner_id).values(state=state, updated_ms=now_ms()))


def set_active(conn: Connection, runner_id: str) -> None:
    set_state(conn, runner_id, "active")


def runner(conn: Connection, runner_id: str) -> Any:
    t = tables.runners
    return conn.execute(
        select(t.c.id, t.c.pool, t.c.provider, t.c.ephemeral).where(t.c.id == runner_id)
    ).first()


def runners(conn: Connection) -> dict[str, Any]:
    """runner id -> (pool, provider) for every runner the controller knows."""
    t = tables.runners
    return {row.id: row for row in conn.execute(select(t.c.id, t.c.pool, t.c.provider, t.c.ephemeral))}


# -- reruns --------------------------------------------------------------------------------------------


def has_rerun(conn: Connection, key: str) -> bool:
    return rerun_state(conn, key) is not None


def rerun_state(conn: Connection, key: str) -> str | None:
    t = tables.reruns
    found = conn.execute(select(t.c.state).where(t.c.key == key)).scalar()
    return None if found is None else str(found)


def add_rerun(
    conn: Connection, key: str, incident_id: str, runner_id: str, job_id: str, run_id: str | None
) -> bool:
    if has_rerun(conn, key):
        return False
    t = tables.reruns
    conn.execute(
        t.insert().values(
            key=key,
            incident_id=incident_id,
            runner_id=runner_id,
            job_id=job_id,
            run_id=run_id,
            state="pending",
            updated_ms=now_ms(),
        )
    )
    return True


def reruns_of_job(conn: Connection, job_id: str) -> int:
    """Reruns ever submitted (or possibly submitted) for this job, whatever the incident."""
    t = tables.reruns
    return int(
        conn.execute(
            select(func.count()).where(t.c.job_id == job_id, t.c.state.in_(("submitted", *RERUN_DONE)))
        ).scalar()
        or 0
    )


def update_rerun(conn: Connection, key: str, **values: Any) -> None:
    t = tables.reruns
    conn.execute(update(t).where(t.c.key == key).values(updated_ms=now_ms(), **values))


def reruns(conn: Connection, incident_id: str | None = None, state: str | None = None) -> list[Any]:
    t = tables.reruns
    query = select(t).order_by(t.c.key)
    if incident_id is not None:
        query = query.where(t.c.incident_id == incident_id)
    if state is not None:
        query = query.where(t.c.state == state)
    return list(conn.execute(query))


# -- flake clearances ----------------------------------------------------------------------------------


def add_clearance(
    conn: Connection, incident_id: str, runner_id: str, test_ids: list[str], reason: str
) -> bool:
    t = tables.clearances
    if conn.execute(select(t.c.incident_id).where(t.c.incident_id == incident_id)).first() is not None:
        return False
    conn.execute(
        t.insert().values(
            incident_id=incident_id,
            runner_id=runner_id,
            test_ids=json.dumps(sorted(test_ids)),
            reason=reason,
            at_ms=now_ms(),
        )
    )
    return True


def clearances(conn: Connection) -> list[dict[str, Any]]:
    t = tables.clearances
    return [
        {
            "incident": row.incident_id,
            "runner": row.runner_id,
            "tests": json.loads(row.test_ids),
            "reason": row.reason,
            "at": iso(row.at_ms),
        }
        for row in conn.execute(select(t).order_by(t.c.at_ms))
    ]


def cleared_by(conn: Connection) -> dict[str, list[str]]:
    """test id -> the incidents whose clearance covers it."""
    found: dict[str, list[str]] = {}
    for clearance in clearances(conn):
        for test_id in clearance["tests"]:
            found.setdefault(test_id, []).append(clearance["incident"])
    return found
