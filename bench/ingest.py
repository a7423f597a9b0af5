"""Results ingested per second over HTTP (10k-result batches) vs raw sqlite3.executemany of the same rows.

Both are measured in this run on this machine, so the printed ratio means something on a noisy box.
Target: the controller ingests at least a quarter of the raw rate.

    python -m bench.ingest [--batches 10] [--batch-size 10000]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

import requests

from tests.servers import running_controller


def records(batch: int, size: int) -> list[dict[str, object]]:
    base = 1_758_448_800 + batch * size
    return [
        {
            "test_id": f"tests/test_mod{i % 300}.py::test_case_{i % 997}",
            "outcome": "failed" if i % 37 == 0 else "passed",
            "time": base + i,
            "duration_s": 0.5,
            "job_id": f"job-{batch}-{i // 100}",
            "run_id": f"run-{batch}",
            "attempt": 1,
            "runner": {
                "id": f"linux-{i % 40:02d}",
                "machine": f"vm-{i % 40:02d}",
                "pool": "linux",
                "shard": str(i % 8),
            },
        }
        for i in range(size)
    ]


def raw_rate(batches: list[list[dict[str, object]]], directory: Path) -> float:
    conn = sqlite3.connect(directory / "raw.db")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE results (test_id TEXT, outcome TEXT, time_ms INTEGER, duration_s REAL, job_id TEXT,"
        " run_id TEXT, attempt INTEGER, runner_id TEXT, machine TEXT, pool TEXT, shard TEXT)"
    )
    started = time.perf_counter()
    for batch in batches:
        rows = [
            (
                r["test_id"],
                r["outcome"],
                int(r["time"]) * 1000,
                r["duration_s"],
                r["job_id"],
                r["run_id"],  # type: ignore[call-overload]
                r["attempt"],
                r["runner"]["id"],
                r["runner"]["machine"],
                r["runner"]["pool"],
                r["runner"]["shard"],  # type: ignore[index]
            )
            for r in batch
        ]
        with conn:
            conn.executemany("INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    elapsed = time.perf_counter() - started
    conn.close()
    return sum(len(b) for b in batches) / elapsed


def http_rate(batches: list[list[dict[str, object]]], directory: Path) -> float:
    with running_controller(directory) as controller:
        bodies = [json.dumps(batch).encode() for batch in batches]
        session = requests.Session()
        session.headers.update(controller.headers() | {"Content-Type": "application/json"})
        started = time.perf_counter()
        for body in bodies:
            response = session.post(controller.url + "/v1/results", data=body, timeout=300)
            response.raise_for_status()
        elapsed = time.perf_counter() - started
    return sum(len(b) for b in batches) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=10_000)
    args = parser.parse_args()
    batches = [records(b, args.batch_size) for b in range(args.batches)]
    with tempfile.TemporaryDirectory() as tmp:
        raw = raw_rate(batches, Path(tmp))
        http = http_rate(batches, Path(tmp))
    print(f"raw sqlite3.executemany: {raw:,.0f} results/s")
    print(f"controller over HTTP:    {http:,.0f} results/s")
    print(f"ratio HTTP/raw: {http / raw:.2f} (target >= 0.25)")


if __name__ == "__main__":
    main()
