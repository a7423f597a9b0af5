"""A small seeded fleet of job records and their test results, for the job-health term's tests.

Healthy runners run jobs of a few names for about ten minutes, ten tests each, and a share of the jobs
fail one or two flaky tests; a black hole, from `bad_from_s`, fails each job within seconds at set-up
with no test result, and being always idle picks up a job every minute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from controller.analysis.frame import Frame

T0_MS = 1_790_000_000_000
NAMES = ("unit", "integration", "e2e")


@dataclass
class JobFleet:
    jobs: list[tuple[Any, ...]] = field(default_factory=list)  # JobRows columns
    results: list[tuple[Any, ...]] = field(default_factory=list)  # Frame.append_results rows
    planted: dict[str, list[int]] = field(default_factory=dict)  # runner -> finish times of its bad jobs

    def frame(self) -> Frame:
        frame = Frame()
        frame.append_results(self.results)
        frame.jobs.append(self.jobs)
        return frame


def job_row(
    runner: str,
    job_id: str,
    name: str,
    started_ms: int,
    finished_ms: int,
    conclusion: str,
    tests: int | None,
    *,
    pool: str = "linux",
    ephemeral: bool = False,
    machine: str | None = None,
    step: str | None = None,
) -> tuple[Any, ...]:
    """A row in controller/analysis/jobrows.COLUMNS order."""
    return (
        finished_ms,
        started_ms,
        tests,
        1,
        job_id,
        f"run-{job_id}",
        name,
        conclusion,
        step,
        None,
        runner,
        machine or runner,
        pool,
        ephemeral,
    )


def build(
    seed: int,
    *,
    runners: int = 6,
    hours: float = 12.0,
    flaky_job_rate: float = 0.35,
    black_holes: tuple[str, ...] = (),
    bad_from_s: float = 4 * 3600,
    bad_until_s: float | None = None,
    bad_conclusion: str = "failure",
    bad_duration_s: tuple[float, float] = (4.0, 10.0),
    bad_tests: int | None = 0,
    job_results: bool = False,
    ephemeral: bool = False,
) -> JobFleet:
    """`job_results`: also store each job's provider result `job:<name>`, as webhook ingest does.
    `ephemeral`: each job on a single-use runner (`<host>-<n>`) of its host (the names above)."""
    rng = np.random.default_rng(seed)
    fleet = JobFleet()
    names = [f"linux-{i:02d}" for i in range(runners)] + list(black_holes)
    end_ms = T0_MS + int(hours * 3_600_000)
    for runner in names:
        t = T0_MS + int(rng.uniform(0, 600_000))
        n = 0
        while t < end_ms:
            n += 1
            job_id = f"{runner}-job-{n}"
            name = str(rng.choice(NAMES))
            bad = (
                runner in black_holes
                and t >= T0_MS + bad_from_s * 1000
                and (bad_until_s is None or t < T0_MS + bad_until_s * 1000)
            )
            if bad:
                duration = float(rng.uniform(*bad_duration_s))
                conclusion, tests = bad_conclusion, bad_tests
            else:
                duration = float(rng.normal(600, 90))
                conclusion = "failure" if rng.random() < flaky_job_rate else "success"
                tests = 10
            finished = t + int(duration * 1000)
            ran_on = f"{runner}-{n}" if ephemeral else runner
            fleet.jobs.append(
                job_row(
                    ran_on, job_id, name, t, finished, conclusion, tests, ephemeral=ephemeral, machine=runner
                )
            )
            if bad:
                fleet.planted.setdefault(runner, []).append(finished)
            if tests:
                failing = set(rng.choice(tests, size=1 + int(rng.random() < 0.3), replace=False).tolist())
                for k in range(tests):
                    outcome = "failed" if conclusion == "failure" and k in failing else "passed"
                    fleet.results.append(
                        _result(
                            len(fleet.results), finished, f"{name}::t{k}", ran_on, job_id, outcome, runner
                        )
                    )
            if job_results:
                outcome = "passed" if conclusion == "success" else "failed"
                fleet.results.append(
                    _result(len(fleet.results), finished, f"job:{name}", ran_on, job_id, outcome, runner)
                )
            # A black hole is always idle: it takes the next queued job at once.
            t = finished + int((rng.exponential(50) if bad else rng.exponential(300)) * 1000)
    return fleet


def _result(
    i: int, time_ms: int, test: str, runner: str, job: str, outcome: str, machine: str
) -> tuple[Any, ...]:
    ephemeral = runner != machine
    return (
        i + 1,
        time_ms,
        outcome,
        ephemeral,
        test,
        runner,
        machine,
        "linux",
        None,
        None,
        job,
        f"run-{job}",
        None,
    )


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def wire(fleet: JobFleet) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The fleet as the public API takes it: test results for /v1/results, job records for /v1/jobs."""
    results = [
        {
            "test_id": r[4],
            "outcome": r[2],
            "time": _iso(r[1]),
            "job_id": r[10],
            "run_id": r[11],
            "runner": {"id": r[5], "pool": r[7]},
        }
        for r in fleet.results
    ]
    jobs = [
        {
            "job_id": j[4],
            "run_id": j[5],
            "attempt": j[3],
            "name": j[6],
            "started": _iso(j[1]),
            "finished": _iso(j[0]),
            "conclusion": j[7],
            "failed_step": j[8],
            "tests": j[2],
            "runner": {"id": j[10], "pool": j[12]},
        }
        for j in fleet.jobs
    ]
    return results, jobs
