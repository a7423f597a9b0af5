"""Evidence from readings. Cache: a digest is bad when the pool did not hold it around that time, not
when it differs from whatever the pool held most of that day. Memory: OOM kills count since the
previous reading, so they speak for the failures before the reading that reports them."""

from __future__ import annotations

import json

import numpy as np

from controller.analysis.config import AnalysisConfig
from controller.analysis.evidence import Finding, examine, judge_readings
from controller.analysis.frame import Frame

HOUR_MS = 3_600_000
DAY0_MS = 1_790_000_000_000 // 86_400_000 * 86_400_000


def _cache_frame(
    digest_of: dict[str, list[str]], every_minutes: int = 15, own_ccache: bool = False
) -> tuple[Frame, list[tuple[str, int]]]:
    """Each runner of one pool reports its `pip` cache digest every quarter hour, from the list; with
    `own_ccache`, then a `ccache` digest of its own (compiler caches differ from runner to runner)."""
    rows: list[tuple[object, ...]] = []
    who: list[tuple[str, int]] = []
    for runner, digests in digest_of.items():
        for step, digest in enumerate(digests):
            at = DAY0_MS + step * every_minutes * 60_000
            caches = [{"key": "pip", "digest": digest}]
            if own_ccache:
                caches.append({"key": "ccache", "digest": f"{runner}-{step}"})
            data = {"caches": caches}
            rows.append(
                (len(rows) + 1, at, runner, f"{runner}-host", "linux", None, "cache", "ok", json.dumps(data))
            )
            who.append((runner, at))
    frame = Frame()
    frame.append_readings(rows)
    return frame, who


def _bad_cache(frame: Frame, who: list[tuple[str, int]]) -> set[tuple[str, int]]:
    badness = judge_readings(frame, AnalysisConfig())
    return {who[i] for i in np.flatnonzero(badness.bad["cache"])}


def test_a_pool_wide_cache_update_makes_no_reading_bad() -> None:
    # Four runners adopt the new lockfile's cache between 14:00 and 14:45, one after another. Both
    # digests were the pool's, each in its time: per day, one of them would have been "the minority".
    steps = 96  # a day of quarter hours
    digest_of = {f"linux-{n}": ["old"] * (56 + n) + ["new"] * (steps - 56 - n) for n in range(4)}
    frame, who = _cache_frame(digest_of)
    assert _bad_cache(frame, who) == set()


def test_a_poisoned_cache_and_a_runner_left_behind_are_bad() -> None:
    steps = 96
    digest_of = {f"linux-{n}": ["old"] * 40 + ["new"] * (steps - 40) for n in range(4)}
    # linux-4 poisons its cache at 16:00; linux-5 never adopts the update.
    digest_of["linux-4"] = ["old"] * 40 + ["new"] * 24 + ["poisoned"] * (steps - 64)
    digest_of["linux-5"] = ["old"] * steps
    frame, who = _cache_frame(digest_of)
    bad = _bad_cache(frame, who)
    poisoned = {(r, t) for r, t in who if r == "linux-4" and t >= DAY0_MS + 16 * HOUR_MS}
    assert poisoned <= bad
    left_behind = {(r, t) for r, t in bad if r == "linux-5"}
    # Still on the old content hours after the rest of the pool moved on (at 10:00): bad from then on,
    # and not while the old digest was still everyone's.
    assert left_behind
    assert min(t for _r, t in left_behind) > DAY0_MS + 12 * HOUR_MS
    assert all(r in ("linux-4", "linux-5") for r, _t in bad)


def test_a_poisoned_cache_is_bad_though_the_same_reading_digests_another_cache() -> None:
    # The agent reports pip and then ccache in one reading. ccache differs on every runner, so the pool
    # has no digest of its own for it and it says nothing; the poisoned pip digest still makes the
    # reading bad.
    steps = 96
    digest_of = {f"linux-{n}": ["ok"] * steps for n in range(4)}
    digest_of["linux-4"] = ["ok"] * 64 + ["poisoned"] * (steps - 64)
    frame, who = _cache_frame(digest_of, own_ccache=True)
    poisoned = {(r, t) for r, t in who if r == "linux-4" and t >= DAY0_MS + 16 * HOUR_MS}
    assert _bad_cache(frame, who) == poisoned


def test_two_of_four_runners_poisoned_each_their_own_way_are_both_bad() -> None:
    # Random shape 368 of our simulator: in a pool of four, one runner's cache was poisoned and
    # another's held bad content of its own. The two healthy runners' digest was held by only half of
    # those reporting, so the pool had "no digest of its own" and the sick runner's cause went unnamed.
    steps = 96
    digest_of = {f"linux-{n}": ["ok"] * steps for n in range(4)}
    digest_of["linux-2"] = ["ok"] * 64 + ["poisoned"] * (steps - 64)
    digest_of["linux-3"] = ["stale"] * steps
    frame, who = _cache_frame(digest_of)
    poisoned = {(r, t) for r, t in who if r == "linux-2" and t >= DAY0_MS + 16 * HOUR_MS}
    stale = {(r, t) for r, t in who if r == "linux-3"}
    assert _bad_cache(frame, who) == poisoned | stale


def test_a_poisoned_cache_stays_bad_in_a_pool_of_three_where_one_runner_holds_its_own() -> None:
    # Random shape 803: a static pool of three, one runner with stale content all day, another
    # poisoned at 10:00. Three hours on, no digest was held by two runners any more, the pool "had
    # no content of its own", and the runner's failures after that went unexplained: suspect, not
    # sick for its cache. The content the pool last agreed on stays its own while a runner holds it.
    steps = 96
    digest_of = {"linux-0": ["ok"] * steps, "linux-1": ["stale"] * steps}
    digest_of["linux-2"] = ["ok"] * 40 + ["poisoned"] * (steps - 40)
    frame, who = _cache_frame(digest_of)
    poisoned = {(r, t) for r, t in who if r == "linux-2" and t >= DAY0_MS + 10 * HOUR_MS}
    stale = {(r, t) for r, t in who if r == "linux-1"}
    assert _bad_cache(frame, who) == poisoned | stale


def test_two_digests_held_by_half_the_pool_each_make_no_reading_bad() -> None:
    # Two runners on one content and two on another: no telling which is the pool's.
    digest_of = {f"linux-{n}": ["a" if n < 2 else "b"] * 96 for n in range(4)}
    frame, who = _cache_frame(digest_of)
    assert _bad_cache(frame, who) == set()


def _two_runners_rotating_daily(poisoned_days: int) -> dict[str, list[str]]:
    """A pool of two whose cache is rebuilt every morning, the same content on both within the hour:
    ten days of quarter hours. mac-2 holds content of its own from the 4th day's update for
    `poisoned_days` days, then takes the pool's again."""
    day = 96
    digest_of = {
        runner: [f"day{max(step - lag, 0) // day}" for step in range(10 * day)]
        for runner, lag in (("mac-1", 0), ("mac-2", 3))
    }
    first, last = 4 * day + 3, (4 + poisoned_days) * day + 3
    digest_of["mac-2"][first:last] = ["poisoned"] * (last - first)
    return digest_of


def test_a_poisoned_cache_in_a_pool_of_two_is_bad_while_the_other_moves_on_daily() -> None:
    # Fourth held-out simulator, fleets 404 and 407: a pool of two, its cache rebuilt daily. Once
    # the other runner moved on from the content both last held, no digest was the pool's and the
    # poisoned runner's cause went unnamed. Its digest was its own for three days where the pool's
    # lasted one.
    frame, who = _cache_frame(_two_runners_rotating_daily(poisoned_days=3))
    start, end = DAY0_MS + (4 * 96 + 3) * 15 * 60_000, DAY0_MS + (7 * 96 + 3) * 15 * 60_000
    poisoned = {(r, t) for r, t in who if r == "mac-2" and start <= t < end}
    bad = _bad_cache(frame, who)
    assert poisoned <= bad
    assert {(r, t) for r, t in bad if r == "mac-2"} == poisoned


def test_a_digest_of_its_own_for_about_as_long_as_the_pools_last_is_not_bad() -> None:
    # One rebuild that came out different on one runner, replaced with the next day's: no telling
    # which of the two was the odd one once the content they last shared is gone.
    frame, who = _cache_frame(_two_runners_rotating_daily(poisoned_days=1))
    assert len({(r, t) for r, t in _bad_cache(frame, who) if r == "mac-2"}) < 48


def _oom_runner(report_every_minutes: int) -> tuple[Frame, np.ndarray]:
    """One runner whose memory limit kills one big test in each of its jobs, hourly for ten hours; its
    agent reports every `report_every_minutes`: available memory is fine, and each reading counts
    the OOM kills since the one before. Returns the frame and its failed rows."""
    results: list[tuple[object, ...]] = []
    for job in range(10):
        start = DAY0_MS + job * HOUR_MS + 5 * 60_000
        for test in range(20):
            outcome = "failed" if test == job % 4 else "passed"
            at = start + test * 60_000
            results.append(
                (
                    len(results) + 1,
                    at,
                    outcome,
                    False,
                    f"t{test}",
                    "r1",
                    "host1",
                    "linux",
                    "img",
                    None,
                    f"job-{job}",
                    "run-1",
                    "c1",
                )
            )
    frame = Frame()
    frame.append_results(results)
    failed_at = frame.time_ms[frame.fail]
    readings: list[tuple[object, ...]] = []
    previous = DAY0_MS - report_every_minutes * 60_000
    at = DAY0_MS
    while at <= DAY0_MS + 11 * HOUR_MS:
        kills = int(((failed_at > previous) & (failed_at <= at)).sum())
        data = {"available_ratio": 0.6, "oom_kills": kills}
        readings.append(
            (len(readings) + 1, at, "r1", "host1", "linux", "img", "memory", "ok", json.dumps(data))
        )
        previous, at = at, at + report_every_minutes * 60_000
    frame.append_readings(readings)
    return frame, np.flatnonzero(frame.fail)


def _examined(frame: Frame, failed: np.ndarray) -> Finding:
    """What the runner's readings name for its failed rows, the stretch from its first failure to its last."""
    config = AnalysisConfig()
    return examine(
        frame,
        judge_readings(frame, config),
        np.arange(frame.r_time_ms.size),
        failed,
        int(frame.time_ms[failed].min()),
        int(frame.time_ms[failed].max()),
        config,
    )


def test_oom_kills_reported_after_the_failures_they_caused_name_memory() -> None:
    # Held-out fleets 607, 608, 610: a runner's memory limit was cut, and its agent, reporting every
    # 50 minutes, counted the OOM kills since its last reading. Each failure's nearest reading is as
    # often the one before the kill as the one after it: memory covered under half the failures, and
    # the dimension was unknown.
    finding = _examined(*_oom_runner(report_every_minutes=50))
    assert finding.dimension == "memory"
    assert finding.coverage == 1.0


def test_a_reading_with_no_oom_kills_after_a_failure_does_not_name_memory() -> None:
    # The same runner with the kills never reported (a counter that stayed at zero): nothing names it.
    frame, failed = _oom_runner(report_every_minutes=50)
    frame.r_values["oom_kills"][:] = 0.0
    assert _examined(frame, failed).dimension == "unknown"
