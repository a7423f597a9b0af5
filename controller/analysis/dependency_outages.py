"""Outages of what a test depends on: an external service it calls goes down for a few hours, and the
test fails most of its runs all over the fleet, then passes again.

Neither the fleet-wide look (outages.py) nor the groups' (group_outages.py) sees it when the tests
that use the service run in different jobs: no job fails many tests, and no two of them fail in the
same job. Left alone, its failures are charged to the test (flaky), or the test is called broken for
a stretch it did not cause. A few hours in which one test failed most of its runs
(`dependency_min_rate`), far beyond its usual rate (binomial, p < `dependency_outage_p`), on two
hosts or more, are an outage of its dependency — with the tests whose spans overlap it, on
`group_outage_min_hosts` hosts or more between them — when it is not something else that fails a
test that way:
- longer than `outage_max_s`, or the test kept failing after (over the rest of the window, or the
  day after): a broken test;
- on one pool or image alone where it ran on several, or in jobs that failed much else besides
  (`max_others_failing` of their other tests, those with spans of their own aside), or mostly on
  images or hosts that fail it far beyond the others outside the span too: a sick place;
- bound to commits — runs of older commits passed in the span while the new ones failed, or the
  older commits it failed had failed before it too, or the span's commits failed again later: a
  broken commit, fixed since;
- a step across it — far more failures in the day on one side than in the day on the other: a commit
  broke (or fixed) it, and the span is hours only the newest code ran it.
Where neither time nor commits tell (every run failed, on commits seen nowhere else; or the test did
not run again after), the span counts only beside another test's that is clear. Tests whose spans
overlap are one outage; each loses only its own runs in its own span.

A test that calls the same service but runs a few times an hour fails some of those runs, not most,
and its usual rate is swollen by what sick places failed of it, so it is not found alone. Once the
incidents and outages are known, `find_companions` looks again at what is left: a test failing
`companion_min_rate` of its runs for a few hours, on hosts in more than one place, far beyond its rate
away from the outages, in a span that overlaps an outage of other tests, shares that outage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from controller.analysis.baseline import grouped
from controller.analysis.cofailing import attempt_of, host_of, one_place_only, others_failing
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import Frame

HOUR_MS = 3_600_000
# How unlikely a day's failures on one side of a span must be at the other side's rate to mark a step.
STEP_P = 1e-3
# Hosts one test's span must fail on; its outage, with the tests whose spans overlap it, needs
# group_outage_min_hosts between them.
SPAN_MIN_HOSTS = 2
# Hours before a span that may still be its outage's first, failing fewer than most runs.
OUTAGE_RAMP_HOURS = 3


@dataclass(frozen=True)
class DependencyOutage:
    tests: tuple[int, ...]  # test codes
    start_ms: int
    end_ms: int
    rows: np.ndarray  # mask: the tests' runs within their own spans
    failures: int
    executions: int
    expected: float  # failures at the tests' usual rates
    hosts_failing: int  # hosts failing any of the tests over their spans
    hosts_active: int  # hosts running any of the tests over their spans


@dataclass(frozen=True)
class _Span:
    test: int
    start_hour: int
    stop_hour: int  # exclusive
    hosts_failing: frozenset[int]
    hosts_active: frozenset[int]
    clear: bool  # time-bound beyond doubt: it passed again after, and not every run failed unexplained

    def overlaps(self, other: _Span) -> bool:
        return self.start_hour < other.stop_hour and other.start_hour < self.stop_hour


@dataclass(frozen=True)
class _Rows:
    """The judged rows and what every span's checks read about them."""

    idx: np.ndarray  # frame row numbers
    test: np.ndarray
    fail: np.ndarray
    hour: np.ndarray
    host: np.ndarray
    image: np.ndarray
    commit: np.ndarray
    commit_first_ms: np.ndarray  # per row: when its commit was first seen (-1: no commit)
    attempt: np.ndarray  # per row: its attempt (cofailing.attempt_of; -1: job not named)


def find_dependency_outages(frame: Frame, rows: np.ndarray, config: AnalysisConfig) -> list[DependencyOutage]:
    """The outages of what single tests depend on, among the `rows` mask, in time order."""
    judged = _rows(frame, rows)
    if judged.idx.size == 0:
        return []
    n_tests = int(judged.test.max()) + 1
    runs = np.bincount(judged.test, minlength=n_tests)
    failures = np.bincount(judged.test, weights=judged.fail, minlength=n_tests)
    usual = (failures + 1.0) / (runs + 2.0)
    # Each test's rows found by one sort rather than a scan of every row per test.
    by_test = grouped(judged.test, judged.hour)
    bounds = np.concatenate([[0], np.cumsum(runs)])
    spans: list[_Span] = []
    for code in np.flatnonzero(failures >= config.group_outage_min_hosts).tolist():
        mine = by_test[bounds[code] : bounds[code + 1]]
        # Two hosts may do for one test: the outage it shares with others needs more between them.
        spans += _spans_of(frame, judged, code, mine, float(usual[code]), config, SPAN_MIN_HOSTS)
    # Only a span on as many hosts as an outage needs vouches for the tests failing beside it in a job.
    wide = [span for span in spans if len(span.hosts_failing) >= config.group_outage_min_hosts]
    spans = [span for span in spans if not _much_else_failed(frame, rows, judged, span, wide, config)]
    return _merged(frame, rows, spans, usual, config.group_outage_min_hosts)


@dataclass(frozen=True)
class Companion:
    outage: int  # index into the anchors find_companions was given
    test: int  # test code
    rows: np.ndarray  # mask: its runs among the free rows in its own span


def find_companions(
    frame: Frame, free: np.ndarray, anchors: list[tuple[int, int, frozenset[int]]], config: AnalysisConfig
) -> list[Companion]:
    """Tests that failed beside an outage of what other tests use, among the `free` rows (those no
    incident, outage or burst has taken). `anchors` are the outages found: (start_ms, end_ms, tests)."""
    judged = _rows(frame, free)
    if not anchors or judged.idx.size == 0:
        return []
    time_ms = frame.time_ms[judged.idx]
    slack = config.outage_max_s * 1000
    near = np.zeros(judged.idx.size, bool)
    for start_ms, end_ms, _ in anchors:
        near |= (time_ms >= start_ms - slack) & (time_ms < end_ms + slack)
    n_tests = int(judged.test.max()) + 1
    runs_away = np.bincount(judged.test[~near], minlength=n_tests)
    failed_away = np.bincount(judged.test[~near], weights=judged.fail[~near], minlength=n_tests)
    usual = (failed_away + 1.0) / (runs_away + 2.0)
    failed_near = np.bincount(judged.test[near], weights=judged.fail[near], minlength=n_tests)
    runs = np.bincount(judged.test, minlength=n_tests)
    by_test = grouped(judged.test, judged.hour)
    bounds = np.concatenate([[0], np.cumsum(runs)])
    relaxed = config.model_copy(update={"dependency_min_rate": config.companion_min_rate})
    test = frame.cols["test"]
    hour = frame.time_ms // HOUR_MS
    companions = []
    for code in np.flatnonzero(failed_near >= config.group_outage_min_hosts).tolist():
        mine = by_test[bounds[code] : bounds[code + 1]]
        for span in _spans_of(frame, judged, code, mine, float(usual[code]), relaxed, SPAN_MIN_HOSTS):
            span_ms = (span.start_hour * HOUR_MS, span.stop_hour * HOUR_MS)
            for number, (start_ms, end_ms, tests) in enumerate(anchors):
                if code not in tests and span_ms[0] < end_ms and start_ms < span_ms[1]:
                    rows = free & (test == code) & (hour >= span.start_hour) & (hour < span.stop_hour)
                    companions.append(Companion(number, code, rows))
                    break
    return companions


def _rows(frame: Frame, rows: np.ndarray) -> _Rows:
    idx = np.flatnonzero(rows)
    commit = frame.cols["commit"][idx]
    first_ms = np.full(int(commit.max()) + 2 if commit.size else 1, np.iinfo(np.int64).max)
    np.minimum.at(first_ms, commit + 1, frame.time_ms[idx])
    return _Rows(
        idx=idx,
        test=frame.cols["test"][idx],
        fail=frame.fail[idx],
        hour=frame.time_ms[idx] // HOUR_MS,
        host=host_of(frame)[idx],
        image=frame.cols["image"][idx],
        commit=commit,
        commit_first_ms=np.where(commit >= 0, first_ms[commit + 1], -1),
        attempt=attempt_of(frame)[idx],
    )


def _spans_of(
    frame: Frame,
    judged: _Rows,
    code: int,
    mine: np.ndarray,
    usual: float,
    config: AnalysisConfig,
    min_hosts: int,
) -> list[_Span]:
    """Windows of up to outage_max_s in which the test failed most of its runs, far beyond its usual
    rate; overlapping ones merged. Windows, not single hours: a test run twice an hour fails on four
    hosts only over a few hours."""
    hour, fail = judged.hour[mine], judged.fail[mine]
    hours, hour_of = np.unique(hour, return_inverse=True)
    n = np.concatenate([[0], np.cumsum(np.bincount(hour_of))])
    k = np.concatenate([[0], np.cumsum(np.bincount(hour_of, weights=fail))])
    longest = config.outage_max_s // 3600
    flagged_to = np.full(hours.size, -1)  # per start hour: the last hour of its longest flagged window
    for offset in range(longest + 1):
        start = np.arange(hours.size - offset)
        stop = start + offset
        window_runs, window_failed = n[stop + 1] - n[start], k[stop + 1] - k[start]
        flagged = (
            (hours[stop] - hours[start] <= longest)
            & (window_failed >= config.group_outage_min_hosts)
            & (window_failed >= config.dependency_min_rate * window_runs)
        )
        if not flagged.any():
            continue  # the binomial test costs more than everything else here: only where it can matter
        beyond = (
            stats.binom.sf(window_failed[flagged] - 1, window_runs[flagged], usual)
            < config.dependency_outage_p
        )
        flagged[flagged] = beyond
        flagged_to[start[flagged]] = stop[flagged]
    mostly_failed = np.diff(k) >= config.dependency_min_rate * np.diff(n)
    spans = []
    for first_index, last_index in _merged_windows(flagged_to):
        # A window reaches into the clean hours around the outage as far as its rate allows: the
        # span is from the first to the last hour that failed most runs itself.
        core = first_index + np.flatnonzero(mostly_failed[first_index : last_index + 1])
        if core.size == 0:
            continue
        first, last = int(hours[core[0]]), int(hours[core[-1]])
        if last - first > longest:
            continue  # longer than an outage lasts: broken, or a sick place, judged as such
        inside = mine[(hour >= first) & (hour <= last)]
        failing_hosts = frozenset(np.unique(judged.host[inside[judged.fail[inside]]]).tolist())
        if len(failing_hosts) < min_hosts:
            continue
        after = ~judged.fail[mine[hour > last]]
        recovered = after.size >= config.broken_min_runs
        if recovered and after.mean() < 0.5:
            continue  # kept failing after: broken, not an outage
        day_after = ~judged.fail[mine[(hour > last) & (hour <= last + 24)]]
        if day_after.size >= config.broken_min_runs and day_after.mean() < 0.5:
            continue  # failed most of its runs in the day after too: broken then, fixed later
        if _stepped_across(hour, fail, mostly_failed[hour_of], first, last, config):
            continue
        places = (frame.cols["pool"][judged.idx[inside]], judged.image[inside])
        if any(one_place_only(place, judged.fail[inside]) for place in places):
            continue
        outside = mine[(hour < first) | (hour > last)]
        if any(
            _failing_there_anyway(place, judged.fail, inside, outside, config)
            for place in (judged.image, judged.host)
        ):
            continue
        bound = _commit_bound(judged, mine, inside, first * HOUR_MS, (last + 1) * HOUR_MS, config)
        if bound is True:
            continue
        hosts_active = frozenset(np.unique(judged.host[inside]).tolist())
        clear = recovered and bound is False
        spans.append(_Span(code, first, last + 1, failing_hosts, hosts_active, clear))
    return spans


def _stepped_across(
    hour: np.ndarray, fail: np.ndarray, mostly: np.ndarray, first: int, last: int, config: AnalysisConfig
) -> bool:
    """Whether the test failed far more in the day on one side of the span than in the day on the
    other: a commit broke it (or fixed it) there, and the span is hours in which only the broken code
    ran — a nightly build of the newest commit, while the day's pull requests on older bases pass. What
    it depends on going down leaves it failing as often after as before. Runs in hours that failed
    most runs (`mostly`) are left out: another outage of what it calls, the day before or after, is
    no step."""
    before = fail[(hour >= first - 24) & (hour < first) & ~mostly]
    after = fail[(hour > last) & (hour <= last + 24) & ~mostly]
    if before.size < config.broken_min_runs or after.size < config.broken_min_runs:
        return False

    def far_beyond(side: np.ndarray, other: np.ndarray) -> bool:
        rate = (float(other.sum()) + 1.0) / (other.size + 2.0)
        return bool(stats.binom.sf(int(side.sum()) - 1, side.size, rate) < STEP_P)

    return far_beyond(after, before) or far_beyond(before, after)


def _merged_windows(flagged_to: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges [first, last] covered by flagged windows (start i to flagged_to[i]) that overlap
    or touch."""
    merged: list[tuple[int, int]] = []
    for start in np.flatnonzero(flagged_to >= 0).tolist():
        stop = int(flagged_to[start])
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def _failing_there_anyway(
    place: np.ndarray, fail: np.ndarray, inside: np.ndarray, outside: np.ndarray, config: AnalysisConfig
) -> bool:
    """Whether most of the span's failures (`inside`, `outside`: the test's judged rows in and out of the
    span; `place`: per judged row, its image or host) are on places that fail the test outside
    the span too, far beyond the other places then (binomial at their rate, p < STEP_P, over
    `broken_min_runs` runs or more). Two bad images that break the test, at an hour when most of its
    runs landed on their hosts, are those images' trouble; what the test calls going down leaves it
    passing there before and after as it does elsewhere."""
    failed_places = place[inside[fail[inside]]]
    if failed_places.size == 0:
        return False
    places, out_of = np.unique(place[outside], return_inverse=True)
    runs = np.bincount(out_of, minlength=places.size)
    failures = np.bincount(out_of, weights=fail[outside], minlength=places.size)
    rate_elsewhere = (failures.sum() - failures + 1.0) / (runs.sum() - runs + 2.0)
    beyond = stats.binom.sf(failures - 1, runs, rate_elsewhere) < STEP_P
    bad = places[(runs >= config.broken_min_runs) & (failures >= 2) & beyond]
    return bool(2 * np.isin(failed_places, bad).sum() >= failed_places.size)


def _commit_bound(
    judged: _Rows, mine: np.ndarray, inside: np.ndarray, start_ms: int, end_ms: int, config: AnalysisConfig
) -> bool | None:
    """True where the failures follow commits rather than time, False where time, None where the runs
    cannot tell: older commits run in the span passed while new ones failed, or the older commits that
    failed in it had failed before it too, or the span's commits failed again after it (a broken
    commit, fixed later) — or they ran in the span alone and every run failed."""
    fail, first_ms = judged.fail[inside], judged.commit_first_ms[inside]
    known = first_ms >= 0
    older = known & (first_ms < start_ms)
    if older.sum() >= 2:
        if fail[older].mean() < config.dependency_min_rate <= fail[~older].mean():
            return True
        # Older commits failing in the span is what an outage does to code that passed before it.
        # Where that code failed well before the span as well, it is broken code: a night of builds
        # of a broken main, on the commit the day already failed. The hours just before the span may
        # be the outage's own first ones, failing fewer than most runs, which the span does not hold.
        failed_older = np.unique(judged.commit[inside][older & fail])
        well_before = judged.hour[mine] < start_ms // HOUR_MS - OUTAGE_RAMP_HOURS
        before = mine[well_before & np.isin(judged.commit[mine], failed_older)]
        return bool(before.size >= 2 and judged.fail[before].mean() >= config.dependency_min_rate)
    span_commits = np.unique(judged.commit[inside][known])
    later = mine[(judged.hour[mine] * HOUR_MS >= end_ms) & np.isin(judged.commit[mine], span_commits)]
    if later.size >= 2:
        return bool(judged.fail[later].mean() >= config.dependency_min_rate)
    return None if fail.all() else False


def _much_else_failed(
    frame: Frame, rows: np.ndarray, judged: _Rows, span: _Span, spans: list[_Span], config: AnalysisConfig
) -> bool:
    """Whether the jobs it failed in failed more than `max_others_failing` of their other tests
    too (cofailing.others_failing). Tests with spans of their own overlapping this one are not counted
    against it."""
    in_span = (judged.hour >= span.start_hour) & (judged.hour < span.stop_hour)
    failed_in = in_span & (judged.test == span.test) & judged.fail
    attempts = np.unique(judged.attempt[failed_in])
    beside = np.array(sorted({other.test for other in spans if other.overlaps(span)} | {span.test}))
    span_ms = (span.start_hour * HOUR_MS, span.stop_hour * HOUR_MS)
    return others_failing(frame, rows, attempts[attempts >= 0], beside, span_ms) > config.max_others_failing


def _merged(
    frame: Frame, rows: np.ndarray, spans: list[_Span], usual: np.ndarray, min_hosts: int
) -> list[DependencyOutage]:
    """Tests whose spans overlap share one outage, if one of them is clear and they failed on
    `min_hosts` hosts or more between them (a service down for an hour fails each of the seven tests
    that call it on two or three hosts, eleven in all); each keeps only its own span's runs."""
    spans.sort(key=lambda s: (s.start_hour, s.test))
    clusters: list[list[_Span]] = []
    for span in spans:
        if clusters and span.start_hour < max(s.stop_hour for s in clusters[-1]):
            clusters[-1].append(span)
        else:
            clusters.append([span])
    test, hour = frame.cols["test"], frame.time_ms // HOUR_MS
    outages = []
    for cluster in clusters:
        hosts_failing = frozenset().union(*(span.hosts_failing for span in cluster))
        if not any(span.clear for span in cluster) or len(hosts_failing) < min_hosts:
            continue
        mask = np.zeros(frame.size, bool)
        expected = 0.0
        for span in cluster:
            own = rows & (test == span.test) & (hour >= span.start_hour) & (hour < span.stop_hour)
            mask |= own
            expected += float(usual[span.test]) * int(own.sum())
        outages.append(
            DependencyOutage(
                tests=tuple(sorted({s.test for s in cluster})),
                start_ms=min(s.start_hour for s in cluster) * HOUR_MS,
                end_ms=max(s.stop_hour for s in cluster) * HOUR_MS,
                rows=mask,
                failures=int(frame.fail[mask].sum()),
                executions=int(mask.sum()),
                expected=expected,
                hosts_failing=len(hosts_failing),
                hosts_active=len(frozenset().union(*(span.hosts_active for span in cluster))),
            )
        )
    return outages
