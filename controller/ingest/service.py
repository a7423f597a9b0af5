"""The ingest service: one transaction per request, committed before the 2xx goes out."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from sqlalchemy.engine import Engine

from common.api import ReportsAccepted, ResultsAccepted
from common.reports import AgentReport
from common.results import TestResult
from controller.ingest.reports import store_reports
from controller.ingest.results import store_results
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

    def _locked(self) -> AbstractContextManager[object]:
        return self._write_lock or nullcontext()
