"""Black-hole runners: gen.py SEED OUTDIR [END_TIME] writes OUTDIR/history.ndjson and truth.json.

Two pools of persistent runners take jobs from one queue each, the next queued job going to a free
runner at random. Jobs of a few names run about ten minutes, and 30-40 % of them fail from flaky tests
(each name has a handful; a job fails when one of them does). Pool `linux` uploads JUnit (one result
per test); pool `arm` uploads none, so its provider posts only `job:<name>` results beside the job
records — a job with a record must not also count as a test.

Planted (reseeded): one black hole in `linux`, and in about half the seeds a second in `arm`, from a
random hour: every job it takes fails within 3-12 s at set-up (checkout, a dead container daemon) with
no test, some as the provider's own system failure; always idle, it takes a large share of its pool's
jobs. Some are mended hours later. Red herrings: a healthy runner with a short streak of ordinary test
failures (its flaky tests failing four jobs in a row), and users cancelling jobs, some within seconds.
"""

from __future__ import annotations

import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

NAMES = {"linux": ("unit", "integration", "e2e"), "arm": ("unit", "build")}
TESTS_PER_NAME = 12
DAYS = 2.0
CANCEL_RATE = 0.04


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def main() -> None:
    seed, out = int(sys.argv[1]), Path(sys.argv[2])
    end = datetime.fromisoformat(
        (sys.argv[3] if len(sys.argv) > 3 else "2026-12-05T08:00:00Z").replace("Z", "+00:00")
    ).timestamp()
    rng = np.random.default_rng(seed)
    start = end - DAYS * 86400
    pools = {"linux": int(rng.integers(8, 13)), "arm": int(rng.integers(4, 7))}
    runners = {p: [f"{p}-{i:02d}" for i in range(n)] for p, n in pools.items()}
    flaky = _flaky_tests(rng)
    holes = _plant(rng, runners, start, end)
    herring = str(rng.choice(runners["linux"][: len(runners["linux"]) // 2]))
    streak_at = start + float(rng.uniform(0.2, 0.8)) * (end - start)
    lines: list[tuple[float, dict[str, Any]]] = []
    planted: dict[str, list[float]] = {h["entity"]: [] for h in holes}
    tally: dict[str, list[int]] = {}
    for pool, names in runners.items():
        _run_pool(rng, pool, names, flaky, holes, (herring, streak_at), start, end, lines, planted, tally)
    lines.sort(key=lambda item: item[0])
    with (out / "history.ndjson").open("w") as f:
        for _, line in lines:
            f.write(json.dumps(line) + "\n")
    truth = _truth(seed, start, end, runners, holes, planted, herring, flaky, tally)
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    jobs = sum(1 for _, line in lines if line["kind"] == "job")
    print(
        f"seed {seed}: {sum(pools.values())} runners {pools}, {jobs} jobs, black holes "
        f"{[(h['entity'], len(planted[h['entity']])) for h in holes]}, herring {herring}"
    )


def _flaky_tests(rng: np.random.Generator) -> dict[tuple[str, str], dict[str, float]]:
    """Per (pool, name): its flaky tests and their rates, so that 30-40 % of its jobs fail."""
    out = {}
    for pool, names in NAMES.items():
        for name in names:
            k = int(rng.integers(3, 6))
            job_rate = float(rng.uniform(0.3, 0.4))
            weights = rng.dirichlet(np.ones(k))
            # Each flaky test's rate: its share of the job's log-survival, so the job fails at job_rate.
            rates = 1 - np.power(1 - job_rate, weights)
            ids = rng.choice(TESTS_PER_NAME, size=k, replace=False)
            out[(pool, name)] = {
                f"{pool}.{name}::test_{i:02d}": float(r) for i, r in zip(ids, rates, strict=True)
            }
    return out


def _plant(
    rng: np.random.Generator, runners: dict[str, list[str]], start: float, end: float
) -> list[dict[str, Any]]:
    pools = ["linux"] + (["arm"] if rng.random() < 0.5 else [])
    holes = []
    for number, pool in enumerate(pools, start=1):
        entity = str(rng.choice(runners[pool][len(runners[pool]) // 2 :]))
        onset = start + float(rng.uniform(0.25, 0.6)) * (end - start)
        mended = onset + float(rng.uniform(6, 14)) * 3600 if rng.random() < 0.5 else None
        holes.append({"id": f"B{number}", "entity": entity, "pool": pool, "onset": onset, "end": mended})
    return holes


def _run_pool(
    rng: np.random.Generator,
    pool: str,
    names: list[str],
    flaky: dict[tuple[str, str], dict[str, float]],
    holes: list[dict[str, Any]],
    herring: tuple[str, float],
    start: float,
    end: float,
    lines: list[tuple[float, dict[str, Any]]],
    planted: dict[str, list[float]],
    tally: dict[str, list[int]],
) -> None:
    """One pool's queue: arrivals in daily waves, keeping the runners ~95 % busy at the peak (a queue forms)."""
    free_at = {r: start for r in names}
    streak = 0
    t = start
    number = 0
    while True:
        hour = (t / 3600) % 24
        busy = 0.35 + 0.65 * max(0.0, math.sin(math.pi * (hour - 6) / 14)) if 6 <= hour <= 20 else 0.35
        t += float(rng.exponential(600 / (0.95 * len(names) * busy)))
        if t >= end:
            return
        number += 1
        name = str(rng.choice(NAMES[pool]))
        free = [r for r in names if free_at[r] <= t]
        runner = str(rng.choice(free)) if free else min(names, key=lambda r: free_at[r])
        began = max(t, free_at[runner])
        hole = next(
            (
                h
                for h in holes
                if h["entity"] == runner and began >= h["onset"] and (h["end"] is None or began < h["end"])
            ),
            None,
        )
        job = {"job_id": f"{pool}-{number}", "run_id": f"run-{pool}-{number}", "attempt": 1, "name": name}
        job["runner"] = {"id": runner, "pool": pool}
        if hole is not None:
            took = float(rng.uniform(3, 12))
            system = rng.random() < 0.3
            job |= {
                "conclusion": "system_failure" if system else "failure",
                "failed_step": str(rng.choice(["checkout", "set up job", "initialize containers"])),
                "failure_reason": "runner_system_failure" if system else None,
                "tests": 0,
            }
            planted[runner].append(began + took)
        elif rng.random() < CANCEL_RATE:
            took = float(rng.choice([rng.uniform(2, 15), rng.uniform(60, 500)]))
            job |= {"conclusion": "cancelled", "failed_step": None, "tests": 0}
        else:
            took = float(rng.normal(600, 90))
            in_streak = runner == herring[0] and began >= herring[1] and streak < 4
            failed = _results(rng, pool, name, job, began + took, flaky, in_streak, lines, tally)
            streak += int(in_streak)
            job |= {
                "conclusion": "failure" if failed else "success",
                "failed_step": "test" if failed else None,
            }
            job["tests"] = TESTS_PER_NAME if pool == "linux" else None
        job |= {"started": iso(began), "finished": iso(began + took)}
        free_at[runner] = began + took + float(rng.uniform(5, 30))  # clean-up between jobs
        lines.append((began + took, {"kind": "job", **job}))


def _results(
    rng: np.random.Generator,
    pool: str,
    name: str,
    job: dict[str, Any],
    finished: float,
    flaky: dict[tuple[str, str], dict[str, float]],
    streak: bool,
    lines: list[tuple[float, dict[str, Any]]],
    tally: dict[str, list[int]],
) -> bool:
    """The job's tests; in the herring's streak its flaky tests fail two at a time (ordinary failures)."""
    rates = flaky[(pool, name)]
    failed_tests = {t for t, r in rates.items() if rng.random() < r}
    if streak:
        failed_tests |= set(rng.choice(sorted(rates), size=min(2, len(rates)), replace=False).tolist())
    base = {"time": iso(finished), "job_id": job["job_id"], "run_id": job["run_id"], "runner": job["runner"]}
    if pool == "linux":
        for i in range(TESTS_PER_NAME):
            test = f"{pool}.{name}::test_{i:02d}"
            outcome = "failed" if test in failed_tests else "passed"
            runs = tally.setdefault(test, [0, 0])
            runs[0] += 1
            runs[1] += outcome == "failed"
            lines.append((finished, {"kind": "result", "test_id": test, **base, "outcome": outcome}))
    else:
        outcome = "failed" if failed_tests else "passed"
        lines.append((finished, {"kind": "result", "test_id": f"job:{name}", **base, "outcome": outcome}))
    return bool(failed_tests)


def _truth(
    seed: int,
    start: float,
    end: float,
    runners: dict[str, list[str]],
    holes: list[dict[str, Any]],
    planted: dict[str, list[float]],
    herring: str,
    flaky: dict[tuple[str, str], dict[str, float]],
    tally: dict[str, list[int]],
) -> dict[str, Any]:
    flaky_ids = {t for rates in flaky.values() for t in rates}
    return {
        "sim": "blackhole",
        "seed": seed,
        "start": start,
        "end": end,
        "runners": {r: {"machine": r, "pool": p} for p, names in runners.items() for r in names},
        "black_holes": [
            h
            | {
                "jobs": planted[h["entity"]],
                "first_failure": planted[h["entity"]][0] if planted[h["entity"]] else None,
            }
            for h in holes
        ],
        "herrings": {herring: "a healthy runner with a short streak of ordinary test failures"},
        "tests": {
            t: {"label": "flaky" if t in flaky_ids else "healthy", "runs": n, "failures": k}
            for t, (n, k) in sorted(tally.items())
        },
    }


if __name__ == "__main__":
    main()
