"""Persisted remediation state: who holds each runner out of rotation, the reruns, the clearances, the
probations.

Runner states: active → cordoned → draining → drained → probation → active (or back to cordoned when
the probe fails; an operator's uncordon goes straight to active). Reruns: pending → submitted →
passed | failed (or `unknown` when a crash or a lost answer left it unclear whether the provider queued
it; `deferred` back to pending when the provider refused it with a 429 and nothing was queued).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Connection

from common.results import FAILING_OUTCOMES
from common.timeutil import iso
from controller.db import tables
from controller.remediation.audit import now_ms

OUT_OF_ROTATION = ("cordoned", "draining", "drained")
# Back in rotation but still the controller's: its next jobs decide (probation.py).
PROBATION = "probation"
# A probation is judged while running (or probing: its probe job queued while the runner stays cordoned);
# failing means its re-cordon is still to be done (fail closed).
PROBATION_OPEN = ("running", "probing", "failing")
# Only narrows the probe's query to the (runner, time) index: a probe job's results are not dated a
# day before the probation that they are read for began.
PROBE_EVENT_SLACK_MS = 86_400_000
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


def state_of(conn: Connection, runner_id: str) -> str | None:
    t = tables.runner_states
    found = conn.execute(select(t.c.state).where(t.c.runner_id == runner_id)).scalar()
    return None if found is None else str(found)


def runner(conn: Connection, runner_id: str) -> Any:
    t = tables.runners
    return conn.execute(
        select(t.c.id, t.c.pool, t.c.provider, t.c.ephemeral).where(t.c.id == runner_id)
    ).first()


def runners(conn: Connection) -> dict[str, Any]:
    """runner id -> (pool, provider) for every runner the controller knows."""
    t = tables.runners
    return {row.id: row for row in conn.execute(select(t.c.id, t.c.pool, t.c.provider, t.c.ephemeral))}


def last_report_ms(conn: Connection, runner_id: str) -> int | None:
    t = tables.runners
    found = conn.execute(select(t.c.last_report_ms).where(t.c.id == runner_id)).scalar()
    return None if found is None else int(found)


# -- reruns --------------------------------------------------------------------------------------------


def has_rerun(conn: Connection, key: str) -> bool:
    return rerun_state(conn, key) is not None


def rerun_state(conn: Connection, key: str) -> str | None:
    t = tables.reruns
    found = conn.execute(select(t.c.state).where(t.c.key == key)).scalar()
    return None if found is None else str(found)


def rerun(conn: Connection, key: str) -> Any:
    """The rerun recorded under this key (its state and the provider's id for it), or None."""
    t = tables.reruns
    return conn.execute(select(t).where(t.c.key == key)).first()


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


# -- probations ----------------------------------------------------------------------------------------


def start_probation(
    conn: Connection, runner_id: str, incident_id: str | None, started_ms: int, known_incidents: list[str]
) -> int:
    """The runner is back in rotation on probation; its cordon row keeps who held it and why."""
    set_state(conn, runner_id, PROBATION)
    t = tables.probations
    new = conn.execute(
        t.insert().values(
            runner_id=runner_id,
            incident_id=incident_id,
            state="running",
            started_ms=started_ms,
            known_incidents=json.dumps(sorted(known_incidents)),
            jobs="{}",
            updated_ms=now_ms(),
        )
    ).inserted_primary_key
    return int(new[0]) if new else 0


def start_probe(conn: Connection, runner_id: str, incident_id: str | None, started_ms: int, job: str) -> int:
    """A probe of `job` is about to be queued; the runner stays cordoned, its state unchanged."""
    t = tables.probations
    new = conn.execute(
        t.insert().values(
            runner_id=runner_id,
            incident_id=incident_id,
            state="probing",
            started_ms=started_ms,
            known_incidents="[]",
            jobs="{}",
            probe_of=job,
            updated_ms=now_ms(),
        )
    ).inserted_primary_key
    return int(new[0]) if new else 0


def last_probe(conn: Connection, runner_id: str) -> Any:
    """The runner's newest probe before return, open or ended."""
    t = tables.probations
    query = select(t).where(t.c.runner_id == runner_id, t.c.probe_of.is_not(None))
    return conn.execute(query.order_by(t.c.id.desc())).first()


def failed_tests(conn: Connection, runner_id: str, job_id: str) -> list[str]:
    """The distinct tests that failed in one job on a runner, in the order their results arrived (by
    runner too: results have no index on the job)."""
    t = tables.results
    query = select(t.c.test_id, t.c.outcome).where(t.c.runner_id == runner_id, t.c.job_id == job_id)
    rows = conn.execute(query.order_by(t.c.id))
    found: list[str] = []
    for test_id, outcome in rows:
        if outcome in FAILING_OUTCOMES and test_id not in found:
            found.append(str(test_id))
    return found


def open_probations(conn: Connection) -> list[Any]:
    t = tables.probations
    return list(conn.execute(select(t).where(t.c.state.in_(PROBATION_OPEN)).order_by(t.c.id)))


def open_probation(conn: Connection, runner_id: str) -> Any:
    t = tables.probations
    return conn.execute(
        select(t).where(t.c.runner_id == runner_id, t.c.state.in_(PROBATION_OPEN)).order_by(t.c.id.desc())
    ).first()


def probations_of(conn: Connection, runner_id: str, incident_id: str | None) -> int:
    """How many probations this runner has had for this incident: numbers the next one's audit key."""
    t = tables.probations
    query = select(func.count()).where(t.c.runner_id == runner_id)
    query = query.where(t.c.incident_id.is_(None) if incident_id is None else t.c.incident_id == incident_id)
    return int(conn.execute(query).scalar() or 0)


def update_probation(conn: Connection, probation_id: int, **values: Any) -> None:
    t = tables.probations
    conn.execute(update(t).where(t.c.id == probation_id).values(updated_ms=now_ms(), **values))


def end_probation(
    conn: Connection, probation_id: int, runner_id: str, state: str, outcome: str, *, active: bool
) -> None:
    """Close a probation; `active`: the runner is the controller's no more (passed, idle, an operator's
    uncordon), else whoever holds it now (a re-cordon, an operator's cordon) has already said so."""
    stamp = now_ms()
    update_probation(conn, probation_id, state=state, outcome=outcome, ended_ms=stamp)
    if active:
        set_active(conn, runner_id)


def probe_results(conn: Connection, runner_id: str, since_ms: int) -> dict[str, list[str]]:
    """job id -> the distinct tests that failed in it, for each job with results stored for this runner
    since `since_ms`, in the order they arrived; results without a job id cannot name a job and are left out.
    """
    t = tables.results
    rows = conn.execute(
        select(t.c.job_id, t.c.test_id, t.c.outcome)
        .where(
            t.c.runner_id == runner_id,
            t.c.time_ms >= since_ms - PROBE_EVENT_SLACK_MS,
            t.c.ingested_ms >= since_ms,
            t.c.job_id.is_not(None),
        )
        .order_by(t.c.id)
    )
    jobs: dict[str, list[str]] = {}
    for job_id, test_id, outcome in rows:
        failed = jobs.setdefault(str(job_id), [])
        if outcome in FAILING_OUTCOMES and test_id not in failed:
            failed.append(str(test_id))
    return jobs
