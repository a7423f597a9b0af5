"""The job-health term (controller/analysis/jobs.py): black holes found within three jobs, flaky
fleets and cancelled jobs left alone, the provider's infrastructure failures counted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from common.timeutil import to_ms
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import Analysis, analyse, latest_shared_ms
from controller.analysis.jobs import find_episodes, job_table
from tests.controller.analysis.jobfleet import build

SEEDS = [1, 2, 3, 4, 5]
BH = "linux-bh"


def _ms(text: str) -> int:
    return to_ms(datetime.fromisoformat(text.replace("Z", "+00:00")))


def _on(analysis: Analysis, entity: str) -> list[dict[str, Any]]:
    return [i for i in analysis.incidents if i["entity"] == entity]


@pytest.mark.parametrize("seed", SEEDS)
def test_black_hole_is_named_within_three_failed_jobs(seed: int) -> None:
    fleet = build(seed, black_holes=(BH,))
    analysis = analyse(fleet.frame())
    [incident] = _on(analysis, BH)
    planted = fleet.planted[BH]
    assert (incident["kind"], incident["state"], incident["dimension"]) == ("runner", "sick", "jobs")
    assert _ms(incident["onset"]) == planted[0]
    assert _ms(incident["decided_at"]) <= planted[2]
    assert analysis.health[BH]["health"] == "sick"
    assert [i["entity"] for i in analysis.incidents] == [BH]
    # Remediation reruns what it failed; explain shows the job evidence.
    assert incident["affected_jobs"][0]["first_failure"] == incident["onset"]
    evidence = incident["jobs"]
    assert evidence["early_deaths"] >= 2 and evidence["without_tests"] == evidence["early_deaths"]
    assert evidence["peer_rate"] < 0.05 and evidence["first_jobs"][0]["tests"] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_black_hole_without_a_test_count_is_told_by_its_missing_results(seed: int) -> None:
    fleet = build(seed, black_holes=(BH,), bad_tests=None)
    [incident] = _on(analyse(fleet.frame()), BH)
    assert _ms(incident["decided_at"]) <= fleet.planted[BH][2]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rate", [0.3, 0.4])
def test_a_fleet_failing_a_third_of_its_jobs_from_flaky_tests_is_left_alone(seed: int, rate: float) -> None:
    analysis = analyse(build(seed, runners=10, flaky_job_rate=rate, hours=24).frame())
    assert not [i for i in analysis.incidents if i["kind"] in ("runner", "machine")]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_where_no_job_reports_tests_its_short_life_tells(seed: int) -> None:
    fleet = build(seed, black_holes=(BH,))
    fleet.results = []
    fleet.jobs = [(*job[:2], None, *job[3:]) for job in fleet.jobs]
    [incident] = _on(analyse(fleet.frame()), BH)
    assert (
        incident["jobs"]["without_tests"] == 0
        and incident["jobs"]["short"] == incident["jobs"]["early_deaths"]
    )
    assert _ms(incident["decided_at"]) <= fleet.planted[BH][2]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_cancelled_jobs_say_nothing(seed: int) -> None:
    fleet = build(seed, black_holes=(BH,), bad_conclusion="cancelled")
    assert not _on(analyse(fleet.frame()), BH)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_the_providers_infrastructure_failure_counts_even_after_tests_ran(seed: int) -> None:
    fleet = build(
        seed, black_holes=(BH,), bad_conclusion="system_failure", bad_duration_s=(500, 700), bad_tests=10
    )
    [incident] = _on(analyse(fleet.frame()), BH)
    assert incident["jobs"]["system_failures"] == incident["jobs"]["early_deaths"]
    assert _ms(incident["decided_at"]) <= fleet.planted[BH][2]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_timeouts_are_weaker_evidence_than_infrastructure_failures(seed: int) -> None:
    def decided(conclusion: str) -> int:
        fleet = build(
            seed, black_holes=(BH,), bad_conclusion=conclusion, bad_duration_s=(500, 700), bad_tests=10
        )
        [incident] = _on(analyse(fleet.frame()), BH)
        planted = fleet.planted[BH]
        return planted.index(_ms(incident["decided_at"]))

    assert decided("timed_out") > decided("system_failure")


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_mended_black_hole_is_resolved_once_its_jobs_reach_their_tests(seed: int) -> None:
    fleet = build(seed, black_holes=(BH,), bad_until_s=6 * 3600)
    analysis = analyse(fleet.frame())
    [incident] = _on(analysis, BH)
    assert incident["state"] == "resolved"
    assert _ms(incident["end"]) == fleet.planted[BH][-1]
    assert BH not in analysis.health


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_job_with_a_record_and_its_tests_is_not_also_a_test(seed: int) -> None:
    # Every job here brought its tests' results or died early: its own result would count twice.
    fleet = build(seed, black_holes=(BH,), job_results=True)
    tests = {t["test_id"]: t for t in analyse(fleet.frame()).tests}
    assert not [t for t in tests if t.startswith("job:")]
    # Without records, a provider's job results stay what they were: tests named after the job.
    fleet.jobs = []
    assert [t for t in {t["test_id"] for t in analyse(fleet.frame()).tests} if t.startswith("job:")]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_the_screen_does_not_take_a_jobs_own_result_for_its_tests(seed: int) -> None:
    """The service's screen judges jobs over the frame as loaded, `job:<name>` results and all (webhook
    ingest stores one per job). A black hole failing without tests, not quickly, must be found there
    as in the full pass: its own job result is no test run."""
    fleet = build(seed, black_holes=(BH,), job_results=True, bad_tests=None, bad_duration_s=(400.0, 700.0))
    frame, config = fleet.frame(), AnalysisConfig()
    as_of = latest_shared_ms(frame)
    table = job_table(frame, as_of, config)
    assert [e.entity for e in find_episodes(table, as_of, config)] == [BH]
    assert [i["entity"] for i in analyse(frame).incidents] == [BH]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_an_ephemeral_black_hole_is_its_host(seed: int) -> None:
    fleet = build(seed, black_holes=(BH,), ephemeral=True)
    analysis = analyse(fleet.frame())
    assert [(i["kind"], i["entity"], i["state"]) for i in analysis.incidents] == [("machine", BH, "sick")]
    assert _ms(analysis.incidents[0]["decided_at"]) <= fleet.planted[BH][2]


def test_a_pool_of_one_has_no_peers_to_be_judged_against() -> None:
    fleet = build(1, runners=0, black_holes=(BH,))
    assert not _on(analyse(fleet.frame()), BH)


def test_a_stricter_sick_rate_needs_more_evidence() -> None:
    fleet = build(2, black_holes=(BH,))
    loose = analyse(fleet.frame())
    strict = analyse(fleet.frame(), config=AnalysisConfig(jobs_min_early_deaths=5))
    assert _ms(_on(strict, BH)[0]["decided_at"]) > _ms(_on(loose, BH)[0]["decided_at"])
