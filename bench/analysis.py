"""Full analysis over ~1M results and ~50k reports on SQLite, and the cost of one more 10k batch,
each against the time to simply read the same rows from the database in the same run.

Targets (issue 5): the full analysis within 5x the read time; the incremental pass proportional to
the new batch, not to history. The incremental pass is the screen (controller/analysis/screen.py) the
controller runs between full passes: the new rows against the model the last full pass left, whose
size follows tests × pools. The full re-analysis after the batch is printed too, for comparison.

    python -m bench.analysis [--days 12] [--seed 1]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from pydantic import TypeAdapter

from common.reports import AgentReport
from common.results import TestResult
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import analyse
from controller.analysis.frame import Frame
from controller.analysis.screen import Batch, build_model, screen
from controller.db.engine import make_engine
from controller.db.schema import migrate
from controller.ingest.reports import store_reports
from controller.ingest.results import store_results
from tests.sim import simulate
from tests.sim.scenarios import kitchen_sink

RESULTS = TypeAdapter(list[TestResult])
REPORTS = TypeAdapter(list[AgentReport])
READ_SQL = (
    "SELECT id, time_ms, outcome, ephemeral, test_id, runner_id, machine, pool, image, shard, job_id, run_id, "
    '"commit" FROM results WHERE id > ?'
)


def store(url: str, results: list[dict[str, object]], reports: list[dict[str, object]]) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        for start in range(0, len(results), 20_000):
            store_results(conn, RESULTS.validate_python(results[start : start + 20_000]), 0)
        for start in range(0, len(reports), 5_000):
            store_reports(conn, REPORTS.validate_python(reports[start : start + 5_000]), 0)
    engine.dispose()


def read_rows(path: Path, after_id: int) -> tuple[float, int]:
    started = time.perf_counter()
    with sqlite3.connect(path) as conn:
        rows = conn.execute(READ_SQL, (after_id,)).fetchall()
        readings = (
            conn.execute("SELECT id, observed_ms, runner_id, data FROM readings").fetchall()
            if after_id == 0
            else []
        )
    return time.perf_counter() - started, len(rows) + len(readings)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--days", type=float, default=12.0, help="simulated days (12 gives about a million results)"
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = replace(kitchen_sink(), duration_days=args.days, report_interval_minutes=9.0)
    fleet = simulate(scenario, seed=args.seed)
    history, batch = fleet.results[:-10_000], fleet.results[-10_000:]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        migrate(make_engine(url))
        store(url, history, fleet.reports)
        print(f"history: {len(history):,} results, {len(fleet.reports):,} reports")

        read_full, count = read_rows(path, 0)
        engine = make_engine(url)
        started = time.perf_counter()
        frame = Frame()
        with engine.connect() as conn:
            frame.load(conn)
        analysis = analyse(frame)
        full = time.perf_counter() - started
        print(f"read all rows:     {read_full:6.2f} s ({count:,} rows)")
        print(
            f"full analysis:     {full:6.2f} s, {len(analysis.incidents)} incidents -> ratio {full / read_full:.1f}x (target <= 5x)"
        )

        last_id = frame.last_result_id
        started = time.perf_counter()
        model = build_model(analysis, AnalysisConfig())
        modelled = time.perf_counter() - started
        print(
            f"model for screens: {modelled:6.2f} s, once per full pass ({len(model.rates):,} pool x test rates)"
        )
        covered = frame.size
        store(url, batch, [])
        read_batch, _ = read_rows(path, last_id)
        started = time.perf_counter()
        with engine.connect() as conn:
            frame.load(conn)
        load_batch = time.perf_counter() - started
        screened = screen(model, Batch.of(frame, covered), AnalysisConfig())
        incremental = time.perf_counter() - started
        print(f"read new 10k rows: {read_batch:6.3f} s")
        print(f"load new 10k rows: {load_batch:6.3f} s -> ratio {load_batch / read_batch:.1f}x")
        print(
            f"incremental pass:  {incremental:6.3f} s (load + screen of {screened.rows:,} rows) -> ratio "
            f"{incremental / read_batch:.1f}x the batch read, {incremental / full:.3f} of a full pass; "
            f"raised {len(screened.suspects)} places, {len(screened.outages)} outages"
        )
        half = Batch.of(frame, covered + (frame.size - covered) // 2)
        started = time.perf_counter()
        screen(model, half, AnalysisConfig())
        print(f"screen of half the batch: {time.perf_counter() - started:6.3f} s (it follows the batch)")
        started = time.perf_counter()
        analysis = analyse(frame)
        again = time.perf_counter() - started
        print(
            f"full re-analysis:  {again:6.2f} s, {again / full:.2f} of the first (what a screen's raise costs)"
        )
        engine.dispose()


if __name__ == "__main__":
    main()
