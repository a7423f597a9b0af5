"""Job-health episodes (jobs.py) as incidents of the one incident shape verdict.py gives (so runner
health, remediation and `explain` read them like any other), or as the job evidence of a result-based
incident on the same entity at the same time. The entity's own agent readings, where present, name
the dimension, as they confirm a result-based verdict."""

from __future__ import annotations

from typing import Any

import numpy as np

from common.timeutil import iso
from controller.analysis.config import AnalysisConfig
from controller.analysis.evidence import DIMENSIONS, Badness, nearest_reading
from controller.analysis.frame import Frame
from controller.analysis.jobs import Episode, JobTable
from controller.analysis.verdict import incident_id

DIMENSION = "jobs"  # no reading named it: the job outcomes alone
TEST = (
    "CUSUM of the log-likelihood ratio of early deaths per judged job (sick rate against its pool's "
    "peers' rate of the same job name), p <= n·e^-S, Benjamini–Hochberg over runners"
)
FIRST_JOBS_SHOWN = 5


def job_evidence(table: JobTable, episode: Episode, config: AnalysisConfig) -> dict[str, Any]:
    """What `explain` shows of a job-health verdict: counts, the peers' rate, the statistic, and the
    first jobs that died early."""
    rows = episode.rows
    dead = rows[table.dead[rows] > 0]
    conclusion = table.cols["conclusion"][rows]
    return {
        "judged_jobs": int(rows.size),
        "early_deaths": int(dead.size),
        "system_failures": int((conclusion == "system_failure").sum()),
        "timed_out": int((conclusion == "timed_out").sum()),
        "without_tests": int((table.no_tests[rows] & (table.dead[rows] > 0)).sum()),
        "short": int(table.short[rows].sum()),
        "peer_rate": round(float(np.nanmedian(table.peer_rate[rows])), 4),
        "sick_rate": config.jobs_sick_rate,
        "expected": round(float(np.nansum(table.peer_rate[rows])), 3),
        "llr": round(episode.llr, 2),
        "p_value": episode.p_value,
        "p_adjusted": episode.p_adjusted,
        "bh_bar": episode.bar,
        "first_jobs": [_job(table, int(row)) for row in dead[:FIRST_JOBS_SHOWN]],
    }


def job_incident(
    table: JobTable,
    episode: Episode,
    frame: Frame,
    badness: Badness,
    config: AnalysisConfig,
) -> dict[str, Any]:
    """A sick incident on the entity: its onset the first early death of the run that crossed."""
    rows = episode.rows
    dead = rows[table.dead[rows] > 0]
    times = table.cols["finished_ms"]
    onset, decided = int(times[episode.onset]), int(times[episode.decided])
    evidence = job_evidence(table, episode, config)
    dimension, reading = _readings(table, dead, frame, badness, config)
    runners = sorted(set(table.cols["runner"][rows].tolist()))
    persistent = sorted(set(table.cols["runner"][rows][~table.cols["ephemeral"][rows]].tolist()))
    return {
        "id": incident_id(episode.kind, episode.entity, onset // (config.bin_s * 1000)),
        "kind": episode.kind,
        "entity": episode.entity,
        "state": "resolved" if episode.resolved is not None else "sick",
        "dimension": dimension,
        "onset": iso(onset),
        "decided_at": iso(max(decided, onset)),
        "last_failure": iso(int(times[dead].max())),
        "end": None if episode.end is None else iso(int(times[episode.end])),
        "resolution": None
        if episode.resolved is None
        else f"its jobs ran to their tests again ({_clean(table, episode)} clean in a row)",
        "pool": sorted(set(table.cols["pool"][rows].tolist())),
        "statistics": {
            "test": TEST,
            "failures": evidence["early_deaths"],
            "executions": evidence["judged_jobs"],
            "expected": evidence["expected"],
            "ratio": round(evidence["early_deaths"] / evidence["expected"], 2)
            if evidence["expected"]
            else None,
            "p_value": episode.p_value,
            "p_adjusted": episode.p_adjusted,
            "q_value": episode.p_adjusted,
            "bh_cutoff": config.fdr_q,
            "bh_bar": episode.bar,
            "bins_scanned": evidence["judged_jobs"],
            "distinct_tests": 0,
            "distinct_units": 0,
            "failed_jobs": evidence["early_deaths"],
            "without_top_test_p": episode.p_value,
            "passed_elsewhere": {"failed_tests": 0, "passed_on_peers": 0},
            "spread": None,
        },
        "jobs": evidence,
        "evidence": {
            "dimension": dimension,
            "coverage": reading["coverage"],
            "per_dimension": reading["per_dimension"],
            "readings_seen": reading["seen"],
            "failures_examined": int(dead.size),
            "failures_readable": reading["near"],
            "failures_near_readings": reading["near"],
            "runners_reporting": 1 if reading["seen"] else 0,
            "onset": None,
            "readings": [],
        },
        "runners": runners,
        "persistent_runners": persistent,
        "machines": sorted(set(table.cols["machine"][rows].tolist())),
        "tests": [],
        "affected_jobs": [_affected(table, int(row)) for row in dead[times[dead] >= onset]],
    }


def _readings(
    table: JobTable, dead: np.ndarray, frame: Frame, badness: Badness, config: AnalysisConfig
) -> tuple[str, dict[str, Any]]:
    """The dimension bad in the readings nearest most early deaths (`evidence_min_coverage`), read
    where each job ran: its runner, or an ephemeral runner's host."""
    ephemeral = table.cols["ephemeral"][dead]
    codes = np.array(
        [
            frame.codes["machine" if e else "runner"].index.get(str(name), -2)
            for name, e in zip(
                np.where(ephemeral, table.cols["machine"][dead], table.cols["runner"][dead]),
                ephemeral,
                strict=True,
            )
        ],
        np.int64,
    )
    times = table.cols["finished_ms"][dead]
    per_dimension: dict[str, float] = {}
    near = np.zeros(dead.size, bool)
    seen = 0
    for dimension in DIMENSIONS:
        readings = np.flatnonzero(frame.r_check == badness.check_of[dimension])
        if readings.size == 0 or dead.size == 0:
            continue
        found = np.full(dead.size, -1, np.int64)
        for reader, mask in (("r_runner", ~ephemeral), ("r_machine", ephemeral)):
            if mask.any():
                found[mask] = nearest_reading(frame, readings, codes[mask], times[mask], config, reader)
        near |= found >= 0
        seen += int((found >= 0).sum())
        bad = (found >= 0) & badness.bad[dimension][readings][np.maximum(found, 0)]
        per_dimension[dimension] = float(bad.mean())
    best = max(per_dimension.items(), key=lambda item: item[1], default=(DIMENSION, 0.0))
    dimension = best[0] if best[1] >= config.evidence_min_coverage else DIMENSION
    reading = {
        "coverage": round(best[1], 3),
        "per_dimension": {k: round(v, 3) for k, v in per_dimension.items()},
        "seen": seen,
        "near": int(near.sum()),
    }
    return dimension, reading


def _job(table: JobTable, row: int) -> dict[str, Any]:
    c = table.cols
    duration = table.duration_s[row]
    return {
        "job_id": str(c["job_id"][row]),
        "name": str(c["name"][row]),
        "runner_id": str(c["runner"][row]),
        "finished": iso(int(c["finished_ms"][row])),
        "conclusion": str(c["conclusion"][row]),
        "duration_s": None if np.isnan(duration) else round(float(duration), 1),
        "tests": int(c["tests"][row]) if c["tests"][row] >= 0 else None,
        "failed_step": str(c["failed_step"][row]) or None,
        "failure_reason": str(c["failure_reason"][row]) or None,
    }


def _affected(table: JobTable, row: int) -> dict[str, Any]:
    """An early-dead job as remediation reruns it, in verdict.py's `affected_jobs` shape."""
    c = table.cols
    return {
        "job_id": str(c["job_id"][row]),
        "run_id": str(c["run_id"][row]) or None,
        "runner_id": str(c["runner"][row]),
        "failures": 1,
        "first_failure": iso(int(c["finished_ms"][row])),
    }


def _clean(table: JobTable, episode: Episode) -> int:
    if episode.end is None or episode.resolved is None:
        return 0
    rows = episode.rows
    return int(((rows > episode.end) & (rows <= episode.resolved)).sum())
