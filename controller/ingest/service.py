"""The ingest service: one transaction per request, committed before the 2xx goes out."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from common.api import ReportsAccepted, ResultsAccepted
from common.jobs import JobRecord
from common.reports import AgentReport
from common.results import TestResult
from controller.db import tables
from controller.db.upsert import insert_ignore_rows
from controller.ingest.job_records import store_jobs
from controller.ingest.reports import store_reports
from controller.ingest.results import StoreOutcome, store_results
from controller.metrics import Metrics


class Ingest:
    def __init__(
        self, engine: Engine, metrics: Metrics, on_new_data: Callable[[], None] | None = None
    ) -> None:
        self._engine = engine
        self._metrics = metrics
        self._on_new_data = on_new_data or (lambda: None)
        # SQLite has one writer at a time; serialising here avoids busy retries inside the driver.
        self._write_lock = threading.Lock() if engine.dialect.name == "sqlite" else None

    def results(self, records: Sequence[TestResult]) -> ResultsAccepted:
        now_ms = int(time.time() * 1000)
        with self._locked(), self._engine.begin() as conn:
            outcome = store_results(conn, records, now_ms)
        self._metrics.results_ingested.labels("new").inc(outcome.new)
        self._metrics.results_ingested.labels("duplicate").inc(outcome.duplicate)
        if outcome.new:
            self._on_new_data()
        return ResultsAccepted(accepted=outcome.accepted, new=outcome.new, duplicate=outcome.duplicate)

    def jobs(self, records: Sequence[JobRecord]) -> ResultsAccepted:
        now_ms = int(time.time() * 1000)
        with self._locked(), self._engine.begin() as conn:
            outcome = store_jobs(conn, records, now_ms)
        self._metrics.jobs_ingested.labels("new").inc(outcome.new)
        self._metrics.jobs_ingested.labels("duplicate").inc(outcome.duplicate)
        if outcome.new:
            self._on_new_data()
        return ResultsAccepted(accepted=outcome.accepted, new=outcome.new, duplicate=outcome.duplicate)

    def delivery(
        self,
        provider: str,
        delivery_id: str | None,
        event: str,
        records: Sequence[TestResult],
        jobs: Sequence[JobRecord] = (),
    ) -> StoreOutcome | None:
        """A provider's webhook delivery: its results and job records, and its id so a redelivery
        stores nothing. All in one transaction; None when this delivery was already taken in."""
        now_ms = int(time.time() * 1000)
        with self._locked(), self._engine.begin() as conn:
            if delivery_id is not None:
                new = insert_ignore_rows(
                    conn,
                    tables.webhook_deliveries,
                    ("provider", "delivery_id", "event", "received_ms"),
                    [(provider, delivery_id[:200], event[:100], now_ms)],
                    "provider, delivery_id",
                )
                if not new:
                    self._metrics.webhook_deliveries.labels(provider, "replayed").inc()
                    return None
            outcome = store_results(conn, records, now_ms)
            stored_jobs = store_jobs(conn, jobs, now_ms) if jobs else None
        self._metrics.webhook_deliveries.labels(provider, "new").inc()
        self._count(outcome, stored_jobs)
        return outcome

    def poll_cursor(self, provider: str) -> str | None:
        t = tables.poll_cursors
        with self._engine.connect() as conn:
            found = conn.execute(select(t.c.cursor).where(t.c.provider == provider)).scalar_one_or_none()
        return None if found is None else str(found)

    def polled(
        self,
        provider: str,
        cursor: str | None,
        records: Sequence[TestResult],
        jobs: Sequence[JobRecord] = (),
    ) -> StoreOutcome:
        """A poll's results, job records and the cursor after them, in one transaction: a crash between
        them can neither skip results nor (results and jobs being deduplicated) store them twice."""
        now_ms = int(time.time() * 1000)
        t = tables.poll_cursors
        with self._locked(), self._engine.begin() as conn:
            outcome = store_results(conn, records, now_ms)
            stored_jobs = store_jobs(conn, jobs, now_ms) if jobs else None
            moved = conn.execute(
                update(t).where(t.c.provider == provider).values(cursor=cursor, updated_ms=now_ms)
            ).rowcount
            if not moved:
                conn.execute(t.insert().values(provider=provider, cursor=cursor, updated_ms=now_ms))
        self._count(outcome, stored_jobs)
        return outcome

    def reports(self, batch: Sequence[AgentReport]) -> ReportsAccepted:
        now_ms = int(time.time() * 1000)
        with self._locked(), self._engine.begin() as conn:
            outcome = store_reports(conn, batch, now_ms)
        self._metrics.reports_ingested.labels("new").inc(len(outcome.new))
        self._metrics.reports_ingested.labels("duplicate").inc(len(outcome.duplicate))
        new = set(outcome.new)
        for report in batch:
            pool = report.runner.pool or "<none>"
            if report.dropped and report.seq in new:
                self._metrics.agent_reports_dropped.labels(pool).inc(report.dropped)
            if report.spool_depth is not None and report.seq in new:
                self._metrics.spool_depths.report(report.runner.id, pool, report.spool_depth)
        if outcome.new:
            self._on_new_data()
        return ReportsAccepted(accepted=len(batch), new=outcome.new, duplicate=outcome.duplicate)

    def _count(self, results: StoreOutcome, jobs: StoreOutcome | None) -> None:
        self._metrics.results_ingested.labels("new").inc(results.new)
        self._metrics.results_ingested.labels("duplicate").inc(results.duplicate)
        if jobs is not None:
            self._metrics.jobs_ingested.labels("new").inc(jobs.new)
            self._metrics.jobs_ingested.labels("duplicate").inc(jobs.duplicate)
        if results.new or (jobs is not None and jobs.new):
            self._on_new_data()

    def _locked(self) -> AbstractContextManager[object]:
        return self._write_lock or nullcontext()
