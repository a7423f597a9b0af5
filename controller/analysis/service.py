"""Keeps an up-to-date analysis in memory: loads new rows as they are stored and re-analyses.

Every replica runs it (the analysis is a pure function of the data, so they agree); ingest marks the
data dirty and a background thread catches up at most every `analysis_interval_s`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from sqlalchemy import delete
from sqlalchemy.engine import Engine

from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import Analysis, analyse
from controller.analysis.frame import Frame
from controller.db import tables
from controller.metrics import Metrics

log = logging.getLogger(__name__)


class AnalysisService:
    def __init__(self, engine: Engine, metrics: Metrics, config: AnalysisConfig | None = None) -> None:
        self.engine = engine
        self.metrics = metrics
        self.config = config or AnalysisConfig()
        self.frame = Frame()
        self.latest = Analysis(as_of_ms=0)
        self.last_run_at: float | None = None
        self.last_duration_s: float | None = None
        self._dirty = threading.Event()
        self._dirty.set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def mark_dirty(self) -> None:
        self._dirty.set()
        self.metrics.analysis_pending.set(1)

    def refresh(self, force: bool = False) -> Analysis:
        """Catch up with everything stored so far; returns the analysis that covers it."""
        with self._lock:
            if not force and not self._dirty.is_set():
                return self.latest
            self._dirty.clear()
            self.metrics.analysis_pending.set(0)
            started = time.perf_counter()
            with self.engine.connect() as conn:
                self.frame.load(conn)
            self.latest = analyse(self.frame, config=self.config)
            self._persist(self.latest)
            self.last_duration_s = time.perf_counter() - started
            self.last_run_at = time.time()
            self.metrics.analysis_seconds.observe(self.last_duration_s)
            self.metrics.analysis_last_success.set(self.last_run_at)
            self._export_gauges(self.latest)
            return self.latest

    def start(self, interval_s: float) -> None:
        if interval_s <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, args=(interval_s,), name="analysis", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            if self._dirty.is_set():
                try:
                    self.refresh()
                except Exception:  # the loop must outlive one bad pass; the next one retries
                    log.exception("analysis pass failed")
                    self.metrics.analysis_failures.inc()
                    self.mark_dirty()

    def status(self) -> dict[str, Any]:
        return {
            "as_of": self.latest.as_of_ms,
            "results": self.frame.size,
            "readings": int(self.frame.r_time_ms.size),
            "last_run_at": self.last_run_at,
            "last_duration_s": self.last_duration_s,
            "pending": self._dirty.is_set(),
            "hypotheses": self.latest.hypotheses,
            "bh_cutoff": self.latest.bh_cutoff,
        }

    def _persist(self, analysis: Analysis) -> None:
        """Store the verdicts, so they outlive the process and other tools can read them."""
        now = int(time.time() * 1000)
        rows = [
            {
                "id": incident["id"],
                "kind": incident["kind"],
                "entity": incident["entity"],
                "state": incident["state"],
                "dimension": incident["dimension"],
                "body": json.dumps(incident),
                "updated_ms": now,
            }
            for incident in analysis.incidents
        ]
        with self.engine.begin() as conn:
            conn.execute(delete(tables.incidents))
            if rows:
                conn.execute(tables.incidents.insert(), rows)

    def _export_gauges(self, analysis: Analysis) -> None:
        self.metrics.incidents.clear()
        counts: dict[tuple[str, str, str], int] = {}
        for incident in analysis.incidents:
            key = (incident["kind"], incident["state"], incident["dimension"])
            counts[key] = counts.get(key, 0) + 1
        for (kind, state, dimension), count in counts.items():
            self.metrics.incidents.labels(kind, state, dimension).set(count)
        self.metrics.outages.set(len(analysis.outages))
