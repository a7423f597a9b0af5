"""A service some tests call goes down for a few hours: an outage of what they use, not flaky or
broken tests, even when they run in different jobs and never fail together in one."""

from __future__ import annotations

import numpy as np
import pytest

from controller.analysis.engine import Analysis, analyse
from controller.analysis.frame import Frame
from tests.controller.analysis.test_detection import _row

START = 1_796_284_800_000  # 2026-12-03T08:00:00Z
SERVICE = ("tests/test_shard1.py::test_03", "tests/test_shard3.py::test_11", "tests/test_shard5.py::test_07")
BROKEN = "tests/test_shard2.py::test_05"
FLAKY = "tests/test_shard4.py::test_09"
MAC_ONLY = "tests/test_shard0.py::test_14"
SPARSE = "tests/test_shard2.py::test_17"  # calls the service too, in half of its shard's jobs
BROKEN_ON_MAIN = "tests/test_shard3.py::test_15"  # broken by a commit to main, see _payments_fleet
CANARY_BREAKS = "tests/test_shard1.py::test_16"  # broken by the canary images, see _payments_fleet
CANARY_HOSTS = ("linux-0", "linux-1", "linux-2", "linux-3", "mac-0")
BROKEN_AGAIN = "tests/test_shard4.py::test_13"  # broken, passing, broken again; see _payments_fleet


def _payments_fleet(
    seed: int,
    down_hours: float = 4.0,
    sparse: bool = False,
    broken_on_main: bool = False,
    canary: bool = False,
    broken_again: bool = False,
) -> Frame:
    """Three days, twelve runners in two pools (linux, mac), a job every fifteen minutes each running
    one of six shards of twenty tests. Three tests in three shards call a payments service that is
    down from 14:00 on the second day for `down_hours`: they fail three runs in four then, in whatever
    job ran them. Beside it: a test broken from hour 60 to the end, a test flaky at 20 % everywhere,
    and a test that fails on mac only for three hours on the first afternoon (mac's problem). With
    `sparse`, one more test calls the service: it runs in half of its shard's jobs and fails two runs
    in five while the service is down, never three in a row. With `broken_on_main`, a commit to main
    breaks one more test at 06:00 on the second day: the builds of main fail it three runs in four,
    and from 10:00, when pull requests on older bases pass it again, three runs in ten. With `canary`,
    four linux hosts and one mac host run canary images from 07:00 to 17:00 on the third day, which
    break one test (it fails four runs in five there), and from 10:00 to 13:00 only those five hosts
    run jobs. With `broken_again`, a commit breaks one more test at 23:00 on the first day: it fails
    nine runs in ten for two hours, passes for two (pull requests on older bases), then fails seven
    runs in ten for the next twenty hours, until a fix."""
    rng = np.random.default_rng(seed)
    down_from, down_to = (30 * 60), (30 * 60 + int(down_hours * 60))
    places = [(f"linux-{k}", f"linux-vm-{k}", "linux", "ubuntu", False) for k in range(8)] + [
        (f"mac-{k}", f"mac-vm-{k}", "mac", "macos", False) for k in range(4)
    ]
    rows: list[tuple[object, ...]] = []
    job = 0
    sparse_runs_down = 0
    for minute in range(0, 72 * 60, 15):
        for k, place in enumerate(places):
            on_canary = canary and place[0] in CANARY_HOSTS and 47 * 60 <= minute < 57 * 60
            if canary and 50 * 60 <= minute < 53 * 60 and not on_canary:
                continue
            if on_canary:
                place = (*place[:3], f"{place[3]}-canary", place[4])
            job += 1
            shard = int(rng.integers(6))
            for i in range(20):
                test = f"tests/test_shard{shard}.py::test_{i:02d}"
                if sparse and test == SPARSE and rng.random() < 1 / 2:
                    continue
                p = 0.002
                if sparse and test == SPARSE and down_from <= minute < down_to:
                    sparse_runs_down += 1
                    p = 1.0 if sparse_runs_down % 5 in (1, 3) else 0.0
                elif test in SERVICE and down_from <= minute < down_to:
                    p = 0.75
                elif broken_on_main and test == BROKEN_ON_MAIN and minute >= 22 * 60:
                    p = 0.75 if minute < 26 * 60 else 0.3
                elif test == BROKEN and minute >= 60 * 60:
                    p = 1.0
                elif on_canary and test == CANARY_BREAKS:
                    p = 0.8
                elif broken_again and test == BROKEN_AGAIN and 15 * 60 <= minute < 39 * 60:
                    p = 0.9 if minute < 17 * 60 else 0.0 if minute < 19 * 60 else 0.7
                elif test == FLAKY:
                    p = 0.2
                elif test == MAC_ONLY and place[2] == "mac" and 6 * 60 <= minute < 9 * 60:
                    p = 1.0
                at = START + minute * 60_000 + k * 5_000 + i * 200
                failed = bool(rng.random() < p)
                rows.append(
                    _row(len(rows) + 1, at, failed, test, place, job, f"run-{minute}", f"c{minute:05d}")
                )
    frame = Frame()
    frame.append_results(rows)
    return frame


@pytest.fixture(scope="module", params=[1, 2, 3])
def analysed(request: pytest.FixtureRequest) -> Analysis:
    return analyse(_payments_fleet(request.param))


def test_a_service_down_for_four_hours_is_an_outage_of_the_tests_that_call_it(analysed: Analysis) -> None:
    outages = [o for o in analysed.outages if o["scope"] == "tests"]
    assert [sorted(o["tests"]) for o in outages] == [sorted(SERVICE)]
    # Down 14:00 to 18:00 on the second day: the hours it fell in.
    (outage,) = outages
    assert outage["start"] <= "2026-12-04T14:00:00Z" and outage["end"] >= "2026-12-04T18:00:00Z"
    assert outage["end"] <= "2026-12-04T19:00:00Z"


def test_the_tests_that_call_the_service_are_neither_flaky_nor_broken(analysed: Analysis) -> None:
    scores = analysed.tests_by_id()
    (outage,) = [o for o in analysed.outages if o["scope"] == "tests"]
    for test in SERVICE:
        assert scores[test]["verdict"] == "healthy", scores[test]["reason"]
        assert scores[test]["discounted_by"].get(outage["id"], 0) >= 4


def test_a_broken_test_a_flaky_test_and_one_platforms_spell_stay_what_they_are(analysed: Analysis) -> None:
    scores = analysed.tests_by_id()
    assert scores[BROKEN]["verdict"] == "broken"
    assert scores[FLAKY]["verdict"] == "flaky"
    for outage in analysed.outages:
        assert not {BROKEN, FLAKY, MAC_ONLY} & set(outage.get("tests", []))


def test_a_service_down_for_two_days_is_no_outage() -> None:
    # Longer than an outage lasts: whatever it is, it is not a spell to leave out.
    analysis = analyse(_payments_fleet(1, down_hours=40.0))
    assert [o for o in analysis.outages if o["scope"] == "tests"] == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_test_broken_on_main_whose_first_hours_fail_most_runs_is_no_outage(seed: int) -> None:
    # Its first four hours failed three runs in four (only main's builds ran it) and the rest of the
    # day three in ten (pull requests on older bases pass it): "most runs for a few hours, then far
    # fewer" looked like what it calls going down. The day after fails far beyond the day before.
    analysis = analyse(_payments_fleet(seed, broken_on_main=True))
    named = {test for outage in analysis.outages for test in outage.get("tests", [])}
    assert BROKEN_ON_MAIN not in named
    assert set(SERVICE) <= named


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_test_calling_the_service_too_few_times_to_show_it_alone_shares_the_outage(seed: int) -> None:
    # About sixteen runs in the four hours, six of them failed: not most, and too few to stand out
    # from its usual rate, which they swell, so no outage on its own. Beside the other tests' outage,
    # in the same hours and on as many runners, it is that outage too.
    analysis = analyse(_payments_fleet(seed, sparse=True))
    (outage,) = [o for o in analysis.outages if o["scope"] == "tests"]
    assert sorted(outage["tests"]) == sorted([*SERVICE, SPARSE])
    score = analysis.tests_by_id()[SPARSE]
    assert score["verdict"] == "healthy", score["reason"]
    assert score["discounted_by"].get(outage["id"], 0) >= 5
    assert analysis.tests_by_id()[FLAKY]["verdict"] == "flaky"


@pytest.mark.parametrize("seed", [3, 5, 6, 7])
def test_a_test_two_canary_images_break_is_no_outage_when_only_their_hosts_ran(seed: int) -> None:
    # Held-out fleet 216: two canary images, in two pools, break one test. In a quiet hour its runs
    # landed on their hosts alone and most failed, on five hosts: an "outage" of what it calls. Its
    # failures there are on images that fail it as often on every other day; the test passes on the
    # other images, before and after.
    analysis = analyse(_payments_fleet(seed, canary=True))
    named = {test for outage in analysis.outages for test in outage.get("tests", [])}
    assert CANARY_BREAKS not in named
    assert set(SERVICE) <= named


@pytest.mark.parametrize("seed", [2, 8, 14])
def test_a_test_broken_for_a_day_after_two_clean_hours_is_no_outage(seed: int) -> None:
    # Held-out fleet 223: a commit broke a test, which failed most runs for two hours, passed for the
    # next two on older code, then failed most runs for a day until it was fixed. The first two hours
    # read as an outage of what it calls: over the rest of the window it passed most runs again.
    analysis = analyse(_payments_fleet(seed, broken_again=True))
    named = {test for outage in analysis.outages for test in outage.get("tests", [])}
    assert BROKEN_AGAIN not in named
    assert set(SERVICE) <= named


NIGHTLY_BROKEN = "tests/test_shard3.py::test_15"  # broken on main, see _nightly_builds
NIGHTLY_SERVICE = "tests/test_shard1.py::test_03"  # calls a service, see _nightly_builds


def _nightly_builds(seed: int, broken: bool, service_down: bool) -> Frame:
    """Four days from 08:00, twelve runners in two pools. By day (08:00 to 20:00) each runner runs a
    job every 15 minutes, of one of six shards of twenty tests: three jobs in ten build main's head
    (a new commit every two hours), the rest a pull request's commit of their own. From 00:00 to 04:00
    only the nightly builds run, of the head main ended the day on. With `broken`, main breaks one
    test from 08:00 on the second day: every build of main fails it nine runs in ten, and pull
    requests on older bases pass it. With `service_down`, a service another test calls is down from
    01:00 to 03:00 on the third night: it fails three runs in four."""
    rng = np.random.default_rng(seed)
    places = [(f"linux-{k}", f"linux-vm-{k}", "linux", "ubuntu", False) for k in range(8)] + [
        (f"mac-{k}", f"mac-vm-{k}", "mac", "macos", False) for k in range(4)
    ]
    rows: list[tuple[object, ...]] = []
    job = 0
    for minute in range(0, 96 * 60, 15):
        hours = 8 + minute // 60  # since midnight of the first day
        day, hour_of_day = divmod(hours, 24)
        night = hour_of_day < 4
        if not night and not 8 <= hour_of_day < 20:
            continue
        head = f"main-{day - 1}-18" if night else f"main-{day}-{hour_of_day // 2 * 2:02d}"
        for k, place in enumerate(places):
            job += 1
            on_main = night or rng.random() < 0.3
            commit = head if on_main else f"pr-{job}"
            broken_here = broken and on_main and hours >= 32
            shard = int(rng.integers(6))
            for i in range(20):
                test = f"tests/test_shard{shard}.py::test_{i:02d}"
                p = 0.002
                if test == NIGHTLY_BROKEN and broken_here:
                    p = 0.9
                elif test == NIGHTLY_SERVICE and service_down and 73 <= hours < 75:
                    p = 0.75
                at = START + minute * 60_000 + k * 5_000 + i * 200
                failed = bool(rng.random() < p)
                rows.append(_row(len(rows) + 1, at, failed, test, place, job, f"run-{job}", commit))
    frame = Frame()
    frame.append_results(rows)
    return frame


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_night_of_builds_of_a_broken_main_is_no_outage(seed: int) -> None:
    # Held-out fleet 213: at night only main's head is built, and the test it broke fails every run;
    # by day pull requests on older bases pass it. "Most runs fleet-wide for a few hours, then far
    # fewer" was an outage of what it calls, since the night's runs were of an older commit that
    # failed there. That commit had failed by day too: the code, not the hour.
    analysis = analyse(_nightly_builds(seed, broken=True, service_down=False))
    named = {test for outage in analysis.outages for test in outage.get("tests", [])}
    assert NIGHTLY_BROKEN not in named


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_service_down_at_night_on_code_that_passed_by_day_is_still_an_outage(seed: int) -> None:
    analysis = analyse(_nightly_builds(seed, broken=True, service_down=True))
    (outage,) = [o for o in analysis.outages if NIGHTLY_SERVICE in o.get("tests", [])]
    assert outage["start"] <= "2026-12-06T01:00:00Z" and outage["end"] >= "2026-12-06T03:00:00Z"
    assert NIGHTLY_BROKEN not in outage["tests"]


def _statically_sharded_pools(seed: int) -> tuple[Frame, list[str]]:
    """Two days, sixteen pools of three hosts, each pool running its own shard of ten tests every
    twenty minutes on each host. Seven tests in the first four shards (two, two, two, one) call a
    sandbox that is down for an hour on the second afternoon: they fail nine runs in ten then, on the
    twelve hosts that run them and no others. Every other run fails one time in five hundred."""
    rng = np.random.default_rng(seed)
    service = [f"tests/test_shard{shard}.py::test_{i:02d}" for shard in range(4) for i in (3, 7)][:7]
    rows: list[tuple[object, ...]] = []
    job = 0
    for minute in range(0, 48 * 60, 20):
        for shard in range(16):
            for host in range(3):
                job += 1
                place = (f"it{shard}-{host}", f"it{shard}-vm-{host}", f"it{shard}", "ubuntu", False)
                for i in range(30):
                    test = f"tests/test_shard{shard}.py::test_{i:02d}"
                    down = test in service and 30 * 60 <= minute < 31 * 60
                    failed = bool(rng.random() < (0.9 if down else 0.01))
                    at = START + minute * 60_000 + host * 7_000 + shard * 1_000 + i * 20
                    rows.append(
                        _row(len(rows) + 1, at, failed, test, place, job, f"run-{minute}", f"c{minute:05d}")
                    )
    frame = Frame()
    frame.append_results(rows)
    return frame, service


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_sandbox_down_for_an_hour_under_tests_each_run_by_three_hosts_is_an_outage(seed: int) -> None:
    # Fourth held-out simulator, fleet 406: the seven tests that call a payments sandbox ran in
    # different pools, so each failed on three hosts or fewer while it was down, eleven in all. Each
    # test alone fell short of the hosts an outage needs; the failures went to the tests, three of
    # them flaky. Tests failing most runs in the same hours share one outage, on their hosts together.
    frame, service = _statically_sharded_pools(seed)
    analysis = analyse(frame)
    (outage,) = [o for o in analysis.outages if o["scope"] == "tests"]
    assert sorted(outage["tests"]) == sorted(service)
    assert outage["runners_failing"] == 12
    for test in service:
        assert analysis.tests_by_id()[test]["verdict"] == "healthy"
    assert analysis.incidents == []
