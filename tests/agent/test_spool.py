from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agent.settings import SpoolSettings
from agent.spool import Spool
from common.identity import RunnerIdentity
from common.reports import AgentReport


def build(seq: int, dropped: int) -> AgentReport:
    return AgentReport(
        agent_id="r1",
        boot_id="b1",
        seq=seq,
        observed_at=datetime.now(UTC),
        runner=RunnerIdentity(id="r1"),
        dropped=dropped,
    )


def test_sequence_continues_after_a_restart_in_the_same_boot(tmp_path: Path) -> None:
    first = Spool(tmp_path, SpoolSettings())
    seqs = [r.seq for r in (first.append("r1", "b1", build) for _ in range(3)) if r]
    first.ack("r1", "b1", seqs)
    first.close()

    second = Spool(tmp_path, SpoolSettings())
    later = second.append("r1", "b1", build)

    assert seqs == [1, 2, 3] and later is not None and later.seq == 4


def test_wal_mode_and_written_before_sending(tmp_path: Path) -> None:
    spool = Spool(tmp_path, SpoolSettings())
    spool.append("r1", "b1", build)

    other = Spool(tmp_path, SpoolSettings())  # another connection sees the committed row
    assert [item.seq for item in other.peek(10)] == [1]
    assert spool._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_old_reports_are_dropped_by_age(tmp_path: Path) -> None:
    spool = Spool(tmp_path, SpoolSettings(max_age_s=3600))
    spool.append("r1", "b1", build)
    spool._db.execute("UPDATE reports SET created_at = created_at - 7200")

    newest = spool.append("r1", "b1", build)

    assert newest is not None and [item.seq for item in spool.peek(10)] == [2]
    assert spool.stats()["pending_dropped"] == 1 and spool.stats()["dropped_total"] == 1


def test_ack_removes_only_the_acknowledged(tmp_path: Path) -> None:
    spool = Spool(tmp_path, SpoolSettings())
    for _ in range(4):
        spool.append("r1", "b1", build)

    assert spool.ack("r1", "b1", [1, 3, 99]) == 2
    assert [item.seq for item in spool.peek(10)] == [2, 4]
