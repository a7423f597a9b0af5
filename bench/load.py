"""A fleet's load on real controllers: 1,000 agents reporting every 30 s, plus a firehose of test results.

Targets: one `runner-controller serve` on SQLite, then two replicas on one PostgreSQL (fsync on; agents
and uploads split between the replicas, as behind a load balancer). Each target runs at the fleet's real
cadence (1,000 agents / 30 s = 33 reports/s) and at a multiple of it (the period divided by --multiple: a
fleet that many times larger, or one catching up after an outage). Everything is open-loop: each report
and upload has a scheduled send time and its latency counts from that time, so a slow server cannot hide
its queue by slowing the senders. The firehose offers --results-rate test results a second (default 2,000:
1,000 runners each finishing a 500-test job every ~4 minutes) as 500-result uploads, JSON and JUnit in turn.

Printed per phase: reports/s, p50/p99 latency, errors (must be 0), acknowledged reports and results
missing from the database afterwards (must be 0: every acknowledged key is looked up), results/s; and
the ratio of latency under load to idle latency, both measured in this run on the same target (the same
reports and uploads sent one at a time before the load). The senders run in this process, on the same
cores as the servers and the database.

    python -m bench.load [--seconds 60] [--agents 1000] [--period 30] [--multiple 5] [--results-rate 2000]
                         [--only sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.postgres import missing_reason, running_postgres
from tests.reliability.traffic import Client, Ledger, agent_report, stored
from tests.servers import Controller, free_port, running_controller

# The production default: an analysis pass every 10 s, not the tests' 0.5 s.
# The senders share one admin token, where a real fleet has a token per agent: lift the per-client
# in-flight limit, which would otherwise refuse the 64 concurrent senders as one flooding client.
ENV = {"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "10", "RUNNER_CONTROLLER_MAX_IN_FLIGHT_PER_CLIENT": "1000"}
UPLOAD_BATCH = 500


@dataclass
class Phase:
    name: str
    seconds: float
    scheduled: int = 0
    latencies: list[float] = field(default_factory=list)
    upload_latencies: list[float] = field(default_factory=list)
    errors: int = 0
    lost_reports: int = 0
    lost_results: int = 0
    problems: list[str] = field(default_factory=list)
    results_acked: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def done(self, latencies: list[float], ok: bool, due: float) -> None:
        with self.lock:
            if ok:
                latencies.append(time.perf_counter() - due)
            else:
                self.errors += 1


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Idle:
    """Latencies of the same requests, one at a time, to the same target before the load: the floor."""

    reports: list[float]
    uploads: list[float]


def idle_latency(controller: Controller, reports: int = 200, uploads: int = 20) -> Idle:
    ledger = Ledger()
    client = Client(lambda: controller.url, controller.admin_token, ledger, 30)
    idle = Idle([], [])
    for seq in range(1, reports + 1):
        started = time.perf_counter()
        assert client.send_reports([agent_report("idle-probe", f"boot-{controller.port}", seq)]), (
            ledger.errors
        )
        idle.reports.append(time.perf_counter() - started)
    for n in range(uploads):
        send = client.send_junit if n % 2 else client.send_results
        started = time.perf_counter()
        assert send(f"idle-{controller.port}-{n}", UPLOAD_BATCH), ledger.errors
        idle.uploads.append(time.perf_counter() - started)
    client.close()
    return idle


def open_loop(
    pool: ThreadPoolExecutor, step: float, seconds: float, send: Callable[[int, float], None]
) -> int:
    """Call send(n, due) for the n-th event, due at start + n * step, whether or not earlier ones are done."""
    started = time.perf_counter()
    n = 0
    while n * step < seconds:
        due = started + n * step
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        pool.submit(send, n, due)
        n += 1
    return n


def run_phase(
    name: str, replicas: list[Controller], agents: int, period: float, seconds: float, results_rate: float
) -> Phase:
    phase = Phase(name, seconds)
    ledger = Ledger()
    token = replicas[0].admin_token
    local = threading.local()

    def client(replica: Controller, timeout_s: float) -> Client:
        """This thread's client for a replica."""
        clients: dict[str, Client] = local.__dict__.setdefault("clients", {})
        if replica.url not in clients:
            clients[replica.url] = Client(lambda: replica.url, token, ledger, timeout_s, keep_alive=False)
        return clients[replica.url]

    def report(n: int, due: float) -> None:
        agent, seq = n % agents, n // agents + 1
        replica = replicas[agent % len(replicas)]
        sent = agent_report(f"load-{name}-{agent:04d}", "boot-1", seq, pool=f"pool-{agent % 4}")
        phase.done(phase.latencies, client(replica, 30).send_reports([sent]), due)

    def upload(n: int, due: float) -> None:
        # Alternate a JSON batch and a JUnit file of the same size; replicas in turn.
        uploader = client(replicas[n % len(replicas)], 60)
        send = uploader.send_junit if n % 2 else uploader.send_results
        phase.done(phase.upload_latencies, send(f"load-{name}-{n}", UPLOAD_BATCH), due)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=64) as reports, ThreadPoolExecutor(max_workers=8) as uploads:
        firehose = None
        if results_rate > 0:
            step = UPLOAD_BATCH / results_rate
            firehose = threading.Thread(target=open_loop, args=(uploads, step, seconds, upload), daemon=True)
            firehose.start()
        phase.scheduled = open_loop(reports, period / agents, seconds, report)
        if firehose is not None:
            firehose.join()
    phase.seconds = time.perf_counter() - started
    phase.results_acked = ledger.results_acked
    found = stored(replicas[0].db, ledger, agent_prefix=f"load-{name}-")
    phase.lost_reports = len(found.reports_lost)
    phase.lost_results = sum(ledger.batches_sent[job] for job in found.batches_lost)
    phase.problems = found.problems()
    if ledger.errors:
        phase.problems.append(f"first errors: {ledger.errors[:3]}")
    return phase


def show(phase: Phase, idle: Idle, rate: float, results_rate: float) -> None:
    p50, p99 = percentile(phase.latencies, 0.5), percentile(phase.latencies, 0.99)
    idle50, idle99 = percentile(idle.reports, 0.5), percentile(idle.reports, 0.99)
    print(
        f"  {phase.name:<14} reports: {rate:6.1f}/s offered, {len(phase.latencies) / phase.seconds:6.1f}/s "
        f"answered ({len(phase.latencies)}/{phase.scheduled}), p50 {p50 * 1000:7.1f} ms, "
        f"p99 {p99 * 1000:8.1f} ms | errors {phase.errors} | "
        f"lost acknowledged: {phase.lost_reports} reports, {phase.lost_results} results"
    )
    ratios = f"reports p50 {p50 / idle50:.1f}x, p99 {p99 / idle99:.1f}x"
    if results_rate > 0:
        u50, u99 = percentile(phase.upload_latencies, 0.5), percentile(phase.upload_latencies, 0.99)
        print(
            f"  {'':<14} results: {results_rate:6,.0f}/s offered, {phase.results_acked / phase.seconds:6,.0f}/s "
            f"stored, {UPLOAD_BATCH}-result uploads (JSON and JUnit) p50 {u50 * 1000:.0f} ms, "
            f"p99 {u99 * 1000:.0f} ms"
        )
        ratios += f"; uploads p50 {u50 / percentile(idle.uploads, 0.5):.1f}x"
    print(
        f"  {'':<14} latency under load / idle: {ratios} (idle report p50 {idle50 * 1000:.1f} ms, "
        f"p99 {idle99 * 1000:.1f} ms; idle upload p50 {percentile(idle.uploads, 0.5) * 1000:.0f} ms)"
    )
    for problem in phase.problems:
        print(f"  {'':<14} PROBLEM: {problem}")


def fsync_on(url: str) -> None:
    """The test server runs with fsync off; a benchmark beside SQLite's synchronous=FULL must not."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET fsync = on")
        conn.execute("SELECT pg_reload_conf()")


@contextlib.contextmanager
def replicas_on(db: str, tmp: Path, count: int) -> Iterator[list[Controller]]:
    with running_controller(tmp / "r0", db, env=ENV) as first:
        others: list[Controller] = []
        try:
            for i in range(1, count):
                port = free_port()
                replica = Controller(
                    url=f"http://127.0.0.1:{port}",
                    db=db,
                    port=port,
                    log=tmp / f"r{i}" / "controller.log",
                    admin_token=first.admin_token,
                    env=ENV,
                )
                replica.log.parent.mkdir(parents=True, exist_ok=True)
                replica.start()
                others.append(replica)
            yield [first, *others]
        finally:
            for replica in others:
                replica.stop()


def target(label: str, db: str, tmp: Path, count: int, args: argparse.Namespace) -> list[Phase]:
    (tmp / "r0").mkdir(parents=True, exist_ok=True)
    phases = []
    with replicas_on(db, tmp, count) as replicas:
        idle = idle_latency(replicas[0])
        print(f"{label}:", flush=True)
        for multiple in (1.0, args.multiple):
            period = args.period / multiple
            name = f"{label.split()[0]}-x{multiple:g}"
            phase = run_phase(name, replicas, args.agents, period, args.seconds, args.results_rate)
            show(phase, idle, args.agents / period, args.results_rate)
            phases.append(phase)
    return phases


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--period", type=float, default=30.0, help="each agent's report interval, seconds")
    parser.add_argument("--multiple", type=float, default=5.0, help="the second phase's rate, x the first")
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    parser.add_argument(
        "--results-rate", type=float, default=2000.0, help="test results offered per second; 0: none"
    )
    args = parser.parse_args()
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="bench-load-") as raw_tmp:
        tmp = Path(raw_tmp)
        if args.only in (None, "sqlite"):
            phases += target("sqlite (1 replica)", f"sqlite:///{tmp / 'load.db'}", tmp / "sqlite", 1, args)
        if args.only in (None, "postgresql"):
            problem = missing_reason()
            if problem:
                print(f"postgresql: skipped ({problem})")
            else:
                with running_postgres() as server, server.database() as url:
                    fsync_on(url)
                    phases += target("postgresql (2 replicas)", url, tmp / "pg", 2, args)
    bad = [p.name for p in phases if p.errors or p.lost_reports or p.lost_results or p.problems]
    if bad:
        print(f"FAILED: errors or lost acknowledged data in {', '.join(bad)}")
        return 1
    print("no errors, no acknowledged report or result lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
