"""Nothing lost, nothing duplicated (by sequence number) through outages, crashes, faults and a full
spool, against a real HTTP sink on loopback and a real agent process."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.sender import Sender
from agent.settings import SenderSettings, SpoolSettings
from agent.spool import Spool
from common.identity import RunnerIdentity
from common.readings import MemoryReading
from common.reports import AgentReport
from tests.agent import agent_process as ap
from tests.agent.sink import Sink

pytestmark = pytest.mark.slow


def assert_exactly_once(sink: Sink, spool: Spool, agent_id: str = "runner-test") -> list[int]:
    """Every sequence number the agent ever issued reached the sink, once, and none was reused."""
    boot = next(iter(sink.store.reports))[1]
    last = spool.last_seq(agent_id, boot)
    assert spool.stats()["reports"] == 0, "the spool still holds reports after draining"
    assert sink.store.seqs(agent_id) == list(range(1, last + 1)), "a sequence number is missing"
    assert sink.store.conflicts == 0, "a sequence number was reused for a different report"
    assert sum(r["dropped"] for r in sink.store.reports.values()) == 0
    return sink.store.seqs(agent_id)


def test_controller_down_for_a_while_then_back(sink: Sink, tmp_path: Path) -> None:
    config = ap.write_config(tmp_path, sink.url, sink.token)
    sink.stop()
    proc = ap.start(config, tmp_path / "agent.log")
    try:
        ap.wait_for(lambda: (tmp_path / "state" / "spool.sqlite").exists(), 15, "the agent to start spooling")
        spool = Spool(tmp_path / "state", SpoolSettings())
        ap.wait_for(
            lambda: spool.stats()["reports"] >= 10, 15, "reports to pile up while the controller is down"
        )
        spool.close()
        sink.start()
        ap.wait_for(lambda: len(sink.store.reports) >= 15, 15, "the backlog to arrive")
    finally:
        assert ap.stop(proc) == 0
    spool = ap.drain(tmp_path / "state", sink.url, sink.token)

    seqs = assert_exactly_once(sink, spool)
    assert len(seqs) >= 15


def test_kill_9_mid_send_then_restart(sink: Sink, tmp_path: Path) -> None:
    config = ap.write_config(tmp_path, sink.url, sink.token, sender={"read_timeout_s": 3.0})
    sink.faults.slow_s, sink.faults.slow_ratio = 1.0, 1.0  # stored, then a second before the answer
    proc = ap.start(config, tmp_path / "agent.log")
    try:
        ap.wait_for(
            lambda: sink.store.in_flight > 0 and len(sink.store.reports) >= 3,
            20,
            "a send in flight after a few reports",
        )
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
    before = set(sink.store.seqs())
    sink.faults.slow_ratio = 0.0

    proc = ap.start(config, tmp_path / "agent.log")
    try:
        ap.wait_for(lambda: len(sink.store.reports) >= len(before) + 10, 20, "the restarted agent's reports")
    finally:
        assert ap.stop(proc) == 0
    spool = ap.drain(tmp_path / "state", sink.url, sink.token)

    seqs = assert_exactly_once(sink, spool)
    assert max(seqs) > max(before)  # the restart continued the sequence instead of starting over
    assert sink.store.duplicates >= 1  # the batch whose answer the kill swallowed was sent again


def test_intermittent_500_503_and_timeouts(sink: Sink, tmp_path: Path) -> None:
    config = ap.write_config(tmp_path, sink.url, sink.token)
    sink.faults.status_ratio = 0.3
    sink.faults.slow_s, sink.faults.slow_ratio = 1.0, 0.2  # longer than the agent's 0.5 s read timeout
    proc = ap.start(config, tmp_path / "agent.log")
    try:
        ap.wait_for(lambda: len(sink.store.reports) >= 30, 30, "reports despite the faults")
    finally:
        assert ap.stop(proc) == 0
    sink.faults.status_ratio = sink.faults.slow_ratio = 0.0
    spool = ap.drain(tmp_path / "state", sink.url, sink.token)

    assert_exactly_once(sink, spool)
    assert {500, 503} <= set(sink.store.statuses)
    log = (tmp_path / "agent.log").read_text()
    assert "not acknowledged" not in log  # every answered batch was acknowledged in full
    assert sink.token not in log  # not even at DEBUG
    assert sink.store.duplicates >= 1  # timed-out sends were stored, resent and deduplicated


def report_builder(agent_id: str = "runner-test", boot_id: str = "boot-1", pad: int = 0):  # type: ignore[no-untyped-def]
    def build(seq: int, dropped: int) -> AgentReport:
        return AgentReport(
            agent_id=agent_id,
            boot_id=boot_id,
            seq=seq,
            observed_at=datetime.now(UTC),
            runner=RunnerIdentity(id=agent_id),
            dropped=dropped,
            readings=[MemoryReading(message="x" * pad)],
        )

    return build


def test_spool_limit_drops_oldest_and_reports_the_count(sink: Sink, tmp_path: Path) -> None:
    spool = Spool(tmp_path, SpoolSettings(max_bytes=8 * 1024))
    for _ in range(40):  # about 1.2 KB each: the spool holds the newest few only
        spool.append("runner-test", "boot-1", report_builder(pad=900))
    items = spool.peek(500)
    kept = [item.seq for item in items]
    pending = spool.stats()["pending_dropped"]
    dropped = spool.stats()["dropped_total"]

    assert kept == list(range(41 - len(kept), 41))  # the oldest went first
    assert dropped == 40 - len(kept) > 0
    # Each drop is counted in exactly one place: pending, or carried by one spooled report.
    assert pending + sum(item.dropped for item in items) == dropped

    next_report = spool.append("runner-test", "boot-1", report_builder())
    assert next_report is not None and next_report.dropped == pending > 0
    sender = Sender(sink.url, sink.token, spool, SenderSettings())
    while spool.stats()["reports"]:
        assert not sender.send_once().retry

    received = sink.store.reports.values()
    assert len(received) + sum(r["dropped"] for r in received) == 41  # every report arrived or was counted
    assert spool.stats()["pending_dropped"] == 0 and spool.stats()["dropped_total"] == dropped


def test_full_disk_stops_writing_and_counts(sink: Sink, tmp_path: Path) -> None:
    usage = {"ratio": 0.95}
    spool = Spool(tmp_path, SpoolSettings(max_disk_used_ratio=0.90), disk_used_ratio=lambda _: usage["ratio"])

    refused = [spool.append("runner-test", "boot-1", report_builder()) for _ in range(3)]
    usage["ratio"] = 0.5
    written = spool.append("runner-test", "boot-1", report_builder())

    assert refused == [None, None, None]
    assert written is not None and (written.seq, written.dropped) == (1, 3)


def test_dropped_count_in_a_dropped_report_is_not_lost(tmp_path: Path) -> None:
    spool = Spool(tmp_path, SpoolSettings(max_bytes=4096), disk_used_ratio=lambda _: 0.0)
    for _ in range(10):
        spool.append("runner-test", "boot-1", report_builder(pad=1500))
    # Reports that carried earlier drop counts were themselves dropped: their counts moved back.
    held = sum(item.dropped for item in spool.peek(500))

    assert held + spool.stats()["pending_dropped"] == 10 - len(spool.peek(500))


def test_sigterm_finishes_the_send_in_progress(sink: Sink, tmp_path: Path) -> None:
    config = ap.write_config(tmp_path, sink.url, sink.token, sender={"read_timeout_s": 5.0})
    sink.faults.slow_s, sink.faults.slow_ratio = 1.5, 1.0
    proc = ap.start(config, tmp_path / "agent.log")
    try:
        ap.wait_for(lambda: sink.store.in_flight > 0, 20, "a send in flight")
    finally:
        assert ap.stop(proc) == 0

    spool = Spool(tmp_path / "state", SpoolSettings())
    still_spooled = {item.seq for item in spool.peek(500)}
    # Whatever the sink stored was answered and acknowledged before the agent exited: no abandoned send.
    assert sink.store.reports and not (set(sink.store.seqs()) & still_spooled)
    assert "runner-agent stopped" in (tmp_path / "agent.log").read_text()
