"""Keeps the analysis that reads are served from, on the leader and on followers alike.

The leader (controller/leadership.py) analyses: it loads rows as they are stored, by any replica (it
compares the newest stored ids with its frame's, so ingest elsewhere is seen), re-analyses the whole
window at most every `full_interval_s` — between full passes its background loop only screens the new
rows against the last one (screen.py) and runs a full pass at once when they raise something — and
stores the verdicts — the incidents in `incidents`, everything reads need in
`analysis_snapshot` — in one transaction fenced by its lease. A follower never writes: it serves the
stored snapshot, and when a read wants verdicts the snapshot does not cover yet (rows stored since the
leader's last pass) it runs the same analysis itself, read-only. Both give one answer: the analysis is a
pure function of the stored rows. A screen's provisional findings are never verdicts: they show in
`status()` until the full pass they started replaces them.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection, Engine

from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import Analysis, analyse, latest_shared_ms
from controller.analysis.frame import Frame
from controller.analysis.horizon import horizon
from controller.analysis.jobs import find_episodes, job_table
from controller.analysis.screen import Batch, Model, NewReadings, Screen, build_model, screen
from controller.db import tables
from controller.leadership import Leadership, LeaseLost
from controller.metrics import Metrics
from controller.periodic import Periodic

log = logging.getLogger(__name__)
# How far `as_of` may run past the controller's clock: senders' clocks a little ahead, no more.
CLOCK_LEAD_MS = 300_000


def stored_ids(conn: Connection) -> tuple[int, int, int]:
    """The newest result, reading and job ids stored: what an analysis covering everything has loaded."""
    results = conn.execute(select(func.max(tables.results.c.id))).scalar()
    readings = conn.execute(select(func.max(tables.readings.c.id))).scalar()
    jobs = conn.execute(select(func.max(tables.jobs.c.id))).scalar()
    return int(results or 0), int(readings or 0), int(jobs or 0)


def _loaded(frame: Frame) -> tuple[int, int, int]:
    return frame.last_result_id, frame.last_reading_id, frame.jobs.last_job_id


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class AnalysisService:
    def __init__(
        self,
        engine: Engine,
        metrics: Metrics,
        config: AnalysisConfig | None = None,
        leadership: Leadership | None = None,
        full_interval_s: float = 0.0,
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.config = config or AnalysisConfig()
        self.leadership = leadership  # None: the only replica, always leading
        self.frame = Frame()
        self.latest = Analysis(as_of_ms=0)
        self.source = "none"  # what `latest` is: this replica's pass, or the leader's stored snapshot
        self.last_run_at: float | None = None
        self.last_duration_s: float | None = None
        self.last_error: str | None = None  # why the last pass failed, until one succeeds
        self.full_interval_s = full_interval_s
        self.model: Model | None = None  # what the last full pass left for screening new rows
        self.screened: Screen | None = None  # the last screen since that pass, if any
        self.last_raise: dict[str, Any] | None = None  # the last screen that started a full pass
        self._screen_from = 0  # the frame's first row the last full pass did not cover
        self._readings_from = 0  # and its first reading
        self._jobs_from = 0  # and its first job record
        self._snapshot_jobs = 0  # the last job id the leader's stored snapshot covers
        self._full_at = 0.0  # monotonic time of the last full pass
        self._snapshot: Analysis | None = None
        self._snapshot_key: tuple[int, ...] | None = None
        self._dirty = threading.Event()
        self._dirty.set()
        self._lock = threading.Lock()
        self._periodic = Periodic("analysis", self._tick)

    def leads(self) -> bool:
        return self.leadership is None or self.leadership.is_leader()

    def mark_dirty(self) -> None:
        self._dirty.set()
        self.metrics.analysis_pending.set(1)

    # -- what reads call ------------------------------------------------------------------------------

    def refresh(self, force: bool = False) -> Analysis:
        """Catch up with everything stored so far; returns the analysis that covers it.

        Where the pass fails, a read is served the last verdicts (`status()` says why they are behind)
        rather than an error for as long as the cause lasts; a forced pass, asked for explicitly,
        raises."""
        with self._lock:
            try:
                if self.leads():
                    return self._pass(force)
                return self._follow(fresh=True, force=force)
            except Exception as error:
                log.exception("analysis pass failed; serving the verdicts as of %s", self.latest.as_of_ms)
                self._failed(error)
                if force:
                    raise
                return self.latest

    def served(self) -> Analysis:
        """The verdicts as they stand, without analysing on the caller's time."""
        with self._lock:
            # A new leader serves its predecessor's stored verdicts until its own first pass.
            if self.leads() and self.source != "none":
                return self.latest
            return self._follow(fresh=False, force=False)

    def with_frame(self, fresh: bool) -> Analysis:
        """An analysis that carries its rows (what explanations need); a follower computes its own."""
        with self._lock:
            if self.leads():
                return self._pass(False) if fresh or self.source != "own pass" else self.latest
            if self.source == "read-only pass" and not (fresh and self._behind()):
                return self.latest
            return self._analyse(persist=False)

    # -- the leader -----------------------------------------------------------------------------------

    def _behind(self) -> bool:
        with self.engine.connect() as conn:
            return stored_ids(conn) > _loaded(self.frame)

    def _pass(self, force: bool) -> Analysis:
        if not force and not self._dirty.is_set() and not self._behind() and self.source == "own pass":
            return self.latest
        self._dirty.clear()
        self.metrics.analysis_pending.set(0)
        return self._analyse(persist=True)

    def _analyse(self, persist: bool) -> Analysis:
        started = time.perf_counter()
        with self.engine.connect() as conn:
            self.frame.load(conn)
        # Never past the controller's clock by more than a few minutes: runners whose clocks run ahead,
        # or rows stored before times were bounded (the year 9999), would otherwise drag `as_of` along
        # and empty every window. Rows after `as_of` wait until their time comes.
        latest = round(time.time() * 1000) + CLOCK_LEAD_MS
        as_of = min(latest_shared_ms(self.frame), latest) if self.frame.size else None
        analysis = analyse(self.frame, as_of_ms=as_of, config=self.config)
        if analysis.as_of_ms:
            # Rows before the horizon never count again: keep memory bounded by the window.
            window = horizon(analysis.as_of_ms, self.config)
            self.frame = self.frame.since(window.results_from_ms, window.readings_from_ms)
        self.model = build_model(analysis, self.config)
        self.screened = None
        self._screen_from = self.frame.size
        self._readings_from = int(self.frame.r_time_ms.size)
        self._jobs_from = self.frame.jobs.size
        self._full_at = time.monotonic()
        self.metrics.provisional.set(0)
        self.latest = analysis
        self.source = "read-only pass"
        if persist:
            try:
                self._persist(analysis)
                self.source = "own pass"
            except LeaseLost as lost:
                log.warning("verdicts not stored: %s", lost)
        self.last_duration_s = time.perf_counter() - started
        self.last_run_at = time.time()
        self.last_error = None
        self.metrics.analysis_seconds.observe(self.last_duration_s)
        self.metrics.analysis_last_success.set(self.last_run_at)
        self._export_gauges(analysis)
        return analysis

    def _persist(self, analysis: Analysis) -> None:
        """Store the verdicts, so they outlive the process and followers and other tools can read them."""
        now = int(time.time() * 1000)
        rows = [
            {
                "id": incident["id"],
                "kind": incident["kind"],
                "entity": incident["entity"],
                "state": incident["state"],
                "dimension": incident["dimension"],
                "body": json.dumps(incident, default=_plain),
                "updated_ms": now,
            }
            for incident in analysis.incidents
        ]
        body = {
            "incidents": analysis.incidents,
            "outages": analysis.outages,
            "bursts": analysis.bursts,
            "health": analysis.health,
            "tests": analysis.tests,
            "bh_cutoff": analysis.bh_cutoff,
            "hypotheses": analysis.hypotheses,
            # The snapshot table's columns predate job records: their newest id rides in the body.
            "last_job_id": self.frame.jobs.last_job_id,
        }
        with self.engine.begin() as conn:
            term = 0
            if self.leadership is not None:
                self.leadership.fence(conn)
                term = self.leadership.term() or 0
            conn.execute(delete(tables.incidents))
            if rows:
                conn.execute(tables.incidents.insert(), rows)
            conn.execute(delete(tables.analysis_snapshot))
            conn.execute(
                tables.analysis_snapshot.insert().values(
                    id=1,
                    term=term,
                    as_of_ms=analysis.as_of_ms,
                    last_result_id=self.frame.last_result_id,
                    last_reading_id=self.frame.last_reading_id,
                    body=json.dumps(body, default=_plain),
                    updated_ms=now,
                )
            )

    # -- a follower -----------------------------------------------------------------------------------

    def _follow(self, fresh: bool, force: bool) -> Analysis:
        t = tables.analysis_snapshot
        with self.engine.connect() as conn:
            meta = conn.execute(
                select(t.c.term, t.c.updated_ms, t.c.as_of_ms, t.c.last_result_id, t.c.last_reading_id)
            ).first()
            key = None if meta is None else tuple(int(v) for v in meta)
            if key is not None and key != self._snapshot_key:
                body = json.loads(conn.execute(select(t.c.body)).scalar_one())
                self._snapshot = Analysis(
                    as_of_ms=key[2],
                    incidents=body["incidents"],
                    outages=body["outages"],
                    bursts=body.get("bursts", []),  # absent from snapshots stored before bursts were
                    health=body["health"],
                    tests=body["tests"],
                    bh_cutoff=body["bh_cutoff"],
                    hypotheses=body["hypotheses"],
                )
                self._snapshot_key = key
                self._snapshot_jobs = int(body.get("last_job_id", 0))
            stored = stored_ids(conn) if fresh or force else None
        covers = key is not None and stored is not None and (key[3], key[4], self._snapshot_jobs) >= stored
        if force or (fresh and not covers) or self._snapshot is None:
            mine = _loaded(self.frame)
            if not force and self.source == "read-only pass" and (stored is None or mine >= stored):
                return self.latest
            return self._analyse(persist=False)
        if self.latest is not self._snapshot:
            self.latest = self._snapshot
            self.source = "leader's snapshot"
            self._export_gauges(self._snapshot)
        return self.latest

    # -- the background loop --------------------------------------------------------------------------

    def start(self, interval_s: float) -> None:
        self._periodic.start(interval_s)

    def stop(self) -> None:
        self._periodic.stop()

    def _tick(self) -> None:
        if not self.leads():
            return
        try:
            with self._lock:
                if self._full_due():
                    self._pass(False)
                else:
                    self._screen()
        except Exception as error:
            self._failed(error)
            raise

    def _full_due(self) -> bool:
        return (
            self.model is None
            or self.source != "own pass"
            or time.monotonic() - self._full_at >= self.full_interval_s
        )

    def _screen(self) -> None:
        """Screen every row stored since the last full pass; a full pass at once if they raise
        anything the last screen had not. Costs what those rows cost, however long the window."""
        assert self.model is not None
        started = time.perf_counter()
        with self.engine.connect() as conn:
            self.frame.load(conn)
        if self.frame.jobs.size > self._jobs_from and self._new_job_verdicts():
            # Jobs dying before their tests send no result for the screen to see; a black hole
            # empties a queue in minutes, so a new one is worth a full pass at once.
            log.info("new job records raise a runner; running a full pass")
            self._pass(force=True)
            return
        if self.frame.size == self._screen_from and self.frame.r_time_ms.size == self._readings_from:
            return
        batch = Batch.of(self.frame, self._screen_from)
        found = screen(self.model, batch, self.config, NewReadings.of(self.frame, self._readings_from))
        self.metrics.screen_seconds.observe(time.perf_counter() - started)
        before = self.screened
        self.screened = found
        self.metrics.provisional.set(len(found.suspects) + len(found.outages))
        if _new_findings(found, before):
            self.last_raise = {"at": time.time(), **found.as_dict()}
            log.info(
                "screen of %d new rows raised %s; running a full pass",
                found.rows,
                ", ".join(f"{s['kind']} {s['entity']}" for s in found.suspects + found.recovering)
                or "an outage",
            )
            self._pass(force=True)

    def _new_job_verdicts(self) -> bool:
        """Whether the job-health term alone, over the frame as loaded, finds an entity the last full
        pass had no open incident on. Cheap: jobs are few beside results."""
        self._jobs_from = self.frame.jobs.size
        as_of = min(latest_shared_ms(self.frame), round(time.time() * 1000) + CLOCK_LEAD_MS)
        table = job_table(self.frame, as_of, self.config)
        if table.size == 0:
            return False
        open_now = {
            (e.kind, e.entity) for e in find_episodes(table, as_of, self.config) if e.resolved is None
        }
        known = {(i["kind"], i["entity"]) for i in self.latest.incidents if i["state"] != "resolved"}
        return bool(open_now - known)

    def _failed(self, error: Exception) -> None:
        self.metrics.analysis_failures.inc()
        self.mark_dirty()  # what this pass did not cover, the next one must
        self.last_error = f"{type(error).__name__}: {error}"

    def status(self) -> dict[str, Any]:
        return {
            "as_of": self.latest.as_of_ms,
            # Counts only: what `runnerctl import` prints with an ingest token, which may not read
            # the incidents themselves.
            "incidents": {
                state: sum(1 for i in self.latest.incidents if i["state"] == state)
                for state in ("sick", "suspect", "resolved")
            },
            "results": self.frame.size,
            "readings": int(self.frame.r_time_ms.size),
            "last_run_at": self.last_run_at,
            "last_duration_s": self.last_duration_s,
            "pending": self._dirty.is_set(),
            "last_error": self.last_error,
            "hypotheses": self.latest.hypotheses,
            "bh_cutoff": self.latest.bh_cutoff,
            "source": self.source,
            "window_days": self.config.window_days,
            "screen": self.screened.as_dict() if self.screened is not None else None,
            "last_raise": self.last_raise,
        }

    def _export_gauges(self, analysis: Analysis) -> None:
        self.metrics.incidents.clear()
        counts: dict[tuple[str, str, str], int] = {}
        for incident in analysis.incidents:
            key = (incident["kind"], incident["state"], incident["dimension"])
            counts[key] = counts.get(key, 0) + 1
        for (kind, state, dimension), count in counts.items():
            self.metrics.incidents.labels(kind, state, dimension).set(count)
        self.metrics.outages.set(len(analysis.outages))


def _new_findings(found: Screen, before: Screen | None) -> bool:
    """Whether a screen raised a place, an outage or a recovery the previous screen (since the same
    full pass) had not: each is worth one full pass, not one per tick while it lasts."""

    def keys(screen: Screen | None) -> set[tuple[str, ...]]:
        if screen is None:
            return set()
        places = {(s["kind"], s["entity"]) for s in screen.suspects}
        healing = {("recovering", s["kind"], s["entity"]) for s in screen.recovering}
        return places | healing | {("outage", o["start"]) for o in screen.outages}

    return bool(keys(found) - keys(before))
