"""Flake scores a sick runner can no longer inflate.

Failures inside an incident (on that entity, from its onset) or an outage are discounted — kept, and
attributed, but not charged to the test — unless the test failed inside that incident no more often
than it fails elsewhere: a flaky test keeps its own failures on a machine that was sick beside it.
What remains is scored per test with a Beta posterior on decayed counts, ranked by its conservative
bound. A test that fails every run of a pool from some time on is broken (everywhere) or
platform-specific (one pool), not flaky, and so is one failing every job of some commits only; one
whose failures follow its runner's resource pressure is resource-sensitive; one that fails on one
runner only is a test × runner interaction. Flaky needs passes and failures on the same code, on
more than one runner; below the floor, a test failing far more often than the tests called healthy
do between them, or mostly together with the tests it shares a flaky fixture with, is flaky.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from common.plural import counted, noun
from common.timeutil import iso
from controller.analysis.baseline import grouped, unique_pairs
from controller.analysis.cofailing import CoFailingGroups
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import Frame
from controller.analysis.jobs import JOB_TEST_PREFIX

DAY_MS = 86_400_000
# Separate streaks of failures, with passes between, that show a test run once per commit fails by
# chance: a commit that broke it is one streak, and one broken and fixed again is two.
FLAKY_MIN_STREAKS = 3
# The shorter span a test's failures may crowd into, beside `outage_max_s`: how long most outages last.
BURST_SHORT_S = 3600
# How far beyond its usual rate the rest of the fleet must fail in that span for it to hold something
# that was down (Poisson).
FLEET_ELEVATED_P = 0.05


@dataclass(frozen=True)
class FlakeInputs:
    frame: Frame
    selected: np.ndarray  # rows up to as_of
    discount: np.ndarray  # per row: index into reasons, or -1
    reasons: list[str]  # incident ids and outage ids
    resource_bad: np.ndarray  # per row: the runner's readings showed disk or memory pressure then
    resource_seen: np.ndarray  # per row: the runner sent a disk or memory reading near then
    groups: CoFailingGroups  # tests that fail together
    as_of_ms: int


def entity_of(frame: Frame) -> np.ndarray:
    """Who a test ran on, for flake purposes: the runner, or the host for ephemeral runners."""
    return np.where(frame.ephemeral, -2 - frame.cols["machine"], frame.cols["runner"])


def entity_name(frame: Frame, code: int) -> str:
    if code <= -2:
        return f"machine/{frame.name('machine', -2 - code)}"
    return f"runner/{frame.name('runner', code)}"


def release_own_runs(
    frame: Frame, eligible: np.ndarray, discount: np.ndarray, incidents: int, config: AnalysisConfig
) -> None:
    """Give back to each test its runs inside an incident (reasons 0 to `incidents` - 1) where it failed
    there, yet no more often than its counted rate in that pool predicts: a flaky test failing 3 % of
    its runs everywhere fails 3 % on a bad image that breaks other tests, and those failures are its
    own. The rate is the pool's, or a test failing most runs on linux would take back its failures on
    a sick mac runner. A test with fewer than `flake_own_failure_min_failures` counted failures there
    has no rate to trust (one failure in twelve nightly runs). Only the `eligible` rows are given
    back (the engine leaves out runs under disk or memory pressure: passes under a full disk would
    hide a test that fails under pressure), and none where the test never failed inside the
    incident. Which rows count is judged once, before any is given back."""
    if incidents == 0:
        return
    # One key per (test, pool): the counted rate of each, then one per (incident, test, pool).
    pool = frame.cols["pool"].astype(np.int64) + 1  # NONE (-1) becomes 0
    pair = frame.cols["test"].astype(np.int64) * (int(pool.max()) + 1) + pool
    counted = eligible & (discount < 0)
    inside = np.flatnonzero(eligible & (discount >= 0) & (discount < incidents))
    pairs, pair_of = np.unique(np.concatenate([pair[counted], pair[inside]]), return_inverse=True)
    counted_pair, inside_pair = pair_of[: int(counted.sum())], pair_of[int(counted.sum()) :]
    runs = np.bincount(counted_pair, minlength=pairs.size)
    failures = np.bincount(counted_pair, weights=frame.fail[counted], minlength=pairs.size)
    rate = np.where(failures >= config.flake_own_failure_min_failures, failures / np.maximum(runs, 1), 0.0)
    keys, key_of = np.unique(
        discount[inside].astype(np.int64) * pairs.size + inside_pair, return_inverse=True
    )
    n = np.bincount(key_of)
    k = np.bincount(key_of, weights=frame.fail[inside]).astype(np.int64)
    own = (k > 0) & (stats.binom.sf(k - 1, n, rate[keys % pairs.size]) >= config.flake_own_failure_p)
    discount[inside[own[key_of]]] = -1


@dataclass(frozen=True)
class _CountedRuns:
    """Every run no incident, outage or burst took, in time order: what the fleet usually fails,
    and whether it failed beyond that in some span."""

    time_ms: np.ndarray
    failed_before: np.ndarray  # per index, the failures among the runs before it
    rate: float

    @classmethod
    def of(cls, frame: Frame, rows: np.ndarray) -> _CountedRuns:
        fail = frame.fail[rows]
        rate = float(fail.mean()) if rows.size else 0.0
        return cls(frame.time_ms[rows], np.concatenate([[0], np.cumsum(fail)]), rate)

    def elevated(self, start_ms: int, end_ms: int, own_failures: int, own_runs: int) -> bool:
        """Whether the runs in [start_ms, end_ms), less a test's own there, fail beyond the usual rate."""
        lo, hi = np.searchsorted(self.time_ms, [start_ms, end_ms], side="left")
        failures = int(self.failed_before[hi] - self.failed_before[lo]) - own_failures
        runs = int(hi - lo) - own_runs
        return failures >= 1 and float(stats.poisson.sf(failures - 1, self.rate * runs)) < FLEET_ELEVATED_P


def score_tests(inputs: FlakeInputs, config: AnalysisConfig) -> list[dict[str, Any]]:
    frame = inputs.frame
    rows = np.flatnonzero(inputs.selected)
    if rows.size == 0:
        return []
    rows = rows[grouped(frame.cols["test"][rows], frame.time_ms[rows])]
    test = frame.cols["test"][rows]
    starts = np.flatnonzero(np.concatenate([[True], test[1:] != test[:-1]]))
    ends = np.concatenate([starts[1:], [rows.size]])
    weights = 0.5 ** ((inputs.as_of_ms - frame.time_ms) / (config.flake_half_life_days * DAY_MS))
    entities = entity_of(frame)
    lone = _pools_of_one(frame, rows, entities)
    scored = [
        _score_one(inputs, rows[s:e], weights, entities, lone, config)
        for s, e in zip(starts, ends, strict=True)
    ]
    counted = _CountedRuns.of(frame, np.flatnonzero(inputs.selected & (inputs.discount < 0)))
    _flaky_beyond_the_noise(frame, scored, entities, counted, config)
    scores = [result for result, _ in scored]
    scores.sort(key=lambda item: (-item["lower"], item["test_id"]))
    return scores


def _pools_of_one(frame: Frame, rows: np.ndarray, entities: np.ndarray) -> frozenset[int]:
    """The pools whose `rows` all ran on one runner (or one host, for ephemeral runners)."""
    where = entities[rows]
    if where.size == 0:
        return frozenset()
    pairs, _ = unique_pairs(frame.cols["pool"][rows], where - where.min())
    pools, count = np.unique(pairs[0], return_counts=True)
    return frozenset(int(p) for p in pools[count == 1])


def _score_one(
    inputs: FlakeInputs,
    rows: np.ndarray,
    weights: np.ndarray,
    entities: np.ndarray,
    lone: frozenset[int],
    config: AnalysisConfig,
) -> tuple[dict[str, Any], np.ndarray]:
    """A test's score and verdict, and the rows that count for it (those no incident or outage took).
    `lone`: the pools of one runner or host, where a test failing on it alone fails on its platform."""
    frame = inputs.frame
    fail = frame.fail[rows]
    discounted = inputs.discount[rows] >= 0
    keep = rows[~discounted]
    kept_fail = frame.fail[keep]
    w = weights[keep]
    alpha = 0.5 + float((w * kept_fail).sum())
    beta = 0.5 + float((w * ~kept_fail).sum())
    by_reason: dict[str, int] = {}
    for index in inputs.discount[rows[discounted & fail]]:
        by_reason[inputs.reasons[index]] = by_reason.get(inputs.reasons[index], 0) + 1
    result: dict[str, Any] = {
        "test_id": frame.name("test", frame.cols["test"][rows[0]]),
        "verdict": "healthy",
        "score": alpha / (alpha + beta),
        "lower": float(stats.beta.ppf(0.05, alpha, beta)),
        "upper": float(stats.beta.ppf(0.95, alpha, beta)),
        "executions": int(rows.size),
        "failures": int(fail.sum()),
        "counted_executions": int(keep.size),
        "counted_failures": int(kept_fail.sum()),
        "discounted_failures": int((discounted & fail).sum()),
        "discounted_by": by_reason,
        "naive_score": float(fail.mean()),
        "failing_runners": int(np.unique(entities[keep[kept_fail]]).size),
        "reason": "",
    }
    if result["counted_failures"] == 0:
        return result, keep
    broken = _broken_or_platform(frame, keep, entities[keep], config, lone)
    if broken is not None:
        result["verdict"], result["reason"] = broken
        return result, keep
    resource = _resource_sensitive(inputs, keep, config)
    if resource is not None:
        result["verdict"], result["reason"] = "resource-sensitive", resource
        return result, keep
    interaction = _interaction(frame, keep, entities[keep], config)
    if interaction is not None:
        result["reason"] = interaction
        return result, keep
    if result["test_id"].startswith(JOB_TEST_PREFIX):
        # A provider's job without a test report: its failures tell where it ran (a sick runner), but a
        # job failing now and then fails for a test it does not name, and a job is nothing to quarantine.
        result["reason"] = "a CI job's own outcome, not a test: its flaky tests are what fail it"
        return result, keep
    if (
        keep.size >= config.flake_min_executions
        and result["counted_failures"] >= config.flake_min_failures
        and _clears_floor(result["lower"], entities[keep], kept_fail, config)
        and (chance := _chance_shown(frame, keep)) is not None
    ):
        result["verdict"] = "flaky"
        runners = result["failing_runners"]
        result["reason"] = (
            f"{counted(result['counted_failures'], 'failure')} outside incidents on {counted(runners, 'runner')}, "
            f"{chance}"
        )
        return result, keep
    in_pool = _flaky_in_one_pool(frame, keep, w, entities[keep], config)
    if in_pool is not None:
        result["verdict"], result["reason"] = "flaky", in_pool
        return result, keep
    with_group = _flaky_with_its_group(inputs, keep, entities[keep], config)
    if with_group is not None:
        result["verdict"], result["reason"] = "flaky", with_group
    return result, keep


def _flaky_with_its_group(
    inputs: FlakeInputs, keep: np.ndarray, where: np.ndarray, config: AnalysisConfig
) -> str | None:
    """Flaky below the floor where its failures are mostly its group's: tests that failed together
    in the same jobs on runners all over the fleet, again and again over days, share a cause that
    comes and goes (a fixture, a service). Noise does not line up like that, so the rate need not
    clear the floor a test failing alone must."""
    frame = inputs.frame
    failed = keep[frame.fail[keep]]
    together = int(inputs.groups.with_recurring_group[failed].sum())
    if (
        failed.size < config.flake_evidence_failures
        or together * 2 < failed.size
        or np.unique(where[frame.fail[keep]]).size < 2
        or _chance_shown(frame, keep) is None
    ):
        return None
    code = int(frame.cols["test"][keep[0]])
    unit = inputs.groups.code_unit
    mates = [frame.name("test", int(t)) or "?" for t in np.flatnonzero(unit == unit[code]) if t != code]
    shown = ", ".join(mates[:3]) + (f" and {len(mates) - 3} more" if len(mates) > 3 else "")
    return (
        f"{together} of {failed.size} failures outside incidents together with tests it fails with "
        f"all over the fleet ({shown}), again and again: a flaky dependency they share"
    )


def _flaky_beyond_the_noise(
    frame: Frame,
    scored: list[tuple[dict[str, Any], np.ndarray]],
    entities: np.ndarray,
    counted: _CountedRuns,
    config: AnalysisConfig,
) -> None:
    """Flaky below the floor where the fleet's healthy tests fail far less: the floor is a conservative
    bound, which a test failing 2.5 % of 400 runs does not reach, yet where the tests called healthy
    fail one run in a thousand between them, ten such failures are no noise. Failures on one runner of
    several are an interaction — not where that runner is the only one that runs it (a static shard's
    slow tests) — and failures bunched into a few hours are something that was down then."""
    healthy = [(result, keep) for result, keep in scored if result["verdict"] == "healthy"]
    # A job's own outcome is no test: its failures are its tests', and would raise the noise.
    healthy = [
        (result, keep) for result, keep in healthy if not result["test_id"].startswith(JOB_TEST_PREFIX)
    ]
    runs = sum(result["counted_executions"] for result, _ in healthy)
    if runs == 0:
        return
    noise = sum(result["counted_failures"] for result, _ in healthy) / runs
    for result, keep in healthy:
        failures, executions = result["counted_failures"], result["counted_executions"]
        if (
            result["reason"]
            or failures < config.flake_beyond_noise_failures
            or (result["failing_runners"] < 2 and np.unique(entities[keep]).size >= 2)
            or result["score"] < config.flake_beyond_noise_rate
        ):
            continue
        p = float(stats.binom.sf(failures - 1, executions, noise))
        chance = _chance_shown(frame, keep)
        if (
            p >= config.flake_beyond_noise_p
            or chance is None
            or _bunched_in_time(frame, keep, counted, config)
        ):
            continue
        result["verdict"] = "flaky"
        result["reason"] = (
            f"{failures} failures outside incidents in {executions} runs on "
            f"{result['failing_runners']} {noun(result['failing_runners'], 'runner')}, {chance}: {result['score']:.1%} where the tests called healthy "
            f"fail {noise:.2%} (binomial p = {p:.1g})"
        )


def _bunched_in_time(frame: Frame, keep: np.ndarray, counted: _CountedRuns, config: AnalysisConfig) -> bool:
    """Whether the test's failures crowd into one span of an hour, or of `outage_max_s`, far beyond
    its other runs (Fisher): what a service it calls being down leaves, where no outage of it was
    found. The span is the densest of those opening at each failure, so the test pays for looking at
    each of them, at both lengths: a flaky test failing 19 times in a week has some afternoon where
    four of them fell. Most outages last under an hour, and six hours of runs around three failures
    in ten minutes hide them. An hour is short enough that, among hundreds of flaky tests, some
    fail three times in one by chance, so there the rest of the fleet (`counted`) must have failed
    beyond its usual rate too, and the failures come from two pipelines or more: one pipeline's jobs
    and its retry failing a flaky test together are that pipeline's bad luck, not something down."""
    time_ms, fail = frame.time_ms[keep], frame.fail[keep]  # in time order (score_tests)
    starts = time_ms[fail]
    spans = sorted({min(BURST_SHORT_S, config.outage_max_s), config.outage_max_s})
    failed_before = np.concatenate([[0], np.cumsum(fail)])
    first = np.searchsorted(time_ms, starts, side="left")
    for span_s in spans:
        stop = np.searchsorted(time_ms, starts + span_s * 1000, side="left")
        inside = failed_before[stop] - failed_before[first]
        densest = int(np.argmax(inside))
        k, n = int(inside[densest]), int(stop[densest] - first[densest])
        held = keep[first[densest] : stop[densest]]
        if span_s < config.outage_max_s and (
            _one_pipeline(frame, held[frame.fail[held]])
            or not counted.elevated(int(starts[densest]), int(starts[densest]) + span_s * 1000, k, n)
        ):
            continue
        rest_k, rest_n = int(fail.sum()) - k, keep.size - n
        p = stats.fisher_exact([[k, n - k], [rest_k, rest_n - rest_k]], alternative="greater").pvalue
        if p * starts.size * len(spans) < config.flake_burst_p:
            return True
    return False


def _one_pipeline(frame: Frame, rows: np.ndarray) -> bool:
    """Whether `rows` all ran in one pipeline run (else, where runs are not known, on one commit)."""
    for column in ("run", "commit"):
        codes = frame.cols[column][rows]
        if (codes >= 0).all():
            return bool(np.unique(codes).size == 1)
    return False


def _clears_floor(lower: float, where: np.ndarray, fail: np.ndarray, config: AnalysisConfig) -> bool:
    """Whether the conservative bound of a test's failure probability is a flaky test's, given where
    its counted runs ran (`where`, one entity per run) and which failed."""
    failures = int(fail.sum())
    if lower >= config.flake_floor:
        return True
    if failures >= config.flake_evidence_failures and lower >= config.flake_floor_with_evidence:
        return True
    return lower >= config.flake_floor_widespread and _spread_thinly(where, fail, config)


def _spread_thinly(where: np.ndarray, fail: np.ndarray, config: AnalysisConfig) -> bool:
    """Failures on many runners, each failing the test no more than its share of the runs predicts:
    what a sick runner or a bad image leaves beyond its incident's edges sits on a few of them."""
    entities, runs = np.unique(where, return_inverse=True)
    failed = np.bincount(runs, weights=fail, minlength=entities.size)
    if np.count_nonzero(failed) < config.flake_widespread_runners:
        return False
    failures = int(fail.sum())
    top = int(np.argmax(failed))
    share = float(np.count_nonzero(runs == top)) / where.size
    return (
        failed[top] <= failures * config.flake_widespread_top_share
        and float(stats.binom.sf(failed[top] - 1, failures, share)) >= config.flake_widespread_p
    )


def _flaky_in_one_pool(
    frame: Frame, keep: np.ndarray, w: np.ndarray, where: np.ndarray, config: AnalysisConfig
) -> str | None:
    """Flaky where it runs on one pool's machines (a timing test on the slower hosts) and steady on the
    others: pooled over every pool its rate drowns under the floor, so each pool is judged on its own.
    The same rules hold inside the pool, one runner alone included (that is an interaction)."""
    pools = frame.cols["pool"][keep]
    if np.unique(pools).size < 2:
        return None
    fail = frame.fail[keep]
    for pool in np.unique(pools[fail]):
        inside = pools == pool
        sub = keep[inside]
        failures = int(fail[inside].sum())
        alpha = 0.5 + float((w[inside] * fail[inside]).sum())
        beta = 0.5 + float((w[inside] * ~fail[inside]).sum())
        runners = np.unique(where[inside][fail[inside]]).size
        elsewhere = int(fail[~inside].sum())
        # Background noise differs a little between pools by chance; a pool-only flake stands out.
        contrast = stats.fisher_exact(
            [[failures, sub.size - failures], [elsewhere, int((~inside).sum()) - elsewhere]],
            alternative="greater",
        ).pvalue
        if (
            contrast < config.flake_pool_contrast_p
            and sub.size >= config.flake_min_executions
            and failures >= config.flake_min_failures
            and runners >= 2
            and _clears_floor(float(stats.beta.ppf(0.05, alpha, beta)), where[inside], fail[inside], config)
            and (chance := _chance_shown(frame, sub)) is not None
        ):
            return (
                f"flaky on pool {frame.name('pool', int(pool))}: {failures} failures outside incidents "
                f"in {sub.size} runs on {counted(runners, 'runner')}, {chance}; steady elsewhere"
            )
    return None


def _interaction(frame: Frame, keep: np.ndarray, where: np.ndarray, config: AnalysisConfig) -> str | None:
    """A test × runner interaction: its failures sit on one runner while it passes on the others.

    A test that only ever ran on one runner (static sharding) gives no such contrast, so its failures
    are judged as the test's own."""
    fail = frame.fail[keep]
    codes, counts = np.unique(where[fail], return_counts=True)
    top = int(codes[np.argmax(counts)])
    on_top = where == top
    top_fails, top_n = int(fail[on_top].sum()), int(on_top.sum())
    rest_fails, rest_n = int(fail[~on_top].sum()), int((~on_top).sum())
    if rest_n < config.broken_min_runs or top_fails < config.flake_max_top_share * (top_fails + rest_fails):
        return None
    _, p = stats.fisher_exact(
        [[top_fails, top_n - top_fails], [rest_fails, rest_n - rest_fails]], alternative="greater"
    )
    if p >= config.interaction_p:
        return None
    return (
        f"{top_fails} of {top_fails + rest_fails} failures on {entity_name(frame, top)}, "
        f"which fails it {top_fails}/{top_n} against {rest_fails}/{rest_n} elsewhere: "
        "a test × runner interaction"
    )


def _chance_shown(frame: Frame, keep: np.ndarray) -> str | None:
    """What shows the test's failures are chance, not its code, as a phrase; None where nothing does.
    It passed and failed on the same code (a commit, else a pipeline run). Where it failed on code
    that ran it once (a static shard runs it once per commit), failures coming back after passes,
    again and again, show it instead: a commit that broke it fails every run until the fix, one
    streak. Code that ran it twice or more and failed each time says the code broke it, unless that
    is a rare rerun among failures each on code that ran it once."""
    fail = frame.fail[keep]
    for column in ("commit", "run"):
        codes = frame.cols[column][keep]
        known = codes >= 0
        if known.any():
            failed_on = set(codes[known & fail].tolist())
            passed_on = set(codes[known & ~fail].tolist())
            if failed_on & passed_on:
                return "with passes on the same code"
            if known.all():
                ran, times = np.unique(codes, return_counts=True)
                failed = np.unique(codes[fail])
                repeated = int(np.isin(failed, ran[times >= 2]).sum())
                streaks = _failure_streaks(fail)
                if 3 * repeated <= failed.size and streaks >= FLAKY_MIN_STREAKS:
                    return f"in {streaks} separate spells between passes, on code it mostly ran once"
                return None
    flips = int(np.count_nonzero(fail[1:] != fail[:-1]))
    return "failing and passing by turns" if flips >= 2 else None


def _failure_streaks(fail: np.ndarray) -> int:
    """How many runs of consecutive failures `fail` (in time order) holds."""
    return int(fail[0]) + int(np.count_nonzero(fail[1:] & ~fail[:-1])) if fail.size else 0


def _broken_or_platform(
    frame: Frame,
    keep: np.ndarray,
    where: np.ndarray,
    config: AnalysisConfig,
    lone: frozenset[int] = frozenset(),
) -> tuple[str, str] | None:
    """('broken', why) when every pool fails (nearly) every run from some time on; ('platform', why)
    when some pools do, on two of their runners or more — or on the one a pool of one (`lone`) has:
    there the platform and the runner cannot be told apart, and the pool is what it stands for —
    while others pass it over the same time."""
    pools = frame.cols["pool"][keep]
    failing: dict[int, int] = {}
    share: dict[int, str] = {}
    spread: set[int] = set()  # pools where it fails on two runners or more
    failed_rows = []
    changed = False  # whether a failing pool passed it before it began failing
    for pool in np.unique(pools):
        in_pool = pools == pool
        sub = keep[in_pool]
        since = _failing_since(frame.fail[sub], config)
        if since is not None:
            stretch, ran = sub[since:], where[in_pool][since:]
            failed_rows.append(stretch[frame.fail[stretch]])
            changed |= since > 0
            failing[int(pool)] = int(frame.time_ms[stretch[0]])
            share[int(pool)] = f"{int(frame.fail[stretch].sum())} of {stretch.size}"
            if np.unique(ran[frame.fail[stretch]]).size >= 2 or int(pool) in lone:
                spread.add(int(pool))
    if not failing:
        return (
            _fails_mostly_on_some_pools(frame, keep, where, config, lone)
            or _was_broken(frame, keep, config)
            or _broken_by_commit(frame, keep, config)
            or _broken_on_some_commits(frame, keep, config)
        )
    start = min(failing.values())
    passing = []
    elsewhere = []  # pools that ran it since on other code only (a release branch's pool): no evidence
    for pool, later in _runs_judged(frame, keep, start, failing, failed_rows, changed).items():
        if later is None or frame.fail[later].mean() >= 0.5:
            elsewhere.append(pool)  # other code only, or failing on the same code too
        elif later.size >= config.broken_min_runs:
            passing.append(pool)
    names = ", ".join(sorted(frame.name("pool", p) or "?" for p in failing))
    if passing:
        # A pool's platform, not one runner's problem with the test (an interaction, or the only
        # runner of a static shard short of disk): the resource and interaction checks tell those.
        if not spread:
            return _fails_mostly_on_some_pools(frame, keep, where, config, lone)
        return _platform(frame, {p: share[p] for p in spread}, start, passing)
    if len(failing) + len(elsewhere) == np.unique(pools[frame.time_ms[keep] >= start]).size:
        return "broken", f"fails (nearly) every run since {iso(start)} (pools: {names})"
    return (
        _fails_mostly_on_some_pools(frame, keep, where, config, lone)
        or _broken_by_commit(frame, keep, config)
        or _broken_on_some_commits(frame, keep, config)
    )


def _fails_mostly_on_some_pools(
    frame: Frame,
    keep: np.ndarray,
    where: np.ndarray,
    config: AnalysisConfig,
    lone: frozenset[int] = frozenset(),
) -> tuple[str, str] | None:
    """('platform', why) when some pools fail most of its runs from some time on (platform_min_rate
    of four times broken_min_runs or more), on two runners or more, while every other pool passes
    (nearly) all of them then, pools that ran it a few times and passed aside. A flaky test failing
    half its runs fails on every platform; one that fails two runs in three on arm and never on linux
    is arm's, letting a run through now and then."""
    pools = frame.cols["pool"][keep]
    failing: dict[int, tuple[int, str]] = {}
    failed_rows = []
    changed = False
    for pool in np.unique(pools):
        in_pool = pools == pool
        sub = keep[in_pool]
        since = _mostly_failing_since(frame.fail[sub], config.platform_min_rate, 4 * config.broken_min_runs)
        if since is None:
            continue
        stretch = sub[since:]
        if np.unique(where[in_pool][since:][frame.fail[stretch]]).size < 2 and int(pool) not in lone:
            continue
        failed_rows.append(stretch[frame.fail[stretch]])
        changed |= since > 0
        failing[int(pool)] = (
            int(frame.time_ms[stretch[0]]),
            f"{int(frame.fail[stretch].sum())} of {stretch.size}",
        )
    if not failing:
        return None
    start = min(since for since, _ in failing.values())
    passing = []
    for pool, later in _runs_judged(frame, keep, start, failing, failed_rows, changed).items():
        if later is None:
            continue  # it ran other code there: neither for nor against the platform
        if later.size < 2 * config.broken_min_runs and not frame.fail[later].any():
            continue  # a pool that ran it a few times and passed tells nothing either way
        if (
            later.size < 2 * config.broken_min_runs
            or frame.fail[later].mean() > config.platform_max_elsewhere
        ):
            return None
        passing.append(pool)
    if not passing:
        return None
    return _platform(frame, {p: share for p, (_, share) in failing.items()}, start, passing)


def _runs_judged(
    frame: Frame,
    keep: np.ndarray,
    start: int,
    failing: Collection[int],
    failed_rows: list[np.ndarray],
    changed: bool,
) -> dict[int, np.ndarray | None]:
    """Per pool that ran the test since `start`, other than the `failing` ones: the runs it is judged
    on (`_on_code`), or None where they tell nothing of platforms. `changed`: whether a failing pool
    passed it before it began failing."""
    pools = frame.cols["pool"][keep]
    since = frame.time_ms[keep] >= start
    runs = {int(p): keep[since & (pools == p)] for p in np.unique(pools[since]) if int(p) not in failing}
    commits = frame.cols["commit"][np.concatenate(failed_rows)]
    code = None if (commits < 0).any() else np.unique(commits)
    # Another pool failing the same commits too: the failures follow the code.
    code_bound = changed or any(
        (shared := _runs_on(frame, rows, code)) is not None
        and shared.size > 0
        and frame.fail[shared].mean() >= 0.5
        for rows in runs.values()
    )
    return {pool: _on_code(frame, rows, code, code_bound) for pool, rows in runs.items()}


def _runs_on(frame: Frame, rows: np.ndarray, code: np.ndarray | None) -> np.ndarray | None:
    """Those of these runs that tested a commit of `code`; None where commits are unknown on either side."""
    commits = frame.cols["commit"][rows]
    if code is None or (commits < 0).any():
        return None
    shared: np.ndarray = rows[np.isin(commits, code)]
    return shared


def _on_code(frame: Frame, rows: np.ndarray, code: np.ndarray | None, code_bound: bool) -> np.ndarray | None:
    """The runs of a pool that tell whether it passes what the failing pools failed: those that tested
    a commit of `code`, the failing runs' commits. Where it ran none of them: None where the failures
    follow the code (`code_bound`: the failing pools passed it before, or another pool fails those
    commits too), since a pool that only runs a release branch without the breaking commit tells
    nothing of platforms; else all of its runs, since a platform fails whatever the commit. Where
    commits are unknown, all of its runs."""
    shared = _runs_on(frame, rows, code)
    if shared is None or shared.size:
        return rows if shared is None else shared
    return None if code_bound else rows


def _platform(frame: Frame, shares: dict[int, str], start: int, passing: list[int]) -> tuple[str, str]:
    """The platform verdict: what each failing pool failed since `start`, and the pools passing it."""
    runs = "; ".join(f"{share} runs on pool {frame.name('pool', p)}" for p, share in sorted(shares.items()))
    others = ", ".join(sorted(frame.name("pool", p) or "?" for p in passing))
    return "platform", f"fails {runs} since {iso(start)} while passing on {others}"


def _mostly_failing_since(fail: np.ndarray, rate: float, min_runs: int) -> int | None:
    """Earliest index from which `rate` or more of the runs fail, over `min_runs` runs or more up to the
    last; None where none of the last six failed (recovered: at half, that is one chance in 64)."""
    n = fail.size
    if n < min_runs or not fail[-6:].any():
        return None
    tail_fails = np.cumsum(fail[::-1])[::-1]
    tail_count = np.arange(n, 0, -1)
    lead = np.where(tail_count >= min_runs, tail_fails - rate * tail_count, -np.inf)
    start = int(np.argmax(lead))
    return start if lead[start] >= 0 else None


def _was_broken(frame: Frame, keep: np.ndarray, config: AnalysisConfig) -> tuple[str, str] | None:
    """A stretch where every run failed, on several runners, that has since been fixed: a broken commit
    and its revert, not flakiness. Twice the usual length, so a very flaky test's unlucky streak is not
    taken for one."""
    fail = frame.fail[keep]
    if fail.size == 0:
        return None
    edges = np.flatnonzero(np.diff(np.concatenate([[0], fail.astype(np.int8), [0]])))
    starts, stops = edges[::2], edges[1::2]
    lengths = stops - starts
    longest = int(np.argmax(lengths))
    if lengths[longest] < 2 * config.broken_min_runs:
        return None
    run = keep[starts[longest] : stops[longest]]
    if np.unique(frame.cols["runner"][run]).size < 2:
        return None
    first, last = iso(int(frame.time_ms[run[0]])), iso(int(frame.time_ms[run[-1]]))
    return "broken", f"failed every run from {first} to {last} ({lengths[longest]} runs), passing again since"


def _broken_by_commit(frame: Frame, keep: np.ndarray, config: AnalysisConfig) -> tuple[str, str] | None:
    """Broken by the code, not by time: every run of a stretch of consecutive commits (in the order
    they were first seen) failed, on several runners, and the other commits' runs pass. Reruns of
    older commits keep passing after the break, so in time order the failures never line up."""
    commits = frame.cols["commit"][keep]
    if commits.size == 0 or (commits < 0).any():
        return None
    fail = frame.fail[keep]
    codes, inverse = np.unique(commits, return_inverse=True)
    runs = np.bincount(inverse)
    failures = np.bincount(inverse, weights=fail.astype(float))
    first_seen = np.full(codes.size, np.iinfo(np.int64).max)
    np.minimum.at(first_seen, inverse, frame.time_ms[keep])
    order = np.argsort(first_seen, kind="stable")
    all_failed = (failures >= runs)[order]
    edges = np.flatnonzero(np.diff(np.concatenate([[0], all_failed.astype(np.int8), [0]])))
    starts, stops = edges[::2], edges[1::2]
    if starts.size == 0:
        return None
    sizes = np.array([runs[order[a:z]].sum() for a, z in zip(starts, stops, strict=True)])
    best = int(np.argmax(sizes))
    if sizes[best] < 2 * config.broken_min_runs:
        return None
    broken = np.isin(inverse, order[starts[best] : stops[best]])
    if np.unique(frame.cols["runner"][keep[broken]]).size < 2 or fail[~broken].sum() > 0.5 * (~broken).sum():
        return None
    since = iso(int(first_seen[order[starts[best]]]))
    count = int(stops[best] - starts[best])
    if stops[best] == codes.size:
        return "broken", f"fails every run of the {count} commits first seen since {since}"
    return "broken", f"failed every run of {count} consecutive commits from {since}, passing on later ones"


def _broken_on_some_commits(frame: Frame, keep: np.ndarray, config: AnalysisConfig) -> tuple[str, str] | None:
    """Broken by some code only — a release branch's commits, interleaved in time with the commits it
    passes on: the commits it failed in every job they ran in, on several runners, are far more than
    its failure rate makes likely. A job counts once, however many times it retried the test.

    Under chance, a commit run in n jobs fails all of them with probability rate**n. For each k, the
    commits run in k jobs or more that failed in all are counted against that expectation (Poisson);
    the most telling k decides, Bonferroni-corrected over the k tried."""
    commits = frame.cols["commit"][keep]
    if commits.size == 0 or (commits < 0).any():
        return None
    # One entry per (commit, job): failed when every attempt in the job failed.
    jobs_of, row_job = np.unique(
        np.stack([commits.astype(np.int64), frame.units_of(keep)]), axis=1, return_inverse=True
    )
    row_job = row_job.ravel()
    job_failed = np.bincount(row_job, weights=~frame.fail[keep]) == 0
    _, job_commit = np.unique(jobs_of[0], return_inverse=True)
    jobs = np.bincount(job_commit)
    all_failed = np.bincount(job_commit, weights=job_failed) >= jobs
    rate = float(job_failed.mean())
    on_broken = all_failed[job_commit][row_job]  # per row: its commit failed in every job
    if (
        rate >= 0.5
        or jobs[all_failed].sum() < 2 * config.broken_min_runs
        or np.unique(frame.cols["runner"][keep[on_broken]]).size < 2
    ):
        return None
    tried = [k for k in range(2, int(jobs[all_failed].max()) + 1) if (all_failed & (jobs >= k)).any()]
    best = 1.0
    for k in tried:
        expected = float((rate ** jobs[jobs >= k]).sum())
        observed = int((all_failed & (jobs >= k)).sum())
        best = min(best, float(stats.poisson.sf(observed - 1, expected)) * len(tried))
    if best > config.broken_code_p:
        return None
    count = int(all_failed.sum())
    return "broken", (
        f"fails in every job of {count} commits ({int(jobs[all_failed].sum())} jobs) and passes on the others: "
        f"{best:.1g} likely by chance at its rate of {rate:.1%} per job"
    )


def _failing_since(fail: np.ndarray, config: AnalysisConfig) -> int | None:
    """Earliest index from which (nearly) every run fails up to the last runs: broken_min_rate of at
    least broken_min_runs runs, or broken_long_min_rate of twice as many — a test failing nine runs in
    ten on one platform passes now and then, while a flaky one fails four of five by chance far more
    often than eight of ten. A test whose last three runs all passed has recovered."""
    n = fail.size
    if n < config.broken_min_runs:
        return None
    tail_fails = np.cumsum(fail[::-1])[::-1]
    tail_count = np.arange(n, 0, -1)
    ok = (tail_count >= config.broken_min_runs) & (tail_fails >= config.broken_min_rate * tail_count)
    ok |= (tail_count >= 2 * config.broken_min_runs) & (
        tail_fails >= config.broken_long_min_rate * tail_count
    )
    if not ok.any() or not fail[-3:].any():
        return None
    # Where the failing stretch begins: a few passes before a break would still leave eight in ten
    # failing, so the start is where the failures' lead over that share is largest.
    lead = np.where(ok, tail_fails - config.broken_long_min_rate * tail_count, -np.inf)
    return int(np.argmax(lead))


def failing_under(fail: np.ndarray, under: np.ndarray, min_share: float) -> float:
    """How unlikely it is that a test's runs `under` a condition (a disk short of space, a cache read
    bad) fail as much more than the rest as they did (one-sided Fisher exact); 1.0 where fewer than
    `min_share` of its failures came under it."""
    fails_under, fails_else = int((fail & under).sum()), int((fail & ~under).sum())
    if fails_under == 0 or fails_under < min_share * (fails_under + fails_else):
        return 1.0
    passes_under, passes_else = int((~fail & under).sum()), int((~fail & ~under).sum())
    _, p = stats.fisher_exact([[fails_under, fails_else], [passes_under, passes_else]], alternative="greater")
    return float(p)


def _resource_sensitive(inputs: FlakeInputs, keep: np.ndarray, config: AnalysisConfig) -> str | None:
    # Runs on runners that sent no reading then (no agent, or a silent one) cannot say either way.
    seen = inputs.resource_seen[keep]
    unseen_failures = int(inputs.frame.fail[keep[~seen]].sum())
    keep = keep[seen]
    fail = inputs.frame.fail[keep]
    bad = inputs.resource_bad[keep]
    fails_bad, fails_ok = int((fail & bad).sum()), int((fail & ~bad).sum())
    if fails_bad < 3:
        return None
    p = failing_under(fail, bad, config.resource_min_share)
    if p >= config.resource_p:
        return None
    unseen = f" ({unseen_failures} more on runners that sent no readings then)" if unseen_failures else ""
    return (
        f"{fails_bad} of {fails_bad + fails_ok} failures came while the runner was short of disk or memory "
        f"(Fisher exact p={p:.2g}){unseen}; it passes elsewhere"
    )
