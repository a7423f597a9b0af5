"""The on-disk spool: every report is written here before it is sent and leaves only once the
controller acknowledged it, so nothing is lost while the controller is down or the agent restarts.

Sequence numbers are monotonic per (agent_id, boot_id) and their counter is persisted, so an agent
restarted within the same boot continues the sequence instead of colliding with what it sent before.
The spool is bounded by bytes, age and the fullness of its filesystem; when it must drop, it drops
the oldest reports and carries the count into the next report's `dropped` field. A drop count lives
in exactly one place at a time (the pending counter, or one spooled report), so it is never counted
twice and never silently lost.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.settings import SpoolSettings
from common.plural import counted
from common.reports import AgentReport

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    created_at REAL NOT NULL,
    dropped INTEGER NOT NULL,
    size INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (agent_id, boot_id, seq)
);
CREATE INDEX IF NOT EXISTS reports_created_at ON reports (created_at);
CREATE TABLE IF NOT EXISTS sequences (
    agent_id TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    next_seq INTEGER NOT NULL,
    PRIMARY KEY (agent_id, boot_id)
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


@dataclass(frozen=True)
class Spooled:
    id: int
    agent_id: str
    boot_id: str
    seq: int
    dropped: int
    body: str  # the report's JSON exactly as spooled: resent byte for byte


class Spool:
    """Thread-safe: the scheduler's threads append while the sender thread reads and acknowledges."""

    def __init__(
        self, state_dir: Path, settings: SpoolSettings, disk_used_ratio: Callable[[Path], float] | None = None
    ) -> None:
        self.dir = state_dir
        self.settings = settings
        self._disk_used_ratio = disk_used_ratio or _disk_used_ratio
        self._lock = threading.Lock()
        state_dir.mkdir(parents=True, exist_ok=True)
        self.path = state_dir / "spool.sqlite"
        self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives an agent crash (kill -9); only a power loss can lose the last commits.
        self._db.execute("PRAGMA synchronous=NORMAL")
        # The spool is written and read sequentially; a small page cache keeps the daemon light.
        self._db.execute("PRAGMA cache_size=-512")
        self._db.executescript(_SCHEMA)
        # Drops noted while the disk was too full to record them in the database.
        self._unrecorded_drops = 0
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._db.close()

    def append(
        self, agent_id: str, boot_id: str, build: Callable[[int, int], AgentReport]
    ) -> AgentReport | None:
        """Number and store a report built by `build(seq, dropped)`; None when the disk is too full."""
        with self._lock:
            if self._closed:  # the agent is stopping; the reading was never promised to anyone
                return None
            if self._disk_used_ratio(self.dir) > self.settings.max_disk_used_ratio:
                self._note_drop(1)
                log.warning(
                    "spool: filesystem of %s above %.0f%% used, report dropped",
                    self.dir,
                    self.settings.max_disk_used_ratio * 100,
                )
                return None
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(
                    "SELECT next_seq FROM sequences WHERE agent_id = ? AND boot_id = ?", (agent_id, boot_id)
                ).fetchone()
                seq = row[0] if row else 1
                dropped = self._counter("pending_dropped") + self._unrecorded_drops
                report = build(seq, dropped)
                body = report.model_dump_json()
                db.execute(
                    "INSERT INTO reports (agent_id, boot_id, seq, created_at, dropped, size, body) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (agent_id, boot_id, seq, time.time(), dropped, len(body), body),
                )
                db.execute("INSERT OR REPLACE INTO sequences VALUES (?, ?, ?)", (agent_id, boot_id, seq + 1))
                self._set_counter("pending_dropped", 0)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._unrecorded_drops = 0
            self._enforce_bounds()
            return report

    def peek(self, limit: int) -> list[Spooled]:
        """The oldest reports of one (agent_id, boot_id): the controller acknowledges by seq alone."""
        with self._lock:
            first = self._db.execute("SELECT agent_id, boot_id FROM reports ORDER BY id LIMIT 1").fetchone()
            if first is None:
                return []
            rows = self._db.execute(
                "SELECT id, agent_id, boot_id, seq, dropped, body FROM reports "
                "WHERE agent_id = ? AND boot_id = ? ORDER BY id LIMIT ?",
                (first[0], first[1], limit),
            ).fetchall()
        return [Spooled(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]

    def ack(self, agent_id: str, boot_id: str, seqs: list[int]) -> int:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            cursor = db.executemany(
                "DELETE FROM reports WHERE agent_id = ? AND boot_id = ? AND seq = ?",
                [(agent_id, boot_id, s) for s in seqs],
            )
            removed = max(0, cursor.rowcount)  # summed over every execution, unlike changes()
            db.execute("COMMIT")
            return removed

    def dead_letter(self, item: Spooled, why: str) -> None:
        """Give up on a report the controller will never take; its loss is counted like a drop."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            n = db.execute("DELETE FROM reports WHERE id = ?", (item.id,)).rowcount
            if n:
                self._add_counter("dead_letter", 1)
                self._add_counter("pending_dropped", 1 + item.dropped)
            db.execute("COMMIT")
        log.error("spool: report seq %d dead-lettered: %s", item.seq, why)

    def stats(self) -> dict[str, int]:
        with self._lock:
            count, size = self._db.execute("SELECT count(*), coalesce(sum(size), 0) FROM reports").fetchone()
            return {
                "reports": count,
                "bytes": size,
                "pending_dropped": self._counter("pending_dropped") + self._unrecorded_drops,
                "dropped_total": self._counter("dropped_total"),
                "dead_letter": self._counter("dead_letter"),
            }

    def last_seq(self, agent_id: str, boot_id: str) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT next_seq FROM sequences WHERE agent_id = ? AND boot_id = ?", (agent_id, boot_id)
            ).fetchone()
        return int(row[0]) - 1 if row else 0

    # -- inside the lock -------------------------------------------------------------------------

    def _enforce_bounds(self) -> None:
        db = self._db
        cutoff = time.time() - self.settings.max_age_s
        db.execute("BEGIN IMMEDIATE")
        try:
            victims: list[tuple[int, int, int]] = db.execute(
                "SELECT id, dropped, size FROM reports WHERE created_at < ? ORDER BY id", (cutoff,)
            ).fetchall()
            total = db.execute("SELECT coalesce(sum(size), 0) FROM reports").fetchone()[0]
            total -= sum(v[2] for v in victims)
            if total > self.settings.max_bytes:
                after = victims[-1][0] if victims else 0
                for row in db.execute(
                    "SELECT id, dropped, size FROM reports WHERE id > ? ORDER BY id", (after,)
                ):
                    if total <= self.settings.max_bytes:
                        break
                    victims.append(row)
                    total -= row[2]
            if victims:
                db.executemany("DELETE FROM reports WHERE id = ?", [(v[0],) for v in victims])
                carried = sum(v[1] for v in victims)
                self._add_counter("pending_dropped", len(victims) + carried)
                self._add_counter("dropped_total", len(victims))
                log.warning("spool: over its bounds, dropped the oldest %s", counted(len(victims), "report"))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _note_drop(self, n: int) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._add_counter("pending_dropped", n)
            self._add_counter("dropped_total", n)
            self._db.execute("COMMIT")
        except sqlite3.Error:
            # The disk may be too full for even this; keep the count in memory until the next append.
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            self._unrecorded_drops += n

    def _counter(self, name: str) -> int:
        row = self._db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    def _set_counter(self, name: str, value: int) -> None:
        self._db.execute("INSERT OR REPLACE INTO counters VALUES (?, ?)", (name, value))

    def _add_counter(self, name: str, n: int) -> None:
        self._set_counter(name, self._counter(name) + n)


def _disk_used_ratio(path: Path) -> float:
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return 0.0
    return usage.used / usage.total if usage.total else 0.0
