"""The evidence chains behind verdicts, for `runnerctl explain runner|test`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from common.timeutil import iso, to_ms
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import Analysis
from controller.analysis.flake import entity_name, entity_of
from controller.analysis.frame import Frame
from controller.analysis.job_verdict import TEST as JOB_TEST
from controller.analysis.jobs import RESOLVE_P as JOB_RESOLVE_P
from controller.analysis.pivot import pivot, window

DAY_MS = 86_400_000


def explain_runner(
    frame: Frame, analysis: Analysis, runner_id: str, config: AnalysisConfig
) -> dict[str, Any] | None:
    code = frame.codes["runner"].index.get(runner_id)
    jobs = frame.jobs.cols["runner"] == runner_id
    if code is None and not jobs.any():
        return None
    rows = frame.cols["runner"] == code if code is not None else np.zeros(frame.size, bool)
    ran = bool(rows.any())
    # A runner known only from its agent's readings has run no job here: no machine, pool or peers to
    # set it against yet (its most frequent machine and pool are undefined, not an error). One known by
    # its job records alone (a black hole sends no test result) is placed by them.
    machine = frame.name("machine", int(np.bincount(frame.cols["machine"][rows]).argmax())) if ran else None
    image_codes = np.unique(frame.cols["image"][rows])
    images = {frame.name("image", int(c)) for c in image_codes if c >= 0}
    pool_code = int(np.bincount(frame.cols["pool"][rows]).argmax()) if ran else -1
    pool = frame.name("pool", pool_code) if ran else None
    if not ran and jobs.any():
        machine, pool = (
            _most_common(frame.jobs.cols["machine"][jobs]),
            _most_common(frame.jobs.cols["pool"][jobs]),
        )
        pool_code = frame.codes["pool"].index.get(pool, -1)
    related = [
        i
        for i in analysis.incidents
        if (i["kind"] == "runner" and i["entity"] == runner_id)
        or (i["kind"] == "machine" and i["entity"] == machine)
        or (i["kind"] == "image" and i["entity"] in images)
        or (i["kind"] == "pool" and i["entity"] == pool)
    ]
    mine = {("runner", runner_id), ("machine", machine), ("pool", pool)} | {("image", i) for i in images}
    bursts = [b for b in analysis.bursts if (b["kind"], b["entity"]) in mine]
    health = analysis.health.get(runner_id, {"health": "healthy", "dimension": None, "warnings": []})
    if related:
        focus = related[-1]
        start = _ms(focus["onset"]) - config.bin_s * 1000
        end = _ms(focus["end"]) if focus.get("end") else analysis.as_of_ms + 1
    else:
        focus = None
        end = analysis.as_of_ms + 1
        start = end - DAY_MS
    span = window(frame, start, end)
    peers = span & (frame.cols["pool"] == pool_code) if ran else np.zeros_like(span)
    return {
        "runner": runner_id,
        "machine": machine,
        "images": sorted(images),
        "pool": pool,
        "health": health,
        "incidents": related,
        "bursts": bursts,
        "window": {"start": iso(start), "end": iso(end)},
        "pivot": {
            "runner": pivot(frame, peers, "runner"),
            "machine": pivot(frame, peers, "machine"),
            "image": pivot(frame, peers, "image"),
            "shard": pivot(frame, peers, "shard"),
        },
        "what_would_flip": _flip(focus, health, config)
        + [_burst_note(b, config) for b in bursts]
        + (
            []
            if ran
            else [
                "no test results from this runner yet: its jobs' results are what it is judged by"
                + (", and its job records, which show jobs dying before any test ran" if jobs.any() else "")
            ]
        ),
        "as_of": iso(analysis.as_of_ms),
    }


def _most_common(values: np.ndarray) -> str:
    found, counts = np.unique(values, return_counts=True)
    return str(found[int(counts.argmax())])


def _flip(incident: dict[str, Any] | None, health: dict[str, Any], config: AnalysisConfig) -> list[str]:
    if incident is not None and incident["statistics"]["test"] == JOB_TEST:
        return _flip_jobs(incident, config)
    if incident is None:
        notes = [
            f"to become suspect: a stretch of failures at least {config.min_ratio:g}x what the same tests do on "
            f"peers and {config.min_excess_rate:.0%} of its executions beyond them, across "
            f"{config.min_distinct_tests}+ distinct tests (tests that fail together elsewhere counting once) "
            f"and {config.min_failed_jobs}+ jobs, "
            f"significant after Benjamini–Hochberg at q={config.fdr_q:g}, and lasting beyond a burst of "
            f"{config.burst_max_s // 60} minutes it recovered from at once",
        ]
        if health.get("warnings"):
            notes.append(
                "its bad readings alone never make it sick: a failure excess must come with them "
                f"(with its readings confirming, {config.confirmed_min_ratio:g}x and "
                f"{config.confirmed_min_excess_rate:.1%} beyond its peers are enough)"
            )
        return notes
    stats = incident["statistics"]
    if incident["state"] == "suspect":
        return [
            "to become sick: readings of its runners or hosts near at least half of its failures (its agents "
            "are silent there now); one dimension bad (disk, memory, clock, cache) under at least "
            f"{config.evidence_min_coverage:.0%} of them names it",
            f"to clear: {_clean_run(config, stats, 'after the stretch ', config.resolve_after_jobs)}",
        ]
    if incident["state"] == "sick":
        named = incident["dimension"] != "unknown"
        readings = "readings healthy again and " if named else ""
        # Readings that read healthy again are evidence of their own: fewer clean jobs confirm them.
        jobs = config.resolve_after_jobs_healed if named else config.resolve_after_jobs
        return [
            f"to clear: {readings}{_clean_run(config, stats, '', jobs)}",
            f"to be mere chance its p would have to exceed {stats.get('bh_bar', stats['bh_cutoff']):.2g} (the "
            f"Benjamini–Hochberg bar at its rank); it has p = {stats['p_adjusted']:.2g} "
            f"({stats['failures']} failures where {stats['expected']:.1f} were expected)",
        ]
    return [
        f"resolved: {incident.get('resolution') or 'ran at the expected failure rate since the stretch ended'}"
    ]


def _flip_jobs(incident: dict[str, Any], config: AnalysisConfig) -> list[str]:
    """What would flip a verdict on job outcomes (job_verdict.py)."""
    jobs = incident["jobs"]
    if incident["state"] == "resolved":
        return [f"resolved: {incident.get('resolution')}"]
    return [
        f"to clear: {config.resolve_after_jobs}+ judged jobs in a row that reach their tests (more where it "
        f"died early less often: enough that its own rate would hardly leave them clean, p < {JOB_RESOLVE_P:g})",
        f"to be mere chance its p would have to exceed {jobs['bh_bar']:.2g} (the Benjamini–Hochberg bar at its "
        f"rank); it has p = {jobs['p_value']:.2g} ({jobs['early_deaths']} of {jobs['judged_jobs']} jobs died early "
        f"where its peers' jobs die early at {jobs['peer_rate']:.1%})",
    ]


def _burst_note(burst: dict[str, Any], config: AnalysisConfig) -> str:
    return (
        f"{burst['id']} on {burst['kind']}/{burst['entity']} ({burst['start']} to {burst['end']}) is no verdict: "
        f"{config.resolve_after_executions}+ executions over {config.resolve_after_jobs}+ jobs passed after it, "
        f"the last {config.resolve_after_s // 60}+ minutes after it, so whatever failed then passed; "
        "failing again like that, or going on failing, would be judged"
    )


def _clean_run(config: AnalysisConfig, stats: dict[str, Any], where: str, jobs: int) -> str:
    excess = (stats["failures"] - stats["expected"]) / max(stats["executions"], 1)
    return (
        f"{config.resolve_after_executions}+ executions over {jobs}+ jobs {where}at the expected failure "
        f"rate, for {config.resolve_after_s // 60}+ minutes after its last failure, and enough of them "
        f"that its excess of {excess:.1%} of executions would have shown"
    )


def _ms(text: str) -> int:
    return to_ms(datetime.fromisoformat(text.replace("Z", "+00:00")))


def explain_test(frame: Frame, analysis: Analysis, test_id: str) -> dict[str, Any] | None:
    code = frame.codes["test"].index.get(test_id)
    if code is None:
        return None
    score = analysis.tests_by_id().get(test_id)
    rows = np.flatnonzero((frame.cols["test"] == code) & (frame.time_ms <= analysis.as_of_ms))
    where = entity_of(frame)[rows]
    discount = analysis.discount[rows] if analysis.discount.size == frame.size else np.full(rows.size, -1)
    table: list[dict[str, Any]] = []
    for entity in np.unique(where):
        mine = where == entity
        fails = frame.fail[rows][mine]
        reasons: dict[str, int] = {}
        for index in discount[mine & frame.fail[rows] & (discount >= 0)]:
            reasons[analysis.reasons[index]] = reasons.get(analysis.reasons[index], 0) + 1
        table.append(
            {
                "runner": entity_name(frame, int(entity)),
                "executions": int(mine.sum()),
                "failures": int(fails.sum()),
                "discounted": int(sum(reasons.values())),
                "discounted_by": reasons,
                "counted_failures": int(fails.sum()) - int(sum(reasons.values())),
            }
        )
    table.sort(key=lambda line: (-int(line["failures"]), str(line["runner"])))
    failures = int(frame.fail[rows].sum())
    naive = (
        "flaky"
        if failures >= 2 and failures < rows.size
        else ("broken" if failures == rows.size else "healthy")
    )
    return {
        "test_id": test_id,
        "score": score,
        "per_runner": table,
        "naive": {"failures": failures, "executions": int(rows.size), "verdict": naive},
        "incidents": {
            i["id"]: {
                "kind": i["kind"],
                "entity": i["entity"],
                "state": i["state"],
                "dimension": i["dimension"],
            }
            for i in analysis.incidents
            if score and i["id"] in score["discounted_by"]
        },
        "outages": [o for o in analysis.outages if score and o["id"] in score["discounted_by"]],
        "bursts": [b for b in analysis.bursts if score and b["id"] in score["discounted_by"]],
        "as_of": iso(analysis.as_of_ms),
    }
