"""The test result record: a public format written by CI scripts and `runnerctl import`.

Example::

    {"test_id": "tests/test_io.py::test_read", "outcome": "failed", "time": "2026-09-21T10:00:00Z",
     "duration_s": 1.2, "job_id": "job-17", "run_id": "run-9", "attempt": 1, "message": "...",
     "runner": {"id": "linux-03", "machine": "linux-vm-03", "pool": "linux", "shard": "3"}}

Only `test_id`, `outcome`, `time` and `runner.id` are required; `time` is RFC 3339 or epoch seconds,
from 2000-01-01 to one day ahead of the controller's clock (`common.timeutil.EventTime`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from common.identity import RunnerIdentity
from common.timeutil import EventTime

MAX_MESSAGE_CHARS = 4000


class Outcome(StrEnum):
    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"


FAILING_OUTCOMES = frozenset({Outcome.failed, Outcome.error})


class TestResult(BaseModel):
    """One execution of one test on one runner."""

    __test__ = False  # not a pytest test class
    # Infinity and NaN (and 1e400, which parses as Infinity) are refused, not stored as null or inf.
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    test_id: str = Field(min_length=1, max_length=2000)
    outcome: Outcome
    time: EventTime
    duration_s: float | None = Field(default=None, ge=0)
    job_id: str | None = Field(default=None, max_length=500)
    run_id: str | None = Field(default=None, max_length=500)
    attempt: int | None = Field(default=None, ge=0, le=1_000_000)
    message: str | None = None
    commit: str | None = Field(default=None, max_length=200)
    runner: RunnerIdentity

    @field_validator("time", mode="before")
    @classmethod
    def _naive_is_utc(cls, value: object) -> object:
        # A timestamp without an offset is read as UTC rather than rejected: many JUnit writers omit it.
        if isinstance(value, str) and value and not _has_offset(value):
            return value + "Z"
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @field_validator("message", mode="after")
    @classmethod
    def _bound_message(cls, value: str | None) -> str | None:
        if value is not None and len(value) > MAX_MESSAGE_CHARS:
            return value[:MAX_MESSAGE_CHARS]
        return value


_OFFSET = re.compile(r"(?:[Zz]|[+-]\d{2}:?\d{2})$")


def _has_offset(text: str) -> bool:
    # Epoch seconds given as a string, or a date alone, are left for pydantic to judge.
    if "T" not in text and " " not in text:
        return True
    return _OFFSET.search(text) is not None
