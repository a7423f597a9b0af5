"""Leadership: of several replicas on one database, exactly one runs analysis, remediation and retention.

The leader holds a *lease row* (`leases`, name `leader`) that expires `ttl_s` after its last renewal,
by the database's clock; it renews every `ttl_s / 3`, and followers try to take it as often. Why a
lease row rather than a PostgreSQL advisory lock held on a dedicated connection:

- Fencing. Every write a leader makes as leader (an audit-log entry before a provider action, the
  stored verdicts, a retention batch) first runs `fence()` in the *same transaction*: a conditional
  UPDATE of the lease row that matches only while this replica holds it, in this term, unexpired. The
  UPDATE also locks the row, so a follower cannot take the lease between that check and the commit. An
  advisory lock lives on another connection: it can vanish with that connection (a network blip, a
  server restart) while the acting transaction, on its own connection, never notices.
- One code path for SQLite (a single replica, but the same lease) and PostgreSQL.
- Time is the database's, so replicas whose clocks disagree still agree on who leads.

The price is takeover time: a leader killed with -9 holds the lease until it expires, so a follower
leads within `ttl_s + ttl_s / 3` (expiry, then its next attempt). A leader that cannot renew (paused,
partitioned, the database unreachable) stops acting by its own monotonic clock one renewal period
before the lease can expire, and its fenced writes fail once it has: it cannot act after another
replica starts. A graceful stop releases the lease at once.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, literal_column, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from common.timeutil import iso
from controller.db import tables
from controller.db.upsert import insert_ignore
from controller.metrics import Metrics
from controller.periodic import Periodic

log = logging.getLogger(__name__)
LEADER = "leader"


class LeaseLost(RuntimeError):
    """This replica no longer holds the lease: whatever it was about to write as leader is not written."""


def db_now_ms(dialect: str) -> ColumnElement[Any]:
    """The database server's wall clock in epoch milliseconds, read when the statement runs."""
    if dialect == "postgresql":
        sql = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
    else:
        sql = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
    return literal_column(sql, BigInteger)


def replica_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Leadership:
    def __init__(
        self, engine: Engine, ttl_s: float, metrics: Metrics | None = None, replica: str | None = None
    ) -> None:
        self.engine = engine
        self.ttl_s = ttl_s
        self.every_s = ttl_s / 3
        self.replica = replica or replica_name()
        self.metrics = metrics
        self._term: int | None = None
        self._valid_until = 0.0  # time.monotonic() after which this replica stops acting as leader
        self._lock = threading.Lock()
        self._periodic = Periodic("leadership", self.step)
        self._started = False

    # -- what the loops ask ---------------------------------------------------------------------------

    def is_leader(self) -> bool:
        return self.term() is not None

    def term(self) -> int | None:
        """The term this replica leads in, or None; judged locally, so it is cheap to ask often."""
        with self._lock:
            if self._term is not None and time.monotonic() < self._valid_until:
                return self._term
            return None

    def fence(self, conn: Connection) -> None:
        """Raise LeaseLost unless this replica holds the lease, and hold the lease row until `conn`'s
        transaction ends. Call it first in every transaction that writes as leader."""
        term = self.term()
        if term is None:
            raise LeaseLost(f"replica {self.replica} is not the leader")
        t = tables.leases
        now = db_now_ms(conn.dialect.name)
        held = conn.execute(
            update(t)
            .where(t.c.name == LEADER, t.c.holder == self.replica, t.c.term == term, t.c.expires_ms > now)
            .values(renewed_ms=t.c.renewed_ms)
        ).rowcount
        if held != 1:
            self._lose(term, "the lease moved on")
            raise LeaseLost(f"replica {self.replica} lost the lease of term {term}")

    # -- taking and keeping the lease -----------------------------------------------------------------

    def step(self) -> bool:
        """Renew the lease if held, else take it if it has expired; returns whether this replica leads."""
        started = time.monotonic()
        held = self._term
        try:
            with self.engine.begin() as conn:
                # A renewal that came too late may still find the lease free: take it in a new term.
                term = (self._renew(conn, held) if held is not None else None) or self._take(conn)
        except SQLAlchemyError as error:
            # Unreachable database: keep the local deadline, which runs out before the lease can.
            log.warning("lease %s: %s", "renewal" if held else "attempt", type(error).__name__)
            return self.is_leader()
        with self._lock:
            if term is not None:
                self._term = term
                self._valid_until = started + self.ttl_s - self.every_s
        if term is not None and held is None:
            log.warning("replica %s leads (term %d)", self.replica, term)
        if term is None and held is not None:
            self._lose(held, "its renewal found the lease expired or taken")
        self._export()
        return term is not None

    def _renew(self, conn: Connection, term: int) -> int | None:
        t = tables.leases
        now = db_now_ms(conn.dialect.name)
        renewed = conn.execute(
            update(t)
            .where(t.c.name == LEADER, t.c.holder == self.replica, t.c.term == term, t.c.expires_ms > now)
            .values(expires_ms=now + int(self.ttl_s * 1000), renewed_ms=now)
        ).rowcount
        return term if renewed == 1 else None

    def _take(self, conn: Connection) -> int | None:
        t = tables.leases
        insert_ignore(conn, t, [{"name": LEADER, "holder": None, "term": 0, "expires_ms": 0}], ["name"])
        now = db_now_ms(conn.dialect.name)
        taken = conn.execute(
            update(t)
            .where(t.c.name == LEADER, t.c.expires_ms <= now)
            .values(
                holder=self.replica,
                term=t.c.term + 1,
                expires_ms=now + int(self.ttl_s * 1000),
                renewed_ms=now,
            )
        ).rowcount
        if taken != 1:
            return None
        return int(conn.execute(select(t.c.term).where(t.c.name == LEADER)).scalar_one())

    def release(self) -> None:
        """Give the lease up now (a graceful stop), so a follower need not wait for it to expire."""
        with self._lock:
            term, self._term = self._term, None
        if term is None:
            return
        t = tables.leases
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    update(t)
                    .where(t.c.name == LEADER, t.c.holder == self.replica, t.c.term == term)
                    .values(expires_ms=0)
                )
        except SQLAlchemyError as error:
            log.warning("could not release the lease: %s", type(error).__name__)
        self._export()

    def _lose(self, term: int, why: str) -> None:
        with self._lock:
            if self._term != term:
                return
            self._term = None
        log.warning("replica %s no longer leads (term %d): %s", self.replica, term, why)
        self._export()

    # -- the background thread ------------------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self.step()
        self._periodic.start(self.every_s)

    def stop(self) -> None:
        self._periodic.stop()
        self.release()

    # -- what the API shows ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        with self.engine.connect() as conn:
            row = conn.execute(select(tables.leases).where(tables.leases.c.name == LEADER)).first()
        term = self.term()
        return {
            "replica": self.replica,
            "role": "leader" if term is not None else "follower",
            "term": term,
            "lease": None
            if row is None
            else {
                "holder": row.holder,
                "term": row.term,
                "expires": iso(row.expires_ms) if row.expires_ms else None,
            },
            "ttl_s": self.ttl_s,
            "renew_every_s": self.every_s,
        }

    def _export(self) -> None:
        if self.metrics is not None:
            self.metrics.leader.set(1 if self.is_leader() else 0)
