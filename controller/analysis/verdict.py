"""Verdicts: a cluster becomes an incident — sick when the entity's own readings lie near its failures
(naming a dimension, or `unknown` where none was bad), suspect where none do, resolved when it has
run cleanly since. Everything `explain` shows is kept on the incident."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from common.timeutil import iso
from controller.analysis.attribution import Cluster, worked_a_clean_run
from controller.analysis.clusters import exact_p, max_segment
from controller.analysis.config import AnalysisConfig
from controller.analysis.evidence import Badness, Finding, examine
from controller.analysis.frame import Frame
from controller.analysis.levels import Level

# A verdict resolves once its clean run would show this few failures at most this often if the
# entity still failed at its stretch's rate.
RESOLVE_P = 0.05
# ...and its runs since fail at most this share more than its tests' rates elsewhere (or at most twice).
RESOLVE_MAX_EXCESS = 0.001
# Other entities' runs a verdict's stretch needs before its rate is taken as theirs, not its own.
RESOLVE_MIN_PEER_RUNS = 20
# A verdict is not resolved while the tests its stretch failed go on failing on it this many times
# their rates elsewhere, beyond chance (Poisson) and at least this often: the same break, only quieter.
RESOLVE_SAME_TESTS_RATIO = 3.0
RESOLVE_SAME_TESTS_P = 1e-3
RESOLVE_SAME_TESTS_MIN = 3
# Runs of those tests on the entity before its onset that tell their usual rate there.
RESOLVE_MIN_RUNS_BEFORE = 50
# How far beyond its tests' rates a runner's runs since its named dimension went bad must fail for the
# onset to go back to then (the readings have dated it; the failures only have to agree).
ONSET_BEFORE_P = 0.05
READING_COLUMN = {"pool": "r_pool", "image": "r_image", "machine": "r_machine", "runner": "r_runner"}


def incident_id(kind: str, entity: str, first_bin: int) -> str:
    digest = hashlib.blake2b(f"{kind}\x1f{entity}\x1f{first_bin}".encode(), digest_size=6).hexdigest()
    return f"inc-{digest}"


def build_incident(
    cluster: Cluster,
    level: Level,
    frame: Frame,
    badness: Badness,
    bins: np.ndarray,
    usable: np.ndarray,
    cutoff: float,
    as_of_ms: int,
    config: AnalysisConfig,
    others: Sequence[np.ndarray] = (),
) -> tuple[dict[str, Any], np.ndarray]:
    """The incident for one cluster, and the tests its stretch broke (failing twice or more, beyond
    twice their rates there, and not before its onset). `others` are the other clusters' stretches (a mask each): what
    they explain is judged at their rate when this one is asked whether it ran cleanly since."""
    seg = cluster.segment
    rows = seg.rows
    fail = frame.fail
    failed = rows[fail[rows]]
    onset = _onset(frame, rows, cluster.expected, bins, seg.ratio, config)
    end_ms = int((seg.last_bin + 1) * config.bin_s * 1000)
    chronic = _chronic_tests(frame, rows, cluster.expected, bins, seg.ratio, onset, config)
    if chronic.size:
        # Dated, evidenced and resolved on the other tests: the chronic ones fail on regardless.
        rows = rows[~np.isin(frame.cols["test"][rows], chronic)]
        failed = rows[fail[rows]]
        onset = _onset(frame, rows, cluster.expected, bins, seg.ratio, config)
        end_ms = min(end_ms, int((bins[failed].max() + 1) * config.bin_s * 1000))
    last_failure = int(frame.time_ms[failed].max())
    entity_name = frame.name(level.name, seg.entity) or "?"

    reading_rows = np.flatnonzero(getattr(frame, READING_COLUMN[level.name]) == seg.entity)
    reading_rows = reading_rows[frame.r_time_ms[reading_rows] <= as_of_ms]
    # The failures from the onset: a stray one hours before is not what the readings must explain.
    finding = examine(
        frame,
        badness,
        reading_rows,
        failed[frame.time_ms[failed] >= onset],
        onset,
        end_ms,
        config,
        hosts_agree=level.name in ("image", "pool"),
    )
    onset = _onset_after_readings(frame, rows, cluster.expected, onset, finding, config)
    onset = _onset_before_stretch(
        frame, level, seg.entity, usable, cluster.expected, onset, finding, badness, reading_rows, config
    )
    since_onset = failed[frame.time_ms[failed] >= onset]
    before = np.flatnonzero((level.entity == seg.entity) & usable & (frame.time_ms < onset))
    stretch_tests = np.setdiff1d(
        _tests_in_excess(frame, rows[frame.time_ms[rows] >= onset], cluster.expected),
        _tests_in_excess(frame, before, cluster.expected),
    )
    before = before[np.isin(frame.cols["test"][before], stretch_tests)]
    # What those tests failed there before: their rates elsewhere miss tests only it runs.
    rate_before = float(frame.fail[before].mean()) if before.size >= RESOLVE_MIN_RUNS_BEFORE else 0.0
    # The bar this hypothesis had to pass: Benjamini–Hochberg's critical value at its rank (q·rank/m,
    # i.e. p·q/q-value). The cutoff alone (the largest p accepted) is the cluster's own p when it is
    # the only one, and would date every lone verdict to its last failure.
    bar = max(cutoff, config.fdr_q * seg.p_adjusted / seg.q_value) if seg.q_value > 0 else cutoff
    decided = _decided_at(frame, rows, cluster.expected, seg.bins_tested, bar)
    state = "suspect"
    if finding.dimension != "unknown":
        state = "sick"
        decided = max(decided, finding.confirmed_at_ms or decided)
    elif _read_while_failing(finding):
        # Its agents reported around its failures and no dimension was bad: sick of something the
        # readings do not measure (a bad image's software, a broken proxy). Suspect is for a cluster
        # no agent reported on: the readings might have named it.
        state = "sick"
    decided = max(decided, onset)  # no verdict is decided on data from before what it is about
    clean_since = usable
    if chronic.size:
        clean_since = clean_since & ~np.isin(frame.cols["test"], chronic)
    since_expected = _expected_beside(
        frame, cluster.expected, level.entity == seg.entity, usable, others, host=level.name == "machine"
    )
    excess_rate = (seg.failures - seg.expected) / max(seg.executions, 1)
    # The scan's stretch runs on over a few stray failures after the fix, days of them at worst; where
    # the stretch ended by its own rate, it has run cleanly since if anywhere.
    ends = {_end_by_own_rate(frame, rows, cluster.expected, bins, config), (end_ms, last_failure)}
    resolution = None
    for candidate_end, candidate_failure in sorted(e for e in ends if e[0] <= end_ms):
        # Readings that named the cause and read healthy since are evidence of their own that it
        # healed: fewer clean jobs need to confirm it (a runner idle for the night after its fix).
        healed = finding.dimension != "unknown"
        if healed and not _healthy_since(frame, badness, reading_rows, finding, candidate_end, config):
            continue
        resolved_at = _resolved_at(
            frame,
            level,
            seg.entity,
            candidate_end,
            candidate_failure,
            since_expected,
            clean_since,
            (stretch_tests, rate_before),
            as_of_ms,
            excess_rate,
            config.resolve_after_jobs_healed if healed else config.resolve_after_jobs,
            config,
        )
        if resolved_at is not None:
            state, resolution = "resolved", "ran at the expected failure rate since the stretch ended"
            end_ms, last_failure = candidate_end, candidate_failure
            break
    if (
        state != "resolved"
        and level.name == "image"
        and (retired := _retired(frame, level, seg.entity, as_of_ms, config))
    ):
        last_run_ms, resolution = retired
        state = "resolved"
        bin_ms = config.bin_s * 1000
        end_ms = min(end_ms, (last_run_ms // bin_ms + 1) * bin_ms)  # the end of the hour it last ran

    incident = {
        "id": incident_id(level.name, entity_name, seg.first_bin),
        "kind": level.name,
        "entity": entity_name,
        "state": state,
        "dimension": finding.dimension,
        "onset": iso(onset),
        "decided_at": iso(decided),
        "last_failure": iso(last_failure),
        "end": iso(end_ms) if state == "resolved" else None,
        "resolution": resolution,
        "pool": _names(frame, "pool", rows),
        "statistics": {
            "test": "one-sided exact binomial over the stretch, expected from the same tests on peers",
            "failures": seg.failures,
            "executions": seg.executions,
            "expected": round(seg.expected, 3),
            "ratio": round(seg.ratio, 2) if seg.expected > 0 else None,
            "p_value": seg.p_value,
            "p_adjusted": seg.p_adjusted,
            "q_value": seg.q_value,
            "bh_cutoff": cutoff,
            "bh_bar": bar,
            "bins_scanned": seg.bins_tested,
            "distinct_tests": int(np.unique(frame.cols["test"][seg.rows[frame.fail[seg.rows]]]).size),
            # Tests that fail together wherever a fixture they share is down count once (cofailing.py).
            "distinct_units": seg.distinct_units,
            "failed_jobs": seg.failed_jobs,
            "without_top_test_p": seg.without_top_test_p,
            "beyond_top_two_p": seg.beyond_top_two_p,
            "passed_elsewhere": _passed_elsewhere(frame, level, seg, bins, usable),
            "spread": cluster.child_note,
        },
        "evidence": {
            "dimension": finding.dimension,
            "coverage": round(finding.coverage, 3),
            "per_dimension": {k: round(v, 3) for k, v in finding.per_dimension.items()},
            "readings_seen": finding.readings_seen,
            "failures_examined": finding.failures_examined,
            "failures_readable": finding.failures_readable,
            "failures_near_readings": finding.failures_near_readings,
            "runners_reporting": finding.runners_reporting,
            "onset": iso(finding.onset_ms),
            "readings": [_reading(frame, r) for r in finding.examples],
        },
        "runners": _names(frame, "runner", rows),
        "persistent_runners": _names(frame, "runner", rows[~frame.ephemeral[rows]]),
        "machines": _names(frame, "machine", rows),
        "tests": _top_tests(frame, since_onset),
        "affected_jobs": _jobs(frame, since_onset),
    }
    return incident, stretch_tests


def _read_while_failing(finding: Finding) -> bool:
    """Whether readings of the runners or hosts that failed lie near most of its failures."""
    return finding.failures_examined > 0 and 2 * finding.failures_near_readings >= finding.failures_examined


def _onset(
    frame: Frame,
    rows: np.ndarray,
    expected: np.ndarray,
    bins: np.ndarray,
    ratio: float,
    config: AnalysisConfig,
) -> int:
    """When the excess began: the stretch scanned again at the rate actually seen, so a stray failure
    hours before the real onset — followed by clean runs a sick runner would not have — is left out."""
    unique, inverse = np.unique(bins[rows], return_inverse=True)
    obs = np.bincount(inverse, weights=frame.fail[rows].astype(float))
    exp = np.bincount(inverse, weights=expected[rows])
    r = max(config.alternative_ratio, ratio / 2)
    found = max_segment(obs * math.log(r) - (r - 1) * exp)
    first_bin = unique[found[0]] if found else unique[0]
    failed = rows[frame.fail[rows] & (bins[rows] >= first_bin)]
    return int(frame.time_ms[failed].min())


def _chronic_tests(
    frame: Frame,
    rows: np.ndarray,
    expected: np.ndarray,
    bins: np.ndarray,
    ratio: float,
    onset: int,
    config: AnalysisConfig,
) -> np.ndarray:
    """The one or two tests that opened the stretch long before the rest and failed as steadily
    before the others began as after: a platform test only this runner's shard runs, or a test ×
    runner interaction. They are not the sickness — one test failing over and over is not a sick
    runner — and dating the verdict from them reaches back days, into jobs a rerun would not fix.
    Empty unless the other tests' failures before then are no excess of their own."""
    test, fail, times = frame.cols["test"][rows], frame.fail[rows], frame.time_ms[rows]
    since = times >= onset
    if not fail[since].any():
        return np.zeros(0, np.int32)
    top = _most_failed(frame, rows[since])
    wide = ~np.isin(test, top)
    if not fail[wide & since].any():
        return np.zeros(0, np.int32)
    broad = _onset(frame, rows[wide], expected, bins, ratio, config)
    if broad - onset < config.chronic_lead_s * 1000:
        return np.zeros(0, np.int32)
    before, after = since & (times < broad), times >= broad
    chronic = []
    for candidate in top:
        mine = test == candidate
        runs_before, runs_after = int((mine & before).sum()), int((mine & after).sum())
        fails_before, fails_after = int((mine & before & fail).sum()), int((mine & after & fail).sum())
        if (
            fails_before >= config.min_failures
            and runs_after
            and (fails_before / runs_before >= 0.5 * fails_after / runs_after)
        ):
            chronic.append(candidate)
    if not chronic:
        return np.zeros(0, np.int32)
    others = rows[before & ~np.isin(test, chronic)]
    if others.size and _an_excess_of_its_own(frame, others, expected, config):
        return np.zeros(0, np.int32)
    return np.asarray(chronic, np.int32)


def _an_excess_of_its_own(
    frame: Frame, rows: np.ndarray, expected: np.ndarray, config: AnalysisConfig
) -> bool:
    """Whether these rows pass, by their numbers, the bar a cluster its readings confirm must pass."""
    failures, expect = float(frame.fail[rows].sum()), float(expected[rows].sum())
    return (
        exact_p(failures, float(rows.size), expect) <= config.fdr_q
        and failures >= config.confirmed_min_ratio * expect
        and failures - expect >= config.confirmed_min_excess_rate * rows.size
    )


def _onset_after_readings(
    frame: Frame, rows: np.ndarray, expected: np.ndarray, onset: int, finding: Finding, config: AnalysisConfig
) -> int:
    """The first failure near the readings' onset, where the stretch before it shows no excess of its
    own: a weak fault scanned at a low rate reaches back over a day of clean runs to a stray failure,
    while its readings say when the dimension went bad. "An excess of its own" is the bar a cluster
    its readings confirm must pass."""
    if finding.onset_ms is None:
        return onset
    start = finding.onset_ms - config.reading_stale_s * 1000
    times = frame.time_ms[rows]
    before = rows[(times >= onset) & (times < start)]
    if before.size == 0:
        return onset
    if _an_excess_of_its_own(frame, _without_top_tests(frame, before), expected, config):
        return onset  # the failures before the readings went bad are an excess of their own
    later = times[frame.fail[rows] & (times >= start)]
    return int(later.min()) if later.size else onset


def _onset_before_stretch(
    frame: Frame,
    level: Level,
    entity: int,
    usable: np.ndarray,
    expected: np.ndarray,
    onset: int,
    finding: Finding,
    badness: Badness,
    reading_rows: np.ndarray,
    config: AnalysisConfig,
) -> int:
    """The first failure since the named dimension went bad (after its last healthy reading), where
    that was before the stretch and every reading of it since read bad, and the runner's (or host's)
    runs since then up to the onset fail beyond their tests' rates: a poisoned cache fails the few tests that read it now and then for
    days before they fail often enough for the scan, and its digest said so all along. Only for a
    cache or a clock, which are wrong whenever they read so: a disk or memory under pressure for days
    is also what resource-sensitive tests fail under, now and then, on a runner not yet sick."""
    if (
        finding.dimension not in ("cache", "clock")
        or finding.onset_ms is None
        or level.name not in ("runner", "machine")
    ):
        return onset
    dimension = finding.dimension
    mine = reading_rows[frame.r_check[reading_rows] == badness.check_of[dimension]]
    mine = mine[np.argsort(frame.r_time_ms[mine], kind="stable")]
    bad = badness.bad[dimension][mine]
    at = int(np.searchsorted(frame.r_time_ms[mine], finding.onset_ms))
    healthy = np.flatnonzero(~bad[:at])
    # It went bad after its last healthy reading, not at its first bad one: a poisoned cache may
    # fail a job in the half hour between them.
    since = int(frame.r_time_ms[mine[healthy[-1]]]) + 1 if healthy.size else int(frame.r_time_ms[mine[0]])
    if since >= onset:
        return onset
    before = np.flatnonzero(
        usable & (level.entity == entity) & (frame.time_ms >= since) & (frame.time_ms < onset)
    )
    failed = before[frame.fail[before]]
    # Not whether it was sick (it is), only since when: beyond its tests' rates at a nominal level.
    expect = float(expected[before].sum())
    if failed.size < 2 * expect or exact_p(float(failed.size), float(before.size), expect) > ONSET_BEFORE_P:
        return onset
    return int(frame.time_ms[failed].min())


def _without_top_tests(frame: Frame, rows: np.ndarray) -> np.ndarray:
    """The rows without the two tests that failed most among them: one or two tests failing over and
    over (a test only this runner's shard runs, a test × runner interaction) are not a sickness of
    their own, as a cluster needs breadth."""
    return rows[~np.isin(frame.cols["test"][rows], _most_failed(frame, rows))]


def _most_failed(frame: Frame, rows: np.ndarray, count: int = 2) -> np.ndarray:
    """The tests that failed most among the rows, most first (ties by code)."""
    tests, failures = np.unique(frame.cols["test"][rows[frame.fail[rows]]], return_counts=True)
    out: np.ndarray = tests[np.argsort(-failures, kind="stable")[:count]]
    return out


def _decided_at(frame: Frame, rows: np.ndarray, expected: np.ndarray, penalty: int, cutoff: float) -> int:
    """Time of the execution after which the stretch so far was already beyond chance."""
    order = rows[np.argsort(frame.time_ms[rows], kind="stable")]
    cum_o = np.cumsum(frame.fail[order])
    cum_e = np.cumsum(expected[order])
    n = np.arange(1, order.size + 1)
    candidates = np.flatnonzero(frame.fail[order])
    for i in candidates:
        if exact_p(float(cum_o[i]), float(n[i]), float(cum_e[i])) * penalty <= cutoff:
            return int(frame.time_ms[order[i]])
    return int(frame.time_ms[order[-1]])


def _resolved_at(
    frame: Frame,
    level: Level,
    entity: int,
    end_ms: int,
    last_failure_ms: int,
    expected: np.ndarray,
    usable: np.ndarray,
    stretch_tests: tuple[np.ndarray, float],
    as_of_ms: int,
    excess_rate: float,
    min_jobs: int,
    config: AnalysisConfig,
) -> int | None:
    """`end_ms` (the end of the stretch's last bin) when the entity has run cleanly since: at its
    expected rate, and long enough that its stretch's excess per execution would have shown — an
    image breaking five tests in a hundred fails a job in three, and a few clean jobs do not heal it.
    Nor is it clean while `stretch_tests` (those the stretch failed, and what they failed there
    before it) still fail far beyond their rates: a bad image's night jobs run fewer of the tests it
    breaks, not none."""
    after = np.flatnonzero(
        (level.entity == entity) & (frame.time_ms >= end_ms) & (frame.time_ms <= as_of_ms) & usable
    )
    if not worked_a_clean_run(frame, after, last_failure_ms, config, min_jobs):
        return None
    o, x = float(frame.fail[after].sum()), float(expected[after].sum())
    # Twice its tests' rate is not clean, unless that is a handful of failures in thousands of runs:
    # on tests that all but never fail elsewhere, six failures where peers had three.
    if o > max(2.0 * x, 2.0) and o - x > RESOLVE_MAX_EXCESS * after.size:
        return None
    if stats.poisson.cdf(o, x + excess_rate * after.size) >= RESOLVE_P:
        return None  # as few failures as these are still likely at the stretch's rate
    tests, rate_before = stretch_tests
    again = after[np.isin(frame.cols["test"][after], tests)]
    # Without the test failing most since: one test failing on and on there is that test's own
    # trouble with the entity (flaky on a busy host), not the break coming back.
    again = again[~np.isin(frame.cols["test"][again], _most_failed(frame, again, count=1))]
    o_again = int(frame.fail[again].sum())
    x_again = max(float(expected[again].sum()), rate_before * again.size)
    if (
        o_again >= max(RESOLVE_SAME_TESTS_MIN, RESOLVE_SAME_TESTS_RATIO * x_again)
        and stats.poisson.sf(o_again - 1, x_again) < RESOLVE_SAME_TESTS_P
    ):
        return None
    return end_ms


def _tests_in_excess(frame: Frame, rows: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """The tests that failed among `rows` twice or more, and more than twice their rates elsewhere.
    Since the onset: what the stretch broke, not a test broken everywhere that failed there too, nor
    one that failed once as the stretch ended. Before it: the entity's own trouble with a test (a hard
    shard's, an interaction), which goes on after the fix."""
    codes, inverse = np.unique(frame.cols["test"][rows], return_inverse=True)
    failures = np.bincount(inverse, weights=frame.fail[rows], minlength=codes.size)
    expected_sum = np.bincount(inverse, weights=expected[rows], minlength=codes.size)
    return codes[(failures >= 2) & (failures > 2.0 * expected_sum)]


def _expected_beside(
    frame: Frame,
    expected: np.ndarray,
    mine: np.ndarray,
    usable: np.ndarray,
    others: Sequence[np.ndarray],
    *,
    host: bool,
) -> np.ndarray:
    """What each run should fail when the entity (`mine`) is asked whether it ran cleanly since its
    stretch: its tests' rate elsewhere, or, where another verdict's stretch holds the run, that
    stretch's failure rate — over the other entities' runs in it where there are enough of them (a
    runner whose own disk was fixed fails on at its bad image's rate), else over all of them (runners
    sick on their own inside a pool whose day of trouble ended). The highest where several hold it.
    For a `host`, not a stretch wholly its own: one of its runners failing again shares its hardware,
    and a host whose NFS mount hangs in episodes, the later ones failing mostly that runner, is not
    healed by that runner's verdict (held-out fleet 608)."""
    beside = expected.copy()
    for stretch in others:
        held = stretch & mine
        if not held.any() or (host and np.array_equal(held, stretch)):
            continue
        theirs = stretch & usable & ~mine
        if theirs.sum() < RESOLVE_MIN_PEER_RUNS:
            theirs = stretch & usable
        rate = float(frame.fail[theirs].mean()) if theirs.any() else 0.0
        beside[held] = np.maximum(beside[held], rate)
    return beside


def _end_by_own_rate(
    frame: Frame, rows: np.ndarray, expected: np.ndarray, bins: np.ndarray, config: AnalysisConfig
) -> tuple[int, int]:
    """Where the stretch ends judged by its own excess rather than the scan's: the failure that
    closes the likeliest run at the stretch's own ratio to its expected failures (a maximum-sum scan
    as the cluster's, with that ratio in place of `alternative_ratio`), as (end of its bin, its time).
    A host failing half its runs, then six in seventeen thousand where its tests' rates give one and
    a half, ended when the half did; its runs since are for _resolved_at to judge."""
    fail, exp = frame.fail[rows], expected[rows]
    ratio = max(float(fail.sum()) / max(float(exp.sum()), 1e-9), config.alternative_ratio)
    score = np.cumsum(fail * math.log(ratio) - (ratio - 1.0) * exp)
    last = int(np.argmax(np.where(fail, score, -np.inf)))
    return int((bins[rows[last]] + 1) * config.bin_s * 1000), int(frame.time_ms[rows[last]])


def _retired(
    frame: Frame, level: Level, image: int, as_of_ms: int, config: AnalysisConfig
) -> tuple[int, str] | None:
    """When a sick image last ran and why it is over though it never ran cleanly: it was rolled
    back. It has run nowhere since its last execution while the hosts that ran it went on with other
    images for a clean run's worth of work (the counts that resolve an entity that runs on) — or,
    where those hosts have run nothing at all for `retired_silence_s` (autoscaled VMs that went with
    it), while its pools did; else None. A bad image is usually replaced, not healed, and its verdict
    would otherwise stay open for ever."""
    mine = (level.entity == image) & (frame.time_ms <= as_of_ms)
    if not mine.any():
        return None
    last = int(frame.time_ms[mine].max())
    machine, pool = frame.cols["machine"], frame.cols["pool"]
    later = (frame.time_ms > last) & (frame.time_ms <= as_of_ms)
    hosts = np.unique(machine[mine])
    after = np.flatnonzero(np.isin(machine, hosts) & later)
    if worked_a_clean_run(frame, after, last, config):
        return last, (
            f"retired: not run since {iso(last)}; its {hosts.size} hosts have run "
            f"{frame.jobs_in(after)} jobs on other images since"
        )
    pools = np.unique(pool[mine])
    elsewhere = np.flatnonzero(np.isin(pool, pools) & later)
    if after.size or as_of_ms - last < config.retired_silence_s * 1000:
        return None
    if not worked_a_clean_run(frame, elsewhere, last, config):
        return None
    return last, (
        f"retired: not run since {iso(last)}; none of its {hosts.size} hosts has run since, and its "
        f"pool has run {frame.jobs_in(elsewhere)} jobs on other hosts"
    )


def _healthy_since(
    frame: Frame,
    badness: Badness,
    reading_rows: np.ndarray,
    finding: Finding,
    end_ms: int,
    config: AnalysisConfig,
) -> bool:
    """The confirming dimension reads healthy again, and has for a while: a disk freed hours after the
    failures stopped (the host idled overnight) is healed from then on, not sick for ever. Unless it
    has read healthy for a while before and then bad again since: a disk that fills every night and
    is cleaned every afternoon is not healed by this afternoon's cleaning (held-out fleet 228)."""
    rows = reading_rows[
        (frame.r_time_ms[reading_rows] >= end_ms)
        & (frame.r_check[reading_rows] == badness.check_of[finding.dimension])
    ]
    if rows.size == 0:
        return False
    order = np.argsort(frame.r_time_ms[rows], kind="stable")
    times = frame.r_time_ms[rows][order]
    bad = badness.bad[finding.dimension][rows][order]
    if not bad.any():
        return True
    last_bad = int(times[bad].max())
    if int(times.max()) - last_bad < config.resolve_after_s * 1000:
        return False
    return not _relapsed(times, bad, config.resolve_after_s * 1000)


def _relapsed(times: np.ndarray, bad: np.ndarray, healed_ms: int) -> bool:
    """Whether readings in time order went bad again (twice or more in a row) after reading healthy
    for `healed_ms` or longer — unless they have read healthy since the last relapse for over twice
    as long as they ever did between relapses: a disk that filled every few hours and was cleaned,
    until its job was fixed, has been healed since it stopped filling, days ago."""
    starts = np.flatnonzero(np.diff(bad.astype(np.int8), prepend=np.int8(-1)) != 0)
    stops = np.append(starts[1:], bad.size)
    healed = relapsed = False
    longest_between = 0
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        if not bad[start]:
            next_bad = times[stop] if stop < bad.size else times[-1]
            if stop < bad.size:
                longest_between = max(longest_between, int(next_bad) - int(times[start]))
            healed = healed or int(next_bad) - int(times[start]) >= healed_ms
        elif healed and stop - start >= 2:
            relapsed = True
    if not relapsed:
        return False
    final_healthy = int(times[-1]) - int(times[starts[-1]]) if not bad[-1] else 0
    return final_healthy <= 2 * longest_between


def _passed_elsewhere(
    frame: Frame, level: Level, seg: Any, bins: np.ndarray, usable: np.ndarray
) -> dict[str, int]:
    failed_tests = np.unique(frame.cols["test"][seg.rows[frame.fail[seg.rows]]])
    elsewhere = (
        usable & (level.entity != seg.entity) & (bins >= seg.first_bin) & (bins <= seg.last_bin) & ~frame.fail
    )
    passed = np.isin(failed_tests, frame.cols["test"][elsewhere])
    return {"failed_tests": int(failed_tests.size), "passed_on_peers": int(passed.sum())}


def _names(frame: Frame, column: str, rows: np.ndarray) -> list[str]:
    return sorted(
        n for n in (frame.name(column, c) for c in np.unique(frame.cols[column][rows])) if n is not None
    )


def _top_tests(frame: Frame, failed: np.ndarray, limit: int = 25) -> list[dict[str, Any]]:
    codes, counts = np.unique(frame.cols["test"][failed], return_counts=True)
    order = np.lexsort((codes, -counts))[:limit]
    return [{"test_id": frame.name("test", codes[i]), "failures": int(counts[i])} for i in order]


def _jobs(frame: Frame, failed: np.ndarray) -> list[dict[str, Any]]:
    jobs: dict[tuple[int, int, int], list[int]] = {}
    for row in failed:
        key = (int(frame.cols["job"][row]), int(frame.cols["run"][row]), int(frame.cols["runner"][row]))
        jobs.setdefault(key, []).append(int(frame.time_ms[row]))
    out = []
    for (job, run, runner), times in sorted(jobs.items(), key=lambda item: min(item[1])):
        out.append(
            {
                "job_id": frame.name("job", job),
                "run_id": frame.name("run", run),
                "runner_id": frame.name("runner", runner),
                "failures": len(times),
                "first_failure": iso(min(times)),
            }
        )
    return out


def _reading(frame: Frame, row: int) -> dict[str, Any]:
    values = {k: float(v[row]) for k, v in frame.r_values.items() if not np.isnan(v[row]) and k != "problem"}
    return {
        "runner": frame.name("runner", frame.r_runner[row]),
        "time": iso(int(frame.r_time_ms[row])),
        "check": frame.name("check", frame.r_check[row]),
        "values": values,
    }
