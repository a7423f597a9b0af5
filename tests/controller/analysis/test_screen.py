"""Screening a batch of new rows against the last full pass (controller/analysis/screen.py).

Each case analyses a simulated fleet's history up to some hour in full, then screens the rows of the
next hours only: what the screen raises must be the place that fell sick in them, named as the full
pass would name it, and nothing where nothing new happened.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest

from common.timeutil import to_ms
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import analyse
from controller.analysis.frame import Frame
from controller.analysis.screen import Batch, Model, NewReadings, Screen, build_model, screen
from tests.controller.analysis.harness import frame_of
from tests.sim import Fleet, scenarios, simulate
from tests.sim.scenario import Scenario

CONFIG = AnalysisConfig()


@functools.cache
def _fleet(scenario_name: str, seed: int) -> tuple[Scenario, Fleet]:
    scenario = getattr(scenarios, scenario_name)()
    return scenario, simulate(scenario, seed=seed)


@functools.cache
def _prepared(scenario_name: str, seed: int, from_h: float, to_h: float) -> tuple[Model, Frame, list[Any]]:
    """The model of a full pass over everything before from_h, the rows and reports of [from_h, to_h),
    and that pass's open incidents."""
    scenario, fleet = _fleet(scenario_name, seed)
    start = to_ms(scenario.start)

    def hour(record: dict[str, Any], key: str = "time") -> float:
        return (to_ms(datetime.fromisoformat(str(record[key]))) - start) / 3_600_000

    history = replace(
        fleet,
        results=[r for r in fleet.results if hour(r) < from_h],
        reports=[r for r in fleet.reports if hour(r, "observed_at") < from_h],
    )
    batch = replace(
        fleet,
        results=[r for r in fleet.results if from_h <= hour(r) < to_h],
        reports=[r for r in fleet.reports if from_h <= hour(r, "observed_at") < to_h],
    )
    analysis = analyse(frame_of(history), config=CONFIG)
    opened = [(i["kind"], i["entity"]) for i in analysis.incidents if i["state"] != "resolved"]
    return build_model(analysis, CONFIG), frame_of(batch), opened


def _screened(
    scenario_name: str, seed: int, from_h: float, to_h: float, readings: bool = False
) -> tuple[Screen, list[Any]]:
    """The screen of the rows in [from_h, to_h) (and, with `readings`, of the reports then) against a
    full pass over everything before from_h, and that pass's open incidents."""
    model, new, opened = _prepared(scenario_name, seed, from_h, to_h)
    return screen(model, Batch.of(new, 0), CONFIG, NewReadings.of(new, 0) if readings else None), opened


def _named(found: Screen) -> list[tuple[str, str]]:
    return [(s["kind"], s["entity"]) for s in found.suspects]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_runner_whose_disk_filled_in_the_batch_is_raised_and_nothing_else(seed: int) -> None:
    found, opened = _screened("seed_story", seed, 42, 48)
    assert opened == []  # the history before its disk filled holds nothing
    assert _named(found) == [("runner", "linux-03")]
    suspect = found.suspects[0]
    assert suspect["state"] == "provisional"
    assert suspect["failures"] >= 10 * suspect["expected"] and suspect["distinct_tests"] >= 10
    assert suspect["p_value"] < 1e-6
    assert found.outages == [] and found.raised


@pytest.mark.parametrize("seed", [1, 2])
def test_a_quiet_fleet_raises_nothing(seed: int) -> None:
    found, _ = _screened("quiet_fleet", seed, 36, 48)
    assert found.rows > 10_000
    assert not found.raised


def test_a_bad_image_is_named_not_the_runners_built_from_it() -> None:
    found, _ = _screened("bad_rollout", 1, 30, 36)
    assert _named(found) == [("image", "ubuntu-22.04-20260915")]
    assert found.outages == []


def test_a_sick_host_under_ephemeral_runners_is_named_by_its_host() -> None:
    found, _ = _screened("ephemeral_host", 1, 28, 34)
    assert _named(found) == [("machine", "k8s-host-03")]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_an_outage_in_the_batch_is_raised_as_one_and_blames_no_place(seed: int) -> None:
    found, _ = _screened("kitchen_sink", seed, 25, 27)  # the fleet-wide outage begins at hour 26
    assert found.outages, "the 40-minute outage across the pools was not raised"
    assert all("2026-09-22T01:50" <= o["start"] < "2026-09-22T02:40" for o in found.outages)
    assert found.suspects == []


def test_places_with_an_open_incident_are_not_raised_again() -> None:
    found, opened = _screened("kitchen_sink", 1, 54, 58)
    assert ("runner", "linux-03") in opened and ("machine", "k8s-host-02") in opened
    # mac-vm-02's disk fills at hour 55: the only place that fell sick in these hours.
    assert _named(found) == [("machine", "mac-vm-02")]


def test_a_runner_whose_clock_came_back_shows_recovery_and_the_sick_ones_do_not() -> None:
    # linux-11's clock is skewed from hour 50 to 62; at 62 seven other places are still sick.
    with_readings, opened = _screened("kitchen_sink", 1, 62, 63.5, readings=True)
    assert ("runner", "linux-11") in opened and len(opened) >= 6
    (sign,) = with_readings.recovering
    assert (sign["kind"], sign["entity"]) == ("runner", "linux-11")
    assert sign["sign"].startswith("a healthy clock reading at 2026-09-23T14:")
    assert with_readings.raised
    # Its results alone say so too: clean jobs since its last failure.
    (sign,) = _screened("kitchen_sink", 1, 62, 63.5)[0].recovering
    assert (sign["entity"], sign["sign"].endswith("jobs with no failure since its last one")) == (
        "linux-11",
        True,
    )


def test_a_runner_still_failing_shows_no_recovery() -> None:
    found, opened = _screened("seed_story", 1, 45, 46, readings=True)
    assert opened == [("runner", "linux-03")]
    assert found.recovering == [] and not found.raised
