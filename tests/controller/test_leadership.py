"""The lease on a real database (SQLite and PostgreSQL): one leader, takeover after expiry, fencing."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from controller.db import tables
from controller.db.engine import make_engine
from controller.leadership import LEADER, Leadership, LeaseLost
from controller.remediation import audit
from tests.servers import migrate_db

TTL_S = 0.9


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    migrate_db(database_url)
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def test_one_replica_leads_and_the_other_waits(engine: Engine) -> None:
    a, b = Leadership(engine, TTL_S, replica="a"), Leadership(engine, TTL_S, replica="b")
    assert a.step() and not b.step()
    assert a.step() and not b.step()  # renewals keep it
    assert a.status()["lease"]["holder"] == "a" and b.status()["role"] == "follower"


def test_a_leader_that_stops_renewing_is_replaced_after_expiry_in_a_new_term(engine: Engine) -> None:
    a, b = Leadership(engine, TTL_S, replica="a"), Leadership(engine, TTL_S, replica="b")
    assert a.step()
    first = a.term()
    started = time.monotonic()
    while not b.step():  # a is "killed": it never renews again
        assert time.monotonic() - started < TTL_S + 1.0, "b did not take over within the lease"
        time.sleep(0.05)
    assert time.monotonic() - started >= TTL_S * 0.5  # not before a's lease could run out
    assert b.term() == (first or 0) + 1
    # a stopped acting by its own clock before b could start, and its renewal now fails.
    assert a.term() is None
    assert not a.step()


def test_a_stale_leader_cannot_write_an_audit_entry(engine: Engine) -> None:
    a, b = Leadership(engine, TTL_S, replica="a"), Leadership(engine, TTL_S, replica="b")
    assert a.step()
    audit.begin(engine, "cordon:inc-1:r1", "cordon", actor="test", fence=a.fence)
    # a is paused past its lease while b takes over; a still believes it leads (its clock is frozen).
    with engine.begin() as conn:
        conn.execute(update(tables.leases).where(tables.leases.c.name == LEADER).values(expires_ms=0))
    assert b.step()
    a._valid_until = time.monotonic() + 60  # what a paused process would still believe
    with pytest.raises(LeaseLost):
        audit.begin(engine, "rerun:inc-1:j1", "rerun", actor="test", fence=a.fence)
    with engine.connect() as conn:
        keys = list(conn.execute(select(tables.actions.c.key)).scalars())
    assert keys == ["cordon:inc-1:r1"]
    assert not a.is_leader()
    audit.begin(engine, "rerun:inc-1:j1", "rerun", actor="test", fence=b.fence)


def test_a_graceful_stop_hands_over_at_once(engine: Engine) -> None:
    a, b = Leadership(engine, 30.0, replica="a"), Leadership(engine, 30.0, replica="b")
    assert a.step()
    a.release()
    assert b.step()
