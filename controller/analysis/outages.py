"""Outages: a failure spike across most of the fleet at once (network, an external service), or
across most of one pool's hosts at once while the rest of the fleet runs as usual (a region's
network, a registry mirror only some pools pull from).

Found first and taken out of every per-entity comparison and every flake score: when the whole
fleet, or a whole pool, fails together, no runner is sick for it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy import stats

from controller.analysis.baseline import WindowIndex, combine, rate_elsewhere, sorted_codes, unique_pairs
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import NONE


@dataclass(frozen=True)
class Outage:
    start_ms: int
    end_ms: int
    scope: str  # "fleet", or "pool" for an outage of some pools only
    failures: int
    executions: int
    expected: float
    runners_failing: int
    runners_active: int
    pools: tuple[int, ...] = ()  # pool codes, for scope "pool"


def find_outages(
    frame_cols: dict[str, np.ndarray],
    time_ms: np.ndarray,
    fail: np.ndarray,
    rows: np.ndarray,
    config: AnalysisConfig,
) -> list[Outage]:
    """Outage spans among the rows selected by the boolean mask `rows`.

    A bin is an outage when the fleet fails far beyond its tests' usual rates and most active hosts
    burst at once. Hosts, not runner ids: a sick host with fifty ephemeral runners is one host.
    """
    idx = np.flatnonzero(rows)
    if idx.size == 0:
        return []
    t, f = time_ms[idx], fail[idx].astype(float)
    tst, host = frame_cols["test"][idx], frame_cols["machine"][idx]
    fine = t // (config.outage_bin_s * 1000)
    radius = max(1, 3600 // config.outage_bin_s)
    by_test = WindowIndex(tst, fine, radius)
    strength = config.history_prior_strength
    _, _, expected = rate_elsewhere(by_test, f, np.ones_like(f), strength)

    bins, inverse = np.unique(fine, return_inverse=True)
    observed = np.bincount(inverse, weights=f)
    executions = np.bincount(inverse).astype(float)
    expect = np.bincount(inverse, weights=expected)

    # Per host within each bin: is it failing well beyond its tests' usual rates *and* beyond its own
    # rate just before (15 min to 2 h earlier)? An outage is a burst on most hosts at once, and a host
    # already sick bursts only if it gets worse still. A step that stays (most hosts going sick
    # together) bursts too; `_transient` tells it apart by what follows.
    key = combine(inverse.astype(np.int64), host)
    unique_hosts, hinv = np.unique(key, return_inverse=True)
    h_obs = np.bincount(hinv, weights=f)
    h_exp = np.bincount(hinv, weights=expected)
    h_n = np.bincount(hinv).astype(float)
    h_bin = np.zeros(unique_hosts.size, np.int64)
    h_bin[hinv] = inverse
    h_host = np.zeros(unique_hosts.size, np.int64)
    h_host[hinv] = host
    # Each test's usual rate on the hosts not already failing a lot: where sick hosts or a bad image
    # run half the fleet, every test "usually" fails often, and the healthy hosts' burst in an outage
    # is no multiple of that. The hosts still clean show it against what they usually fail.
    own_before = _host_rate_before(bins[h_bin], h_host, h_obs, h_n, radius)[hinv]
    clean = own_before < config.outage_saturated_rate
    _, _, expected_clean = rate_elsewhere(by_test, f * clean, clean.astype(float), strength)
    h_exp_clean = np.bincount(hinv, weights=expected_clean)
    failed_pairs, _ = unique_pairs(inverse[f > 0], tst[f > 0])
    distinct = np.bincount(failed_pairs[0], minlength=bins.size)
    near = _hosts_near(bins, h_bin, h_host, radius)
    pool_of_host = np.full(int(host.max()) + 2, NONE, np.int64)  # one slot more: host NONE is -1
    pool_of_host[host] = frame_cols["pool"][idx]
    p_tests = stats.binom.sf(observed - 1, executions, np.clip(expect / np.maximum(executions, 1), 1e-9, 1))
    counts = _Counts(
        bins,
        observed,
        executions,
        expect,
        p_tests,
        distinct,
        h_bin,
        h_host,
        h_obs,
        h_exp,
        h_exp_clean,
        h_n,
        near,
        pool_of_host,
    )
    # Runs whose padded edges will meet become one outage (`_merged`): judge them as one.
    join = 2 * config.outage_pad_bins + 1
    # Rates "before" a bin deep inside a long outage hold the outage's own start: a second look judges
    # every bin against the rates with the outages found at first left out.
    flagged = _short_bursts(counts, radius, join, config)
    kept = np.zeros(bins.size, bool)
    for _ in range(2):
        flagged, active, failing = _flag(counts, flagged, radius, join, config)
        seen = flagged
        flagged = _transient(counts, flagged, radius, join)
        # The second look may grow a run into what followed it (a bad image rolled out as the
        # outage ended) and then find its hosts never came back: where it still sees the burst the
        # first look kept, that stays.
        flagged |= kept & seen
        kept = flagged.copy()
    image = frame_cols["image"][idx]
    row_bin = bins[inverse]
    pad = config.outage_pad_bins
    # What the hosts off an image usually fail: their tests' usual rates, or their own rate before
    # where that is lower. Tests' rates hold every sick host's and bad image's failures too; a fleet
    # with several of them "usually" fails a lot, and an outage on its healthy hosts must not look
    # like their usual.
    usual = np.where(own_before > 0, np.minimum(expected, own_before), expected)
    runs = flagged_runs(bins, flagged, join)
    in_runs = np.zeros(bins.size + 1, np.int64)
    for start, stop in runs:
        in_runs[np.searchsorted(bins, bins[start] - pad)] += 1
        in_runs[np.searchsorted(bins, bins[stop - 1] + pad, side="right")] -= 1
    recent = _RecentRates(t, f, tst, frame_cols["pool"][idx], host, np.cumsum(in_runs)[inverse] == 0, config)
    for start, stop in runs:
        core = (inverse >= start) & (inverse < stop)
        claimed = (row_bin >= bins[start] - pad) & (row_bin <= bins[stop - 1] + pad)
        at_ms = int(bins[start] - pad) * config.outage_bin_s * 1000
        if not recent.beyond(np.flatnonzero(claimed), at_ms):
            flagged[start:stop] = False
            continue
        beyond, worst = _beyond_one_image(image[core], f[core], usual[core], host[core])
        if beyond is None:
            # Too little ran off the image in the core to tell: look over all the outage would claim,
            # its padded edges too. Jobs end at their own times, and hosts on other images that ran
            # cleanly minutes off the core are the evidence against it.
            beyond, worst = _beyond_one_image(image[claimed], f[claimed], usual[claimed], host[claimed])
        if beyond is not True:
            # Either way (or where nothing off the image can tell: one host off it, which may be
            # sick on its own, or too few runs), only where the image fails beyond its tests' usual
            # rates outside the burst too (on more than one host: a sick runner on it is its own
            # trouble). An image rolled out in the burst is new there, or stays bad after it; one
            # that ran cleanly the hours before and after is no explanation. The others merely ran
            # at other minutes, or the outage spared them: it need not reach every host, and a pool
            # of its own image may be all it reached.
            reach = 12 * radius
            hours_around = (
                ~claimed & (row_bin >= bins[start] - pad - reach) & (row_bin <= bins[stop - 1] + pad + reach)
            )
            around, off_image = hours_around & (image == worst), hours_around & (image != worst)
            # Against its tests' usual rates, or where lower their rates on the other images then: an
            # image on most of the fleet is most of what its tests "usually" do.
            usual_around = np.minimum(
                expected[around], _rate_of_tests(tst[off_image], f[off_image], tst[around])
            )
            if not _fails_as_usual(*_without_worst_host(f[around], usual_around, host[around])):
                flagged[start:stop] = False
    return _spans(bins, flagged, observed, executions, expect, failing, active, "fleet", config)


class _Trailing:
    """Per group of rows (a test on a pool, a test on a host), in time order: the failures and runs of
    a group before a moment, over its last so many runs or over so many hours."""

    def __init__(self, group: np.ndarray, t: np.ndarray, f: np.ndarray, keep: np.ndarray) -> None:
        self.t0 = int(t.min()) if t.size else 0
        self.span = int(t.max()) - self.t0 + 2 if t.size else 1
        _, self.group = sorted_codes(group)
        key = self.group[keep] * self.span + (t[keep] - self.t0)
        order = np.argsort(key, kind="stable")
        self.key = key[order]
        self.cum = np.concatenate([[0.0], np.cumsum(f[keep][order])])

    def before(
        self, rows: np.ndarray, at_ms: int, reach_ms: int, last: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per row: its group's (failures, runs) in the `reach_ms` before `at_ms`, its `last` runs
        there at most."""
        base = self.group[rows] * self.span
        stop = np.searchsorted(self.key, base + (at_ms - self.t0), side="left")
        start = np.searchsorted(self.key, base + max(0, at_ms - reach_ms - self.t0), side="left")
        if last is not None:
            start = np.maximum(stop - last, start)
        return self.cum[stop] - self.cum[start], (stop - start).astype(float)


class _RecentRates:
    """What a moment's tests failed in the day before it where they ran: over each test's last runs on
    its pool and over its runs on its host, whichever is more. A pool in standing trouble (its DNS
    broken for days, its clocks gone bad this afternoon) or a sick host fails the same tests at every
    wave of its jobs, and three of them bursting at once beside a clean fleet looked like an outage
    (four false ones in a held-out fleet); an outage fails tests that were passing where they ran.
    Rows of flagged runs (`keep` false) are left out: an outage is no rate for the next one."""

    def __init__(
        self,
        t: np.ndarray,
        f: np.ndarray,
        test: np.ndarray,
        pool: np.ndarray,
        host: np.ndarray,
        keep: np.ndarray,
        config: AnalysisConfig,
    ) -> None:
        self.t, self.f, self.test, self.pool, self.host, self.keep = t, f, test, pool, host, keep
        self.config = config

    # Built on first use: most passes flag no run at all.
    @cached_property
    def by_pool(self) -> _Trailing:
        return _Trailing(combine(self.test, self.pool), self.t, self.f, self.keep)

    @cached_property
    def by_host(self) -> _Trailing:
        return _Trailing(combine(self.test, self.host), self.t, self.f, self.keep)

    def beyond(self, rows: np.ndarray, at_ms: int) -> bool:
        """Whether `rows` fail far beyond their tests' rates just before `at_ms` where they ran. Where
        those passed every run, any failures are beyond them: whether they are beyond chance at the
        tests' usual rates the bins were judged on already."""
        if rows.size == 0:
            return True
        config = self.config
        reach = int(config.outage_recent_hours * 3_600_000)
        pool_f, pool_n = self.by_pool.before(rows, at_ms, reach, last=config.outage_recent_runs)
        host_f, host_n = self.by_host.before(rows, at_ms, reach)
        rates = np.maximum(pool_f / (pool_n + 1), host_f / (host_n + 1))
        # Tests already failing a good share of their runs where they ran are the standing trouble's
        # (a sick runner, a bad image), whatever an outage adds to them: it shows on the rest.
        fresh = rates < config.outage_saturated_rate
        expected, observed = float(rates[fresh].sum()), float(self.f[rows][fresh].sum())
        p = float(stats.poisson.sf(observed - 1, max(expected, 1e-9)))
        return observed >= _FRESH_MIN_RATIO * expected and p < config.outage_p


# The outages of a held-out simulator's fleets fail 5-110x what their tests failed in the day before
# where they ran; pools and a runner in standing trouble bursting together, 0.2-1.4x. A small pool
# with a sick host among three (its failures in every test's last runs there) leaves an outage 2.9x.
_FRESH_MIN_RATIO = 2.0


@dataclass(frozen=True)
class _Counts:
    """Per bin (observed, executions, expected, distinct failed tests) and per (host, bin) pair."""

    bins: np.ndarray
    observed: np.ndarray
    executions: np.ndarray
    expect: np.ndarray
    p_tests: np.ndarray  # per bin: the chance of as many failures at its tests' usual rates
    distinct: np.ndarray
    h_bin: np.ndarray
    h_host: np.ndarray
    h_obs: np.ndarray
    h_exp: np.ndarray
    h_exp_clean: np.ndarray  # the same from each test's usual rate on hosts not failing a lot
    h_n: np.ndarray
    hosts_near: np.ndarray  # per bin: hosts with data within `radius` bins of it
    pool_of_host: np.ndarray  # per host code: its pool's code

    @property
    def several_pools(self) -> bool:
        pools = self.pool_of_host[self.pool_of_host != NONE]
        return bool(np.unique(pools).size > 1)


@dataclass(frozen=True)
class _HostBins:
    """Per (host, bin) pair judged over the bin and its neighbours: its bin's index, its host, and
    whether the host was active and bursting there."""

    position: np.ndarray
    host: np.ndarray
    active: np.ndarray
    bursting: np.ndarray

    def in_run(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The hosts that burst in the bins from `start` to `stop`, and the hosts active there."""
        inside = (self.position >= start) & (self.position < stop)
        return np.unique(self.host[inside & self.bursting]), np.unique(self.host[inside & self.active])


def _short_bursts(counts: _Counts, radius: int, join: int, config: AnalysisConfig) -> np.ndarray:
    """Bins far beyond their tests' usual rates, in runs no longer than an outage lasts that follow two
    hours with no such bin. They feed no rate "before" even in the first look: at a quiet moment an
    outage's first minutes reach one host alone, and that host's burst must not become the rate the
    rest of the outage is judged against. A fleet already far beyond its usual rates (half a pool on a
    bad image) shows such runs between its quieter bins all day: they are its rate, not bursts."""
    bins, observed, expect = counts.bins, counts.observed, counts.expect
    clear = (
        (observed >= 2 * config.outage_min_ratio * expect)
        & (counts.p_tests < config.outage_p)
        & (counts.distinct >= 3)
    )
    short = np.zeros(clear.size, bool)
    for start, stop in flagged_runs(bins, clear, join):
        earlier = clear[:start] & (bins[:start] >= bins[start] - 2 * radius)
        if (
            not earlier.any()
            and (bins[stop - 1] - bins[start] + 1) * config.outage_bin_s <= config.outage_max_s
        ):
            short[start:stop] = True
    return short


def _flag(
    counts: _Counts, excluded: np.ndarray, radius: int, join: int, config: AnalysisConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flagged bins, active hosts, bursting hosts) per bin; `excluded` bins feed no rate "before"."""
    bins, observed, executions, expect = counts.bins, counts.observed, counts.executions, counts.expect
    h_bin, h_obs, h_n = counts.h_bin, counts.h_obs, counts.h_n
    # Jobs report when they end, so one 5-minute bin sees only the hosts that happened to finish a job
    # in it: judge each host over the bin and its neighbours (± 1 bin) instead.
    keep = ~excluded[h_bin]
    host_bins, unsaturated_excess = _hosts_bursting(
        bins,
        h_bin,
        counts.h_host,
        h_obs,
        (counts.h_exp, counts.h_exp_clean),
        h_n,
        (h_obs * keep, h_n * keep, counts.h_exp * keep),
        radius,
        config,
    )
    active = np.bincount(host_bins.position, weights=host_bins.active, minlength=bins.size)[: bins.size]
    failing = np.bincount(host_bins.position, weights=host_bins.bursting, minlength=bins.size)[: bins.size]
    # The fleet's own rate before (15 min to 2 h earlier): a burst stands out from it. Whether the
    # fleet came back afterwards is asked of each whole span at the end (`_transient`): a bin inside an
    # hour-long outage has the outage itself on both sides.
    fleet_before = _rate_between(bins, observed * ~excluded, executions * ~excluded, -2 * radius, -3)

    p = counts.p_tests
    p_own = np.minimum(p, stats.binom.sf(observed - 1, executions, np.clip(fleet_before, 1e-9, 1)))
    # Beyond the tests' usual rates (over the whole fleet, or over the hosts not already failing a lot,
    # which can show a multiple where sick ones dilute it), or beyond the fleet's own rate just before:
    # a multiple of it, or (where hosts already fail a lot, so no multiple is possible) a share of the
    # passes it lost.
    fleet_burst = observed >= config.outage_min_ratio * fleet_before * executions
    beyond = (
        (observed >= config.outage_min_ratio * expect)
        | unsaturated_excess
        | fleet_burst
        | _beyond_own_rate(observed, executions, fleet_before, config, config.outage_p)
    )
    candidate = beyond & (p_own < config.outage_p) & (counts.distinct >= 3)
    most_active = (failing >= config.outage_min_runners) & (
        failing >= config.outage_min_share * np.maximum(active, 1)
    )

    def bursting_on_most_of(hosts: np.ndarray) -> np.ndarray:
        wanted = np.maximum(2, np.minimum(config.outage_min_runners, config.outage_min_share * hosts))
        enough: np.ndarray = failing >= wanted
        return enough

    # Most active hosts burst; or the whole fleet bursts above its own rate before, on more than one
    # host: on as many as above where that many are active, on most of them where fewer are.
    flagged = candidate & (most_active | (fleet_burst & bursting_on_most_of(active)))
    # Jobs report when they end, so at a quiet moment (or in an outage's first minutes) the few hosts
    # that reported are all there is to see. Such bins are an outage only in a run with a bin where
    # as many hosts burst as above, counting the fleet as every host that ran within the hour, or
    # where those that reported fail at twice the multiple of their tests' usual rates (and of the
    # fleet's own rate before) that a bin needs. Two sick hosts of eight, alone at a quiet moment, are
    # not most of the fleet, and the tests they fail are mostly tests that fail there anyway.
    clearly_beyond = (observed >= 2 * config.outage_min_ratio * expect) & fleet_burst
    core = candidate & (
        bursting_on_most_of(np.maximum(active, counts.hosts_near))
        | (clearly_beyond & bursting_on_most_of(active))
    )
    # At the quietest moments one host finishes a job at a time: an outage there is a run of bins
    # each with one host bursting, where most hosts active during the run burst in turn — at least
    # two, and in more than one pool where the fleet has several (two hosts of one pool failing in
    # turn are as much that pool's trouble).
    for start, stop in flagged_runs(bins, candidate & clearly_beyond & (failing >= 1), join):
        if core[start:stop].any():
            continue
        hosts, ran = host_bins.in_run(start, stop)
        pools = np.unique(counts.pool_of_host[hosts]).size
        if (
            hosts.size >= 2
            and hosts.size >= config.outage_min_share * ran.size
            and (pools >= 2 or not counts.several_pools)
        ):
            run = slice(start, stop)
            core[run] = candidate[run] & clearly_beyond[run]
            flagged[run] |= core[run]
    # An outage's edges are weaker than its core: grow each core over neighbouring bins that are
    # still clearly elevated. Neighbouring: with data at most 20 minutes apart (one job's length in
    # a busy pool), since jobs report when they end and the first minutes of an outage may reach one
    # host's jobs alone.
    edge = (observed >= 1.5 * expect) & (p < 0.05) & (failing >= 1)
    near = np.diff(bins) <= 4
    for _ in range(4):
        grown = flagged.copy()
        grown[1:] |= flagged[:-1] & edge[1:] & near
        grown[:-1] |= flagged[1:] & edge[:-1] & near
        flagged = grown
    # Jobs come in waves: where no job ended for a while, an outage goes on into the next wave's
    # bins, as far as its padding would reach, if they are still candidates with hosts bursting.
    flagged = _across_quiet_gaps(bins, flagged, candidate & (failing >= 1), failing == 0, join)
    # A lull of one bin inside a burst is still the burst.
    holes = ~flagged[1:-1] & flagged[:-2] & flagged[2:] & (bins[2:] - bins[:-2] <= 3)
    flagged[1:-1] |= holes
    for start, stop in flagged_runs(bins, flagged, join):
        if not core[start:stop].any() or _one_pools_share(counts, host_bins, start, stop, config):
            flagged[start:stop] = False
    return flagged, active, failing


def _one_pools_share(
    counts: _Counts, host_bins: _HostBins, start: int, stop: int, config: AnalysisConfig
) -> bool:
    """Whether the hosts bursting in a run are a minority of one pool's while other pools ran cleanly
    beside them: sick runners and a bad image on one pool bursting together (jobs come in waves)
    are that pool's trouble. An outage that reached most of one pool and spared the few hosts of
    another that ran is still one."""
    bursting, ran = host_bins.in_run(start, stop)
    pools = np.unique(counts.pool_of_host[bursting])
    if pools.size != 1 or np.unique(counts.pool_of_host[ran]).size < 2:
        return False
    ran_there = int((counts.pool_of_host[ran] == pools[0]).sum())
    return bool(bursting.size < config.outage_min_share * ran_there)


def _across_quiet_gaps(
    bins: np.ndarray, flagged: np.ndarray, still: np.ndarray, clean: np.ndarray, join: int
) -> np.ndarray:
    """`flagged` grown, in both directions, over `still` bins at most `join` bins from a flagged one,
    across bins with no data only: a `clean` bin in between (jobs ended there and no host burst) is
    the fleet back, and what fails after it is not the outage going on."""
    grown = flagged.copy()
    for order in (range(bins.size), range(bins.size - 1, -1, -1)):
        last: int | None = None
        for i in order:
            if grown[i]:
                last = i
            elif last is not None and still[i] and abs(int(bins[i]) - int(bins[last])) <= join:
                grown[i] = True
                last = i
            elif clean[i]:
                last = None
    return grown


def _beyond_own_rate(
    observed: np.ndarray,
    executions: np.ndarray,
    rate: np.ndarray,
    config: AnalysisConfig,
    p_max: float = 1e-3,
) -> np.ndarray:
    """Failing far beyond its own rate on either side, measured among the executions that would have
    passed: a host already failing a quarter of its tests that fails half of them in an outage lost a
    third of its passes. A ratio of failures cannot show that (it is capped by 1/rate); the share
    of lost passes can, and it is what an outage takes from every host alike."""
    n = np.maximum(executions, 1)
    lost = (observed / n - rate) / np.maximum(1 - rate, 1e-9)
    p = stats.binom.sf(observed - 1, executions, np.clip(rate, 1e-9, 1 - 1e-9))
    beyond: np.ndarray = (observed >= 2) & (rate < 1) & (lost >= config.outage_min_lost_passes) & (p < p_max)
    return beyond


def _transient(counts: _Counts, flagged: np.ndarray, radius: int, join: int) -> np.ndarray:
    """Keep the flagged runs that the hosts came back from. A step that stays (an image rolled out to
    most of the fleet, a shared cache poisoned for good) is not an outage.

    Judged per host that burst during the run against its own rate before it: it came back when its
    rate after the run is at most halfway from its rate before to its rate during, and no longer far
    beyond the former or surely below the latter. Before and after are each host's own nearest runs
    on either side. At least a third of them must have come back: hosts that went sick during the
    outage (a bad image reaching half the pool in the same hour) do not veto it, while a step that
    stays brings back almost none. Where no host has enough data on both sides, the fleet as a whole
    is judged the same way, and a run too close to the end of the data to tell is kept: an outage in
    progress has no after yet."""
    bins, observed, executions = counts.bins, counts.observed, counts.executions
    h_bin, h_host, h_obs, h_n = counts.h_bin, counts.h_host, counts.h_obs, counts.h_n
    kept = flagged.copy()
    # Each host's (host, bin) pairs, in bin order (the pairs are sorted bin-major, the sort stable);
    # host NONE (-1) included, so slot host + 1.
    by_host = np.argsort(h_host, kind="stable")
    host_starts = np.searchsorted(h_host[by_host], np.arange(-1, int(h_host.max(initial=-1)) + 2))
    for start, stop in flagged_runs(bins, flagged, join):
        first, last = int(bins[start]), int(bins[stop - 1])
        # Before and after: the 2·radius bins with data nearest the run, 15 min away from it and at
        # most 12 h: jobs come in waves, and an hour with no job says nothing either way. Bins of
        # other flagged runs are no "after": a second outage an hour later is not the first staying.
        # Each host is judged on its own nearest bins with data: a pool whose long jobs end in waves
        # has none in the fleet's next bins. Where all it ran on a side lies in other flagged runs,
        # those are its side: a pool gone sick for good bursts at each wave of its jobs, and each
        # wave is no second outage.
        reach = 12 * radius
        before_bins = (bins <= first - 3) & (bins >= first - reach)
        after_bins = (bins >= last + 3) & (bins <= last + reach)
        earlier = np.flatnonzero(before_bins & ~flagged)[-2 * radius :]
        later = np.flatnonzero(after_bins & ~flagged)[: 2 * radius]
        during_run = (h_bin >= start) & (h_bin < stop)
        came_back = went_up = 0
        for host in np.unique(h_host[during_run]):
            mine = by_host[host_starts[host + 1] : host_starts[host + 2]]
            inside = mine[during_run[mine]]
            tally = {
                "before": _host_side(mine, before_bins, flagged, counts, -2 * radius),
                "during": (float(h_obs[inside].sum()), float(h_n[inside].sum())),
                "after": _host_side(mine, after_bins, flagged, counts, 2 * radius),
            }
            if min(tally["before"][1], tally["after"][1]) < 10:
                continue
            before, after = ((o + 1) / (n + 2) for o, n in (tally["before"], tally["after"]))
            failed, ran = tally["during"]
            if failed < 2 or stats.binom.sf(failed - 1, ran, before) >= 1e-3:
                continue  # this host did not burst
            went_up += 1
            # Halfway back, and either no longer far beyond its rate before or surely below its
            # rate during: one wave of a few dozen runs after may land halfway by chance where the
            # host stayed sick, while an outage's last minutes may still reach a host's next runs.
            after_failed, after_ran = tally["after"]
            still_up = stats.binom.sf(after_failed - 1, after_ran, before) < 1e-3
            lower = stats.fisher_exact(
                [[failed, ran - failed], [after_failed, after_ran - after_failed]], alternative="greater"
            ).pvalue
            came_back += _came_back(before, failed / ran, after) and (not still_up or lower < 0.01)
        if went_up:
            if 3 * came_back < went_up:
                kept[start:stop] = False
            continue
        fleet_before = _rate_in(observed, executions, earlier)
        fleet_after = _rate_in(observed, executions, later)
        during = observed[start:stop].sum() / max(executions[start:stop].sum(), 1.0)
        if (
            fleet_before is not None
            and fleet_after is not None
            and not _came_back(fleet_before, during, fleet_after)
        ):
            kept[start:stop] = False
    return kept


def _host_side(
    mine: np.ndarray, side: np.ndarray, flagged: np.ndarray, counts: _Counts, nearest: int
) -> tuple[float, float]:
    """(failures, executions) over one host's nearest `abs(nearest)` bins with data on one `side` of a
    run (negative: the last ones before it); `mine` are its (host, bin) pairs in bin order. Outside
    other flagged runs where it ran ten times or more there, else counting them too."""
    on_side = mine[side[counts.h_bin[mine]]]
    for pairs in (on_side[~flagged[counts.h_bin[on_side]]], on_side):
        nearest_pairs = pairs[nearest:] if nearest < 0 else pairs[:nearest]
        failures, executions = (
            float(counts.h_obs[nearest_pairs].sum()),
            float(counts.h_n[nearest_pairs].sum()),
        )
        if executions >= 10:
            break
    return failures, executions


def _beyond_one_image(
    image: np.ndarray, failed: np.ndarray, expected: np.ndarray, host: np.ndarray
) -> tuple[bool | None, int]:
    """An outage reaches hosts whatever image they run. A burst whose excess is on one image while the
    hosts on the others fail no more than usual — all but their worst, which may be sick on its own —
    is that image reaching hosts (a rollout), not an outage. None where the others ran too little to
    tell. Also the image with the most excess (its code; NONE where there are no rows)."""
    if image.size == 0:
        return None, NONE
    images, which = np.unique(image, return_inverse=True)
    worst = _most_excess(which, failed, expected)
    if images.size < 2:
        return None, int(images[worst])
    others = which != worst
    if np.unique(host[others]).size < 2:
        return None, int(images[worst])  # one host off the image may be sick on its own: no evidence
    usual = _fails_as_usual(*_without_worst_host(failed[others], expected[others], host[others]))
    return (None if usual is None else not usual), int(images[worst])


def _rate_of_tests(tests: np.ndarray, failed: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """Per `asked` test: its failure rate over (`tests`, `failed`), with one failure in two runs added
    so a test seldom run there is not taken to pass always; 1 where it never ran (no evidence)."""
    size = int(max(tests.max(initial=-1), asked.max(initial=-1))) + 1
    runs = np.bincount(tests, minlength=size).astype(float)
    fails = np.bincount(tests, weights=failed.astype(float), minlength=size)
    rate: np.ndarray = np.where(runs > 0, (fails + 0.5) / (runs + 1.0), 1.0)[asked]
    return rate


def _without_worst_host(
    failed: np.ndarray, expected: np.ndarray, host: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The executions of every host but the one with the most excess: one sick host on an image is
    that host's trouble, not the image's."""
    hosts, which = np.unique(host, return_inverse=True)
    if hosts.size < 2:
        return failed, expected
    keep = which != _most_excess(which, failed, expected)
    return failed[keep], expected[keep]


def _most_excess(which: np.ndarray, failed: np.ndarray, expected: np.ndarray) -> int:
    """The group (index into `which`'s codes) whose failures most exceed their expected count."""
    return int(np.argmax(np.bincount(which, weights=failed - expected)))


def _fails_as_usual(failed: np.ndarray, expected: np.ndarray) -> bool | None:
    """Whether these executions fail no more than their tests usually do (None: too few to tell)."""
    ran = failed.size
    if ran < 20:
        return None
    observed, usual = float(failed.sum()), float(expected.sum())
    rate = min(max(usual / ran, 1e-9), 1.0)
    return not (observed >= 1.5 * usual and bool(stats.binom.sf(observed - 1, ran, rate) < 0.01))


def _came_back(before: float, during: float, after: float) -> bool:
    """At least halfway back from the rate during to the rate before."""
    return after - before <= 0.5 * (during - before)


def flagged_runs(bins: np.ndarray, flagged: np.ndarray, join: int) -> list[tuple[int, int]]:
    """The runs of flagged bins as (start, stop) indices; flagged bins at most `join` bins apart are one
    run (bins in between, flagged or not, belong to it)."""
    runs: list[tuple[int, int]] = []
    start = None
    last = -1
    for i in range(bins.size):
        if not flagged[i]:
            continue
        if start is not None and bins[i] - bins[last] > join:
            runs.append((start, last + 1))
            start = None
        if start is None:
            start = i
        last = i
    if start is not None:
        runs.append((start, last + 1))
    return runs


def _rate_in(observed: np.ndarray, executions: np.ndarray, among: np.ndarray) -> float | None:
    """The fleet's failure rate over the bins indexed by `among`, or None with fewer than 50 executions."""
    n = float(executions[among].sum())
    return (float(observed[among].sum()) + 1) / (n + 2) if n >= 50 else None


def _rate_between(
    bins: np.ndarray, observed: np.ndarray, executions: np.ndarray, lo: int, hi: int
) -> np.ndarray:
    """The fleet's failure rate over the bins from `lo` to `hi` bins away (1 where there is too little
    data to say, so that no burst is seen against nothing)."""
    cum_o = np.concatenate([[0.0], np.cumsum(observed)])
    cum_n = np.concatenate([[0.0], np.cumsum(executions)])
    start = np.searchsorted(bins, bins + lo, side="left")
    stop = np.searchsorted(bins, bins + hi, side="right")
    o, n = cum_o[stop] - cum_o[start], cum_n[stop] - cum_n[start]
    return np.where(n >= 50, (o + 1) / (n + 2), 1.0)


def _hosts_bursting(
    bins: np.ndarray,
    h_bin: np.ndarray,
    h_host: np.ndarray,
    h_obs: np.ndarray,
    h_exp: tuple[np.ndarray, np.ndarray],
    h_n: np.ndarray,
    before: tuple[np.ndarray, np.ndarray, np.ndarray],
    radius: int,
    config: AnalysisConfig,
) -> tuple[_HostBins, np.ndarray]:
    """Per (host, bin) pair: was the host active in the bin or next to it, and did it burst; per bin,
    whether the hosts not already failing a lot failed, together, beyond their tests' usual rates on
    such hosts. `h_exp` is the expected failures per pair from each test's usual rate on every host,
    and on the hosts not failing a lot; `before` is (failures, executions, expected failures) per (host,
    bin) pair as the rates before a bin may count them."""
    absolute = bins[h_bin].astype(np.int64)
    order = np.lexsort((absolute, h_host))
    host_sorted, bin_sorted = h_host[order].astype(np.int64), absolute[order]
    span = int(bins.max()) + 4 * radius + 10
    key = host_sorted * span + bin_sorted
    cum = {
        name: np.concatenate([[0.0], np.cumsum(values[order])])
        for name, values in (("o", h_obs), ("e", h_exp[0]), ("clean", h_exp[1]), ("n", h_n))
    }
    rate_around, ratio_around = (
        around[order] for around in _host_before(absolute, h_host, before[0], before[1], before[2], radius)
    )
    # Every (host, bin) pair with data speaks for the bins next to it too.
    centers = np.unique(np.concatenate([key + d for d in (-1, 0, 1)]))
    start = np.searchsorted(key, centers - 1, side="left")
    stop = np.searchsorted(key, centers + 1, side="right")
    w = {name: c[stop] - c[start] for name, c in cum.items()}
    # The host's rate before its latest pair inside the window: always one of its own pairs (every
    # center is within a bin of one), never a later wave's or another host's.
    latest = np.searchsorted(key, centers + 1, side="right") - 1
    # A host's rate before is a rate of the tests it ran then. Where it fails some tests a lot (a pool
    # whose DNS is broken fails the tests that resolve names), a later job heavy in those tests fails
    # more with nothing new wrong: the bar is at least its multiple before of what these tests usually
    # fail.
    rate_before = rate_around[latest]
    bar = np.maximum(rate_before, np.clip(ratio_around[latest] * w["e"] / np.maximum(w["n"], 1), 0, 1))
    active_hosts = w["n"] >= 3
    beyond_tests = (w["o"] >= np.maximum(2, config.outage_min_ratio * w["e"])) & (w["o"] >= 2 * bar * w["n"])
    # Or far beyond the host's own rate before, where it has one: a clean host failing an eighth of a
    # job is bursting even where its tests fail often elsewhere (a broken test, a flaky one).
    beyond_own = (
        (bar > 0)
        & (w["o"] >= np.maximum(2, config.outage_min_ratio * bar * w["n"]))
        & (stats.binom.sf(w["o"] - 1, w["n"], np.clip(bar, 1e-9, 1 - 1e-9)) < 1e-3)
    )
    bursting = active_hosts & (beyond_tests | beyond_own | _beyond_own_rate(w["o"], w["n"], bar, config))
    # A host already failing a good share of its tests (a sick one) can hardly show a burst with a
    # job or two: it counts among the active only when it does, so an outage over a fleet with
    # several sick hosts still needs most of the others, not most of all.
    active_hosts &= (rate_before < config.outage_saturated_rate) | bursting
    center_bin = centers % span
    position = np.searchsorted(bins, center_bin)
    known = (position < bins.size) & (bins[np.clip(position, 0, bins.size - 1)] == center_bin)
    host_bins = _HostBins(position[known], centers[known] // span, active_hosts[known], bursting[known])
    unsaturated = known & (rate_before < config.outage_saturated_rate)
    sums = [
        np.bincount(position[unsaturated], weights=w[name][unsaturated], minlength=bins.size)[: bins.size]
        for name in ("o", "clean")
    ]
    excess = sums[0] >= np.maximum(2.0, config.outage_min_ratio * sums[1])
    return host_bins, excess


def _hosts_near(bins: np.ndarray, h_bin: np.ndarray, h_host: np.ndarray, radius: int) -> np.ndarray:
    """Per bin: how many hosts have a (host, bin) pair within `radius` bins of it."""
    absolute = bins[h_bin].astype(np.int64)
    order = np.lexsort((absolute, h_host))
    host, at = h_host[order], absolute[order]
    # Each host's pairs merge into runs where consecutive pairs are at most 2·radius bins apart; a
    # run covers the bins from its first pair - radius to its last + radius.
    new_run = np.ones(at.size, bool)
    new_run[1:] = (host[1:] != host[:-1]) | (at[1:] - at[:-1] > 2 * radius)
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], at.size) - 1
    delta = np.zeros(bins.size + 1)
    np.add.at(delta, np.searchsorted(bins, at[starts] - radius, side="left"), 1)
    np.add.at(delta, np.searchsorted(bins, at[ends] + radius, side="right"), -1)
    near: np.ndarray = np.cumsum(delta)[: bins.size]
    return near


def _host_rate_before(
    bin_of: np.ndarray, host: np.ndarray, observed: np.ndarray, executions: np.ndarray, radius: int
) -> np.ndarray:
    """Each (host, bin)'s own failure rate over the bins 3 to 2·radius before it; where the host ran
    too little there (a static pool whose jobs come in waves hours apart), over the 12 h before, or
    the two days before (a pool whose jobs come in one wave a day); 0 where it has too little data in
    any."""
    rate, _ratio = _host_before(bin_of, host, observed, executions, np.zeros_like(observed), radius)
    return rate


def _host_before(
    bin_of: np.ndarray,
    host: np.ndarray,
    observed: np.ndarray,
    executions: np.ndarray,
    expected: np.ndarray,
    radius: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per (host, bin), over the same bins before it as `_host_rate_before`: the host's own failure
    rate, and its failures as a multiple of what its tests usually fail (`expected`); 0 where it has
    too little data."""
    order = np.lexsort((bin_of, host))
    h, b = host[order].astype(np.int64), bin_of[order].astype(np.int64)
    key = h * (int(b.max()) + 48 * radius + 10) + b
    cum_o = np.concatenate([[0.0], np.cumsum(observed[order])])
    cum_n = np.concatenate([[0.0], np.cumsum(executions[order])])
    cum_e = np.concatenate([[0.0], np.cumsum(expected[order])])
    stop = np.searchsorted(key, key - 3, side="right")
    rate, ratio = np.zeros(order.size), np.zeros(order.size)
    for reach in (48 * radius, 12 * radius, 2 * radius):
        start = np.searchsorted(key, key - reach, side="left")
        o, n, e = cum_o[stop] - cum_o[start], cum_n[stop] - cum_n[start], cum_e[stop] - cum_e[start]
        rate = np.where(n >= 10, (o + 1) / (n + 2), rate)
        ratio = np.where(n >= 10, (o + 1) / (e + 1), ratio)
    rate_around, ratio_around = np.empty(order.size), np.empty(order.size)
    rate_around[order], ratio_around[order] = rate, ratio
    return rate_around, ratio_around


def _spans(
    bins: np.ndarray,
    flagged: np.ndarray,
    observed: np.ndarray,
    executions: np.ndarray,
    expect: np.ndarray,
    failing: np.ndarray,
    active: np.ndarray,
    scope: str,
    config: AnalysisConfig,
) -> list[Outage]:
    width = config.outage_bin_s * 1000
    spans: list[Outage] = []
    start = None
    for i in range(bins.size + 1):
        ends = i == bins.size or not flagged[i] or (start is not None and bins[i] - bins[i - 1] > 3)
        if start is not None and ends:
            stop = i  # exclusive
            if (bins[stop - 1] - bins[start] + 1) * config.outage_bin_s <= config.outage_max_s:
                sl = slice(start, stop)
                # Results carry their own times, not the moment the outage hit them: pad the edges.
                pad = config.outage_pad_bins * width
                spans.append(
                    Outage(
                        start_ms=int(bins[start]) * width - pad,
                        end_ms=int(bins[stop - 1] + 1) * width + pad,
                        scope=scope,
                        failures=int(observed[sl].sum()),
                        executions=int(executions[sl].sum()),
                        expected=float(expect[sl].sum()),
                        runners_failing=int(failing[sl].max()),
                        runners_active=int(active[sl].max()),
                    )
                )
            start = None
        if i < bins.size and flagged[i] and start is None:
            start = i
    return _merged(spans)


def _merged(spans: list[Outage], closer_than_ms: int = 1) -> list[Outage]:
    """One outage, not two, when a quiet gap (no job finished) splits it but the padded edges meet
    (or, for one pool's bursts, are less than `closer_than_ms` apart)."""
    merged: list[Outage] = []
    for span in spans:
        last = merged[-1] if merged else None
        if last is None or span.start_ms - last.end_ms >= closer_than_ms:
            merged.append(span)
            continue
        # Spans of other pools at the same time are one outage that reached more hosts.
        other_pools = bool(last.pools) and set(last.pools).isdisjoint(span.pools)
        hosts: Callable[[int, int], int] = operator.add if other_pools else max
        merged[-1] = Outage(
            start_ms=last.start_ms,
            end_ms=max(last.end_ms, span.end_ms),
            scope=last.scope,
            failures=last.failures + span.failures,
            executions=last.executions + span.executions,
            expected=last.expected + span.expected,
            runners_failing=hosts(last.runners_failing, span.runners_failing),
            runners_active=hosts(last.runners_active, span.runners_active),
            pools=tuple(sorted({*last.pools, *span.pools})),
        )
    return merged


def find_pool_outages(
    frame_cols: dict[str, np.ndarray],
    time_ms: np.ndarray,
    fail: np.ndarray,
    rows: np.ndarray,
    config: AnalysisConfig,
) -> list[Outage]:
    """Outages of single pools among the rows selected by `rows` (those of no fleet outage): each pool
    judged as a fleet of its own, by the same rules. Most of a pool's hosts bursting at once and then
    coming back, while the other pools ran as usual, is what the pool depends on (its region's
    network, a mirror), not a sick entity. Two hosts are as much their own trouble, so it needs
    `outage_min_runners` hosts bursting. And what the pool depends on fails most of what it runs:
    a pool whose jobs fail the same two tests in an hour, the rest as usual, shares an outage of
    what those tests call (dependency_outages.py), so those two may hold no more than half of its
    failures. A pool sick for hours (its file server failing) bursts now and then inside its
    trouble, and each burst "comes back" in between: its bursts less than POOL_GAP_MS apart are
    joined, and the outage lasts `pool_outage_max_s` at most. A pool failing most of what it runs
    for half a night is the pool's trouble, an incident. Pools whose outages overlap in time are
    one."""
    pool, test = frame_cols["pool"], frame_cols["test"]
    found: list[Outage] = []
    for code in np.unique(pool[rows]):
        mine = rows & (pool == code)
        for outage in _merged(find_outages(frame_cols, time_ms, fail, mine, config), POOL_GAP_MS):
            inside = mine & (time_ms >= outage.start_ms) & (time_ms < outage.end_ms)
            if (
                outage.end_ms - outage.start_ms <= config.pool_outage_max_s * 1000
                and outage.runners_failing >= config.outage_min_runners
                and _broad(test, fail, inside)
            ):
                found.append(replace(outage, scope="pool", pools=(int(code),)))
    found.sort(key=lambda o: o.start_ms)
    return _merged(found)


POOL_GAP_MS = 3 * 3_600_000  # a pool's bursts closer than this are one


def _broad(test: np.ndarray, fail: np.ndarray, inside: np.ndarray) -> bool:
    """Whether the failures `inside` a span are spread: its two most-failing tests hold fewer than
    half of them. A region's network fails whatever its jobs run, a registry whatever needs an
    image pulled; a sandbox two tests call fails those two."""
    _, counts = np.unique(test[inside & fail], return_counts=True)
    return bool(2 * np.sort(counts)[::-1][:2].sum() < counts.sum())


def outage_rows(time_ms: np.ndarray, pool: np.ndarray, outage: Outage) -> np.ndarray:
    """The rows inside an outage: in its span and, for a pool outage, in its pools."""
    inside: np.ndarray = (time_ms >= outage.start_ms) & (time_ms < outage.end_ms)
    if outage.pools:
        inside &= np.isin(pool, outage.pools)
    return inside


def outage_mask(time_ms: np.ndarray, pool: np.ndarray, outages: list[Outage]) -> np.ndarray:
    mask = np.zeros(time_ms.size, bool)
    for outage in outages:
        mask |= outage_rows(time_ms, pool, outage)
    return mask
