"""CI jobs as providers report them (webhooks, polling) turned into what the controller stores.

`results_of`: a finished job that ran on a runner becomes one result named `job:<name>` — the job-level
signal a provider gives when no JUnit report is uploaded — unless the provider brought the job's own
test results, which are stored instead. Cancelled jobs say nothing about the runner and are not stored.

`records_of`: the same finished jobs as job records (common/jobs.py), cancelled ones included, with the
conclusion, times, failed step and reason the provider gave.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from common.jobs import JobRecord
from common.results import Outcome, TestResult
from controller.providers.base import JobEvent, PayloadInvalid

JOB_TEST_PREFIX = "job:"
_OUTCOMES = {"passed": Outcome.passed, "failed": Outcome.failed}


def results_of(provider: str, events: Iterable[JobEvent]) -> list[TestResult]:
    results: list[TestResult] = []
    for event in events:
        if event.runner is None or event.state not in _OUTCOMES:
            continue
        if event.tests:
            results.extend(event.tests)
            continue
        runner = (
            event.runner if event.runner.provider else event.runner.model_copy(update={"provider": provider})
        )
        try:
            results.append(
                TestResult(
                    test_id=JOB_TEST_PREFIX + event.name,
                    outcome=_OUTCOMES[event.state],
                    time=event.time,
                    job_id=event.job.id,
                    run_id=event.job.run_id,
                    attempt=event.attempt,
                    message=f"{provider} job {event.job.id} {event.state}",
                    runner=runner,
                )
            )
        except ValidationError as error:
            # The same bounds as a result posted by hand, named as the provider's job has them.
            first = error.errors()[0]
            field = _JOB_FIELDS.get(str(first["loc"][0]), ".".join(str(part) for part in first["loc"]))
            raise PayloadInvalid(f"job {event.job.id[:200]!r}: {field}: {first['msg']}") from error
    return results


def records_of(provider: str, events: Iterable[JobEvent]) -> list[JobRecord]:
    records: list[JobRecord] = []
    for event in events:
        if event.runner is None or event.conclusion is None:
            continue
        runner = (
            event.runner if event.runner.provider else event.runner.model_copy(update={"provider": provider})
        )
        started = event.started
        if started is not None and started > event.time:
            # Two clocks of the provider disagreeing must not lose the job (and a 4xx makes GitLab
            # disable the webhook for good): the duration is unknown instead.
            started = None
        try:
            records.append(
                JobRecord(
                    job_id=event.job.id,
                    run_id=event.job.run_id,
                    attempt=event.attempt,
                    name=event.name,
                    started=started,
                    finished=event.time,
                    conclusion=event.conclusion,
                    # Free text of the provider's: shortened, not refused, like a message.
                    failed_step=_cut(event.failed_step, 500),
                    failure_reason=_cut(event.failure_reason, 200),
                    tests=event.test_count,
                    runner=runner,
                )
            )
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "job"
            raise PayloadInvalid(
                f"job {event.job.id[:200]!r}: job record: {field}: {first['msg']}"
            ) from error
    return records


def _cut(text: str | None, limit: int) -> str | None:
    return None if text is None else text[:limit]


# What each field of the job's result record is called on the job.
_JOB_FIELDS = {
    "test_id": "name (stored as test_id 'job:<name>', at most 2000 characters)",
    "job_id": "job id (with its repository or project)",
    "run_id": "run id (with its repository or project)",
}
