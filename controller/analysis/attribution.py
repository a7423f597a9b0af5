"""Attribution: name the coarsest entity that explains an excess, and no finer one.

Levels are judged pool → image → machine → runner. A coarse cluster stands only if it survives
dropping its worst child (an image whose excess is all on one host is that host's problem); once it
stands, its executions in that stretch are taken out before the finer levels are judged, so a
healthy host is never blamed for running a sick image.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from controller.analysis.baseline import Baseline, unique_pairs
from controller.analysis.clusters import (
    Segment,
    against_reference_p,
    beyond_its_top_jobs,
    bh_cutoff,
    breadth,
    exact_p,
    is_cluster,
    max_segment,
    scan_entities,
)
from controller.analysis.config import AnalysisConfig
from controller.analysis.evidence import Badness, Finding, examine, nearest_bad
from controller.analysis.frame import NONE, Frame
from controller.analysis.levels import LEVELS, Level

# How unlikely a child's own failures must be for it to count among those the cause reached.
CHILD_P = 0.01
# The frame's per-reading column naming who sent it, for the levels that send readings.
READER = {"runner": "r_runner", "machine": "r_machine"}
# How long before its failures a child must have run cleanly under a bad reading for that reading to
# be a standing condition of its own rather than the cause coming on (_one_cause).
STANDING_MIN_S = 12 * 3600
# How unlikely a clean child must be under the common-cause hypothesis before it refutes it.
SPARED_P = 1e-3
# The same where the cause strikes whole jobs: few units, so a coarser bar (six clean jobs of a child
# beside others that failed two jobs in three is already past it).
SPARED_JOBS_P = 0.01


@dataclass
class Cluster:
    segment: Segment
    expected: np.ndarray  # per-row expectation used (full frame length)
    child_note: str


@dataclass(frozen=True)
class Burst:
    """Many tests failing on one entity within about an outage's length, outside and after which it
    failed no more than usual; or in one of two jobs beyond which it failed no more than usual (a job
    that crashed half-way): no sick entity, and no fault of the tests either. Its failures are kept
    out of flake scores."""

    level: str
    entity: int
    start_ms: int  # the burst's first and last failure
    end_ms: int
    failures: int  # over the scanned stretch that held it
    executions: int


@dataclass
class Clusters:
    clusters: list[Cluster]
    bursts: list[Burst]
    cutoff: float  # Benjamini-Hochberg's bar
    tested: int  # hypotheses


def find_clusters(
    frame: Frame,
    levels: dict[str, Level],
    usable: np.ndarray,
    bins: np.ndarray,
    badness: Badness,
    unit: np.ndarray,
    config: AnalysisConfig,
) -> Clusters:
    """Clusters attributed to the right level, the bursts that were no cluster, the BH p-value cutoff
    and the number of tests. `levels` are built over the `usable` rows (levels.build_levels); `unit` is
    per row its test's unit (cofailing.CoFailingGroups): breadth counts tests that fail together as one."""
    job, fail = frame.cols["job"], frame.fail
    rates = _Rates(frame, usable, bins, config)

    # Every entity at every level is a hypothesis; the false discovery rate is controlled over all of
    # them together. Before judging, everything clearly elevated is left out of the peers' rates, so
    # a fleet with several sick entities does not raise everyone's expectations and hide the next one.
    references = _elevated(levels, rates, frame, unit, usable, bins, config).references(usable)
    first, p_values, tested = _all_levels(levels, rates, frame, usable, references, bins, config)
    cutoff = bh_cutoff(p_values, tested, config.fdr_q)

    clusters: list[Cluster] = []
    bursts: list[Burst] = []
    explained = np.zeros(frame.size, bool)
    for name in LEVELS:
        level = levels[name]
        if explained.any():
            segments, expected, _ = _scan(
                level, rates, frame, usable & ~explained, references[name] & ~explained, bins, config
            )
        else:
            segments, expected = first[name]
        for segment in segments:
            breadth(segment, unit, job, fail, expected)
            if not _stands(segment, level, frame, usable & ~explained, expected, badness, cutoff, config):
                beside = _beside_its_own_tests(
                    segment, level, frame, unit, usable & ~explained, expected, bins, badness, cutoff, config
                )
                if beside is None:
                    continue
                segment = beside
            if not _reference_tells(
                segment, level, frame, references[name] & ~explained, badness, cutoff, config
            ):
                continue
            # A runner or host whose own readings explain its failures was sick for that while, however
            # short: a job that failed while its disk read full is no burst shared with the moment.
            if not _readings_explain(segment, level, frame, usable, expected, badness, config):
                burst = _passing_burst(segment, level, frame, usable, expected, config)
                if burst is not None:
                    bursts.append(burst)
                    continue
                bad_jobs = _bad_jobs(segment, level, frame, usable, badness, config)
                if bad_jobs:
                    bursts += bad_jobs
                    continue
            note, common_onset = _spread_over_children(
                segment, level, frame, unit, usable, expected, badness, cutoff, config
            )
            core = _shared_core(
                segment, note, level, frame, unit, usable, expected, badness, cutoff, bins, config
            )
            if core is None and note is None:
                core = _dense_core(
                    segment, level, frame, unit, usable, expected, badness, cutoff, bins, config
                )
            if core is not None:
                segment, (note, common_onset) = core
            if note and not _one_cause(segment, level, frame, usable, expected, badness, config):
                note = None
            if note is None:
                continue
            if common_onset is not None:
                dated = _from(segment, common_onset // (config.bin_s * 1000), frame, unit, bins, expected)
                # Still shared from then on: children elevated by a burst days earlier, and three
                # runners of twelve falling sick on their own later, are no common cause from the
                # first of those runners' onsets.
                if dated is not segment and (
                    _spread_over_children(
                        dated,
                        level,
                        frame,
                        unit,
                        usable,
                        expected,
                        badness,
                        cutoff,
                        config,
                        opened_bin=segment.first_bin,
                    )[0]
                    is None
                ):
                    continue
                segment = dated
            segment.q_value = _q_value(segment.p_adjusted, p_values, tested)
            clusters.append(Cluster(segment, expected, note))
        for cluster in clusters:
            if cluster.segment.level == name:
                explained |= in_stretch(level, cluster.segment, bins)
        for burst in bursts:
            if burst.level == name:
                explained |= _shared_burst(burst, level, frame, usable)
    clusters += _sick_under_a_bad_image(clusters, levels, frame, unit, usable, bins, badness, cutoff, config)
    return Clusters(clusters, bursts, cutoff, tested)


def _sick_under_a_bad_image(
    clusters: list[Cluster],
    levels: dict[str, Level],
    frame: Frame,
    unit: np.ndarray,
    usable: np.ndarray,
    bins: np.ndarray,
    badness: Badness,
    cutoff: float,
    config: AnalysisConfig,
) -> list[Cluster]:
    """Hosts and runners sick on their own while running a bad image: the image's stretch explains
    every row of its hosts away, so a runner whose memory runs out there fails only beyond what the
    image does. Judged among the image's rows alone (each test against itself on the image's other
    hosts), and called only where the entity's own readings name a dimension for its failures."""
    job, fail = frame.cols["job"], frame.fail
    found: list[Cluster] = []
    judged = {(c.segment.level, c.segment.entity) for c in clusters}
    # The image already fails a share of its tests, which caps any multiple of it: the excess per
    # execution and the readings carry the verdict.
    under_image = config.model_copy(update={"min_ratio": config.under_image_min_ratio})
    for cluster in [c for c in clusters if c.segment.level == "image"]:
        image = cluster.segment
        rows = usable & in_stretch(levels["image"], image, bins)
        baseline = _baseline_over(frame, rows, bins, config)
        for name in ("machine", "runner"):
            level = levels[name]
            expected = np.zeros(frame.size)
            expected[rows] = baseline.expected(
                entity_name=name,
                entity=level.entity[rows],
                peer_name="image",
                peers=np.zeros(int(rows.sum()), np.int32),
                reference=np.ones(int(rows.sum()), bool),
            )
            segments, _ = scan_entities(name, level.entity, bins, fail, expected, rows, config)
            for segment in _one_per_entity(segments, fail, expected):
                if (name, segment.entity) in judged:
                    continue
                breadth(segment, unit, job, fail, expected)
                if not is_cluster(segment, cutoff, under_image) or (
                    _passing_burst(segment, level, frame, usable, expected, config) is not None
                ):
                    continue
                own = _own_readings_finding(segment, name, frame, badness, config)
                # Its own readings, not the image's: a bad image's hosts all hold its cache digest.
                times = frame.time_ms[segment.rows[fail[segment.rows]]]
                others = np.flatnonzero(rows & fail & (level.entity != segment.entity))
                their_readings = np.flatnonzero(
                    (frame.r_image == image.entity) & (_reader(frame, name) != segment.entity)
                )
                shared = examine(
                    frame, badness, their_readings, others, int(times.min()), int(times.max()), config
                )
                if own.dimension in ("unknown", shared.dimension):
                    continue
                judged.add((name, segment.entity))
                found.append(Cluster(segment, expected, ""))
    return found


def _beside_its_own_tests(
    segment: Segment,
    level: Level,
    frame: Frame,
    unit: np.ndarray,
    usable: np.ndarray,
    expected: np.ndarray,
    bins: np.ndarray,
    badness: Badness,
    cutoff: float,
    config: AnalysisConfig,
) -> Segment | None:
    """A runner's (or host's, or pool's) sickness inside a stretch its own one or two tests hold
    open: a test only its static shard runs, failing on it for days, keeps the scan's stretch going
    over the whole window, and the stretch then fails breadth on those tests while a full disk in
    its last day is broad. A pool's own test is one that fails on its platform only: judged against
    the fleet, it holds the pool's stretch open all window, and its NFS server failing a dozen
    tests for a night is inside (held-out fleets 501, 504). The stretch scanned again without its
    two most-failing tests; the first part that is a cluster on its own, else None."""
    if level.name not in ("runner", "machine", "pool") or segment.top_test < 0:
        return None
    job, fail = frame.cols["job"], frame.fail
    failed = segment.rows[fail[segment.rows]]
    units, counts = np.unique(unit[failed], return_counts=True)
    own = units[np.argsort(-counts, kind="stable")[:2]]
    rest = (
        usable
        & (level.entity == segment.entity)
        & (bins >= segment.first_bin)
        & (bins <= segment.last_bin)
        & ~np.isin(unit, own)
    )
    found, _ = scan_entities(level.name, level.entity, bins, fail, expected, rest, config)
    for candidate in found:
        breadth(candidate, unit, job, fail, expected)
        if _stands(candidate, level, frame, usable, expected, badness, cutoff, config):
            return candidate
    return None


def _stands(
    segment: Segment,
    level: Level,
    frame: Frame,
    usable: np.ndarray,
    expected: np.ndarray,
    badness: Badness,
    cutoff: float,
    config: AnalysisConfig,
) -> bool:
    """A cluster on its failures alone; or a runner or host with a smaller effect whose own readings
    around its failures name the sick dimension — in one job only where they explain it
    (`_readings_explain`)."""
    if is_cluster(segment, cutoff, config):
        return True
    lowered = config.model_copy(
        update={
            "min_ratio": config.confirmed_min_ratio,
            "min_excess_rate": config.confirmed_min_excess_rate,
            "min_failed_jobs": config.confirmed_min_failed_jobs,
        }
    )
    # Failing 3× its tests' rates, short only of the bar without its top test: nine failures of
    # eight tests hold less without the top one than their spread shows. A smaller multiple keeps
    # that bar: a disk under pressure fails the tests that need it, on a runner no sicker than that.
    top_spared = lowered.model_copy(
        update={"min_ratio": config.min_ratio, "without_top_test_p": config.confirmed_without_top_test_p}
    )
    if not (is_cluster(segment, cutoff, lowered) or is_cluster(segment, cutoff, top_spared)):
        return False
    if segment.failed_jobs >= config.min_failed_jobs:
        return _readings_confirm(segment, level, frame, badness, config)
    return _readings_explain(segment, level, frame, usable, expected, badness, config)


def _reference_tells(
    segment: Segment,
    level: Level,
    frame: Frame,
    reference: np.ndarray,
    badness: Badness,
    cutoff: float,
    config: AnalysisConfig,
) -> bool:
    """Whether the stretch's failures stand against what its tests did in the reference rows, counted
    as they were (clusters.against_reference_p), at the bar the scan's own test met and paying as it
    does for the stretch chosen among the entity's bins; or its own readings name the cause. A runner
    that alone runs a suite, retried elsewhere after each failure, is compared with a few dozen
    retries: its tests' usual rate is then mostly a prior, and failing a perf suite's 5 % is no
    sickness."""
    if _readings_confirm(segment, level, frame, badness, config):
        return True
    p = against_reference_p(
        segment.rows, reference, frame.cols["test"], frame.fail, config.peer_prior_strength
    )
    return min(1.0, p * segment.bins_tested) <= cutoff


def _readings_confirm(
    segment: Segment, level: Level, frame: Frame, badness: Badness, config: AnalysisConfig
) -> bool:
    """Whether a runner's or host's own readings around the segment's failures name the dimension."""
    return (
        level.name in ("runner", "machine")
        and _own_readings_finding(segment, level.name, frame, badness, config).dimension != "unknown"
    )


def _readings_explain(
    segment: Segment,
    level: Level,
    frame: Frame,
    usable: np.ndarray,
    expected: np.ndarray,
    badness: Badness,
    config: AnalysisConfig,
) -> bool:
    """Whether a runner's or host's own readings name the dimension of the segment's failures, bad in
    two readings or more around them, and it had not run `resolve_after_executions` or more before
    them under the same bad readings, failing those no more than chance: a disk that warned for days
    of clean jobs does not explain the one job that crashed beside it, nor does one odd reading."""
    if level.name not in ("runner", "machine"):
        return False
    finding = _own_readings_finding(segment, level.name, frame, badness, config)
    if finding.dimension == "unknown":
        return False
    times = frame.time_ms[segment.rows[frame.fail[segment.rows]]]
    first, last = int(times.min()), int(times.max())
    readings = np.flatnonzero(
        (_reader(frame, level.name) == segment.entity)
        & (frame.r_check == badness.check_of[finding.dimension])
    )
    bad = badness.bad[finding.dimension][readings]
    at = frame.r_time_ms[readings]
    around = (at >= first - config.evidence_lookback_s * 1000) & (at <= last + config.reading_stale_s * 1000)
    if int(bad[around].sum()) < 2:
        return False
    return not _standing_condition(
        frame,
        level.name,
        level.entity,
        segment.entity,
        finding.dimension,
        first,
        usable,
        expected,
        badness,
        config,
    )


def _standing_condition(
    frame: Frame,
    level_name: str,
    entity: np.ndarray,
    code: int,
    dimension: str,
    first_failure_ms: int,
    usable: np.ndarray,
    expected: np.ndarray,
    badness: Badness,
    config: AnalysisConfig,
    min_span_ms: int = 0,
) -> bool:
    """Whether the runner's or host's (`code`, among `entity` per row) `dimension` already read bad
    while it ran `resolve_after_executions` or more before `first_failure_ms`, the first of them at
    least `min_span_ms` before it, failing those no more than chance (p > 0.01): a condition it ran
    cleanly under, which does not explain failures that began later."""
    readings = np.flatnonzero(
        (getattr(frame, READER[level_name]) == code) & (frame.r_check == badness.check_of[dimension])
    )
    before = np.flatnonzero(usable & (entity == code) & (frame.time_ms < first_failure_ms))
    if before.size < config.resolve_after_executions or readings.size == 0:
        return False
    bad = badness.bad[dimension][readings]
    under = before[
        nearest_bad(frame, readings, bad, entity[before], frame.time_ms[before], config, READER[level_name])
    ]
    if (
        under.size < config.resolve_after_executions
        or first_failure_ms - int(frame.time_ms[under].min()) < min_span_ms
    ):
        return False
    return exact_p(float(frame.fail[under].sum()), int(under.size), float(expected[under].sum())) > 0.01


def _bad_jobs(
    segment: Segment,
    level: Level,
    frame: Frame,
    usable: np.ndarray,
    badness: Badness,
    config: AnalysisConfig,
) -> list[Burst]:
    """The segment's two most-failing jobs as bursts, where nothing beyond them fails more than chance,
    no reading of its own names a cause, and the entity ran on after them: a job that crashed or lost
    its workspace half-way fails every test it had left, on whatever healthy runner it ran, and two such
    jobs are two bad jobs, not a sick runner. Their failures are kept out of the tests' flake scores
    all the same. Two such jobs that are the last it ran may be a runner just fallen sick: judged."""
    if beyond_its_top_jobs(segment, config) or _readings_confirm(segment, level, frame, badness, config):
        return []
    rows = segment.rows
    job = frame.cols["job"][rows]
    last = int(frame.time_ms[rows[np.isin(job, segment.top_jobs)]].max())
    later = (level.entity == segment.entity) & usable & (frame.time_ms > last)
    if int(later.sum()) < config.resolve_after_executions:
        return []
    bursts = []
    for top in sorted(segment.top_jobs):
        mine = rows[job == top]
        times = frame.time_ms[mine[frame.fail[mine]]]
        inside = mine[(frame.time_ms[mine] >= times.min()) & (frame.time_ms[mine] <= times.max())]
        bursts.append(
            Burst(
                segment.level,
                segment.entity,
                int(times.min()),
                int(times.max()),
                int(frame.fail[inside].sum()),
                int(inside.size),
            )
        )
    return bursts


def _reader(frame: Frame, level_name: str) -> np.ndarray:
    """Per reading: the runner (or host) that sent it, for a runner (or host) level."""
    reader: np.ndarray = getattr(frame, READER[level_name])
    return reader


def _own_readings_finding(
    segment: Segment, level_name: str, frame: Frame, badness: Badness, config: AnalysisConfig
) -> Finding:
    """What a runner's or host's own readings say of its failures in the segment."""
    failed = segment.rows[frame.fail[segment.rows]]
    readings = np.flatnonzero(_reader(frame, level_name) == segment.entity)
    times = frame.time_ms[failed]
    return examine(frame, badness, readings, failed, int(times.min()), int(times.max()), config)


def _all_levels(
    levels: dict[str, Level],
    rates: _Rates,
    frame: Frame,
    usable: np.ndarray,
    references: dict[str, np.ndarray],
    bins: np.ndarray,
    config: AnalysisConfig,
) -> tuple[dict[str, tuple[list[Segment], np.ndarray]], list[float], int]:
    found: dict[str, tuple[list[Segment], np.ndarray]] = {}
    p_values: list[float] = []
    tested = 0
    for name in LEVELS:
        segments, expected, count = _scan(levels[name], rates, frame, usable, references[name], bins, config)
        found[name] = (segments, expected)
        p_values += [s.p_adjusted for s in segments]
        tested += count
    return found, p_values, tested


@dataclass
class _LeftOut:
    """Rows left out of the peers' rates, by the level of the stretch that left them out.

    An elevated pool is left out of what the other pools are compared with, never of what its own
    images, hosts and runners are: they are compared within their pool, and with the whole pool left
    out they would have no peers at all. An arm pool failing its arm-only tests would then have each
    of its runners judged against the other platforms, as if it alone failed them."""

    pools: np.ndarray
    finer: np.ndarray  # by images, machines and runners

    def of(self, name: str) -> np.ndarray:
        """What a stretch at level `name` is judged without."""
        left_out: np.ndarray = self.pools | self.finer if name == "pool" else self.finer
        return left_out

    def references(self, usable: np.ndarray) -> dict[str, np.ndarray]:
        return {name: usable & ~self.of(name) for name in LEVELS}


def _elevated(
    levels: dict[str, Level],
    rates: _Rates,
    frame: Frame,
    unit: np.ndarray,
    usable: np.ndarray,
    bins: np.ndarray,
    config: AnalysisConfig,
) -> _LeftOut:
    """The rows to leave out of the peers' rates: stretches clearly elevated, not only full clusters.

    When half a pool is sick at once, each sick runner's peers are half sick too, so against them it
    shows twice the expected failures, never three times: the look here scans for a doubled rate and
    leaves out what is significant at 1.5x with breadth. It repeats until nothing more stands out: with
    two of three runners sick, the first look sees only the worse one; with it left out, the other.
    """
    explore = config.model_copy(update={"alternative_ratio": config.reference_exclusion_alternative})
    suspicious = config.model_copy(update={"min_ratio": config.reference_exclusion_ratio})
    job, fail = frame.cols["job"], frame.fail
    left_out = _LeftOut(np.zeros(frame.size, bool), np.zeros(frame.size, bool))
    for _round in range(config.reference_exclusion_rounds):
        found, p_values, tested = _all_levels(
            levels, rates, frame, usable, left_out.references(usable), bins, explore
        )
        cutoff = bh_cutoff(p_values, tested, config.fdr_q)
        grown = _LeftOut(left_out.pools.copy(), left_out.finer.copy())
        for name in LEVELS:
            segments, expected = found[name]
            for segment in _one_per_entity(segments, fail, expected):
                # Judged on what earlier rounds did not leave out already: an image whose excess is
                # all on the runners left out so far is not elevated itself.
                segment = _without(segment, left_out.of(name), fail, expected)
                breadth(segment, unit, job, fail, expected)
                if is_cluster(segment, cutoff, suspicious):
                    (grown.pools if name == "pool" else grown.finer)[
                        in_stretch(levels[name], segment, bins)
                    ] = True
        if not ((grown.pools & ~left_out.pools).any() or (grown.finer & ~left_out.finer).any()):
            break
        left_out = grown
    return left_out


def _one_per_entity(segments: list[Segment], fail: np.ndarray, expected: np.ndarray) -> list[Segment]:
    """An entity's segments as one: with few jobs, a runner failing twice as much as its peers is
    cut into several short stretches by the jobs between that happened to pass, and none of them
    alone is broad enough to leave out of the peers."""
    by_entity: dict[int, list[Segment]] = {}
    for segment in segments:
        by_entity.setdefault(segment.entity, []).append(segment)
    merged = []
    for parts in by_entity.values():
        if len(parts) == 1:
            merged.append(parts[0])
            continue
        whole = replace(
            parts[0],
            first_bin=min(part.first_bin for part in parts),
            last_bin=max(part.last_bin for part in parts),
        )
        rows = np.sort(np.concatenate([part.rows for part in parts]))
        merged.append(_over(whole, rows, fail, expected))
    return merged


def _without(segment: Segment, left_out: np.ndarray, fail: np.ndarray, expected: np.ndarray) -> Segment:
    """The segment's numbers over its rows not yet `left_out`."""
    if not left_out[segment.rows].any():
        return segment
    return _over(segment, segment.rows[~left_out[segment.rows]], fail, expected)


def _over(segment: Segment, rows: np.ndarray, fail: np.ndarray, expected: np.ndarray) -> Segment:
    """The segment restated over `rows`: its counts and its test recomputed there."""
    failures, expect = int(fail[rows].sum()), float(expected[rows].sum())
    p = exact_p(failures, rows.size, expect)
    return replace(
        segment,
        rows=rows,
        failures=failures,
        executions=int(rows.size),
        expected=expect,
        p_value=p,
        p_adjusted=min(1.0, p * segment.bins_tested),
    )


def _from(
    segment: Segment, first_bin: int, frame: Frame, unit: np.ndarray, bins: np.ndarray, expected: np.ndarray
) -> Segment:
    """The segment restated from `first_bin` on, where that is later than its start."""
    if first_bin <= segment.first_bin:
        return segment
    rows = segment.rows[bins[segment.rows] >= first_bin]
    if not frame.fail[rows].any():
        return segment
    trimmed = _over(replace(segment, first_bin=first_bin), rows, frame.fail, expected)
    breadth(trimmed, unit, frame.cols["job"], frame.fail, expected)
    return trimmed


def _baseline_over(frame: Frame, rows: np.ndarray, bins: np.ndarray, config: AnalysisConfig) -> Baseline:
    """Expected failure probabilities judged among the selected rows only."""
    return Baseline(
        frame.cols["test"][rows],
        bins[rows],
        frame.fail[rows],
        radius=config.baseline_radius_bins,
        peer_strength=config.peer_prior_strength,
        history_strength=config.history_prior_strength,
    )


class _Rates:
    """The baseline over the usable rows of one pass, shared by every level and every re-scan."""

    def __init__(self, frame: Frame, usable: np.ndarray, bins: np.ndarray, config: AnalysisConfig) -> None:
        self.rows = usable
        self.baseline = _baseline_over(frame, usable, bins, config)

    def expected(self, level: Level, reference: np.ndarray) -> np.ndarray:
        """Per row of the frame (zero outside the usable rows): its failure probability if healthy."""
        expected = np.zeros(self.rows.size)
        expected[self.rows] = self.baseline.expected(
            entity_name=level.name,
            entity=level.entity[self.rows],
            peer_name="fleet" if level.name == "pool" else "pool",
            peers=level.peers[self.rows],
            reference=reference[self.rows],
        )
        return expected


def _scan(
    level: Level,
    rates: _Rates,
    frame: Frame,
    usable: np.ndarray,
    reference: np.ndarray,
    bins: np.ndarray,
    config: AnalysisConfig,
) -> tuple[list[Segment], np.ndarray, int]:
    """Segments of `level` among the `usable` rows (a subset of the rates' rows), judged against
    peers whose rates come from the `reference` rows only."""
    rows = usable & (level.entity >= 0)
    if not rows.any():
        return [], np.zeros(frame.size), 0
    expected = rates.expected(level, reference & usable)
    segments, count = scan_entities(level.name, level.entity, bins, frame.fail, expected, rows, config)
    return segments, expected, count


def _passing_burst(
    segment: Segment,
    level: Level,
    frame: Frame,
    usable: np.ndarray,
    expected: np.ndarray,
    config: AnalysisConfig,
) -> Burst | None:
    """The burst, when the excess fell within `burst_max_s` (about as long as an outage lasts) and the
    entity then ran at its usual rate: a burst it shared with whatever failed at that moment (an
    outage too small or too sparse to see fleet-wide, one bad job), not a sick entity. Its failures
    outside that hour, and after it, must be no more than chance gives its tests (Poisson,
    p >= `burst_rest_p`): a stray failure or four beside one job that failed twenty tests do not make
    a sick runner, and a runner that fails in bursts again and again is one. A sick runner keeps
    failing; one whose burst is the end of the data so far is still judged on it."""
    rows = segment.rows
    fail = frame.fail[rows]
    times = np.sort(frame.time_ms[rows[fail]])
    # The hour holding the most failures.
    reach = np.searchsorted(times, times + config.burst_max_s * 1000, side="right")
    start = int(np.argmax(reach - np.arange(times.size)))
    first, last = int(times[start]), int(times[reach[start] - 1])
    outside = (frame.time_ms[rows] < first) | (frame.time_ms[rows] > last)
    later = np.flatnonzero((level.entity == segment.entity) & usable & (frame.time_ms > last))
    # As long a clean run as resolves a verdict: a canary image whose last twenty runs passed minutes
    # before it was rolled back never showed it ran cleanly.
    if not worked_a_clean_run(frame, later, last, config):
        return None
    if not _calm_around((rows[outside], later), rows[~outside], level, frame, expected, config):
        return None
    return Burst(segment.level, segment.entity, first, last, segment.failures, segment.executions)


def worked_a_clean_run(
    frame: Frame, rows: np.ndarray, since_ms: int, config: AnalysisConfig, jobs: int | None = None
) -> bool:
    """Whether `rows` (an index array, run after `since_ms`) are a clean run's worth of work: at least
    `resolve_after_executions` executions over `jobs` jobs (`resolve_after_jobs` unless given), the
    last `resolve_after_s` or more after `since_ms`. Where data end minutes after a failure, one job
    of ninety tests that passed is not an entity that healed."""
    return (
        rows.size >= config.resolve_after_executions
        and frame.jobs_in(rows) >= (config.resolve_after_jobs if jobs is None else jobs)
        and int(frame.time_ms[rows].max()) - since_ms >= config.resolve_after_s * 1000
    )


def _calm_around(
    sides: tuple[np.ndarray, np.ndarray],
    hour: np.ndarray,
    level: Level,
    frame: Frame,
    expected: np.ndarray,
    config: AnalysisConfig,
) -> bool:
    """Whether the entity failed no more than chance on each side of its burst's hour: outside it in
    the stretch, and after it. Where the hour struck several of its children, the children failing
    beyond chance on those sides are left out of them, as long as they are fewer than half and the
    hour was mostly the others': a pool's hour of broken network beside one or two of its runners
    falling sick on their own is that hour, and those runners, each judged for itself."""

    child = level.child

    def calm(without: np.ndarray) -> bool:
        for side in sides:
            kept = side if child is None else side[~np.isin(child[side], without)]
            if not _within_chance(int(frame.fail[kept].sum()), float(expected[kept].sum()), config):
                return False
        return True

    if calm(np.zeros(0, np.int64)):
        return True
    if child is None:
        return False
    struck, counts = np.unique(child[hour[frame.fail[hour]]], return_counts=True)
    both = np.concatenate(sides)
    if struck.size < 2 or both.size == 0:
        return False
    children, child_of = np.unique(child[both], return_inverse=True)
    failures = np.bincount(child_of, weights=frame.fail[both], minlength=children.size)
    expected_of = np.bincount(child_of, weights=expected[both], minlength=children.size)
    own = children[
        [not _within_chance(int(f), float(x), config) for f, x in zip(failures, expected_of, strict=True)]
    ]
    if own.size == 0:
        own = children[[int(np.argmax(failures - expected_of))]]
    # The hour is the children's together, not theirs alone; and a sick pool is most of its children.
    if counts[np.isin(struck, own)].sum() * 2 > counts.sum() or own.size * 2 >= children.size:
        return False
    return calm(own)


def _shared_burst(burst: Burst, level: Level, frame: Frame, usable: np.ndarray) -> np.ndarray:
    """The burst's rows where its children shared it: whatever failed on a pool at that moment (an
    hour of broken network) failed on its images and hosts too, and they are not judged on it again:
    the image would be an incident for it, failing a little more than its peers on other days. A burst
    most of whose failures are one child's is that child's to be judged on (a runner's first hour of
    trouble at its image's level). So is one whose failures crowd onto one of the pool's images, far
    beyond its share of the runs: a canary image that failed for the hour it ran."""
    rows: np.ndarray = (
        usable
        & (level.entity == burst.entity)
        & (frame.time_ms >= burst.start_ms)
        & (frame.time_ms <= burst.end_ms)
    )
    if level.name == "pool" and (crowded := _crowded_image(frame, rows)) != NONE:
        rows &= frame.cols["image"] != crowded
    if level.child is None:
        return rows
    _, counts = np.unique(level.child[rows & frame.fail], return_counts=True)
    if counts.size < 2 or counts.max() * 2 > counts.sum():
        return np.zeros(frame.size, bool)
    return rows


def _crowded_image(frame: Frame, rows: np.ndarray) -> int:
    """The image holding more than half the failures among `rows` and twice its share of them or
    more, or NONE."""
    image = frame.cols["image"][rows]
    failed = image[frame.fail[rows]]
    if failed.size == 0:
        return NONE
    codes, failures = np.unique(failed, return_counts=True)
    top = int(np.argmax(failures))
    fail_share = failures[top] / failed.size
    run_share = float((image == codes[top]).mean())
    return int(codes[top]) if fail_share > 0.5 and fail_share >= 2 * run_share else NONE


def _within_chance(failures: int, expected: float, config: AnalysisConfig) -> bool:
    return failures == 0 or float(stats.poisson.sf(failures - 1, max(expected, 1e-9))) >= config.burst_rest_p


def _spread_over_children(
    segment: Segment,
    level: Level,
    frame: Frame,
    unit: np.ndarray,
    usable: np.ndarray,
    expected: np.ndarray,
    badness: Badness,
    cutoff: float,
    config: AnalysisConfig,
    opened_bin: int | None = None,
) -> tuple[str | None, int | None]:
    """None unless the excess is a common cause across the entity's children; else a note saying so,
    and when the cause began if that was after the stretch did (an earlier, separate problem of one
    child opened it). `opened_bin`: where the stretch this segment was dated within began, when
    earlier than the segment — a child failing under the entity since then is not failing before it.

    A common cause (a bad image, a sick pool, a sick host under several runners) shows on most of the
    children, survives dropping the worst of them, and starts on each child as soon as that child runs
    under the entity in the stretch. Independent sick children do not line up like that.
    """
    if level.child is None:
        return "", None
    rows = segment.rows
    children = level.child[rows]
    if (children < 0).all():
        return "ephemeral runners: judged by their host", None
    fail = frame.fail
    codes, inverse = np.unique(children, return_inverse=True)
    obs = np.bincount(inverse, weights=fail[rows].astype(float))
    exp = np.bincount(inverse, weights=expected[rows])
    n = np.bincount(inverse)
    considered = n >= 3
    # A child shares the cause when its own excess is beyond chance, not when two failures met an
    # expectation of one half: such noise would make a pool look sick wherever half its hosts are.
    # And beyond a test × runner interaction: one test failing over and over on one child while the
    # other children pass it is that child's problem with that test, not a share of a common cause.
    # And beyond the stretch's two most-failing tests where they fail on several children: two tests
    # a commit broke fail on every child alike, a cause the children share that is two tests, not a
    # sick entity (`breadth` asks the same of the whole stretch). A top test failing on one child
    # only is that child's share (static sharding: the one test its shard holds).
    test = unit[rows]
    failed_tests, failed_counts = np.unique(test[fail[rows]], return_counts=True)
    top_two = failed_tests[np.argsort(-failed_counts, kind="stable")[:2]]
    failed_test, failed_child = test[fail[rows]], inverse[fail[rows]]
    shared = [t for t in top_two if np.unique(failed_child[failed_test == t]).size >= 2]
    if level.name == "image" and np.isin(failed_test, shared).sum() < 0.5 * failed_test.size:
        shared = []  # most failures are in other tests: a broad cause, not two tests broken everywhere
    wide = ~np.isin(test, shared)
    wide_child, wide_fail, wide_exp = inverse[wide], fail[rows][wide], expected[rows][wide]
    odd_obs, odd_exp = _interaction_per_child(wide_child, test[wide], wide_fail, wide_exp, codes.size)
    broad_obs = np.bincount(wide_child, weights=wide_fail, minlength=codes.size) - odd_obs
    broad_exp = np.bincount(wide_child, weights=wide_exp, minlength=codes.size) - odd_exp
    elevated = considered & _beyond_chance(broad_obs, broad_exp)
    opened = segment.first_bin if opened_bin is None else min(opened_bin, segment.first_bin)
    not_before = ~_already_failing(segment.entity, opened, level, frame, usable, expected, codes, config)
    elevated &= not_before
    # A host's memory killing a few of every runner's heavy tests, beside tests that often fail there
    # anyway, may not double any runner's usual failures, nor leave the rest without the worst runner
    # at the ratio bar. Where each runner's excess is beyond chance and each one's own readings name
    # one cause, the host's resource is what they share (held-out fleet 222's OOM host, named as one
    # runner): both bars drop to beyond chance.
    shared_readings = False
    if level.name == "machine" and elevated.sum() < 2:
        likely = (
            considered
            & not_before
            & (broad_obs >= 2)
            & (stats.poisson.sf(broad_obs - 1, broad_exp) < CHILD_P)
        )
        if likely.sum() >= 2 and _readings_name_one_cause(segment, frame, badness, codes[likely], config):
            elevated, shared_readings = likely, True
    if (
        level.name == "machine"
        and elevated.sum() == 1
        and _idle_runners_read_the_same(
            segment,
            np.where(level.entity == segment.entity, level.child, -1),
            frame,
            badness,
            int(codes[elevated][0]),
            config,
        )
    ):
        return "excess on the one runner that ran, every runner's readings on the host naming one cause", None
    if elevated.sum() < 2 or elevated.sum() < 0.5 * considered.sum():
        return None, None
    if _a_child_is_spared(
        inverse,
        test,
        frame.units_of(rows),
        fail[rows],
        expected[rows],
        elevated,
        considered,
    ):
        return None, None
    worst = int(np.argmax(obs - exp))
    # Without the worst child and without the most-failing test: a test that broke everywhere is a
    # cause every child shares, but it is one test, not a sick entity.
    rest = rows[(inverse != worst) & (test != segment.top_test)]
    if not _stands_without(rest, frame, expected, cutoff, config) and not (
        level.name == "machine"
        and _stands_without(rest, frame, expected, cutoff, config, min_ratio=1.0)
        and (shared_readings or _readings_name_one_cause(segment, frame, badness, codes[elevated], config))
    ):
        return None, None
    # A pool whose hosts off its worst image mostly fail no more than usual is sick in that image, not
    # as a pool, even where those hosts ran tests of their own that nothing could show spared (static
    # sharding). A sick runner among them is its own problem. Where every host ran the image (pods of
    # several images share the hosts), its jobs off the image must fail beyond usual instead, and by
    # a good part of the image's own toll: a cause of the pool strikes jobs whatever their image.
    if level.name == "pool":
        images = frame.cols["image"][rows]
        found, image_of = np.unique(images, return_inverse=True)
        if found.size >= 2:
            image_excess = np.bincount(image_of, weights=fail[rows] - expected[rows])
            # Where an image reached some runners of every host (a canary spread over the hosts), no
            # host is off it; its runners that never ran it tell the pool's health instead. A cause
            # of the pool reaches most of them, at a good part of the image's toll.
            for code in np.flatnonzero(image_excess > 0):
                on_image = image_of == code
                off_image = _off_image_runners(frame, rows, on_image, expected)
                on_toll = float(image_excess[code]) / int(on_image.sum())
                if off_image is not None and (off_image[0] < 0.5 or off_image[1] < on_toll / 3):
                    return None, None
            on_worst = images == found[int(np.argmax(image_excess))]
            off = considered & (np.bincount(inverse, weights=on_worst.astype(float)) == 0)
            if off.any():
                if elevated[off].sum() < 0.5 * off.sum():
                    return None, None
            else:
                off_obs, off_exp = fail[rows][~on_worst].sum(), expected[rows][~on_worst].sum()
                on_toll = float(image_excess.max()) / max(int(on_worst.sum()), 1)
                off_toll = float(off_obs - off_exp) / max(int((~on_worst).sum()), 1)
                if not (_beyond_chance(np.asarray(off_obs), np.asarray(off_exp)) and off_toll >= on_toll / 3):
                    return None, None
    stretch_start = segment.first_bin * config.bin_s * 1000
    tolerance = 2 * config.bin_s * 1000
    # The cause's toll: extra failures per execution on the children it reached. Additive, not a
    # multiple of each test's usual rate: a full disk or a bad image fails the tests it breaks however
    # rarely they fail otherwise.
    toll = max(obs[elevated].sum() - exp[elevated].sum(), 0.0) / max(n[elevated].sum(), 1)
    starts: list[_ChildStart] = []
    for i in np.flatnonzero(elevated):
        mine = np.flatnonzero((level.entity == segment.entity) & (level.child == codes[i]) & usable)
        mine = mine[np.argsort(frame.time_ms[mine], kind="stable")]
        began = max(stretch_start, int(frame.time_ms[mine[0]]))
        starts.append(_ChildStart(mine, began, _onset(rows[inverse == i], frame, expected)))
    onsets = [child.onset for child in starts]
    # Together: each child fails as soon as the cause could reach it — when it began, or when the
    # child joined the entity after that (an image reaching hosts one by one) — or clears the bar
    # later only for having run little, or having failed at the cause's rate, since. The start
    # taken is the child onset most children fit; the child that opened the stretch fits its own
    # onset trivially, so three hosts falling sick days apart fit no one start.
    best: list[int] = []
    for start in sorted(set(onsets)):
        fitting = [j for j, child in enumerate(starts) if child.fits(start, frame, expected, toll, tolerance)]
        if len(fitting) > len(best):
            best = fitting
    if len(best) * 3 < 2 * len(starts):
        if level.name == "machine" and _readings_name_one_cause(
            segment, frame, badness, codes[elevated], config
        ):
            shown = f"{int(elevated.sum())} of {int(considered.sum())} runners"
            return f"excess on {shown}, each runner's readings naming one cause for them all", min(onsets)
        return None, None
    # The cause began with the children that fit it; a child already failing when the stretch
    # opened, long before the rest, is a problem of its own.
    common = [onsets[j] for j in best]
    kind = "runners" if level.name == "machine" else "hosts"
    note = f"excess on {int(elevated.sum())} of {int(considered.sum())} {kind}, starting together"
    return note, min(common)


def _off_image_runners(
    frame: Frame, rows: np.ndarray, on_image: np.ndarray, expected: np.ndarray
) -> tuple[float, float] | None:
    """Of a stretch's long-lived runners that never ran an image (`on_image`, per row of `rows`) and
    ran at least three tests: the share whose failures are beyond chance, and their extra failures
    per execution. None where fewer than two such runners ran."""
    runner = np.where(frame.ephemeral[rows], -1, frame.cols["runner"][rows])
    codes, inverse = np.unique(runner, return_inverse=True)
    touched = np.bincount(inverse, weights=on_image.astype(float)) > 0
    n = np.bincount(inverse)
    off = (codes >= 0) & ~touched & (n >= 3)
    if off.sum() < 2:
        return None
    obs = np.bincount(inverse, weights=frame.fail[rows].astype(float))
    exp = np.bincount(inverse, weights=expected[rows])
    share = float(_beyond_chance(obs[off], exp[off]).mean())
    return share, float(obs[off].sum() - exp[off].sum()) / float(n[off].sum())


def _beyond_chance(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Failures (a count, or an array of them) beyond chance for a share of a common cause: at least
    two, twice the expected, and p < CHILD_P — not two failures meeting an expectation of one half."""
    beyond: np.ndarray = (observed >= np.maximum(2.0, 2.0 * expected)) & (
        stats.poisson.sf(observed - 1, expected) < CHILD_P
    )
    return beyond


def _shared_core(
    segment: Segment,
    note: str | None,
    level: Level,
    frame: Frame,
    unit: np.ndarray,
    usable: np.ndarray,
    expected: np.ndarray,
    badness: Badness,
    cutoff: float,
    bins: np.ndarray,
    config: AnalysisConfig,
) -> tuple[Segment, tuple[str | None, int | None]] | None:
    """The part of a coarse stretch that is a common cause, where the rest is not; else None.

    The scan joins a strong problem of the whole pool and, days later, runners falling sick on
    their own into one stretch: the quiet days between cost the scan less than either side gains.
    Judged whole, the stretch is either no common cause (the pool's day of trouble then comes out
    as a dozen runner verdicts) or one that takes the later sick runners with it (they are never
    judged). Cut where it ran far cleaner than the cause would allow, its parts that are clusters
    shared by the children are the entity's; the rest is left to the finer levels unless it too is
    shared."""
    if level.child is None:
        return None
    pieces = _pieces(segment, frame, bins, expected, config.separating_gap_s // config.bin_s)
    if len(pieces) < 2:
        return None
    job, fail = frame.cols["job"], frame.fail
    standing: list[tuple[Segment, tuple[str | None, int | None]]] = []
    for piece in pieces:
        breadth(piece, unit, job, fail, expected)
        if not is_cluster(piece, cutoff, config):
            continue
        spread = _spread_over_children(piece, level, frame, unit, usable, expected, badness, cutoff, config)
        if spread[0]:
            standing.append((piece, spread))
    if not standing:
        return None
    first, last = standing[0][0].first_bin, standing[-1][0].last_bin
    rows = segment.rows
    inside = (bins[rows] >= first) & (bins[rows] <= last)
    if note is not None:
        rest = rows[~inside]
        if int(fail[rest].sum()) >= config.min_failures:
            outside = _over(
                replace(segment, first_bin=int(bins[rest].min()), last_bin=int(bins[rest].max())),
                rest,
                fail,
                expected,
            )
            breadth(outside, unit, job, fail, expected)
            if _spread_over_children(outside, level, frame, unit, usable, expected, badness, cutoff, config)[
                0
            ]:
                return None  # the cause went on over the rest as well
    if len(standing) == 1:
        return standing[0]  # the one piece is the core, already judged
    core = _over(replace(segment, first_bin=first, last_bin=last), rows[inside], fail, expected)
    breadth(core, unit, job, fail, expected)
    return core, _spread_over_children(core, level, frame, unit, usable, expected, badness, cutoff, config)


def _dense_core(
    segment: Segment,
    level: Level,
    frame: Frame,
    unit: np.ndarray,
    usable: np.ndarray,
    expected: np.ndarray,
    badness: Badness,
    cutoff: float,
    bins: np.ndarray,
    config: AnalysisConfig,
) -> tuple[Segment, tuple[str | None, int | None]] | None:
    """The stretch's densest part, where that alone is a cause its children share and the stretch
    whole is not, nor any piece `_shared_core` cut it into: a pool's file server failing everything
    for eight hours, inside a stretch the scan ran on for days over hosts and runners sick on their
    own, with no quiet half-day to cut it at. Scanned again at four times the stretch's own ratio to
    its expected failures."""
    rows = segment.rows
    unique_bins, inverse = np.unique(bins[rows], return_inverse=True)
    obs = np.bincount(inverse, weights=frame.fail[rows].astype(float))
    exp = np.bincount(inverse, weights=expected[rows])
    r = max(config.alternative_ratio, 4 * segment.failures / max(segment.expected, 1e-9))
    found = max_segment(obs * math.log(r) - (r - 1) * exp)
    if found is None:
        return None
    first, last = int(unique_bins[found[0]]), int(unique_bins[found[1]])
    if (first, last) == (segment.first_bin, segment.last_bin):
        return None
    inside = (bins[rows] >= first) & (bins[rows] <= last)
    core = _over(replace(segment, first_bin=first, last_bin=last), rows[inside], frame.fail, expected)
    breadth(core, unit, frame.cols["job"], frame.fail, expected)
    if not is_cluster(core, cutoff, config):
        return None
    spread = _spread_over_children(core, level, frame, unit, usable, expected, badness, cutoff, config)
    return (core, spread) if spread[0] else None


def _pieces(
    segment: Segment, frame: Frame, bins: np.ndarray, expected: np.ndarray, gap_bins: int
) -> list[Segment]:
    """The segment cut at every run of bins none of which failed beyond chance (1 %), that spans
    `gap_bins` at least, and that ran far cleaner than the stretch's excess per execution would
    allow (`_as_struck`). A few quiet hours cut a stretch into pieces small enough for two runners
    sick on their own to look, by chance, like a cause starting on both at once."""
    rows = segment.rows
    fail = frame.fail
    unique_bins, inverse = np.unique(bins[rows], return_inverse=True)
    obs = np.bincount(inverse, weights=fail[rows].astype(float))
    exp = np.bincount(inverse, weights=expected[rows])
    n = np.bincount(inverse)
    toll = max(segment.failures - segment.expected, 0.0) / max(segment.executions, 1)
    quiet = stats.poisson.sf(obs - 1, exp) > CHILD_P
    cuts: list[tuple[int, int]] = []
    start = 0
    while start < unique_bins.size:
        if not quiet[start]:
            start += 1
            continue
        end = start
        while end + 1 < unique_bins.size and quiet[end + 1]:
            end += 1
        span = slice(start, end + 1)
        if (
            start > 0
            and end < unique_bins.size - 1
            and unique_bins[end] - unique_bins[start] + 1 >= gap_bins
            and not _as_struck(float(obs[span].sum()), float(exp[span].sum()), int(n[span].sum()), toll)
        ):
            cuts.append((start, end))
        start = end + 1
    pieces = []
    begin = 0
    for cut_start, cut_end in [*cuts, (unique_bins.size, unique_bins.size)]:
        if begin < cut_start:
            a, z = int(unique_bins[begin]), int(unique_bins[cut_start - 1])
            part = rows[(bins[rows] >= a) & (bins[rows] <= z)]
            pieces.append(_over(replace(segment, first_bin=a, last_bin=z), part, fail, expected))
        begin = cut_end + 1
    return pieces


@dataclass
class _ChildStart:
    """One elevated child of a coarse stretch: its rows under the entity (time-ordered), when it
    came under it within the stretch, and when its own excess became clear."""

    rows: np.ndarray
    began: int
    onset: int

    def fits(self, start: int, frame: Frame, expected: np.ndarray, toll: float, tolerance: int) -> bool:
        """Whether this child's failures fit a common cause that began at `start`."""
        reference = max(self.began, start)
        if self.onset < reference - tolerance:
            return False  # failing before the cause could have reached it
        if self.onset - reference <= tolerance:
            return True
        times = frame.time_ms[self.rows]
        before = self.rows[np.searchsorted(times, reference) : np.searchsorted(times, self.onset)]
        return frame.jobs_in(before) < 3 or _as_struck(
            float(frame.fail[before].sum()), float(expected[before].sum()), int(before.size), toll
        )


def _already_failing(
    entity: int,
    first_bin: int,
    level: Level,
    frame: Frame,
    usable: np.ndarray,
    expected: np.ndarray,
    children: np.ndarray,
    config: AnalysisConfig,
) -> np.ndarray:
    """Per child: whether it was failing beyond chance under the entity in the `prior_lookback_s`
    before the stretch began (at `first_bin`). A cause the children share begins with the stretch; a
    host already sick when it opened is sick on its own (three hosts of an old image falling sick days
    apart are no bad image, however their excesses overlap later)."""
    found = np.zeros(children.size, bool)
    if level.child is None:
        return found
    start = first_bin * config.bin_s * 1000
    before = (
        (level.entity == entity)
        & usable
        & (frame.time_ms < start)
        & (frame.time_ms >= start - config.prior_lookback_s * 1000)
    )
    rows = np.flatnonzero(before & np.isin(level.child, children))
    if rows.size == 0:
        return found
    child = np.searchsorted(children, level.child[rows])
    obs = np.bincount(child, weights=frame.fail[rows].astype(float), minlength=children.size)
    exp = np.bincount(child, weights=expected[rows], minlength=children.size)
    found[:] = (obs >= np.maximum(3.0, 2.0 * exp)) & (stats.poisson.sf(obs - 1, exp) < CHILD_P)
    return found


def _readings_name_one_cause(
    segment: Segment, frame: Frame, badness: Badness, runners: np.ndarray, config: AnalysisConfig
) -> bool:
    """Runners of one host each of whose own readings name the same dimension for the failures of all
    of them: the host's memory or disk, read by every runner's agent. A slow degradation shows in
    each runner's failures hours apart (each crosses the bar by chance at its own time); the readings
    are the cause's own clock. A runner whose agent fell silent before its failures abstains."""
    rows = segment.rows
    failed = rows[frame.fail[rows]]
    start, end = int(frame.time_ms[failed].min()), int(frame.time_ms[failed].max())
    dimensions = set()
    for runner in runners:
        readings = np.flatnonzero(frame.r_runner == runner)
        if not _read_while_failing(frame, readings, failed[frame.cols["runner"][failed] == runner], config):
            continue  # its agent fell silent before its failures: it names no cause, nor contradicts one
        # A failure on another runner of the host is matched to these readings through the host.
        dimensions.add(examine(frame, badness, readings, failed, start, end, config).dimension)
    return len(dimensions) == 1 and "unknown" not in dimensions


def _idle_runners_read_the_same(
    segment: Segment, host: np.ndarray, frame: Frame, badness: Badness, runner: int, config: AnalysisConfig
) -> bool:
    """Whether the host's other runners, which ran too little from its first failure on to show
    anything, each read the same bad dimension that names the cause of the failing runner's failures:
    a disk turned read-only or a memory shortage of the host, seen by every agent on it while one
    runner happened to take the jobs (held-out fleet 224). A runner without an agent then, or reading
    otherwise, keeps the verdict the failing runner's: its own volume or cache may be what broke.
    `host` is per row its host's runner, or negative off the host."""
    rows = segment.rows
    failed = rows[frame.fail[rows]]
    start, end = int(frame.time_ms[failed].min()), int(frame.time_ms[failed].max())
    own = examine(frame, badness, np.flatnonzero(frame.r_runner == runner), failed, start, end, config)
    if own.dimension == "unknown":
        return False
    on_host = np.unique(host)
    others = on_host[(on_host >= 0) & (on_host != runner)]
    since = rows[frame.time_ms[rows] >= start]
    for other in others:
        if int((host[since] == other).sum()) >= 3:
            return False  # it ran while the cause was there: _spread_over_children judges it
        readings = np.flatnonzero(frame.r_runner == other)
        if not _read_while_failing(frame, readings, failed, config):
            return False
        if examine(frame, badness, readings, failed, start, end, config).dimension != own.dimension:
            return False
    return bool(others.size > 0)


def _read_while_failing(
    frame: Frame, readings: np.ndarray, failed: np.ndarray, config: AnalysisConfig
) -> bool:
    """Whether most of these failures have one of these readings speaking for them: taken at most
    `reading_stale_s` before. An agent that fell silent before its runner's failures says nothing of
    them, neither a cause nor healthy; nor does a runner with no agent at all."""
    read_at = np.sort(frame.r_time_ms[readings])
    times = frame.time_ms[failed]
    if read_at.size == 0:
        return False
    latest = np.searchsorted(read_at, times, side="right") - 1
    spoken = (latest >= 0) & (times - read_at[np.maximum(latest, 0)] <= config.reading_stale_s * 1000)
    return bool(2 * int(spoken.sum()) > times.size)


def _stands_without(
    rest: np.ndarray,
    frame: Frame,
    expected: np.ndarray,
    cutoff: float,
    config: AnalysisConfig,
    min_ratio: float | None = None,
) -> bool:
    """Whether the segment's excess is still beyond chance over the `rest` of its rows, and at least
    `min_ratio` times the expected (by default two thirds of the ratio a cluster needs). The stretch
    is fixed by now: its search was paid for once, by the segment's own adjusted p-value; paying it
    again here sank an image on two hosts whose second host alone was beyond chance at p ~ 1e-4."""
    o, x, k = float(frame.fail[rest].sum()), float(expected[rest].sum()), int(rest.size)
    p = exact_p(o, k, x)
    ratio = config.min_ratio / 1.5 if min_ratio is None else min_ratio
    return not (p > max(cutoff, 1e-3) or (x > 0 and o / x < ratio))


def _interaction_per_child(
    child: np.ndarray, test: np.ndarray, failed: np.ndarray, expected: np.ndarray, children: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per child: the failures, and the expected ones, of its most-failing test where that test is an
    interaction — run at least five times on the other children, failing there at under half the
    rate — else zero (under static sharding no other child runs it, and nothing can be told)."""
    pairs, pair_of = unique_pairs(child, test)
    pair_obs = np.bincount(pair_of, weights=failed.astype(float), minlength=pairs.shape[1])
    pair_exp = np.bincount(pair_of, weights=expected, minlength=pairs.shape[1])
    pair_n = np.bincount(pair_of, minlength=pairs.shape[1]).astype(float)
    tests, test_of_pair = np.unique(pairs[1], return_inverse=True)
    other_obs = np.bincount(test_of_pair, weights=pair_obs, minlength=tests.size)[test_of_pair] - pair_obs
    other_n = np.bincount(test_of_pair, weights=pair_n, minlength=tests.size)[test_of_pair] - pair_n
    odd = (other_n >= 5) & (other_obs / np.maximum(other_n, 1) < 0.5 * pair_obs / pair_n)
    # Only the child's most-failing test: a child failing several tests the others pass is broad.
    top = np.zeros(children)
    np.maximum.at(top, pairs[0], pair_obs)
    odd_top = np.flatnonzero(odd & (pair_obs > 0) & (pair_obs == top[pairs[0]]))
    where, first = np.unique(pairs[0, odd_top], return_index=True)
    odd_obs, odd_exp = np.zeros(children), np.zeros(children)
    odd_obs[where], odd_exp[where] = pair_obs[odd_top[first]], pair_exp[odd_top[first]]
    return odd_obs, odd_exp


def _as_struck(failures: float, expected: float, executions: int, toll: float) -> bool:
    """Whether a child's executions under the entity before its own onset fit the common cause.

    With small jobs a struck child takes several of them to fail clearly beyond chance; it failed
    in them all the same, about as often as the cause's toll predicts. A child that ran that long far
    cleaner than the cause would allow was healthy under the entity at first: its own trouble came
    later, on its own."""
    return bool(stats.poisson.cdf(failures, expected + toll * executions) >= SPARED_P)


def _a_child_is_spared(
    child: np.ndarray,
    test: np.ndarray,
    unit: np.ndarray,
    failed: np.ndarray,
    expected: np.ndarray,
    elevated: np.ndarray,
    considered: np.ndarray,
) -> bool:
    """A common cause reaches every child under the entity. A child that stayed clean where the cause
    would have shown says the cause is in the others, not in what they share (two sick runners of
    three are not a sick image).

    Where it would have shown is judged test by test (the arguments are per row of the segment;
    `child` indexes `elevated` and `considered`): a test that failed on the elevated children at some
    toll should fail as often on a clean child; a test they never ran (static sharding gives each
    host its own) is one the cause reaches as often as it reached theirs. A host whose three tests
    the cause does not break is not spared; one that ran forty of them cleanly, or the tests that
    failed everywhere else, is.

    A cause may also strike whole jobs (`unit`) rather than executions: a bad image that breaks one
    job in three, many tests at once, leaves a host that ran one or two jobs cleanly unremarkable,
    however many tests those jobs held. So a spared child must also have run clean jobs beyond what
    the share of the elevated children's jobs that failed allows."""
    on_elevated = elevated[child]
    tests, inverse = np.unique(test, return_inverse=True)
    f = np.bincount(inverse, weights=failed * on_elevated, minlength=tests.size)
    e = np.bincount(inverse, weights=expected * on_elevated, minlength=tests.size)
    k = np.bincount(inverse, weights=on_elevated.astype(float), minlength=tests.size)
    ran = k > 0
    toll = np.where(ran, np.maximum(f - e, 0.0) / np.maximum(k, 1), 0.0)
    reached = float((f[ran] > 0).mean()) if ran.any() else 0.0
    jobs, job_of = unique_pairs(child, unit)
    job_failed = np.bincount(job_of, weights=failed, minlength=jobs.shape[1]) > 0
    job_child = jobs[0]
    struck_elevated = elevated[job_child]
    struck = (job_failed[struck_elevated].sum() + 0.5) / (struck_elevated.sum() + 1.0)
    job_odds = stats.binom.cdf(
        np.bincount(job_child, weights=job_failed, minlength=elevated.size),
        np.bincount(job_child, minlength=elevated.size),
        struck,
    )
    clean = np.flatnonzero(considered & ~elevated)
    # Each clean child is one more chance for a chance run of clean jobs: of thirty hosts, one may
    # pass eight jobs in a row where the cause strikes two in five.
    for i in clean:
        mine = child == i
        clean_odds = stats.poisson.cdf(failed[mine].sum(), expected[mine].sum() + toll[inverse[mine]].sum())
        unseen = np.unique(inverse[mine][~ran[inverse[mine]]]).size
        if clean_odds * (1.0 - reached) ** unseen < SPARED_P and job_odds[i] * clean.size < SPARED_JOBS_P:
            return True
    return False


def _one_cause(
    segment: Segment,
    level: Level,
    frame: Frame,
    usable: np.ndarray,
    expected: np.ndarray,
    badness: Badness,
    config: AnalysisConfig,
) -> bool:
    """False when none of the children's findings (no dimension named counting as one) holds most of
    them and their readings name different dimensions, or name one on a single child: two hosts with
    a full disk and an exhausted memory, or one host out of memory beside one on a bad image, are two
    problems that happened together, not one sick pool. Thirty hosts on a bad image with healthy
    readings, two of them also sick on their own, are one sick image. A child whose dimension had
    read bad for days of clean runs before its failures (_standing_condition) abstains: two hosts on
    a bad image, one of them with an odd cache digest all week, are the image's."""
    if level.child is None:
        return True
    column, reader = ("runner", "r_runner") if level.name == "machine" else ("machine", "r_machine")
    rows = segment.rows
    failed = rows[frame.fail[rows]]
    findings: Counter[str] = Counter()
    for child in np.unique(frame.cols[column][failed]):
        child_failed = failed[frame.cols[column][failed] == child]
        if child_failed.size < config.min_failures:
            continue
        readings = np.flatnonzero(getattr(frame, reader) == child)
        onset, last = int(frame.time_ms[child_failed].min()), int(frame.time_ms[child_failed].max())
        finding = examine(frame, badness, readings, child_failed, onset, last, config)
        if finding.readings_seen == 0 or not _read_while_failing(frame, readings, child_failed, config):
            # A host with no agent abstains: it names no dimension, nor shows healthy readings. So does
            # one whose agent fell silent before its failures began: its last readings were healthy.
            continue
        if finding.dimension != "unknown" and _standing_condition(
            frame,
            column,
            frame.cols[column],
            int(child),
            finding.dimension,
            onset,
            usable,
            expected,
            badness,
            config,
            min_span_ms=STANDING_MIN_S * 1000,
        ):
            # It ran cleanly under that condition for half a day before: its readings say nothing of
            # these failures. Readings that turned bad an hour before them are the cause coming on.
            continue
        findings[finding.dimension] += 1
    if not findings or 2 * max(findings.values()) > findings.total():
        return True
    named = findings.keys() - {"unknown"}
    # No finding holds most children. Two dimensions are two problems; one dimension on a lone child,
    # beside children with none, is that child's own problem next to another's.
    return len(named) == 1 and findings[next(iter(named))] >= 2


def _onset(rows: np.ndarray, frame: Frame, expected: np.ndarray) -> int:
    """When this child's own excess becomes clear: the first failure after which its executions so far
    are beyond chance at a nominal 0.001 — a few stray early failures do not move it."""
    order = rows[np.argsort(frame.time_ms[rows], kind="stable")]
    failed = frame.fail[order]
    cum_o, cum_e = np.cumsum(failed), np.cumsum(expected[order])
    for i in np.flatnonzero(failed):
        if exact_p(float(cum_o[i]), float(i + 1), float(cum_e[i])) < 1e-3:
            return int(frame.time_ms[order[i]])
    return int(frame.time_ms[order[-1]])


def in_stretch(level: Level, segment: Segment, bins: np.ndarray) -> np.ndarray:
    """Per row: whether it is the segment's entity's, within the segment's bins."""
    inside: np.ndarray = (
        (level.entity == segment.entity) & (bins >= segment.first_bin) & (bins <= segment.last_bin)
    )
    return inside


def _q_value(p: float, p_values: list[float], tested: int) -> float:
    rank = max(1, sum(1 for other in p_values if other <= p))
    return min(1.0, p * max(tested, 1) / rank)
