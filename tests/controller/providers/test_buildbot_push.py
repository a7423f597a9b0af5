"""Buildbot's HttpStatusPush body as a job record: the build dict of buildbot.reporters.utils
(getDetailsForBuilds: `builder`, `buildset`, `properties`, and `steps` with want_steps), its datetimes
encoded as epoch seconds (buildbot.util.httpclientservice encodes with buildbot.util.toJson)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.ingest.jobs import records_of
from controller.providers.base import PayloadInvalid
from controller.providers.buildbot import BuildbotProvider

STEPS = [
    {"stepid": 1, "number": 0, "name": "worker_preparation", "results": 0},
    {"stepid": 2, "number": 1, "name": "git", "results": 2},
    {"stepid": 3, "number": 2, "name": "test", "results": 3},
]
BUILD: dict[str, Any] = {
    "buildid": 41,
    "number": 3,
    "builderid": 1,
    "buildrequestid": 977,
    "workerid": 2,
    "complete": True,
    "results": 2,
    "state_string": "failed git",
    "started_at": 1790000000,
    "complete_at": 1790000006,
    "builder": {"builderid": 1, "name": "tests"},
    "buildset": {"bsid": 12},
    "properties": {"workername": ["w2", "Worker"]},
    "steps": STEPS,
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, ("failure", "git", "failed git")),
        ({"results": 0, "state_string": "build successful", "steps": []}, ("success", None, None)),
        ({"results": 1, "steps": []}, ("success", None, None)),
        ({"results": 4, "state_string": "", "steps": STEPS[:1]}, ("system_failure", None, "exception")),
        ({"results": 5, "state_string": "retry"}, ("system_failure", "git", "retry")),
        ({"results": 6, "state_string": "cancelled", "steps": []}, ("cancelled", None, "cancelled")),
    ],
    ids=["failure", "success", "warnings", "exception", "retry", "cancelled"],
)
def test_a_finished_build_becomes_a_job_record(change: dict[str, Any], expected: tuple[str, ...]) -> None:
    event = BuildbotProvider.pushed_job(BUILD | change)
    (record,) = records_of("buildbot", [event] if event else [])
    assert (record.conclusion.value, record.failed_step, record.failure_reason) == expected
    assert (record.job_id, record.run_id, record.name, record.runner.id, record.runner.provider) == (
        "41",
        "12",
        "tests",
        "w2",
        "buildbot",
    )
    assert record.duration_s == 6.0 and record.finished.isoformat() == "2026-09-21T14:13:26+00:00"


@pytest.mark.parametrize(
    "change",
    [
        {"complete": False, "results": None, "complete_at": None},
        {"results": 3},  # SKIPPED: ran nothing
        {"properties": {}},  # no workername: the formatter was told not to send properties
    ],
    ids=["started", "skipped", "no-worker"],
)
def test_no_record_without_a_finished_build_on_a_named_worker(change: dict[str, Any]) -> None:
    assert BuildbotProvider.pushed_job(BUILD | change) is None


def test_a_time_that_is_not_epoch_seconds_is_refused() -> None:
    with pytest.raises(PayloadInvalid, match="complete_at '2026-09-21' is not epoch seconds"):
        BuildbotProvider.pushed_job(BUILD | {"complete_at": "2026-09-21"})
