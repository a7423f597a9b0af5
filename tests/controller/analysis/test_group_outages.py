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
from tests.controller.analysis.test_detection import _fixture_fleet, _service_fleet


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
