"""Retention: the leader prunes raw results and agent readings the analysis no longer reads.

Only rows older than the analysis horizon (controller/analysis/horizon.py) go, so no verdict changes.
The horizon is taken from the as_of of the leader's own last pass, never later than the wall clock:
as_of only grows, so a row beyond it stays beyond it, and one result stamped in the future cannot pull
the window forward over stored history. Pruned results are first added to `result_days` (per test,
pool and UTC day), which keeps a test's flake history; readings need no aggregate, as nothing reads
them past the horizon. Each batch is one transaction of at most `retention_batch_rows` rows per table,
fenced by the lease, walked per runner along the (runner, time) indexes, with a pause after it.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, delete, select
from sqlalchemy.engine import Connection, Engine

from controller.analysis.horizon import DAY_MS, Horizon, horizon
from controller.analysis.service import AnalysisService
from controller.db import tables
from controller.db.upsert import add_counts
from controller.leadership import Leadership, LeaseLost
from controller.metrics import Metrics
from controller.periodic import Periodic
from controller.settings import ControllerSettings

log = logging.getLogger(__name__)
PAUSE_S = 0.15


class Retention:
    def __init__(
        self,
        engine: Engine,
        settings: ControllerSettings,
        leadership: Leadership | None,
        analysis: AnalysisService,
        metrics: Metrics,
    ) -> None:
        self.engine = engine
        self.leadership = leadership
        self.analysis = analysis
        self.metrics = metrics
        self.interval_s = settings.retention_interval_s
        self.batch = settings.retention_batch_rows
        self._periodic = Periodic("retention", self._run_as_leader, expected=(LeaseLost,))

    def horizon(self) -> Horizon | None:
        """How far back rows must stay; None until this replica has analysed as leader."""
        latest = self.analysis.latest
        if self.analysis.source != "own pass" or not latest.as_of_ms:
            return None
        as_of = min(latest.as_of_ms, int(time.time() * 1000))
        return horizon(as_of, self.analysis.config)

    def run(self) -> dict[str, int]:
        """Prune everything beyond the horizon, batch by batch; returns the rows deleted per table."""
        found = self.horizon()
        pruned: Counter[str] = Counter()
        if found is None:
            return dict(pruned)
        with self.engine.connect() as conn:
            runners = list(
                conn.execute(
                    select(tables.runners.c.id).where(tables.runners.c.first_seen_ms < found.results_from_ms)
                ).scalars()
            )
        for runner in runners:
            for table, column, before in (
                (tables.results, tables.results.c.time_ms, found.results_from_ms),
                (tables.readings, tables.readings.c.observed_ms, found.readings_from_ms),
                (tables.reports, tables.reports.c.observed_ms, found.readings_from_ms),
            ):
                while not self._periodic.stopping():
                    started = time.monotonic()
                    deleted = self._batch(table, runner, column, before)
                    pruned[table.name] += deleted
                    self.metrics.retention_pruned.labels(table.name).inc(deleted)
                    if deleted < self.batch:
                        break
                    # Leave the database to other writers at least as long as the batch held it:
                    # SQLite's busy handler retries every 100 ms at most, and would otherwise lose every
                    # race for the lock (ingest, the lease's renewal) until the pruning is done.
                    self._periodic.pause(max(PAUSE_S, time.monotonic() - started))
        if pruned:
            log.info("retention pruned %s", dict(pruned))
        return dict(pruned)

    def _batch(self, table: Table, runner: str, column: Any, before: int) -> int:
        ids = (
            select(table.c.id)
            .where(table.c.runner_id == runner, column < before)
            .order_by(table.c.id)
            .limit(self.batch)
            .scalar_subquery()
        )
        with self.engine.begin() as conn:
            if self.leadership is not None:
                self.leadership.fence(conn)
            if table is tables.results:
                t = tables.results
                rows = conn.execute(
                    delete(t)
                    .where(t.c.id.in_(ids))
                    .returning(t.c.test_id, t.c.pool, t.c.time_ms, t.c.outcome)
                ).all()
                _roll_up(conn, rows)
                return len(rows)
            return int(conn.execute(delete(table).where(table.c.id.in_(ids))).rowcount)

    # -- the background loop --------------------------------------------------------------------------

    def start(self) -> None:
        self._periodic.start(self.interval_s)

    def stop(self) -> None:
        self._periodic.stop()

    def _run_as_leader(self) -> None:
        if self.leadership is None or self.leadership.is_leader():
            self.run()


def _roll_up(conn: Connection, rows: Sequence[Any]) -> None:
    """Add deleted results to the per-test, per-pool, per-day counts (skipped ones never counted)."""
    counts: dict[tuple[str, str, int], list[int]] = {}
    for test_id, pool, time_ms, outcome in rows:
        if outcome == "skipped":
            continue
        entry = counts.setdefault((test_id, pool, time_ms // DAY_MS * DAY_MS), [0, 0])
        entry[0] += 1
        entry[1] += outcome in ("failed", "error")
    add_counts(
        conn,
        tables.result_days,
        [
            {"test_id": t, "pool": p, "day_ms": d, "executions": n, "failures": f}
            for (t, p, d), (n, f) in sorted(counts.items())
        ],
        keys=("test_id", "pool", "day_ms"),
        counters=("executions", "failures"),
    )


def archived(conn: Connection, test_id: str) -> list[dict[str, Any]]:
    """A test's rolled-up history beyond the analysis window, oldest day first."""
    t = tables.result_days
    rows = conn.execute(select(t).where(t.c.test_id == test_id).order_by(t.c.day_ms, t.c.pool))
    return [
        {"day_ms": row.day_ms, "pool": row.pool, "executions": row.executions, "failures": row.failures}
        for row in rows
    ]
