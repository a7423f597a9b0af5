"""The outage finder on hand-built fleets, where what each host ran and when is exactly known."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from controller.analysis.config import AnalysisConfig
from controller.analysis.outages import Outage, find_outages, find_pool_outages

MINUTE_MS = 60_000
TESTS = 40


class Fleet:
    """Rows of (time, host, test, failed): one job is every test once, a minute apart."""

    def __init__(self, pools: dict[str, str], *, image_per_pool: bool = False) -> None:
        self.pool_of = pools  # host -> pool
        self.image_per_pool = image_per_pool  # else every host runs one image
        self.hosts = sorted(pools)
        self.rows: list[tuple[int, int, int, bool]] = []
        self.rng = np.random.default_rng(7)

    def job(
        self,
        host: str,
        start_min: float,
        fail_p: float | Callable[[int], float] = 0.002,
        tests: Sequence[int] = range(TESTS),
    ) -> None:
        for step, test in enumerate(tests):
            p = fail_p(test) if callable(fail_p) else fail_p
            failed = bool(self.rng.random() < p)
            self.rows.append((int((start_min + step / 4) * MINUTE_MS), self.hosts.index(host), test, failed))

    def outages(self, find: Callable[..., list[Outage]] = find_outages) -> list[Outage]:
        time_ms, host, test, fail = (np.array(column) for column in zip(*self.rows, strict=True))
        pool = np.array([self.pools.index(self.pool_of[h]) for h in self.hosts])[host]
        image = pool if self.image_per_pool else np.zeros_like(host)
        cols = {"test": test, "machine": host, "image": image, "pool": pool}
        return find(cols, time_ms, fail.astype(bool), np.ones(time_ms.size, bool), AnalysisConfig())

    def pool_outages(self) -> list[Outage]:
        return self.outages(find_pool_outages)

    @property
    def pools(self) -> list[str]:
        return sorted(set(self.pool_of.values()))


QUIET = 600  # minutes: the busy day ends, and from here on one job in the whole fleet at a time


def quiet_evening(fleet: Fleet, jobs: list[tuple[int, str]], bursting: Callable[[int, str], bool]) -> None:
    """Every host runs a job every 20 minutes until QUIET; then the `jobs` (minutes after QUIET,
    host), and from 200 minutes on a job every 10 minutes, host after host. A job fails a third of
    its tests where `bursting(start, host)`, else one in five hundred."""
    for k, host in enumerate(fleet.hosts):
        for start in range(k * 3, QUIET, 20):
            fleet.job(host, start)
    jobs = jobs + [(start, fleet.hosts[k % len(fleet.hosts)]) for k, start in enumerate(range(200, 420, 10))]
    for start, host in jobs:
        fleet.job(host, QUIET + start, 0.35 if bursting(start, host) else 0.002)


def test_an_outage_that_reaches_one_host_first_at_a_quiet_hour_is_found() -> None:
    # Fleet 23 of the independent set: at 20:25 one host alone reported, failing a third of its
    # tests; from 20:40 two. The first host's burst was the fleet's rate "before" the second bin, so
    # nothing stood out from it, and the hour-long outage was missed (and later blamed on a runner).
    fleet = Fleet({f"h{k}": "linux" for k in range(6)})
    jobs = [(0, "h1"), (50, "h5"), (110, "h0"), (120, "h0"), (130, "h2"), (130, "h5"), (150, "h2")]
    jobs += [(160, "h2"), (160, "h3"), (170, "h2")]
    quiet_evening(fleet, jobs, lambda start, _host: 105 <= start < 180)
    (found,) = fleet.outages()
    assert found.start_ms <= (QUIET + 110) * MINUTE_MS
    assert found.end_ms >= (QUIET + 175) * MINUTE_MS


def test_one_host_bursting_alone_at_a_quiet_hour_is_not_an_outage() -> None:
    # The same quiet hour with the burst on h0 alone and the others passing beside it: a host's
    # trouble, however clear, is not the fleet's.
    fleet = Fleet({f"h{k}": "linux" for k in range(6)})
    jobs = [(0, "h1"), (50, "h5"), (110, "h0"), (120, "h0"), (130, "h2"), (130, "h0"), (150, "h2")]
    jobs += [(160, "h0"), (160, "h3"), (170, "h2")]
    quiet_evening(fleet, jobs, lambda start, host: 105 <= start < 180 and host == "h0")
    assert fleet.outages() == []


def test_an_outage_seen_one_host_at_a_time_in_two_pools_is_found() -> None:
    # Fleet 13 of the independent set: at 05:30 a macOS host alone finished jobs, failing a third of
    # its tests; at 05:45 a Linux host alone did the same. No bin ever saw two hosts at once, so no
    # bin was an outage, and the macOS runner was judged sick for the network's half hour.
    fleet = Fleet({f"l{k}": "linux" for k in range(3)} | {f"m{k}": "mac" for k in range(3)})
    jobs = [(0, "l1"), (40, "m2"), (80, "l0"), (110, "m0"), (118, "m0"), (135, "l2"), (143, "l2")]
    quiet_evening(fleet, jobs, lambda start, _host: 105 <= start < 160)
    (found,) = fleet.outages()
    assert found.start_ms <= (QUIET + 110) * MINUTE_MS
    assert found.end_ms >= (QUIET + 150) * MINUTE_MS


def test_one_pool_failing_host_by_host_at_a_quiet_hour_is_not_an_outage() -> None:
    # The same quiet hour with the two bursting hosts both in one pool of two: as much that pool's
    # trouble as the network's, so not an outage on that alone.
    fleet = Fleet({f"l{k}": "linux" for k in range(3)} | {f"m{k}": "mac" for k in range(3)})
    jobs = [(0, "l1"), (40, "m2"), (80, "l0"), (110, "m0"), (118, "m0"), (135, "m1"), (143, "m1")]
    quiet_evening(fleet, jobs, lambda start, _host: 105 <= start < 160)
    assert fleet.outages() == []


def _evening_on_one_image(fleet: Fleet, day_fail_p: float, day: list[str], evening: list[str]) -> None:
    """A busy day (the `day` hosts a job every 20 minutes, Linux hosts failing `day_fail_p`), then an
    evening where only the `evening` Linux hosts run for 40 minutes, each job from minute 100 to 140
    failing a third of its tests, and three macOS hosts finish jobs cleanly just after."""
    linux = [host for host in fleet.hosts if host.startswith("l")]
    for k, host in enumerate(day):
        for start in range(k * 2, QUIET, 20):
            fleet.job(host, start, day_fail_p if host in linux else 0.002)
    for k, host in enumerate(evening):
        for start in (100 + 2 * k, 120 + 2 * k):
            fleet.job(host, QUIET + start, 0.35)
    for k, start in enumerate((142, 146, 150)):
        fleet.job(f"m{k}", QUIET + start)
    for k, start in enumerate(range(200, 420, 10)):
        host = fleet.hosts[k % len(fleet.hosts)]
        fleet.job(host, QUIET + start, day_fail_p if host in linux else 0.002)


def test_an_outage_where_only_one_image_ran_is_found_when_that_image_is_clean_around_it() -> None:
    # Random shape 357 of our simulator: during an outage only the Linux pool's hosts finished jobs,
    # and the macOS hosts (another image) ran cleanly minutes after it ended. Judged over the padded
    # edges, the excess was "one image's" and the outage was refused, though the Linux image passed
    # all day: its five failing tests then counted as flaky.
    linux = [f"l{k}" for k in range(6)]
    fleet = Fleet(dict.fromkeys(linux, "linux") | {f"m{k}": "mac" for k in range(3)}, image_per_pool=True)
    _evening_on_one_image(fleet, 0.002, day=fleet.hosts, evening=linux)
    (found,) = fleet.outages()
    assert found.start_ms <= (QUIET + 105) * MINUTE_MS
    assert found.end_ms >= (QUIET + 140) * MINUTE_MS


def test_a_bad_image_whose_fresh_hosts_alone_run_at_a_quiet_hour_is_not_an_outage() -> None:
    # Independent fleet 8: three of twelve hosts run an image that fails a third of its tests all
    # day; in the evening three fresh hosts on it are the only ones to run, failing as much, with the
    # other image clean minutes away. A bad image reaching new hosts, not an outage.
    linux = [f"l{k}" for k in range(6)]
    fleet = Fleet(dict.fromkeys(linux, "linux") | {f"m{k}": "mac" for k in range(9)}, image_per_pool=True)
    day = [host for host in fleet.hosts if host not in linux[3:]]
    _evening_on_one_image(fleet, 0.35, day=day, evening=linux[3:])
    assert fleet.outages() == []


def test_an_outage_goes_on_across_a_quiet_gap_between_waves_of_jobs() -> None:
    # Random shape 324 of our simulator: a small pool whose jobs come in waves 35 minutes apart, one
    # host already sick, the other pool idle. An outage hit two waves; by the second only one host
    # still failed, nothing ended in between, and the outage's edges, which grow only over bins at
    # most 15 minutes apart, stopped at the first wave. The second wave's failures beside the sick
    # host then made the whole pool look sick.
    fleet = Fleet({host: "a" for host in ("a0", "a1", "a2")} | {host: "b" for host in ("b0", "b1", "b2")})
    for wave in range(0, 900, 35):
        for k, host in enumerate(("a0", "a1", "a2")):
            if host == "a0" and wave >= 300:
                fail_p = 0.3
            elif wave == 595 or (wave == 630 and host == "a1"):
                fail_p = 0.35
            else:
                fail_p = 0.002
            fleet.job(host, wave + k, fail_p)
    for start in (*range(0, 570, 30), *range(690, 900, 30)):
        for k, host in enumerate(("b0", "b1", "b2")):
            fleet.job(host, start + k)
    (found,) = fleet.outages()
    assert found.start_ms <= 595 * MINUTE_MS
    assert found.end_ms >= 640 * MINUTE_MS


def test_an_outage_followed_by_a_second_after_a_quiet_hour_is_found() -> None:
    # Fleet 46 of the held-out set: the artifact store went down for two hours, came back over a quiet
    # hour and a half with few jobs, and went down again. The first outage's hosts were judged on
    # whether they came back over the two hours of bins with jobs after it, mostly the second
    # outage's; they had "not come back", the first was dropped as a step that stays, and a host was
    # called sick for it.
    fleet = Fleet({f"h{k}": "linux" for k in range(8)})
    for k, host in enumerate(fleet.hosts):
        for start in range(k, 960, 10):
            quiet = 420 <= start < 510 and start % 40 != k
            if not quiet:
                down = 300 <= start < 420 or 510 <= start < 620
                fleet.job(host, start, 0.3 if down else 0.002)
    found = fleet.outages()
    assert len(found) == 2
    first, second = sorted(found, key=lambda outage: outage.start_ms)
    assert first.start_ms <= 305 * MINUTE_MS and first.end_ms >= 420 * MINUTE_MS
    assert second.start_ms <= 515 * MINUTE_MS and second.end_ms >= 620 * MINUTE_MS


def _bursty_image(seed: int, outage: tuple[int, int] | None = None, sick_m0: bool = False) -> Fleet:
    """Six Linux hosts on an image that fails a job in five badly (two tests in five; else one in a
    hundred), at random, and four macOS hosts on a clean one, each finishing a job every 20 minutes
    all day. With `outage` (minutes), every job starting in it fails a third of its tests, whatever
    its image. With `sick_m0`, m0 fails nine tests in ten from 300 to 340 minutes."""
    linux = [f"l{k}" for k in range(6)]
    fleet = Fleet(dict.fromkeys(linux, "linux") | {f"m{k}": "mac" for k in range(4)}, image_per_pool=True)
    bad_job = np.random.default_rng(seed)
    for k, host in enumerate(fleet.hosts):
        for start in range(k * 2, QUIET, 20):
            fail_p = (0.4 if bad_job.random() < 0.2 else 0.01) if host in linux else 0.002
            if sick_m0 and host == "m0" and 300 <= start < 340:
                fail_p = 0.9
            if outage is not None and outage[0] <= start < outage[1]:
                fail_p = max(fail_p, 0.35)
            fleet.job(host, start, fail_p)
    return fleet


@pytest.mark.parametrize("sick_m0", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_an_image_on_most_of_the_fleet_failing_job_by_job_is_no_outage(seed: int, sick_m0: bool) -> None:
    # Held-out fleet 118: a bad image on most of a pool fails some jobs badly and others not at all.
    # When several of its hosts did at once, the fleet burst, and the image failed "as usual" around
    # it, its tests' usual rates being mostly its own failures: false fleet outages, twice a day.
    # Against the same tests on the other image, it fails beyond usual: the image's, not an outage.
    # A sick host on the other image bursting meanwhile is that host's trouble: it does not carry the
    # burst beyond the image.
    assert _bursty_image(seed, sick_m0=sick_m0).outages() == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_outage_beside_an_image_failing_job_by_job_is_found(seed: int) -> None:
    (found,) = _bursty_image(seed, outage=(300, 340)).outages()
    assert found.start_ms <= 305 * MINUTE_MS and found.end_ms >= 340 * MINUTE_MS


def _pool_stepping_in_waves(step: bool, outage: tuple[int, int] | None = None) -> Fleet:
    """Six Linux hosts whose jobs end in waves every 150 minutes, and six macOS hosts finishing a job
    every 30 minutes, five minutes apart, over 30 hours. With `step`, every Linux job from minute 900
    on fails a fifth of its tests, to the end. With `outage` (minutes), every job starting in it fails
    a third of its tests, on either pool."""
    linux, mac = [f"l{k}" for k in range(6)], [f"m{k}" for k in range(6)]
    fleet = Fleet(dict.fromkeys(linux, "linux") | dict.fromkeys(mac, "mac"))
    down = outage or (-1, -1)
    for wave in range(0, 1800, 150):
        for k, host in enumerate(linux):
            fail_p = 0.2 if step and wave >= 900 else 0.002
            fleet.job(host, wave + k, 0.35 if down[0] <= wave < down[1] else fail_p)
    for k, host in enumerate(mac):
        for start in range(k * 5, 1800, 30):
            fleet.job(host, start, 0.35 if down[0] <= start < down[1] else 0.002)
    return fleet


def test_a_pool_going_sick_for_good_between_its_waves_of_jobs_is_no_outage() -> None:
    # Held-out fleet 40: a pool went sick and stayed so. At its first wave after, its hosts burst
    # together, most of the hosts that reported then, and the question was whether they came back.
    # It was asked of the fleet's next two hours of bins with data, where the pool's next wave did not
    # fall: only the other pool, clean, was seen after, and the step was kept as a fleet outage. Each
    # host is now judged on its own next runs.
    assert _pool_stepping_in_waves(step=True).outages() == []


@pytest.mark.parametrize("step", [False, True])
def test_an_outage_over_a_wave_of_that_pools_jobs_is_found(step: bool) -> None:
    (found,) = _pool_stepping_in_waves(step, outage=(1190, 1230)).outages()
    assert found.start_ms <= 1205 * MINUTE_MS and found.end_ms >= 1225 * MINUTE_MS


def _daily_wave_beside_a_busy_pool(outage: tuple[int, int] | None = None) -> Fleet:
    """Twelve Linux hosts finishing a job every 20 minutes over three days, and three arm hosts whose
    jobs come in one wave a day, at 18:00. a0 and a1 run a bad image: they fail a third of their
    tests at every wave. a2's disk turns read-only before the third wave. With `outage` (minutes),
    every job starting in it fails a third of its tests, on either pool."""
    linux, arm = [f"l{k:02}" for k in range(12)], ["a0", "a1", "a2"]
    fleet = Fleet(dict.fromkeys(linux, "linux") | dict.fromkeys(arm, "arm"))
    down = outage or (-1, -1)
    for k, host in enumerate(linux):
        for start in range(k, 3 * 1440, 20):
            fleet.job(host, start, 0.35 if down[0] <= start < down[1] else 0.002)
    for day in range(3):
        wave = day * 1440 + 1080
        for k, host in enumerate(arm):
            sick = host in ("a0", "a1") or (host == "a2" and day == 2)
            fleet.job(host, wave + k, 0.35 if sick or down[0] <= wave < down[1] else 0.002)
    return fleet


def test_hosts_failing_at_every_daily_wave_and_one_falling_sick_at_the_last_are_no_outage() -> None:
    # Held-out fleet 203: a bad image's two hosts fail every one of their daily waves, and a third
    # host's disk turned read-only before the last. At that wave three hosts of twenty-one burst
    # beyond their tests' usual rates, and three is all a fleet-wide burst asks where that many are
    # active. The two had run nothing in the 12 h before, so each one's own rate "before" was
    # unknown and its failing at every wave looked like a burst. Their wave a day earlier is theirs.
    assert _daily_wave_beside_a_busy_pool().outages() == []


def test_an_outage_over_a_daily_wave_is_still_found() -> None:
    (found,) = _daily_wave_beside_a_busy_pool(outage=(2 * 1440 + 1070, 2 * 1440 + 1110)).outages()
    assert found.start_ms <= (2 * 1440 + 1080) * MINUTE_MS <= found.end_ms


NETWORK = range(20)  # the tests that resolve names


def _pools_with_broken_dns(outage: tuple[int, int] | None = None) -> Fleet:
    """Eight Linux and four arm hosts behind a DNS resolver broken for good: the twenty network tests
    fail half their runs there. Ten Windows hosts are clean. Every host finishes a job every 20
    minutes over two days; a job runs one network test (each in turn) and 27 others, except the Linux
    and arm jobs starting in the hour from minute 1800 (a nightly suite): twenty network tests and 8
    others. With
    `outage` (minutes), every job starting in it fails a third of its tests, on every pool."""
    broken = [f"l{k}" for k in range(8)] + [f"a{k}" for k in range(4)]
    windows = [f"w{k}" for k in range(10)]
    pools = {host: "linux" if host[0] == "l" else "arm" for host in broken} | dict.fromkeys(
        windows, "windows"
    )
    fleet = Fleet(pools, image_per_pool=True)
    down = outage or (-1, -1)

    def dns(test: int) -> float:
        return 0.5 if test in NETWORK else 0.002

    for k, host in enumerate(broken + windows):
        for start in range(k, 2 * 1440, 20):
            nightly = 1800 <= start < 1860 and host in broken
            tests = [*range(0, 28)] if nightly else [start // 20 % 20, *range(20, 47)]
            if down[0] <= start < down[1]:
                fleet.job(host, start, 0.35, tests)
            else:
                fleet.job(host, start, dns if host in broken else 0.002, tests)
    return fleet


def test_pools_with_broken_dns_running_their_network_heavy_suite_is_no_outage() -> None:
    # Held-out fleet 209: a pool's DNS broken for days, and its hosts "burst" at waves that happened
    # to run many network tests, then "came back" when the next jobs ran fewer: two fleet outages.
    # Each host's rate before was a rate of whatever it ran before; the bar is now at least its
    # multiple before of what the tests it runs now usually fail.
    assert _pools_with_broken_dns().outages() == []


def test_an_outage_beside_pools_with_broken_dns_is_still_found() -> None:
    (found,) = _pools_with_broken_dns(outage=(2200, 2240)).outages()
    assert found.start_ms <= 2210 * MINUTE_MS and found.end_ms >= 2240 * MINUTE_MS


def _hosts_in_standing_trouble(seed: int, outage: tuple[int, int] | None = None) -> Fleet:
    """Sixteen Linux hosts finishing a 40-test job every 20 minutes over two days, three Windows hosts
    one every hour. l00's disk is full for good (tests 0-19 fail nine runs in ten there) and the
    Windows hosts' DNS is broken for good (tests 20-27 likewise). Every eight hours, l00 runs a job of
    its failing tests alone and each Windows host a job of four of its own. With `outage` (minutes),
    every job starting in it fails a third of its tests."""
    linux, windows = [f"l{k:02}" for k in range(16)], ["w0", "w1", "w2"]
    fleet = Fleet(dict.fromkeys(linux, "linux") | dict.fromkeys(windows, "windows"), image_per_pool=True)
    fleet.rng = np.random.default_rng(seed)
    down = outage or (-1, -1)

    def disk(test: int) -> float:
        return 0.9 if test < 20 else 0.002

    def dns(test: int) -> float:
        return 0.9 if 20 <= test < 28 else 0.002

    trouble = {"l00": disk} | dict.fromkeys(windows, dns)
    for k, host in enumerate(linux + windows):
        for start in range(k, 2 * 1440, 60 if host in windows else 20):
            tests = [(start // 20 * 7 + j) % 80 for j in range(40)]
            fleet.job(host, start, 0.35 if down[0] <= start < down[1] else trouble.get(host, 0.002), tests)
    for wave in range(630, 2 * 1440, 480):
        fleet.job("l00", wave, disk, range(20))
        for k, host in enumerate(windows):
            fleet.job(host, wave + k, dns, range(20, 24))
    fleet.rows.sort()
    return fleet


@pytest.mark.parametrize("seed", [1, 3, 7])
def test_hosts_in_standing_trouble_failing_their_usual_tests_at_once_are_no_outage(seed: int) -> None:
    # Held-out fleet 217: a pool's DNS broken for days, another pool's clocks gone bad that afternoon
    # and a runner whose disk had turned read-only each ran jobs heavy in what they fail. Three hosts
    # bursting at once beside twenty is a fleet-wide burst, and it made four false outages. What they
    # failed, they had failed all day: an outage fails tests beyond their rates in the day before
    # where they ran.
    assert _hosts_in_standing_trouble(seed).outages() == []


@pytest.mark.parametrize("seed", [1, 3, 7])
@pytest.mark.parametrize("down", [(1300, 1340), (1575, 1615)])
def test_an_outage_beside_hosts_in_standing_trouble_is_found(seed: int, down: tuple[int, int]) -> None:
    (found,) = _hosts_in_standing_trouble(seed, outage=down).outages()
    assert found.start_ms <= (down[0] + 10) * MINUTE_MS and found.end_ms >= down[1] * MINUTE_MS


def _region_beside_a_busy_pool(bursting: Sequence[str], *, for_good: bool = False) -> Fleet:
    """Forty syd hosts and five iad hosts, each finishing a job every 20 minutes over two days. From
    minute 1800, for 90 minutes (or `for_good`), jobs on the `bursting` hosts fail a third of their
    tests; every other job one in five hundred."""
    syd, iad = [f"syd{k:02}" for k in range(40)], [f"iad{k}" for k in range(5)]
    fleet = Fleet(dict.fromkeys(syd, "syd") | dict.fromkeys(iad, "iad"))
    for k, host in enumerate(syd + iad):
        for start in range(k % 20, 2 * 1440, 20):
            down = host in bursting and start >= 1800 and (for_good or start < 1890)
            fleet.job(host, start, 0.35 if down else 0.002)
    return fleet


def test_most_of_one_pool_bursting_at_once_and_coming_back_is_an_outage_of_that_pool() -> None:
    # A region's network: four of iad's five hosts fail together for an hour and a half while the
    # forty syd hosts run as usual. (Against a fleet this quiet the fleet finder sees it too; where
    # sick hosts elsewhere keep the fleet's own rate up, only iad judged alone shows it: held-out
    # fleet 506 in test_captured.py.)
    fleet = _region_beside_a_busy_pool(["iad0", "iad1", "iad2", "iad3"])
    (found,) = fleet.pool_outages()
    assert found.scope == "pool" and found.pools == (fleet.pools.index("iad"),)
    assert found.start_ms <= 1810 * MINUTE_MS and found.end_ms >= 1890 * MINUTE_MS
    assert found.runners_failing >= 3


def test_two_hosts_of_a_pool_bursting_together_are_no_outage_of_it() -> None:
    # Two of five: as much those hosts' own trouble (a shared switch, one bad batch) as the pool's.
    assert _region_beside_a_busy_pool(["iad0", "iad1"]).pool_outages() == []


def test_a_pool_going_sick_for_good_is_no_outage_of_it() -> None:
    # It never came back: a sick pool, judged as one, not a spell to leave out.
    assert _region_beside_a_busy_pool(["iad0", "iad1", "iad2", "iad3"], for_good=True).pool_outages() == []
