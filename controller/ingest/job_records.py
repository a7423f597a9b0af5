"""Store job records: validated jobs in, deduplicated rows out.

A job's identity is (job, run, attempt, runner, finish time): a webhook redelivered or an import run
twice stores it once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from common.jobs import JobRecord
from common.timeutil import to_ms
from controller.db import tables
from controller.db.appends import serialise_appends
from controller.db.upsert import insert_ignore_rows, upsert_runners
from controller.ingest.results import StoreOutcome, identity_row

_COLUMNS = (
    "dedup_key",
    "job_id",
    "run_id",
    "attempt",
    "name",
    "conclusion",
    "failed_step",
    "failure_reason",
    "started_ms",
    "finished_ms",
    "tests",
    "commit",
    "runner_id",
    "machine",
    "pool",
    "image",
    "shard",
    "ephemeral",
    "provider",
    "ingested_ms",
)


def job_key(job: JobRecord, finished_ms: int) -> str:
    parts = (
        job.job_id,
        job.run_id or "",
        "" if job.attempt is None else str(job.attempt),
        job.runner.id,
        str(finished_ms),
    )
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=16).hexdigest()


def store_jobs(conn: Connection, batch: Sequence[JobRecord], now_ms: int) -> StoreOutcome:
    rows: dict[str, tuple[Any, ...]] = {}
    seen: dict[str, tuple[int, int, JobRecord]] = {}  # runner -> first, last finish, latest record
    batch = _with_known_identity(conn, batch)
    for job in batch:
        finished_ms = to_ms(job.finished)
        rows.setdefault(job_key(job, finished_ms), _row(job, finished_ms, now_ms))
        first, last, latest = seen.get(job.runner.id, (finished_ms, finished_ms, job))
        seen[job.runner.id] = (
            min(first, finished_ms),
            max(last, finished_ms),
            job if finished_ms >= last else latest,
        )
    serialise_appends(conn, tables.jobs)
    new = insert_ignore_rows(conn, tables.jobs, _COLUMNS, list(rows.values()), "dedup_key")
    if new:
        # A black-hole runner may never send a test result: its jobs alone must make it known.
        upsert_runners(
            conn,
            [
                identity_row(latest.runner) | {"first_seen_ms": first, "last_seen_ms": last}
                for first, last, latest in seen.values()
            ],
        )
    return StoreOutcome(accepted=len(batch), new=new)


def _with_known_identity(conn: Connection, batch: Sequence[JobRecord]) -> Sequence[JobRecord]:
    """Records whose runner names no pool or machine (a Buildbot push names only the worker) take them
    from the runner as already known: a job row in pool "default" would have no peers to be judged by."""
    vague = {job.runner.id for job in batch if job.runner.pool is None or job.runner.machine is None}
    if not vague:
        return batch
    t = tables.runners
    known = {
        row.id: row
        for row in conn.execute(
            select(t.c.id, t.c.pool, t.c.machine, t.c.image, t.c.shard).where(t.c.id.in_(vague))
        )
    }
    filled: list[JobRecord] = []
    for job in batch:
        row = known.get(job.runner.id)
        if row is None:
            filled.append(job)
            continue
        fields = {
            name: getattr(job.runner, name) or getattr(row, name)
            for name in ("pool", "machine", "image", "shard")
        }
        filled.append(job.model_copy(update={"runner": job.runner.model_copy(update=fields)}))
    return filled


def _row(job: JobRecord, finished_ms: int, now_ms: int) -> tuple[Any, ...]:
    runner = job.runner
    return (
        job_key(job, finished_ms),
        job.job_id,
        job.run_id,
        job.attempt,
        job.name,
        job.conclusion.value,
        job.failed_step,
        job.failure_reason,
        None if job.started is None else to_ms(job.started),
        finished_ms,
        job.tests,
        job.commit,
        runner.id,
        runner.effective_machine(),
        runner.effective_pool(),
        runner.image,
        runner.shard,
        runner.ephemeral,
        runner.provider,
        now_ms,
    )
