"""The job-health term: runners (hosts, for ephemeral runners) whose jobs die before any test ran.

A black-hole runner fails every job within seconds at set-up and sends no test result, so the result
analysis never sees it, while, always idle, it takes a large share of its pool's jobs. Each judged job
(cancelled ones say nothing) gets an "early death" weight: 1 for the provider's own infrastructure
failure, `jobs_timed_out_weight` for a timeout, 1 for a failure with no test run (where its peers' jobs
of that name do report tests) or ending within `jobs_short_ratio` of their median duration, else 0.

Per entity, in job order, a CUSUM of the log-likelihood ratio of that weight under a sick rate
(`jobs_sick_rate`) against its peers' rate — the median over the pool's other entities that ran that
job name nearby, each smoothed towards `jobs_prior_rate`: per entity, not per job, since a black hole
runs most of its pool's jobs. The likelihood ratio from any one start is a martingale under the peers'
rate, so by Ville's inequality it exceeds e^S with probability at most e^-S; over the n starts a
CUSUM tries, p <= n e^-S. Benjamini–Hochberg over the entities tested controls false discoveries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from common.jobs import JUDGED_CONCLUSIONS, JobConclusion
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import Frame

JOB_TEST_PREFIX = "job:"  # controller/ingest/jobs.py names a provider job's own result so
# A verdict resolves once this many clean jobs would be this unlikely at its own early-death rate.
RESOLVE_P = 0.05
_JUDGED = np.array(sorted(JUDGED_CONCLUSIONS))


@dataclass
class JobTable:
    """The judged jobs in the horizon, ordered by (finish, runner, job, attempt), with their weights."""

    cols: dict[str, np.ndarray]
    entity: np.ndarray  # runner id, or host for an ephemeral runner
    dead: np.ndarray  # early-death weight, 0..1
    no_tests: np.ndarray  # failed or not, no test ran where its peers' jobs of that name report some
    short: np.ndarray
    duration_s: np.ndarray  # nan where the start is unknown
    peer_rate: np.ndarray = field(default_factory=lambda: np.zeros(0))  # nan: no peers to judge by

    @property
    def size(self) -> int:
        return int(self.dead.size)


@dataclass
class Episode:
    """One stretch of an entity's jobs far beyond its peers' early-death rate."""

    entity: str
    kind: str  # runner | machine
    rows: np.ndarray  # JobTable rows from the onset to the end (or the last job)
    onset: int  # row of the first early death of the run that crossed
    decided: int  # row at which it crossed
    end: int | None  # row of its last early death, once it ran cleanly long enough since
    resolved: int | None  # row of the clean job that resolved it
    llr: float  # the CUSUM's height at its peak
    p_value: float
    p_adjusted: float = 1.0
    bar: float = 0.0


def recorded_job_tests(frame: Frame, as_of_ms: int, config: AnalysisConfig) -> np.ndarray:
    """Per result row: a provider job's own `job:<name>` result for a job that has a record and either
    died early (the record says it better: its duration, that no test ran; as a test it would make one
    of a runner's set-up failures) or brought its tests' results (which carry its failures already;
    as a test it would count them twice, a flaky job for every flaky test). A job whose outcome is the
    only word on its run stays a result: a runner whose jobs fail far beyond its pool's, with no test
    report anywhere, is the result analysis's to find."""
    candidates = _job_test_rows(frame)
    if not candidates.any() or frame.jobs.size == 0:
        return np.zeros(frame.size, bool)
    table = job_table(frame, as_of_ms, config)
    c = table.cols
    said_better = (table.dead > 0) | (c["tests"] > 0) | _results_for(frame, c)
    found: np.ndarray = candidates & _has_record(frame, c["job_id"][said_better], c["runner"][said_better])
    return found


def _job_test_rows(frame: Frame) -> np.ndarray:
    is_job_test = np.array([t.startswith(JOB_TEST_PREFIX) for t in frame.codes["test"].values] + [False])
    found: np.ndarray = is_job_test[frame.cols["test"]]
    return found


def _has_record(frame: Frame, job_ids: np.ndarray, runner_ids: np.ndarray) -> np.ndarray:
    jobs, runners = frame.codes["job"], frame.codes["runner"]
    keys = {
        (jobs.index.get(j, -2), runners.index.get(r, -2)) for j, r in zip(job_ids, runner_ids, strict=True)
    }
    width = len(runners.values) + 2
    wanted = np.array([j * width + r for j, r in keys if j >= 0 and r >= 0], np.int64)
    return np.isin(frame.cols["job"].astype(np.int64) * width + frame.cols["runner"], wanted)


def job_table(frame: Frame, as_of_ms: int, config: AnalysisConfig) -> JobTable:
    cols = frame.jobs.cols
    keep = np.isin(cols["conclusion"], _JUDGED) & (cols["finished_ms"] <= as_of_ms)
    order = np.lexsort((cols["attempt"], cols["job_id"], cols["runner"], cols["finished_ms"]))
    order = order[keep[order]]
    c = {k: v[order] for k, v in cols.items()}
    entity = np.where(c["ephemeral"], c["machine"], c["runner"])
    known = c["started_ms"] >= 0
    duration = np.where(known, (c["finished_ms"] - c["started_ms"]) / 1000.0, np.nan)
    reported = (c["tests"] > 0) | ((c["tests"] < 0) & _results_for(frame, c))
    table = JobTable(c, entity, np.zeros(order.size), ~reported, np.zeros(order.size, bool), duration)
    failed = c["conclusion"] == JobConclusion.failure.value
    usual_tests, median_duration = _peer_norms(table, reported, config.jobs_tests_usual_share)
    table.no_tests &= usual_tests  # no test tells nothing where the peers' jobs of that name report none
    table.short = failed & (duration < config.jobs_short_ratio * median_duration)
    table.dead = np.select(
        [
            c["conclusion"] == JobConclusion.system_failure.value,
            c["conclusion"] == JobConclusion.timed_out.value,
            failed & (table.no_tests | table.short),
        ],
        [1.0, config.jobs_timed_out_weight, 1.0],
        0.0,
    )
    return table


def _results_for(frame: Frame, c: dict[str, np.ndarray]) -> np.ndarray:
    """Per job: whether any test result of that job on that runner was stored. A provider's own
    `job:<name>` result says the job ended, not that a test ran, wherever it is read (the full pass
    and the screen alike)."""
    jobs, runners = frame.codes["job"], frame.codes["runner"]
    width = len(runners.values) + 2
    tests = ~_job_test_rows(frame)
    have = np.unique(frame.cols["job"][tests].astype(np.int64) * width + frame.cols["runner"][tests])
    keys = np.array(
        [
            jobs.index.get(j, -2) * width + runners.index.get(r, -2)
            for j, r in zip(c["job_id"], c["runner"], strict=True)
        ],
        np.int64,
    )
    return np.isin(keys, have) & (keys >= 0)


def _peer_norms(table: JobTable, reported: np.ndarray, usual_share: float) -> tuple[np.ndarray, np.ndarray]:
    """Per job: whether its pool's jobs of that name usually report tests, and their median duration
    — each the median over entities of the entity's own, so a black hole running most of the jobs
    does not set what is usual."""
    usual = np.zeros(table.size, bool)
    median = np.full(table.size, np.nan)
    for rows in _groups(table.cols["pool"], table.cols["name"]):
        entities = table.entity[rows]
        shares, durations = [], []
        for entity in np.unique(entities):
            mine = rows[entities == entity]
            shares.append(float(reported[mine].mean()))
            known = table.duration_s[mine][~np.isnan(table.duration_s[mine])]
            if known.size:
                durations.append(float(np.median(known)))
        usual[rows] = float(np.median(shares)) >= usual_share
        if durations:
            median[rows] = float(np.median(durations))
    return usual, median


def _groups(*keys: np.ndarray) -> list[np.ndarray]:
    """Row indices per distinct combination of the keys."""
    if keys[0].size == 0:
        return []
    joined = np.char.add(np.char.add(keys[0].astype(str), "\x1f"), keys[1].astype(str))
    _, inverse = np.unique(joined, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1)


def peer_rates(table: JobTable, excluded: set[str], config: AnalysisConfig) -> np.ndarray:
    """Per job: the median over the other entities of its pool that ran that job name within about
    `jobs_peer_radius_s`, of their smoothed early-death rates then — or over the whole horizon where
    none ran nearby; nan where no other entity ever ran it (a pool of one: nothing to compare)."""
    out = np.full(table.size, np.nan)
    width = config.jobs_peer_radius_s * 1000
    a, prior = config.jobs_prior_strength, config.jobs_prior_rate
    for rows in _groups(table.cols["pool"], table.cols["name"]):
        names, inverse = np.unique(table.entity[rows], return_inverse=True)
        bins = table.cols["finished_ms"][rows] // width
        first = int(bins.min())
        shape = (names.size, int(bins.max()) - first + 3)
        deaths, runs = np.zeros(shape), np.zeros(shape)
        np.add.at(deaths, (inverse, bins - first + 1), table.dead[rows])
        np.add.at(runs, (inverse, bins - first + 1), 1.0)
        near_d = deaths[:, :-2] + deaths[:, 1:-1] + deaths[:, 2:]
        near_n = runs[:, :-2] + runs[:, 1:-1] + runs[:, 2:]
        rate = np.where(near_n > 0, (near_d + a * prior) / (near_n + a), np.nan)
        whole = (deaths.sum(1) + a * prior) / (runs.sum(1) + a)
        peers = ~np.isin(names, list(excluded))
        for e in range(names.size):
            others = peers & (np.arange(names.size) != e)
            if not others.any():
                continue
            mine = np.flatnonzero(inverse == e)
            column = bins[mine] - first
            local = rate[others][:, column]
            seen = ~np.isnan(local).all(axis=0)
            median = np.full(mine.size, float(np.median(whole[others])))
            if seen.any():
                median[seen] = np.nanmedian(local[:, seen], axis=0)
            out[rows[mine]] = np.maximum(median, config.jobs_min_peer_rate)
    return out


def llr(table: JobTable, config: AnalysisConfig) -> np.ndarray:
    """Per job: the log-likelihood ratio of its early-death weight, sick rate against its peers'."""
    p1, p0 = config.jobs_sick_rate, table.peer_rate
    with np.errstate(invalid="ignore"):
        out = table.dead * np.log(p1 / p0) + (1 - table.dead) * np.log((1 - p1) / (1 - p0))
    return np.where(np.isnan(p0), 0.0, out)


def cusum_p(steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per job: the CUSUM's height and the p-value bound n e^-S of its peak so far (n jobs judged)."""
    height = np.zeros(steps.size)
    s = 0.0
    for i, step in enumerate(steps.tolist()):
        s = max(0.0, s + step)
        height[i] = s
    n = np.arange(1, steps.size + 1)
    return height, np.minimum(1.0, n * np.exp(-np.maximum.accumulate(height)))


def find_episodes(
    table: JobTable, as_of_ms: int, config: AnalysisConfig, skip: np.ndarray | None = None
) -> list[Episode]:
    """The job-health verdicts: entities tested in two rounds (those found in the first left out of
    everyone's peers), Benjamini–Hochberg over all tested at `fdr_q`. `skip` masks jobs an outage
    holds: they say nothing about one runner."""
    excluded: set[str] = set()
    found: list[Episode] = []
    for _ in range(2):
        table.peer_rate = peer_rates(table, excluded, config)
        if skip is not None:
            table.peer_rate[skip] = np.nan
        found = _test_entities(table, llr(table, config), config)
        if {e.entity for e in found} <= excluded:
            break
        excluded |= {e.entity for e in found}
    return found


def _test_entities(table: JobTable, steps: np.ndarray, config: AnalysisConfig) -> list[Episode]:
    tested: list[tuple[str, np.ndarray, float]] = []
    for entity in np.unique(table.entity):
        rows = np.flatnonzero((table.entity == entity) & ~np.isnan(table.peer_rate))
        if rows.size:
            tested.append((str(entity), rows, float(cusum_p(steps[rows])[1][-1])))
    if not tested:
        return []
    adjusted = stats.false_discovery_control([p for _, _, p in tested])
    ranks = stats.rankdata([p for _, _, p in tested], method="max")
    episodes = []
    for (entity, rows, p), p_adj, rank in zip(tested, adjusted, ranks, strict=True):
        if p_adj > config.fdr_q:
            continue
        bar = config.fdr_q * rank / len(tested)  # BH's critical value at its rank
        for episode in _episodes(table, entity, rows, steps[rows], bar, config):
            episode.p_value, episode.p_adjusted, episode.bar = p, float(p_adj), bar
            episodes.append(episode)
    return episodes


def _episodes(
    table: JobTable, entity: str, rows: np.ndarray, steps: np.ndarray, bar: float, config: AnalysisConfig
) -> list[Episode]:
    """Walk the entity's CUSUM: an episode opens where the bound first passes the bar (its onset the
    first early death of the run that crossed), and closes once enough clean jobs followed its last
    early death that its own rate would hardly have left them clean (RESOLVE_P); the CUSUM restarts."""
    kind = "machine" if bool(table.cols["ephemeral"][rows[0]]) else "runner"
    dead = table.dead[rows] > 0
    out: list[Episode] = []
    s, peak, start, opened, last, clean, counted = 0.0, 0.0, -1, -1, -1, 0, 0
    for i, step in enumerate(steps.tolist()):
        counted += 1
        if s == 0.0 and step > 0:
            start = i
        s = max(0.0, s + step)
        peak = max(peak, s)
        if opened < 0:
            if (
                s > 0
                and min(1.0, counted * math.exp(-s)) <= bar
                and _deaths(dead, start, i) >= config.jobs_min_early_deaths
            ):
                opened, last, clean = i, i, 0
            continue
        if dead[i]:
            last, clean = i, 0
            continue
        clean += 1
        if clean >= _clean_needed(table.dead[rows[start : last + 1]], config):
            out.append(_episode(entity, kind, rows, start, opened, last, i, peak))
            s, peak, opened, counted = 0.0, 0.0, -1, 0
    if opened >= 0:
        out.append(_episode(entity, kind, rows, start, opened, None, None, peak))
    return out[-config.max_segments_per_entity :]


def _deaths(dead: np.ndarray, start: int, i: int) -> int:
    return int(dead[start : i + 1].sum()) if start >= 0 else 0


def _clean_needed(weights: np.ndarray, config: AnalysisConfig) -> int:
    """Clean jobs in a row that an entity dying early at this stretch's rate would show less often
    than RESOLVE_P; never fewer than `resolve_after_jobs`."""
    rate = min(float(weights.mean()), 0.999) if weights.size else 0.0
    if rate <= 0:
        return config.resolve_after_jobs
    return max(config.resolve_after_jobs, math.ceil(math.log(RESOLVE_P) / math.log(1 - rate)))


def _episode(
    entity: str,
    kind: str,
    rows: np.ndarray,
    start: int,
    opened: int,
    last: int | None,
    resolved: int | None,
    peak: float,
) -> Episode:
    stop = resolved if resolved is not None else rows.size - 1
    return Episode(
        entity=entity,
        kind=kind,
        rows=rows[start : stop + 1],
        onset=int(rows[start]),
        decided=int(rows[opened]),
        end=None if last is None else int(rows[last]),
        resolved=None if resolved is None else int(rows[resolved]),
        llr=peak,
        p_value=1.0,
    )
