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

from sqlalchemy.engine import Connection

from common.identity import RunnerIdentity
from common.results import TestResult
from common.timeutil import to_ms
from controller.db import tables
from controller.db.appends import serialise_appends
from controller.db.upsert import insert_ignore_rows, upsert_runners


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
    rows: dict[str, tuple[Any, ...]] = {}
    latest: dict[str, tuple[int, RunnerIdentity]] = {}
    for result in batch:
        time_ms = to_ms(result.time)
        key = dedup_key(result, time_ms)
        if key not in rows:
            rows[key] = _row(result, key, time_ms, now_ms)
        seen = latest.get(result.runner.id)
        if seen is None or time_ms >= seen[0]:
            latest[result.runner.id] = (time_ms, result.runner)
    serialise_appends(conn, tables.results)
    new = insert_ignore_rows(conn, tables.results, _COLUMNS, list(rows.values()), "dedup_key")
    if new:
        upsert_runners(conn, _runner_updates(latest, rows.values()))
    return StoreOutcome(accepted=len(batch), new=new)


_COLUMNS = (
    "dedup_key",
    "test_id",
    "outcome",
    "time_ms",
    "duration_s",
    "job_id",
    "run_id",
    "attempt",
    "commit",
    "message",
    "runner_id",
    "machine",
    "pool",
    "image",
    "shard",
    "ephemeral",
    "ingested_ms",
)


def _row(result: TestResult, key: str, time_ms: int, now_ms: int) -> tuple[Any, ...]:
    runner = result.runner
    return (
        key,
        result.test_id,
        result.outcome.value,
        time_ms,
        result.duration_s,
        result.job_id,
        result.run_id,
        result.attempt,
        result.commit,
        result.message,
        runner.id,
        runner.effective_machine(),
        runner.effective_pool(),
        runner.image,
        runner.shard,
        runner.ephemeral,
        now_ms,
    )


def _runner_updates(
    latest: dict[str, tuple[int, RunnerIdentity]], rows: Iterable[tuple[Any, ...]]
) -> list[dict[str, Any]]:
    """One row per runner: the identity seen at its latest event time, and the batch's time span.

    Execution counts are not kept here: they would need to know which rows were new, which costs a
    lookup per row; the analysis counts them from the results themselves."""
    span: dict[str, list[int]] = {}
    runner_at, time_at = _COLUMNS.index("runner_id"), _COLUMNS.index("time_ms")
    for row in rows:
        entry = span.setdefault(row[runner_at], [row[time_at], row[time_at]])
        entry[0] = min(entry[0], row[time_at])
        entry[1] = max(entry[1], row[time_at])
    return [
        identity_row(latest[runner_id][1]) | {"first_seen_ms": first, "last_seen_ms": last}
        for runner_id, (first, last) in span.items()
    ]


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
