"""What a fleet sends a controller — agent reports, JSON results, JUnit uploads — and a ledger of exactly
what the controller acknowledged, checked afterwards against what the database holds.

Used by the fault tests in this folder and by bench/load.py. Every report key (agent, boot, seq) and every
result batch (one job id per batch) is unique, so "acknowledged but not stored", "stored twice" and
"half a request stored" can each be counted with one query.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import text

from agent.settings import SpoolSettings
from agent.spool import Spool
from tests.agent import agent_process
from tests.servers import database

READINGS_PER_REPORT = 3
T0 = 1_764_547_200  # 2025-12-01T00:00:00Z: event times are in the past, like a backfill or a live fleet


def agent_report(agent: str, boot: str, seq: int, pool: str = "linux") -> dict[str, Any]:
    """One round of readings as runner-agent sends it: disk, memory and cache."""
    observed = datetime.fromtimestamp(T0 + seq * 30, UTC).isoformat()
    return {
        "agent_id": agent,
        "boot_id": boot,
        "seq": seq,
        "observed_at": observed,
        "runner": {"id": agent, "machine": f"vm-{agent}", "pool": pool},
        "agent_version": "0.1.0",
        "readings": [
            {
                "check": "disk",
                "paths": [
                    {
                        "path": "/",
                        "total_bytes": 100 << 30,
                        "free_bytes": 40 << 30,
                        "free_ratio": 0.4,
                        "write_probe_ok": True,
                    }
                ],
            },
            {"check": "memory", "total_bytes": 16 << 30, "available_bytes": 9 << 30, "available_ratio": 0.56},
            {"check": "cache", "caches": [{"key": "deps", "digest": "ab" * 32, "files": 2000}]},
        ],
    }


def reports_body(reports: list[dict[str, Any]]) -> bytes:
    return json.dumps({"reports": reports}).encode()


def result_records(job: str, size: int, runner: str = "ci-01") -> list[dict[str, Any]]:
    """A job's test results: `size` distinct tests, all under one job id (the batch's name)."""
    return [
        {
            "test_id": f"tests/test_mod{i % 50}.py::test_case_{i}",
            "outcome": "failed" if i % 41 == 0 else "passed",
            "time": T0 + i,
            "duration_s": 0.25,
            "job_id": job,
            "run_id": f"run-{job}",
            "attempt": 1,
            "runner": {"id": runner, "machine": f"vm-{runner}", "pool": "linux"},
        }
        for i in range(size)
    ]


def junit_xml(size: int) -> bytes:
    cases = "".join(
        f'<testcase classname="pkg.Mod{i % 20}" name="test_{i}" time="0.1">'
        + ('<failure message="boom">trace</failure>' if i % 37 == 0 else "")
        + "</testcase>"
        for i in range(size)
    )
    return (
        f'<?xml version="1.0"?><testsuite name="load" tests="{size}" timestamp="2025-12-01T00:00:00">'
        f"{cases}</testsuite>"
    ).encode()


@dataclass
class Ledger:
    """What was sent and what the controller acknowledged, from any number of sender threads."""

    reports_acked: set[tuple[str, str, int]] = field(default_factory=set)
    batches_sent: dict[str, int] = field(default_factory=dict)  # job id -> results in the batch
    batches_acked: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack_reports(self, keys: list[tuple[str, str, int]]) -> None:
        with self.lock:
            self.reports_acked.update(keys)

    def sent_batch(self, job: str, size: int) -> None:
        with self.lock:
            self.batches_sent[job] = size

    def ack_batch(self, job: str) -> None:
        with self.lock:
            self.batches_acked.add(job)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)

    @property
    def results_acked(self) -> int:
        return sum(self.batches_sent[job] for job in self.batches_acked)


@dataclass
class Stored:
    """What the database holds against a ledger: every list and count here should be empty or zero."""

    reports_lost: list[tuple[str, str, int]]
    reports_stored: int
    readings_wrong: int  # reports whose readings are not all there (half-written)
    orphan_readings: int  # readings whose report is gone
    batches_lost: list[str]  # acknowledged, not all rows present
    batches_partial: list[str]  # any batch, acknowledged or not, with some but not all of its rows
    batches_doubled: list[str]  # more rows than the batch had
    results_stored: int

    def problems(self) -> list[str]:
        found = []
        for name in ("reports_lost", "batches_lost", "batches_partial", "batches_doubled"):
            items = getattr(self, name)
            if items:
                found.append(f"{name}: {len(items)} (e.g. {sorted(items)[:3]})")
        for name in ("readings_wrong", "orphan_readings"):
            if getattr(self, name):
                found.append(f"{name}: {getattr(self, name)}")
        return found


def stored(db: str, ledger: Ledger, agent_prefix: str = "") -> Stored:
    with database(db) as conn:
        keys = {
            (a, b, int(s))
            for a, b, s in conn.execute(
                text("SELECT agent_id, boot_id, seq FROM reports WHERE agent_id LIKE :p"),
                {"p": agent_prefix + "%"},
            )
        }
        # A join, not a subquery per report: readings has no index on report_id.
        readings_wrong = conn.execute(
            text(
                "SELECT count(*) FROM (SELECT r.id FROM reports r LEFT JOIN readings g ON g.report_id = r.id "
                "WHERE r.agent_id LIKE :p GROUP BY r.id HAVING count(g.id) <> :n) AS wrong"
            ),
            {"p": agent_prefix + "%", "n": READINGS_PER_REPORT},
        ).scalar_one()
        orphans = conn.execute(
            text(
                "SELECT count(*) FROM readings g LEFT JOIN reports r ON r.id = g.report_id WHERE r.id IS NULL"
            )
        ).scalar_one()
        per_job = {
            str(job): int(n)
            for job, n in conn.execute(text("SELECT job_id, count(*) FROM results GROUP BY job_id"))
        }
    sent = dict(ledger.batches_sent)
    return Stored(
        reports_lost=sorted(ledger.reports_acked - keys),
        reports_stored=len(keys),
        readings_wrong=int(readings_wrong),
        orphan_readings=int(orphans),
        batches_lost=sorted(j for j in ledger.batches_acked if per_job.get(j, 0) != sent[j]),
        batches_partial=sorted(j for j, n in sent.items() if 0 < per_job.get(j, 0) < n),
        batches_doubled=sorted(j for j, n in sent.items() if per_job.get(j, 0) > n),
        results_stored=sum(per_job.get(j, 0) for j in sent),
    )


class Client:
    """One sender's HTTP session, recording every acknowledgement in the ledger.

    A request that fails is reported as False and kept by the caller for a resend, as an agent keeps its
    spool: "acknowledged" means HTTP 200 with the keys in the body, nothing less.
    """

    def __init__(
        self,
        url: Callable[[], str],
        token: str,
        ledger: Ledger,
        timeout_s: float = 10.0,
        keep_alive: bool = True,
    ) -> None:
        self.url = url
        self.ledger = ledger
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        if not keep_alive:
            # A connection per request, as an agent reporting every 30 s has (the server closes idle
            # ones after 5 s). Reusing one idle for about that long races the server's close.
            self.session.headers["Connection"] = "close"

    def close(self) -> None:
        self.session.close()

    def post(self, path: str, body: bytes, content_type: str, **params: str) -> requests.Response | None:
        try:
            return self.session.post(
                self.url() + path,
                data=body,
                params=params or None,
                headers={"Content-Type": content_type},
                timeout=self.timeout_s,
            )
        except requests.RequestException as error:
            self.ledger.error(f"{path}: {type(error).__name__}: {str(error)[:300]}")
            return None

    def send_reports(self, reports: list[dict[str, Any]]) -> bool:
        response = self.post("/v1/reports", reports_body(reports), "application/json")
        if response is None or response.status_code != 200:
            if response is not None:
                self.ledger.error(f"/v1/reports: HTTP {response.status_code}: {response.text[:200]}")
            return False
        acked = set(response.json()["new"]) | set(response.json()["duplicate"])
        self.ledger.ack_reports(
            [(r["agent_id"], r["boot_id"], r["seq"]) for r in reports if r["seq"] in acked]
        )
        return True

    def send_results(self, job: str, size: int) -> bool:
        self.ledger.sent_batch(job, size)
        body = json.dumps(result_records(job, size)).encode()
        return self._acked(job, self.post("/v1/results", body, "application/json"), size)

    def send_junit(self, job: str, size: int) -> bool:
        self.ledger.sent_batch(job, size)
        response = self.post(
            "/v1/results/junit", junit_xml(size), "application/xml", runner_id="ci-junit", job_id=job
        )
        return self._acked(job, response, size)

    def _acked(self, job: str, response: requests.Response | None, size: int) -> bool:
        if response is None or response.status_code != 200:
            if response is not None:
                self.ledger.error(f"results {job}: HTTP {response.status_code}: {response.text[:200]}")
            return False
        if response.json()["accepted"] != size:
            self.ledger.error(f"results {job}: {response.json()} for {size} records")
            return False
        self.ledger.ack_batch(job)
        return True


class Senders:
    """Closed-loop senders on threads, each resending its current request until it is acknowledged
    (as the agent's spool does), until stopped: `reporters` agents batching 5 reports each, and
    `uploaders` alternating JSON results and JUnit."""

    def __init__(
        self,
        url: Callable[[], str],
        token: str,
        ledger: Ledger,
        reporters: int = 4,
        uploaders: int = 2,
        batch: int = 200,
        name: str = "kill",
    ) -> None:
        self.url, self.token, self.ledger = url, token, ledger
        self.stop = threading.Event()
        self.batch = batch
        self.name = name
        self.threads = [
            threading.Thread(target=self._reporter, args=(i,), daemon=True) for i in range(reporters)
        ] + [threading.Thread(target=self._uploader, args=(i,), daemon=True) for i in range(uploaders)]

    def __enter__(self) -> Senders:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def _pause(self) -> None:
        self.stop.wait(0.05)

    def _reporter(self, index: int) -> None:
        client = Client(self.url, self.token, self.ledger, timeout_s=5)
        agent, seq = f"{self.name}-agent-{index}", 1
        try:
            while not self.stop.is_set():
                reports = [agent_report(agent, "boot-1", s) for s in range(seq, seq + 5)]
                while not client.send_reports(reports):
                    if self.stop.is_set():
                        return
                    self._pause()
                seq += 5
        finally:
            client.close()

    def _uploader(self, index: int) -> None:
        client = Client(self.url, self.token, self.ledger, timeout_s=10)
        number = 0
        try:
            while not self.stop.is_set():
                job = f"{self.name}-{index}-{number}"
                send = client.send_junit if number % 2 else client.send_results
                while not send(job, self.batch):
                    if self.stop.is_set():
                        return
                    self._pause()
                number += 1
        finally:
            client.close()


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def agent_seqs(db: str, runner: str) -> list[int]:
    """The sequence numbers stored of a real runner-agent's reports, in order."""
    with database(db) as conn:
        rows = conn.execute(text("SELECT seq FROM reports WHERE runner_id = :r ORDER BY seq"), {"r": runner})
        return [int(seq) for (seq,) in rows]


def spooled(state: Path) -> int:
    """How many reports a runner-agent with this state directory still holds in its spool."""
    spool = Spool(state, SpoolSettings())
    try:
        return spool.stats()["reports"]
    finally:
        spool.close()


def assert_agent_delivered_once(state: Path, server: str, token: str, db: str, runner: str) -> int:
    """Drain a stopped runner-agent's spool to the controller, then check that every report it made is
    stored exactly once and none was dropped; how many it made."""
    spool = agent_process.drain(state, server, token)
    assert spool.stats()["reports"] == 0 and spool.stats()["dropped_total"] == 0
    with database(db) as conn:
        (agent_id, boot_id) = conn.execute(
            text("SELECT DISTINCT agent_id, boot_id FROM reports WHERE runner_id = :r"), {"r": runner}
        ).one()
    last = spool.last_seq(agent_id, boot_id)
    spool.close()
    assert agent_seqs(db, runner) == list(range(1, last + 1))  # every report the agent made, once
    return int(last)
