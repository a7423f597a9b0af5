"""Verdicts on captured slices of fleets that went wrong once, replayed exactly as they were stored."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np

from controller.analysis.engine import analyse
from controller.analysis.frame import Frame

DATA = Path(__file__).parent / "data"


def frame_from(name: str, pool: str = "", ephemeral: bool = False) -> Frame:
    """A captured slice as the controller stored it (time_ms, outcome, ...): one pool's results, or
    several pools' where the slice has `pool` and `ephemeral` columns."""
    with gzip.open(DATA / name, "rt", newline="") as handle:
        records = list(csv.DictReader(handle))
    frame = Frame()
    frame.append_results(
        [
            (
                number,
                int(r["time_ms"]),
                r["outcome"],
                r["ephemeral"] == "1" if "ephemeral" in r else ephemeral,
                r["test_id"],
                r["runner"],
                r["machine"],
                r.get("pool", pool),
                r["image"],
                None,
                r["job_id"],
                r["run_id"],
                r["commit"],
            )
            for number, r in enumerate(records, start=1)
        ]
    )
    return frame


def test_a_new_image_on_two_hosts_that_breaks_five_tests_is_the_image_not_its_runners() -> None:
    # Independent fleet 3, its Linux pool from the evening before a new image reached two of its
    # four hosts (two runners each): the image broke five tests, each failing there a quarter of
    # the time. Two things hid it. With only two hosts, dropping the worse one left the other's
    # excess to pass the bar the scan pays for searching every stretch — paid again on a fixed
    # stretch. And dated from when both hosts failed together, the first host's failures under the
    # image in the hours before counted as that host "already failing". Three runners were blamed
    # instead, and the five tests' failures went to flake scores.
    analysis = analyse(frame_from("narrow_image.csv.gz", "linux-x64"))
    verdicts = [(i["kind"], i["entity"], i["state"]) for i in analysis.incidents]
    assert verdicts == [("image", "ubuntu-22.04-2026.11.27-bad", "suspect")]
    (incident,) = analysis.incidents
    assert incident["statistics"]["spread"] == "excess on 2 of 2 hosts, starting together"
    broken = {
        "tests/config/test_config.py::test_timeout_v2",
        "tests/session/test_session.py::test_merge_slow[py311]",
        "tests/models/test_models.py::test_snapshot_slow",
        "tests/time/test_time.py::test_nested_slow",
        "tests/parser/test_parser.py::test_nested_smoke",
    }
    assert {t["test_id"] for t in incident["tests"][:5]} == broken
    flaky = {t["test_id"] for t in analysis.tests if t["verdict"] == "flaky"}
    assert not flaky & broken, "the image's failures are not flake points"


def test_an_image_breaking_a_few_tests_is_not_healed_by_a_quiet_evening() -> None:
    # Independent fleet 28, its Linux pool from the morning the bad image's failures began: it
    # breaks four tests, so it fails about one execution in forty, and the evening before the data
    # end ran clean for four hours. Twenty clean executions over three jobs resolved it, though at
    # its own rate so clean a run was not unlikely; it was never rolled back.
    analysis = analyse(frame_from("quiet_evening_image.csv.gz", "linux-x64"))
    (image,) = [i for i in analysis.incidents if i["kind"] == "image"]
    assert image["entity"] == "ubuntu-22.04-2026.11.22-bad"
    assert image["state"] == "suspect"
    assert image["end"] is None


def test_a_bad_image_and_a_sick_host_bursting_together_on_a_tiny_fleet_are_no_outage() -> None:
    # Second held-out simulator, fleet 132: three hosts of ephemeral runners, a bad image on about
    # half their jobs since days, and one host short of memory. At 03:45 both hosts that ran failed
    # most runs at once, on the bad image; the only runs off it were one host's fifteen, too few to
    # tell, so nothing asked whether the image explained it, and a fleet outage was called (another
    # at 22:00, where the runs off the image were the sick host's). Names are replaced by codes in
    # their sort order; three days of the fleet's eleven.
    analysis = analyse(frame_from("tiny_eph_image.csv.gz", "gha-linux-x64-eph", ephemeral=True))
    assert analysis.outages == []
    assert [(i["kind"], i["entity"]) for i in analysis.incidents] == [
        ("image", "ubuntu-24.04-20261202.13"),
        ("machine", "gha-linux-x64-eph-host-03"),
    ]


def test_a_regions_network_down_for_ninety_minutes_is_an_outage_of_its_pool_not_a_sick_pool() -> None:
    # Fifth held-out simulator, fleet 506: the iad region's network failed from 15:18 to 16:45 on
    # three of the fleet's five pools. It reached ten hosts, most of them in iad-x64, whose jobs
    # failed about half their tests; the syd pools ran as usual. Too few of the fleet's hosts for a
    # fleet outage, so the iad-x64 pool was called sick for it (and in the whole fleet, two of its
    # hosts). Judged as a fleet of its own, the pool burst at once and came back: an outage of that
    # pool. A day and a half of all five pools, as stored.
    analysis = analyse(frame_from("region_network.csv.gz"))
    outages = analysis.outages
    assert outages and all(o["scope"] == "pool" and o["pools"] == ["iad-x64"] for o in outages)
    assert min(o["start"] for o in outages) <= "2026-12-01T15:30:00Z"
    assert max(o["end"] for o in outages) >= "2026-12-01T16:45:00Z"
    during = [i for i in analysis.incidents if "2026-12-01T14:00" <= i["onset"] <= "2026-12-01T18:00"]
    assert during == []
    # Only the pool's rows are taken out: the syd pools' failures in those hours still count.
    frame = analysis.frame
    by_outage = np.isin(analysis.discount, [analysis.reasons.index(o["id"]) for o in outages])
    assert {frame.name("pool", p) for p in np.unique(frame.cols["pool"][by_outage])} == {"iad-x64"}


def test_a_canary_image_on_some_runners_of_every_host_then_a_sick_host_are_two_causes_not_the_pool() -> None:
    # Fifth held-out simulator, fleet 510: a bad image was canaried to six of syd-x64's fourteen
    # runners, at least one on each of its five hosts, and rolled back a day later; the next day one
    # host's clock went wrong under its three runners. Every host had run the image, so no host off
    # it could show the pool spared, and the jobs off the image failed well beyond usual (the sick
    # host's): the pool was called sick over both. The eight runners that never ran the image failed
    # at a seventh of the image's toll, four of them beyond chance. Four and a half days of syd-x64
    # and the sin-arm pool, as stored.
    analysis = analyse(frame_from("canary_over_hosts.csv.gz"))
    syd = [(i["kind"], i["entity"]) for i in analysis.incidents if i["pool"] == ["syd-x64"]]
    assert syd == [("image", "ubuntu22-ci-58"), ("machine", "syd-bm05")]
    image, host = (i for i in analysis.incidents if i["pool"] == ["syd-x64"])
    assert "2026-11-30T02:00" <= image["onset"] <= "2026-11-30T08:00"
    assert image["end"] is not None and image["end"] <= "2026-12-01T09:00:00Z"
    assert "2026-12-02T05:00" <= host["onset"] <= "2026-12-02T08:00"


def test_two_sick_places_bursting_in_the_same_hour_are_their_incidents_not_an_outage() -> None:
    # Fifth held-out simulator, fleet 505: syd-x64's file server failed its NFS tests for a day, and
    # a bad image failed a third of iad-x64's jobs for days. At 15:00 on the 26th both burst in the
    # same hour, on four hosts, and the fleet outage finder called it an outage: the failures most
    # of those runs would have charged to the two incidents went to an outage instead. Almost all
    # of its failures are the incidents', and the runs no incident holds failed no more than in
    # the hours around. Four days of the two pools and the windows pool, as stored.
    analysis = analyse(frame_from("two_sick_places.csv.gz"))
    assert analysis.outages == []
    kinds = {(i["kind"], i["entity"]) for i in analysis.incidents}
    assert {("image", "ubuntu22-ci-51"), ("pool", "syd-x64")} <= kinds


def test_a_bad_image_on_autoscaled_vms_is_retired_when_its_vms_are_gone_and_the_pool_works_on() -> None:
    # Sixth held-out simulator, fleet 605: a bad image reached three autoscaled VMs of the linux
    # pool, which were torn down with it five hours later; new VMs, with new names, came up on the
    # good image. A rolled-back image was retired only where the hosts that ran it went on with other
    # images, which autoscaled VMs never do: it stayed sick for the six days to the data's end. The
    # linux and gpu pools, from the evening before to three days after (a holiday between).
    analysis = analyse(frame_from("autoscaled_image.csv.gz"))
    (image,) = analysis.incidents
    assert (image["kind"], image["entity"]) == ("image", "ubuntu-22.04-20261110.1-a2")
    assert image["state"] == "resolved"
    assert image["resolution"].startswith("retired: not run since 2026-11-29T04:25")
    assert "none of its 3 hosts has run since" in image["resolution"]


def test_a_bad_image_whose_night_jobs_fail_less_is_not_resolved_while_its_tests_still_fail() -> None:
    # Eighth held-out simulator, fleet 803: a bad image on two arm runners failed its tests beyond
    # their rates for a day and a half, then through the night ran fewer of the tests it breaks.
    # Thirteen failures in 928 runs, where its tests' rates gave eight, was unlikely at the day's
    # rate, so it was resolved at 19:00 while still failing; nine of those thirteen were the same
    # tests the day's stretch failed, which pass elsewhere. All four pools, from noon of the day the
    # image came to the data's end.
    analysis = analyse(frame_from("quiet_night_image.csv.gz"))
    (image,) = [i for i in analysis.incidents if i["kind"] == "image"]
    assert image["entity"] == "ubuntu-arm64-ci-2026.10.2"
    assert image["state"] == "suspect"
    assert image["end"] is None


def test_what_an_open_verdict_broke_failing_after_its_stretch_is_not_charged_to_the_tests() -> None:
    # The same image: its stretch ends at 19:00, and its tests' failures in the night after counted as
    # flake points, two of them enough to call a healthy test flaky. While the verdict is open, what
    # its stretch broke (tests failing there twice or more, beyond twice their rates) and fails there
    # since is the same verdict's, quieter.
    analysis = analyse(frame_from("quiet_night_image.csv.gz"))
    (image,) = [i for i in analysis.incidents if i["kind"] == "image"]
    verdicts = analysis.tests_by_id()
    for test in ("tests/unit/test_http.py::test_http_147", "tests/unit/test_auth.py::test_auth_122"):
        assert verdicts[test]["verdict"] == "healthy", "the image's failures are not flake points"
        assert verdicts[test]["discounted_by"].get(image["id"], 0) >= 3, verdicts[test]


def test_a_bad_image_failing_ten_tests_a_few_times_each_on_three_hosts_is_the_image() -> None:
    # Eighth held-out simulator, fleet 810: a new image reached three of nine arm runners and failed
    # 28 runs of ten tests in a day (a CA bundle missing). A coarse verdict needs most of its hosts
    # beyond chance on their own, judged without the stretch's two most-failing tests where several
    # hosts fail them (two tests a commit broke fail everywhere alike). Those two held 8 of the 28;
    # without them, each host's share was too small to show, and nothing was called. The three
    # pools from the evening before to the afternoon after.
    analysis = analyse(frame_from("broad_image_on_three_hosts.csv.gz"))
    images = [i for i in analysis.incidents if i["kind"] == "image"]
    assert [i["entity"] for i in images] == ["ubuntu-arm64-ci-2026.10.9"]
    assert images[0]["statistics"]["spread"] == "excess on 3 of 3 hosts, starting together"
    runners = {i["entity"] for i in analysis.incidents if i["kind"] == "runner"}
    assert not runners & {"arm-03", "arm-04", "arm-08"}, "the image's hosts are not blamed for it"


def test_a_runner_alone_running_a_flaky_perf_suite_retried_elsewhere_is_not_sick() -> None:
    # Fifth held-out simulator, fleet 506: from its last morning one runner ran the perf suite, seven
    # tests failing about one run in fifteen, each failure retried on another runner of the pool,
    # where the retry passed. Its stretch was left out of its peers as elevated, so the tests' rates
    # came from a few retries each and mostly from the prior: 0.7 %, a tenth of their own. The runner
    # was called suspect and its flaky tests' failures were charged to it. The x64 pool, its last
    # four days.
    analysis = analyse(frame_from("perf_suite_runner.csv.gz"))
    assert {(i["kind"], i["entity"]) for i in analysis.incidents} == {
        ("runner", "iad-x64-019"),
        ("machine", "iad-bm01"),
    }
    verdicts = analysis.tests_by_id()
    for number in (2, 5, 6):
        assert verdicts[f"perf/bench_0{number}.py::test_throughput"]["verdict"] == "flaky"
