"""What a group of tests shares going down for a spell is an outage of theirs; a fixture that goes
down job by job, day after day, is none."""

from __future__ import annotations

import numpy as np
import pytest

from common.timeutil import iso
from controller.analysis.cofailing import find_groups
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import Frame
from controller.analysis.group_outages import find_group_outages, group_outage_rows
from tests.controller.analysis.test_detection import _fixture_fleet, _row, _service_fleet

START = 1_796_284_800_000  # 2026-12-03T08:00:00Z


def _judged(frame: Frame) -> tuple[Frame, list[tuple[str, str, list[str]]]]:
    frame = frame.canonical()
    rows = np.ones(frame.size, bool)
    groups = find_groups(frame, rows, AnalysisConfig())
    found = find_group_outages(frame, rows, groups, AnalysisConfig())
    named = []
    for outage in found:
        taken = group_outage_rows(frame, groups, outage)
        tests = sorted({frame.name("test", int(t)) or "?" for t in frame.cols["test"][taken]})
        named.append((iso(outage.start_ms), iso(outage.end_ms), tests))
    return frame, named


def test_a_service_down_for_forty_minutes_is_an_outage_of_its_tests() -> None:
    _, named = _judged(_service_fleet(1))
    service = [f"tests/test_shard0.py::test_{i:02d}" for i in range(6)]
    # Down from 22:40 to 23:20: the hours it fell in, whole.
    assert named == [("2026-12-04T22:00:00Z", "2026-12-05T00:00:00Z", service)]


def test_a_fixture_down_in_one_job_in_twenty_five_every_day_is_no_outage() -> None:
    _, named = _judged(_fixture_fleet(1))
    assert named == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_sick_pool_failing_the_groups_tests_among_many_others_is_no_outage_of_the_group(seed: int) -> None:
    # From hour 60 all six linux runners fail half of fifteen tests, the fixture's five among them:
    # in many hours the group failed together on four hosts or more, far beyond its usual. Those jobs
    # failed ten other tests too, which a service's outage does not do; before, each such hour was
    # an outage of the group's, and its runs were taken from the pool's cluster.
    _, named = _judged(_fixture_fleet(seed, sick=tuple(f"linux-{k}" for k in range(6))))
    assert named == []


def _broken_pair_fleet(seed: int) -> Frame:
    """Twelve runners over three days, a job every twenty minutes each running the same twenty tests.
    Tests 00 and 01 share a fixture that is down in one job in forty (both then fail), and from hour
    62 a commit breaks both: they fail every run to the end."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[object, ...]] = []
    job = 0
    for minute in range(0, 72 * 60, 20):
        for k in range(12):
            job += 1
            place = (f"linux-{k}", f"linux-vm-{k}", "linux", "ubuntu", False)
            down = rng.random() < 0.025
            for i in range(20):
                p = 1.0 if i < 2 and (down or minute >= 62 * 60) else 0.002
                failed = bool(rng.random() < p)
                at = START + minute * 60_000 + k * 7_000 + i * 1000
                rows.append(
                    _row(
                        len(rows) + 1,
                        at,
                        failed,
                        f"tests/test_a.py::test_{i:02d}",
                        place,
                        job,
                        f"run-{minute}",
                        f"c{minute:05d}",
                    )
                )
    frame = Frame()
    frame.append_results(rows)
    return frame


@pytest.mark.parametrize("seed", [1, 2])
def test_a_group_broken_by_a_commit_to_the_end_is_no_outage(seed: int) -> None:
    # From hour 62 the two tests fail together in every job on every host: far beyond the one job in
    # forty they usually share. Ten hours to the end is a broken commit, judged by the flake scores,
    # not an outage that takes their failures away.
    _, named = _judged(_broken_pair_fleet(seed))
    assert named == []
