"""Evidence: does the entity's own health show one sick dimension while it was failing?

Test failures beyond chance make an entity sick, or suspect where no readings lie near them; its
agent readings — independent of the tests — name the dimension: disk (space, inodes, read-only),
memory (available, pressure, OOM kills), clock (offset against several NTP servers), cache (a digest
that differs from the pool's majority for the same key). The dimension whose bad readings cover most of the cluster's failures, onset nearest the
cluster's, wins. Bad readings without a failure excess are only a warning.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import Frame

DIMENSIONS = ("disk", "memory", "clock", "cache")


@dataclass(frozen=True)
class Badness:
    """Per reading row: which dimension it shows as bad (only meaningful for its own check)."""

    bad: dict[str, np.ndarray]
    pressure: dict[str, np.ndarray]  # milder: warning-level disk and memory readings
    check_of: dict[str, int]  # dimension -> check code (or -2 when never reported)
    # Bad for a count over the interval before the reading (OOM kills since the previous one): it
    # speaks for the failures up to it, however long the interval, not for those after it.
    counted: dict[str, np.ndarray] = field(default_factory=dict)


def judge_readings(frame: Frame, config: AnalysisConfig) -> Badness:
    v = frame.r_values
    n = frame.r_time_ms.size
    check_code = {d: frame.codes["check"].index.get(d, -2) for d in DIMENSIONS}
    is_check = {d: frame.r_check == check_code[d] for d in DIMENSIONS}
    with np.errstate(invalid="ignore"):
        disk = (
            (v["disk_free_ratio"] < config.disk_min_free_ratio)
            | (v["disk_free_bytes"] < config.disk_min_free_bytes)
            | (v["inode_free_ratio"] < config.inode_min_free_ratio)
            | (v["read_only"] > 0)
        )
        memory = (
            (v["mem_available_ratio"] < config.memory_min_available_ratio)
            | (v["psi_full_avg10"] > config.memory_max_psi_full_avg10)
            | (v["psi_some_avg10"] > config.memory_max_psi_some_avg10)
            | (v["oom_kills"] > 0)
        )
        clock = np.abs(v["clock_offset_s"]) > config.clock_max_offset_s
    # A reading with no numbers but the agent's own "problem" still counts: the agent knows its checks.
    bare = {
        "disk": np.isnan(v["disk_free_ratio"]) & np.isnan(v["disk_free_bytes"]) & np.isnan(v["read_only"]),
        "memory": np.isnan(v["mem_available_ratio"])
        & np.isnan(v["psi_full_avg10"])
        & np.isnan(v["oom_kills"]),
        "clock": np.isnan(v["clock_offset_s"]),
    }
    bad = {
        "disk": disk | (bare["disk"] & (v["problem"] > 0)),
        "memory": memory | (bare["memory"] & (v["problem"] > 0)),
        "clock": clock | (bare["clock"] & (v["problem"] > 0)),
        "cache": _cache_mismatch(frame, n),
    }
    with np.errstate(invalid="ignore"):
        pressure = {
            "disk": bad["disk"]
            | (v["disk_free_ratio"] < config.disk_warn_free_ratio)
            | (v["disk_free_bytes"] < config.disk_warn_free_bytes),
            "memory": bad["memory"]
            | (v["mem_available_ratio"] < config.memory_warn_available_ratio)
            | (v["psi_some_avg10"] > config.memory_warn_psi_some_avg10)
            | (v["psi_full_avg10"] > config.memory_warn_psi_full_avg10),
            "clock": bad["clock"],
            "cache": bad["cache"],
        }
    with np.errstate(invalid="ignore"):
        oom = (v["oom_kills"] > 0) & is_check["memory"]
    return Badness(
        bad={d: bad[d] & is_check[d] for d in DIMENSIONS},
        pressure={d: pressure[d] & is_check[d] for d in DIMENSIONS},
        check_of=check_code,
        counted={"memory": oom},
    )


# Cache digests are compared within hourly slices, each with the slices `CACHE_REACH_SLICES` either
# side of it: wide enough that a pool-wide cache update (every runner adopting the new content within
# the hour or so it takes) leaves both digests each held by most of the pool around it.
CACHE_SLICE_MS = 3_600_000
CACHE_REACH_SLICES = 3


def _cache_mismatch(frame: Frame, n: int) -> np.ndarray:
    """A cache digest that most of its pool's runners did not hold for the key at about that time.

    A digest is the pool's around a moment when at least two runners, and more than half of those
    reporting the key, held it within a few hours of that moment (or when two or more held it and
    every other runner held a digest of its own; or, where no digest is the pool's that way, the one
    it last agreed on while a runner still holds it). A poisoned cache (a digest of its
    own) or a bad image's (one its hosts share, a minority) never is; a routine update is, both before
    and after it, so it makes no runner's readings bad. A runner still on the old content hours after
    everyone else moved on is."""
    bad = np.zeros(n, bool)
    if frame.c_reading.size == 0:
        return bad
    reading = frame.c_reading
    columns = np.stack(
        [
            frame.r_pool[reading].astype(np.int64),
            frame.c_key.astype(np.int64),
            frame.r_time_ms[reading] // CACHE_SLICE_MS,
            frame.c_digest.astype(np.int64),
            frame.r_runner[reading].astype(np.int64),
        ]
    )
    held, per_reading = np.unique(columns, axis=1, return_inverse=True)
    # (pool, key) -> slice -> digest -> runners that reported it in that slice
    slices: dict[tuple[int, int], dict[int, dict[int, set[int]]]] = {}
    for pool, key, at, digest, runner in held.T.tolist():
        slices.setdefault((pool, key), {}).setdefault(at, {}).setdefault(digest, set()).add(runner)
    accepted: dict[tuple[int, int, int], set[int]] = {}
    for (pool, key), by_slice in slices.items():
        last: set[int] = set()
        for at in sorted(by_slice):
            holders: dict[int, set[int]] = {}
            for near in range(at - CACHE_REACH_SLICES, at + CACHE_REACH_SLICES + 1):
                for digest, runners in by_slice.get(near, {}).items():
                    holders.setdefault(digest, set()).update(runners)
            reporting = len(set().union(*holders.values()))
            counts = sorted((len(runners) for runners in holders.values()), reverse=True)
            # Or the one digest held by more runners than any other, where the rest each hold a
            # digest of their own: two of four runners poisoned (each its own way) leave the other
            # two the pool's content.
            alone_on_top = counts[0] >= 2 and (len(counts) == 1 or counts[1] == 1)
            now = {
                digest
                for digest, runners in holders.items()
                if len(runners) >= 2
                and (2 * len(runners) > reporting or (alone_on_top and len(runners) == counts[0]))
            }
            # A small pool with one runner on a digest of its own (a warning) and one poisoned has
            # no majority once the poisoned one has left the pool's content for hours: the content
            # the pool last agreed on stays its own while a runner still holds it.
            if not now:
                now = last & holders.keys()
            accepted[(pool, key, at)] = now
            last = now or last
    lonely = _held_alone_too_long(held)
    # Bad only where the pool has a digest of its own to differ from, or the runner's has no peer.
    held_bad = np.array(
        [
            (bool(accepted[(pool, key, at)]) and digest not in accepted[(pool, key, at)])
            or (pool, key, digest, runner) in lonely
            for pool, key, at, digest, runner in held.T.tolist()
        ],
        dtype=bool,
    )
    # One reading digests several caches: it is bad if any of them is (a plain assignment through
    # repeated indices would keep only the last cache's verdict).
    np.logical_or.at(bad, reading, held_bad[per_reading.ravel()])
    return bad


def _held_alone_too_long(held: np.ndarray) -> set[tuple[int, int, int, int]]:
    """(pool, key, digest, runner) where one runner held a digest no other runner ever did, for over
    twice as long as the pool's shared digests usually last, while another runner of the pool moved
    through two digests or more: content of its own that the pool's routine updates passed by. A pool
    of two has no majority to tell that by, once the content they last shared is gone from both.

    `held` is the columns (pool, key, slice, digest, runner) of _cache_mismatch."""
    spans: dict[tuple[int, int], dict[tuple[int, int], list[int]]] = {}
    for pool, key, at, digest, runner in held.T.tolist():
        span = spans.setdefault((pool, key), {}).setdefault((digest, runner), [at, at])
        span[0], span[1] = min(span[0], at), max(span[1], at)
    lonely = set()
    for (pool, key), by_holder in spans.items():
        holders = Counter(digest for digest, _runner in by_holder)
        shared = [
            last - first + 1 for (digest, _), (first, last) in by_holder.items() if holders[digest] >= 2
        ]
        if len(shared) < 3:
            continue
        usual = float(np.median(shared))
        for (digest, runner), (first, last) in by_holder.items():
            if holders[digest] > 1 or last - first + 1 <= 2 * usual:
                continue
            passed_by = {
                other
                for (other, someone), (start, end) in by_holder.items()
                if someone != runner and start <= last and end >= first
            }
            if len(passed_by) >= 2:
                lonely.add((pool, key, digest, runner))
    return lonely


@dataclass
class Finding:
    dimension: str  # disk | memory | clock | cache | unknown
    coverage: float = 0.0
    onset_ms: int | None = None
    confirmed_at_ms: int | None = None
    readings_seen: int = 0
    failures_examined: int = 0
    failures_readable: int = 0  # of those, on runners or hosts that reported in the window
    failures_near_readings: int = 0  # of those, with a reading of their runner or host near in time
    runners_reporting: int = 0
    per_dimension: dict[str, float] = field(default_factory=dict)
    examples: list[int] = field(default_factory=list)  # reading row indices


def examine(
    frame: Frame,
    badness: Badness,
    reading_rows: np.ndarray,
    failed: np.ndarray,
    cluster_onset_ms: int,
    cluster_end_ms: int,
    config: AnalysisConfig,
    hosts_agree: bool = False,
) -> Finding:
    """Which dimension's bad readings explain the failed executions (row indices of the frame)? With
    `hosts_agree` (an image's or a pool's), only one read bad on more than half of the failing hosts
    that reported: an image is what its hosts read, not what one of them with an odd cache does."""
    lo = cluster_onset_ms - config.evidence_lookback_s * 1000
    # A reading speaks for `reading_stale_s` on either side (nearest_reading): one a few minutes after
    # the last failure is as near it as one before, and agents that report hourly often sent none in
    # the half hour before a job that failed.
    hi = cluster_end_ms + config.reading_stale_s * 1000
    window = reading_rows[(frame.r_time_ms[reading_rows] >= lo) & (frame.r_time_ms[reading_rows] <= hi)]
    finding = Finding(dimension="unknown", readings_seen=int(window.size), failures_examined=int(failed.size))
    finding.runners_reporting = int(np.unique(frame.r_runner[window]).size)
    if window.size == 0 or failed.size == 0:
        return finding
    # Failures on runners and hosts that sent no reading at all in the window (no agent) can neither
    # confirm a dimension nor show healthy readings: the coverage is over the others. A runner's own
    # cluster is all readable once it reports; an image on two hosts, one without an agent, is read
    # from the one that has.
    readable = np.isin(frame.cols["runner"][failed], frame.r_runner[window]) | np.isin(
        frame.cols["machine"][failed], frame.r_machine[window]
    )
    if not readable.any():
        return finding
    finding.failures_readable = int(readable.sum())
    times = frame.time_ms[failed]
    near_runner = nearest_reading(frame, window, frame.cols["runner"][failed], times, config) >= 0
    near_host = nearest_reading(frame, window, frame.cols["machine"][failed], times, config, "r_machine") >= 0
    finding.failures_near_readings = int((near_runner | near_host).sum())
    best: tuple[float, float, str] | None = None
    for dimension in DIMENSIONS:
        rows = window[frame.r_check[window] == badness.check_of[dimension]]
        if rows.size == 0:
            continue
        bad = badness.bad[dimension][rows]
        # Match a failure to its runner's readings, or its host's: ephemeral runners report as the host.
        by_runner = nearest_bad(frame, rows, bad, frame.cols["runner"][failed], frame.time_ms[failed], config)
        by_host = nearest_bad(
            frame, rows, bad, frame.cols["machine"][failed], frame.time_ms[failed], config, reader="r_machine"
        )
        covered = by_runner | by_host
        if dimension in badness.counted:
            counted = badness.counted[dimension][rows]
            for reader, who in (("r_runner", "runner"), ("r_machine", "machine")):
                covered |= next_bad(frame, rows, counted, frame.cols[who][failed], times, config, reader)
        coverage = float(covered[readable].mean())
        finding.per_dimension[dimension] = coverage
        if coverage < config.evidence_min_coverage or not bad.any():
            continue
        if hosts_agree:
            reporting = np.unique(frame.cols["machine"][failed[readable]])
            read_bad = np.intersect1d(frame.r_machine[rows[bad]], reporting)
            if 2 * read_bad.size <= reporting.size:
                continue
        onset = int(frame.r_time_ms[rows[bad]].min())
        score = (coverage, -abs(onset - cluster_onset_ms), dimension)
        if best is None or score[:2] > best[:2]:
            best = score
            finding.dimension, finding.coverage, finding.onset_ms = dimension, coverage, onset
            after = rows[bad & (frame.r_time_ms[rows] >= cluster_onset_ms - config.reading_stale_s * 1000)]
            finding.confirmed_at_ms = int(frame.r_time_ms[after].min()) if after.size else onset
            order = np.argsort(frame.r_time_ms[rows[bad]])
            finding.examples = [int(r) for r in rows[bad][order][:3]] + [
                int(r) for r in rows[bad][order][-2:]
            ]
    return finding


def nearest_bad(
    frame: Frame,
    rows: np.ndarray,
    bad: np.ndarray,
    runner: np.ndarray,
    time_ms: np.ndarray,
    config: AnalysisConfig,
    reader: str = "r_runner",
) -> np.ndarray:
    """For each (runner, time): is the nearest reading of that runner among `rows`, within the
    staleness limit, a bad one?"""
    found = nearest_reading(frame, rows, runner, time_ms, config, reader)
    out = np.zeros(found.size, bool)
    out[found >= 0] = bad[found[found >= 0]]
    return out


# Epoch ms fit in 42 bits until the year 2109: (runner, time) pairs are one int64 key.
_KEY_SCALE = np.int64(1) << 42


def _keyed(
    frame: Frame, rows: np.ndarray, runner: np.ndarray, time_ms: np.ndarray, reader: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The readings `rows` as sorted (runner, time) keys with their order, the wanted (runner, time)
    keys, and where each wanted key would go among them (the first reading at or after it)."""
    keys = getattr(frame, reader)[rows].astype(np.int64) * _KEY_SCALE + frame.r_time_ms[rows]
    order = np.argsort(keys)
    keys = keys[order]
    wanted = runner.astype(np.int64) * _KEY_SCALE + time_ms
    return keys, order, wanted, np.searchsorted(keys, wanted, side="left")


def next_bad(
    frame: Frame,
    rows: np.ndarray,
    bad: np.ndarray,
    runner: np.ndarray,
    time_ms: np.ndarray,
    config: AnalysisConfig,
    reader: str = "r_runner",
) -> np.ndarray:
    """For each (runner, time): is that runner's first reading among `rows` at or after the time,
    within twice the staleness limit, a bad one? For counts since the previous reading: an OOM kill
    that failed a job shows in the reading after it."""
    out = np.zeros(runner.size, bool)
    if rows.size == 0:
        return out
    keys, order, wanted, after = _keyed(frame, rows, runner, time_ms, reader)
    ok = after < keys.size
    c = np.where(ok, after, 0)
    ok &= (keys[c] // _KEY_SCALE == wanted // _KEY_SCALE) & (
        keys[c] - wanted <= 2 * config.reading_stale_s * 1000
    )
    out[ok] = bad[order[c[ok]]]
    return out


def nearest_reading(
    frame: Frame,
    rows: np.ndarray,
    runner: np.ndarray,
    time_ms: np.ndarray,
    config: AnalysisConfig,
    reader: str = "r_runner",
) -> np.ndarray:
    """For each (runner, time): the position in `rows` of that runner's nearest reading within the
    staleness limit, or -1 where it sent none."""
    if rows.size == 0:
        return np.full(runner.size, -1, np.int64)
    keys, order, wanted, right = _keyed(frame, rows, runner, time_ms, reader)
    left = right - 1
    stale = config.reading_stale_s * 1000
    best = np.full(wanted.size, -1, np.int64)
    best_gap = np.full(wanted.size, np.inf)
    for candidate in (left, right):
        ok = (candidate >= 0) & (candidate < keys.size)
        c = np.where(ok, candidate, 0)
        same_runner = ok & (keys[c] // _KEY_SCALE == wanted // _KEY_SCALE)
        gap = np.abs(keys[c] - wanted).astype(float)
        take = same_runner & (gap <= stale) & (gap < best_gap)
        best_gap = np.where(take, gap, best_gap)
        best = np.where(take, order[c], best)
    return best


def latest_bad(frame: Frame, badness: Badness, as_of_ms: int, config: AnalysisConfig) -> dict[int, list[str]]:
    """Per runner code: the dimensions its most recent readings (as of `as_of`) show under pressure."""
    result: dict[int, list[str]] = {}
    recent = frame.r_time_ms <= as_of_ms
    for dimension in DIMENSIONS:
        rows = np.flatnonzero(recent & (frame.r_check == badness.check_of[dimension]))
        if rows.size == 0:
            continue
        order = rows[np.lexsort((frame.r_time_ms[rows], frame.r_runner[rows]))]
        runners = frame.r_runner[order]
        last = np.concatenate([runners[1:] != runners[:-1], [True]])
        for row in order[last]:
            fresh = as_of_ms - frame.r_time_ms[row] <= max(config.reading_stale_s * 1000 * 4, 3_600_000)
            if fresh and badness.pressure[dimension][row]:
                result.setdefault(int(frame.r_runner[row]), []).append(dimension)
    return result
