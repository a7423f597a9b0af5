"""Cache evidence: a digest is bad when the pool did not hold it around that time, not when it
differs from whatever the pool held most of that day."""

from __future__ import annotations

import json

import numpy as np

from controller.analysis.config import AnalysisConfig
from controller.analysis.evidence import judge_readings
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
