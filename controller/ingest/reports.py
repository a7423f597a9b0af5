"""Store agent reports and their readings, exactly once per (agent, boot, sequence)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.engine import Connection

from common.reports import AgentReport
from common.timeutil import to_ms
from controller.db import tables
from controller.db.appends import serialise_appends
from controller.db.upsert import insert_one_returning_id, upsert_runners
from controller.ingest.results import identity_row


class KeyConflict(ValueError):
    """A report's (agent, boot, sequence) is already stored for another runner: not a resend.

    Counting it a duplicate would let one runner's agent silently void another's readings by claiming
    its key first; refusing it makes the clash loud on both sides.
    """


@dataclass
class ReportOutcome:
    new: list[int] = field(default_factory=list)
    duplicate: list[int] = field(default_factory=list)


def store_reports(conn: Connection, batch: Sequence[AgentReport], now_ms: int) -> ReportOutcome:
    outcome = ReportOutcome()
    _refuse_clash_within(batch)
    keys = {(r.agent_id, r.boot_id, r.seq) for r in batch}
    existing = _existing(conn, keys)
    clash = next(
        (r for r in batch if existing.get((r.agent_id, r.boot_id, r.seq), r.runner.id) != r.runner.id), None
    )
    if clash is not None:
        stored = existing[(clash.agent_id, clash.boot_id, clash.seq)]
        raise KeyConflict(
            f"report (agent_id '{clash.agent_id}', boot_id '{clash.boot_id}', seq {clash.seq}) is already "
            f"stored for runner '{stored}', not '{clash.runner.id}': give each runner's agent its own agent_id"
        )
    seen: set[tuple[str, str, int]] = set()
    fresh: list[AgentReport] = []
    for report in batch:
        key = (report.agent_id, report.boot_id, report.seq)
        if key in existing or key in seen:
            outcome.duplicate.append(report.seq)
            continue
        seen.add(key)
        fresh.append(report)
    readings: list[dict[str, Any]] = []
    # In key order: two replicas inserting overlapping batches then wait for each other, never deadlock.
    for report in sorted(fresh, key=lambda r: (r.agent_id, r.boot_id, r.seq)):
        report_id = _insert_report(conn, report, now_ms)
        if report_id is None:
            outcome.duplicate.append(report.seq)
        else:
            outcome.new.append(report.seq)
            readings.extend(_reading_rows(report, report_id))
    runner_rows = {}
    for report in sorted(fresh, key=lambda r: r.observed_at):
        observed = to_ms(report.observed_at)
        runner_rows[report.runner.id] = identity_row(report.runner) | {
            "first_seen_ms": observed,
            "last_seen_ms": observed,
            "last_report_ms": observed,
        }
    upsert_runners(conn, list(runner_rows.values()))
    if readings:
        # Last, and in one statement: the append lock is held until commit and serialises every
        # writer on every replica, so nothing else may wait inside it (2 PostgreSQL replicas took
        # 126 reports/s with the lock taken first, 160+ like this; see docs/reliability.md).
        serialise_appends(conn, tables.readings)
        conn.execute(tables.readings.insert(), readings)
    return outcome


def _refuse_clash_within(batch: Sequence[AgentReport]) -> None:
    """The same key for two runners in one batch is the clash `KeyConflict` describes, not a resend:
    taking the first and counting the second a duplicate would void that runner's readings silently."""
    first: dict[tuple[str, str, int], str] = {}
    for report in batch:
        key = (report.agent_id, report.boot_id, report.seq)
        runner = first.setdefault(key, report.runner.id)
        if runner != report.runner.id:
            raise KeyConflict(
                f"report (agent_id '{report.agent_id}', boot_id '{report.boot_id}', seq {report.seq}) "
                f"appears in this batch for runner '{runner}' and for runner '{report.runner.id}': "
                "give each runner's agent its own agent_id"
            )


def _existing(conn: Connection, keys: set[tuple[str, str, int]]) -> dict[tuple[str, str, int], str]:
    """The keys already stored, each with the runner it was stored for."""
    if not keys:
        return {}
    t = tables.reports
    found: dict[tuple[str, str, int], str] = {}
    wanted = sorted(keys)
    for start in range(0, len(wanted), 300):
        chunk = wanted[start : start + 300]
        rows = conn.execute(
            select(t.c.agent_id, t.c.boot_id, t.c.seq, t.c.runner_id).where(
                tuple_(t.c.agent_id, t.c.boot_id, t.c.seq).in_(chunk)
            )
        )
        found.update(((a, b, int(s)), runner) for a, b, s, runner in rows)
    return found


def _insert_report(conn: Connection, report: AgentReport, now_ms: int) -> int | None:
    """Insert one report; its id, or None when a concurrent writer stored it first."""
    return insert_one_returning_id(
        conn,
        tables.reports,
        {
            "agent_id": report.agent_id,
            "boot_id": report.boot_id,
            "seq": report.seq,
            "runner_id": report.runner.id,
            "observed_ms": to_ms(report.observed_at),
            "dropped": report.dropped,
            "agent_version": report.agent_version,
            "ingested_ms": now_ms,
        },
        ("agent_id", "boot_id", "seq"),
    )


def _reading_rows(report: AgentReport, report_id: int) -> list[dict[str, Any]]:
    runner = report.runner
    observed = to_ms(report.observed_at)
    return [
        {
            "report_id": report_id,
            "runner_id": runner.id,
            "machine": runner.effective_machine(),
            "pool": runner.effective_pool(),
            "image": runner.image,
            "observed_ms": observed,
            "check": reading.check,
            "status": reading.status.value,
            "reason": reading.reason,
            "data": reading.model_dump_json(exclude_none=True),
        }
        for reading in report.readings
    ]
