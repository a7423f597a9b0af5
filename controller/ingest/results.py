"""Store test results: validated records in, deduplicated rows out.

A result's identity is (test, runner, job, run, attempt, event time): posting the same record twice
stores it once, which makes every upload and every `runnerctl import` safe to repeat.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from common.identity import RunnerIdentity
from common.results import FAILING_OUTCOMES, TestResult
from common.timeutil import to_ms
from controller.db import tables
from controller.db.upsert import insert_ignore, upsert_runners

_LOOKUP_CHUNK = 500


@dataclass(frozen=True)
class StoreOutcome:
    accepted: int
    new: int

    @property
    def duplicate(self) -> int:
        return self.accepted - self.new


def dedup_key(result: TestResult, time_ms: int) -> str:
    parts = (
        result.test_id,
        result.runner.id,
        result.job_id or "",
        result.run_id or "",
        "" if result.attempt is None else str(result.attempt),
        str(time_ms),
    )
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=16).hexdigest()


def store_results(conn: Connection, batch: Sequence[TestResult], now_ms: int) -> StoreOutcome:
    rows: dict[str, dict[str, Any]] = {}
    for result in batch:
        time_ms = to_ms(result.time)
        key = dedup_key(result, time_ms)
        if key not in rows:
            rows[key] = _row(result, key, time_ms, now_ms)
    existing = _existing_keys(conn, rows.keys())
    fresh = [row for key, row in rows.items() if key not in existing]
    if fresh:
        insert_ignore(conn, tables.results, fresh, ("dedup_key",))
        upsert_runners(conn, _runner_updates(batch, fresh))
    return StoreOutcome(accepted=len(batch), new=len(fresh))


def _row(result: TestResult, key: str, time_ms: int, now_ms: int) -> dict[str, Any]:
    runner = result.runner
    return {
        "dedup_key": key,
        "test_id": result.test_id,
        "outcome": result.outcome.value,
        "time_ms": time_ms,
        "duration_s": result.duration_s,
        "job_id": result.job_id,
        "run_id": result.run_id,
        "attempt": result.attempt,
        "commit": result.commit,
        "message": result.message,
        "runner_id": runner.id,
        "machine": runner.effective_machine(),
        "pool": runner.effective_pool(),
        "image": runner.image,
        "shard": runner.shard,
        "ephemeral": runner.ephemeral,
        "ingested_ms": now_ms,
    }


def _existing_keys(conn: Connection, keys: Iterable[str]) -> set[str]:
    wanted = list(keys)
    found: set[str] = set()
    column = tables.results.c.dedup_key
    for start in range(0, len(wanted), _LOOKUP_CHUNK):
        chunk = wanted[start : start + _LOOKUP_CHUNK]
        found.update(conn.execute(select(column).where(column.in_(chunk))).scalars())
    return found


def _runner_updates(batch: Sequence[TestResult], fresh: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per runner: the identity seen at its latest event time, and what the new rows add."""
    latest: dict[str, tuple[int, RunnerIdentity]] = {}
    for result in batch:
        time_ms = to_ms(result.time)
        seen = latest.get(result.runner.id)
        if seen is None or time_ms >= seen[0]:
            latest[result.runner.id] = (time_ms, result.runner)
    counts: dict[str, list[int]] = {}
    for row in fresh:
        entry = counts.setdefault(row["runner_id"], [0, 0, row["time_ms"], row["time_ms"]])
        entry[0] += 1
        entry[1] += row["outcome"] in FAILING_OUTCOMES
        entry[2] = min(entry[2], row["time_ms"])
        entry[3] = max(entry[3], row["time_ms"])
    updates = []
    for runner_id, (executions, failures, first, last) in counts.items():
        identity = latest[runner_id][1]
        updates.append(
            identity_row(identity)
            | {
                "first_seen_ms": first,
                "last_seen_ms": last,
                "executions": executions,
                "failures": failures,
            }
        )
    return updates


def identity_row(identity: RunnerIdentity) -> dict[str, Any]:
    return {
        "id": identity.id,
        "name": identity.name,
        "machine": identity.machine,
        "pool": identity.pool,
        "image": identity.image,
        "shard": identity.shard,
        "labels": json.dumps(list(identity.labels)),
        "provider": identity.provider,
        "ephemeral": identity.ephemeral,
    }
