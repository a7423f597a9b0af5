"""Per-runner job statistics over the analysis window: how many jobs ran to a verdict, how many of them
failed, and the median duration. Two grouped queries per listing (counts; medians by window function),
never one per runner."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import case, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from common.jobs import JUDGED_CONCLUSIONS, JobConclusion
from controller.db import tables

DAY_MS = 86_400_000
CLOCK_LEAD_MS = 5 * 60_000  # as the analysis' as_of may run past the controller's clock (service.py)
_JUDGED = sorted(c.value for c in JUDGED_CONCLUSIONS)


@dataclass(frozen=True)
class JobStats:
    jobs: int = 0
    failures: int = 0
    median_s: float | None = None

    @property
    def failure_rate(self) -> float | None:
        return self.failures / self.jobs if self.jobs else None


def window_start_ms(conn: Connection, as_of_ms: int, window_days: float) -> int:
    """Where the analysis window begins for jobs: `window_days` before the newer of the analysis'
    `as_of` and the newest job. Jobs may be newer than every result (a runner whose jobs die before any
    test sends none), and they must not be judged against a window that ended before them. Jobs dated
    further ahead of the controller's clock than the analysis allows its `as_of` do not move it."""
    t = tables.jobs
    ceiling = int(time.time() * 1000) + CLOCK_LEAD_MS
    newest = conn.execute(select(func.max(t.c.finished_ms)).where(t.c.finished_ms <= ceiling)).scalar()
    anchor = max(as_of_ms, int(newest or 0)) or int(time.time() * 1000)
    return anchor - int(window_days * DAY_MS)


def job_stats(conn: Connection, since_ms: int, runner_id: str | None = None) -> dict[str, JobStats]:
    t = tables.jobs
    judged = [t.c.finished_ms >= since_ms, t.c.conclusion.in_(_JUDGED)]
    if runner_id is not None:
        judged.append(t.c.runner_id == runner_id)
    failed = func.sum(case((t.c.conclusion != JobConclusion.success.value, 1), else_=0))
    counts = conn.execute(select(t.c.runner_id, func.count(), failed).where(*judged).group_by(t.c.runner_id))
    medians = _medians(conn, judged)
    return {rid: JobStats(int(n), int(f or 0), medians.get(rid)) for rid, n, f in counts}


def _medians(conn: Connection, judged: list[ColumnElement[bool]]) -> dict[str, float]:
    """The median duration per runner in SQL (SQLite has no percentile function): rank each runner's
    durations, then average the middle one or two."""
    t = tables.jobs
    duration = t.c.finished_ms - t.c.started_ms
    ranked = (
        select(
            t.c.runner_id,
            duration.label("duration_ms"),
            func.row_number().over(partition_by=t.c.runner_id, order_by=duration).label("rank"),
            func.count().over(partition_by=t.c.runner_id).label("n"),
        )
        .where(*judged, t.c.started_ms.is_not(None))
        .subquery()
    )
    middle = (ranked.c.rank >= (ranked.c.n + 1) // 2) & (ranked.c.rank <= (ranked.c.n + 2) // 2)
    query = (
        select(ranked.c.runner_id, func.avg(ranked.c.duration_ms)).where(middle).group_by(ranked.c.runner_id)
    )
    return {rid: float(ms) / 1000 for rid, ms in conn.execute(query)}
