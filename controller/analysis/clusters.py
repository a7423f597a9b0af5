"""Clusters beyond chance: for each entity, the stretch of time in which it failed far more of its
tests than the same tests did on its peers.

Each entity's executions are binned; a maximum-sum scan over the bins' Poisson log-likelihood ratio
(for a rate `alternative_ratio` times the expected) finds the most anomalous stretch — its onset too,
so a slow degradation over days is caught as well as a sudden one. The stretch is then tested
exactly (binomial, conservative for unequal per-test probabilities) with a penalty for having been
chosen among the entity's bins, and the false discovery rate is controlled across every entity and
level tested (Benjamini–Hochberg). Breadth is required: many distinct tests and jobs, and the excess
must survive dropping the single most-failing test (one test failing on one runner is a test × runner
interaction, not a sick runner), and tests beyond the two most-failing must still fail beyond chance
(a test × runner interaction and a test broken on the only shard that runs it, on one runner, are two
tests, not a sick runner).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from controller.analysis.baseline import grouped
from controller.analysis.config import AnalysisConfig


@dataclass
class Segment:
    level: str
    entity: int
    rows: np.ndarray  # indices into the frame, time-ordered
    first_bin: int
    last_bin: int
    bins_tested: int
    failures: int
    executions: int
    expected: float
    p_value: float
    p_adjusted: float
    q_value: float = 1.0
    distinct_units: int = 0  # distinct tests failed, tests that fail together elsewhere counting once
    failed_jobs: int = 0
    without_top_test_p: float = 1.0
    without_top_test_ratio: float = 0.0
    beyond_top_two_p: float = 1.0
    beyond_top_two_ratio: float = 0.0
    beyond_top_two_jobs_p: float = 0.0  # the same beyond the two worst jobs (0: jobs unnamed)
    beyond_top_two_jobs_ratio: float = math.inf
    top_test: int = -1
    top_jobs: tuple[int, ...] = ()  # the (up to) two jobs that failed most, where jobs are named
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.failures / self.expected if self.expected > 0 else math.inf


def exact_p(failures: float, executions: float, expected: float) -> float:
    if executions <= 0 or failures <= 0:
        return 1.0
    mean = min(max(expected / executions, 1e-12), 1.0)
    return float(stats.binom.sf(failures - 1, executions, mean))


def scan_entities(
    level: str,
    entity: np.ndarray,
    bins: np.ndarray,
    fail: np.ndarray,
    expected: np.ndarray,
    usable: np.ndarray,
    config: AnalysisConfig,
) -> tuple[list[Segment], int]:
    """Candidate segments for every entity of one level; also returns how many entities were tested."""
    idx = np.flatnonzero(usable & (entity >= 0))
    if idx.size == 0:
        return [], 0
    order = idx[grouped(entity[idx], bins[idx])]
    ent_sorted, bins_sorted, fail_sorted = entity[order], bins[order], fail[order]
    new_entity = np.concatenate([[True], ent_sorted[1:] != ent_sorted[:-1]])
    starts = np.flatnonzero(new_entity)
    ends = np.concatenate([starts[1:], [order.size]])
    failures = np.add.reduceat(fail_sorted.astype(np.int64), starts)
    # Every entity's (entity, bin) cells at once; an entity's cells are one contiguous run.
    new_cell = new_entity | np.concatenate([[True], bins_sorted[1:] != bins_sorted[:-1]])
    cell = np.cumsum(new_cell) - 1
    cell_bins = bins_sorted[new_cell]
    cell_obs = np.bincount(cell, weights=fail_sorted.astype(float))
    cell_exp = np.bincount(cell, weights=expected[order])
    log_r = math.log(config.alternative_ratio)
    segments: list[Segment] = []
    for s, e, failed in zip(starts, ends, failures, strict=True):
        if int(failed) < config.min_failures:
            continue
        rows = order[s:e]
        first_cell, last_cell = int(cell[s]), int(cell[e - 1]) + 1
        unique_bins = cell_bins[first_cell:last_cell]
        inverse = cell[s:e] - first_cell
        obs, exp = cell_obs[first_cell:last_cell], cell_exp[first_cell:last_cell]
        score = obs * log_r - (config.alternative_ratio - 1) * exp
        available = np.ones(unique_bins.size, bool)
        for _ in range(config.max_segments_per_entity):
            found = max_segment(np.where(available, score, -np.inf))
            if found is None:
                break
            a, z = found
            available[a : z + 1] = False
            seg_rows = rows[np.searchsorted(inverse, a) : np.searchsorted(inverse, z, side="right")]
            o, x, n = float(obs[a : z + 1].sum()), float(exp[a : z + 1].sum()), int(seg_rows.size)
            p = exact_p(o, n, x)
            penalty = unique_bins.size
            if p * penalty > 0.05 or o < config.min_failures:
                break
            segments.append(
                Segment(
                    level=level,
                    entity=int(ent_sorted[s]),
                    rows=seg_rows,
                    first_bin=int(unique_bins[a]),
                    last_bin=int(unique_bins[z]),
                    bins_tested=penalty,
                    failures=int(o),
                    executions=n,
                    expected=x,
                    p_value=p,
                    p_adjusted=min(1.0, p * penalty),
                )
            )
    return segments, int(starts.size)


def max_segment(score: np.ndarray) -> tuple[int, int] | None:
    """Kadane's maximum-sum contiguous run; None when no run has a positive sum."""
    best, best_range = 0.0, None
    running, start = 0.0, 0
    # Plain floats: the same IEEE sums as numpy's scalars, without boxing each element.
    for i, value in enumerate(score.tolist()):
        if value == -math.inf:
            running, start = 0.0, i + 1
            continue
        if running <= 0:
            running, start = value, i
        else:
            running += value
        if running > best:
            best, best_range = running, (start, i)
    return best_range


def bh_cutoff(p_values: list[float], tests: int, q: float) -> float:
    """Benjamini–Hochberg's bar at rate q over `tests` hypotheses (untested ones count as p = 1): its
    critical value q·R/m at the last of the R ranks it accepts, or 0 when it accepts none.

    Every p-value at or below the bar is accepted, and so is an entity judged again on part of its
    stretch (once a coarser verdict explains the rest) whose new p-value is: put in place of its old
    one, R p-values still lie at or below q·R/m. The largest accepted p-value itself is no such bar:
    where a few verdicts are overwhelming (p ~ 1e-200) and the rest are noise, it would reject a
    re-judged runner at p = 1e-120."""
    if not p_values:
        return 0.0
    ordered = np.sort(np.asarray(p_values))
    m = max(tests, ordered.size)
    ranks = np.arange(1, ordered.size + 1)
    passing = ordered <= q * ranks / m
    return float(q * (np.flatnonzero(passing).max() + 1) / m) if passing.any() else 0.0


def breadth(
    segment: Segment,
    test: np.ndarray,
    job: np.ndarray,
    fail: np.ndarray,
    expected: np.ndarray,
) -> None:
    """Fill in the breadth numbers: distinct tests and jobs failed, and the excess without the top test.

    `test` is per row its unit (cofailing.CoFailingGroups): tests that fail together wherever a fixture
    they share is down are one cause, and a group of them is one test here."""
    rows = segment.rows
    failed = rows[fail[rows]]
    segment.distinct_units = int(np.unique(test[failed]).size)
    jobs = job[failed]
    segment.failed_jobs = (
        int(np.unique(jobs[jobs >= 0]).size) if (jobs >= 0).any() else segment.distinct_units
    )
    if failed.size == 0:
        return
    tests, counts = np.unique(test[failed], return_counts=True)
    ranked = tests[np.argsort(-counts, kind="stable")]
    segment.top_test = int(ranked[0])
    rest = rows[test[rows] != ranked[0]]
    o, x = float(fail[rest].sum()), float(expected[rest].sum())
    segment.without_top_test_p = min(1.0, exact_p(o, rest.size, x) * segment.bins_tested)
    segment.without_top_test_ratio = o / x if x > 0 else math.inf
    # Beyond the top two, a plain check that the rest fail more than chance, not a second discovery.
    rest = rows[~np.isin(test[rows], ranked[:2])]
    o, x = float(fail[rest].sum()), float(expected[rest].sum())
    segment.beyond_top_two_p = exact_p(o, rest.size, x)
    segment.beyond_top_two_ratio = o / x if x > 0 else math.inf
    # And beyond the two jobs that failed most: a job that crashed half-way fails every test it had
    # left at once, on whatever runner it ran on. What is left must be broad too, beyond its own two
    # most-failing tests: two bad jobs beside a flaky test's lucky run are not a sick runner.
    if (job[rows] >= 0).all():
        jobs, job_counts = np.unique(job[failed], return_counts=True)
        top_jobs = jobs[np.argsort(-job_counts, kind="stable")[:2]]
        segment.top_jobs = tuple(int(j) for j in top_jobs)
        rest = rows[~np.isin(job[rows], top_jobs)]
        rest_tests, rest_counts = np.unique(test[rest[fail[rest]]], return_counts=True)
        broad = rest[~np.isin(test[rest], rest_tests[np.argsort(-rest_counts, kind="stable")[:2]])]
        # Either way, the weaker: dropping two tests that failed less than their share must not help.
        checks = [(float(fail[kept].sum()), float(expected[kept].sum()), kept.size) for kept in (rest, broad)]
        segment.beyond_top_two_jobs_p = max(exact_p(o, n, x) for o, x, n in checks)
        segment.beyond_top_two_jobs_ratio = min(o / x if x > 0 else math.inf for o, x, n in checks)


# How clearly the tests beyond the two most-failing must still fail more than expected.
BEYOND_TOP_TWO_P = 0.05


def beyond_its_top_jobs(segment: Segment, config: AnalysisConfig) -> bool:
    """Whether the stretch's failures beyond its two most-failing jobs still fail more than chance:
    two jobs that crashed or lost their workspace on a healthy runner are two bad jobs, not a sick
    runner. A runner whose own readings name the cause needs no more jobs than that."""
    return (
        segment.beyond_top_two_jobs_p <= BEYOND_TOP_TWO_P
        and segment.beyond_top_two_jobs_ratio >= config.min_ratio / 1.5
    )


def is_cluster(segment: Segment, cutoff: float, config: AnalysisConfig) -> bool:
    return (
        segment.p_adjusted <= cutoff
        and segment.failures >= config.min_failures
        and segment.ratio >= config.min_ratio
        and segment.failures - segment.expected >= config.min_excess_rate * segment.executions
        and segment.distinct_units >= config.min_distinct_tests
        and segment.failed_jobs >= config.min_failed_jobs
        and segment.without_top_test_p <= max(cutoff, config.without_top_test_p)
        and segment.without_top_test_ratio >= config.min_ratio / 1.5
        and segment.beyond_top_two_p <= BEYOND_TOP_TWO_P
        and segment.beyond_top_two_ratio >= config.min_ratio / 1.5
    )


def against_reference_p(
    rows: np.ndarray, reference: np.ndarray, test: np.ndarray, fail: np.ndarray, prior_runs: float
) -> float:
    """How unlikely the stretch's failures are if each of its tests failed there at the rate it failed
    in the `reference` rows (a mask; the stretch's own rows are left out of it), with `prior_runs`
    clean runs more per test for what tests usually do: each test's failures shared between the
    stretch and its reference as their runs are (the conditional test of two Poisson rates), summed
    over tests.

    The scan compares with an expected rate and takes that rate as known. Where the stretch's tests
    ran elsewhere only a few times — a perf suite only one runner runs, its failures retried on
    others — that rate is mostly the prior, and a suite failing its usual 5 % looks sick beside it.
    Counted as they ran, a few dozen retries cannot tell 5 % from 0.7 %; twelve tests failing 40 %
    stand against the prior's clean runs alone."""
    codes, own_runs = np.unique(test[rows], return_counts=True)
    position = np.searchsorted(codes, test[rows])
    own_failed = np.bincount(position[fail[rows]], minlength=codes.size)
    elsewhere = reference.copy()
    elsewhere[rows] = False
    elsewhere &= np.isin(test, codes)
    position = np.searchsorted(codes, test[elsewhere])
    other_runs = np.bincount(position, minlength=codes.size) + prior_runs
    failed = own_failed + np.bincount(position[fail[elsewhere]], minlength=codes.size)
    share = own_runs / (own_runs + other_runs)
    observed = int(own_failed.sum())
    # Far in the tail by the moments needs no exact sum.
    mean = float((failed * share).sum())
    sd = math.sqrt(float((failed * share * (1 - share)).sum()))
    if observed <= mean:
        return 1.0
    if sd > 0 and (observed - mean) / sd > 8:
        return 0.0
    null = np.ones(1)
    for k, q in zip(failed, share, strict=True):
        if k > 0:
            null = np.convolve(null, stats.binom.pmf(np.arange(k + 1), k, q))[: observed + 1]
    return float(min(1.0, max(0.0, 1.0 - null[:observed].sum())))
