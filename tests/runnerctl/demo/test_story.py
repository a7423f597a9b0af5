"""The demo's story: the same every time, and the twelve-failures story it promises."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from common.reports import AgentReport
from common.results import TestResult
from runnerctl.demo import story
from runnerctl.demo.baseline import SYNTHETIC

END = datetime(2026, 9, 21, 12, 0, tzinfo=UTC)
HEALTHY: list[dict[str, Any]] = list(SYNTHETIC.values())


def test_the_same_story_every_time() -> None:
    first, second = story.tell(END, HEALTHY), story.tell(END, HEALTHY)
    assert first == second
    assert list(first.results()) == list(second.results())


def test_records_are_in_the_public_wire_formats() -> None:
    told = story.tell(END, HEALTHY)
    results = [TestResult.model_validate(r) for r in told.results()]
    reports = [AgentReport.model_validate(r) for r in told.reports]
    assert len(results) == len(told.builds) * len(story.TESTS)
    assert {r.runner.id for r in results} == {f"linux-0{k}" for k in range(1, 7)}
    assert all(told.start <= r.time <= END for r in results)
    assert all(told.start <= r.observed_at <= END for r in reports)


def test_the_sick_runner_fails_twelve_disk_writing_tests_after_its_disk_fills() -> None:
    told = story.tell(END, HEALTHY)
    sick = [b for b in told.builds if b.runner == story.SICK]
    disk_failures = [
        (b.started, t) for b in sick for t, message in b.failures if "No space left on device" in message
    ]
    assert {t for _, t in disk_failures} == set(story.VICTIMS) and len(story.VICTIMS) == 12
    assert min(at for at, _ in disk_failures) > told.disk_fills_at
    for build in told.builds:
        if build.runner != story.SICK:
            assert {t for t, _ in build.failures} <= {t for t, _ in story.FLAKY}


def test_the_sick_runners_own_readings_say_its_disk_is_full() -> None:
    told = story.tell(END, HEALTHY)

    def disk(report: dict[str, Any]) -> dict[str, Any]:
        reading: dict[str, Any] = next(r for r in report["readings"] if r["check"] == "disk")
        return reading

    sick = [r for r in told.reports if r["runner"]["id"] == story.SICK]
    last = disk(sick[-1])
    assert last["status"] == "problem" and last["reason"] == "DiskFull"
    assert last["paths"][0]["free_ratio"] < 0.01
    assert disk(sick[0])["status"] == "ok"
    healthy = [disk(r) for r in told.reports if r["runner"]["id"] != story.SICK]
    assert all(d["status"] == "ok" and d["paths"][0]["free_ratio"] > 0.3 for d in healthy)


def test_flaky_tests_fail_and_pass_on_the_same_commit_on_several_runners() -> None:
    told = story.tell(END, HEALTHY)
    for test_id, _p in story.FLAKY:
        failed = [b for b in told.builds if test_id in dict(b.failures)]
        assert len({b.runner for b in failed}) >= 3
        commits = {b.commit for b in failed}
        assert any(b.commit in commits and b.passed for b in told.builds)


def test_history_is_short_enough_that_reruns_keep_the_analysis_bins() -> None:
    # The analysis bins a history under 12 h in 15 minutes; the reruns land minutes after the end.
    assert story.HISTORY + timedelta(minutes=30) < timedelta(hours=12)
