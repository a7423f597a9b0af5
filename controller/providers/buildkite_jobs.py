"""Buildkite job objects (the REST Job, which `job.*` webhooks carry) read as our job states and as a
job record's conclusion. From buildkite/docs: pages/apis/rest_api/jobs.md (states, `exit_status`,
`signal_reason`), the GraphQL enum `JobEventSignalReason`, and pages/agent/lifecycle.md (exit codes).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from common.jobs import JobConclusion
from controller.providers.base import JobState, PayloadInvalid

FAILED_STATES = ("failed", "timed_out")
PENDING_STATES = (
    "pending",
    "waiting",
    "waiting_failed",
    "blocked",
    "unblocked",
    "limiting",
    "limited",
    "scheduled",
    "assigned",
    "accepted",
    "reserved",
    "running",
    "canceling",
    "timing_out",
)
# signal_reason values (REST lower case of GraphQL's JobEventSignalReason) that blame the agent or its
# host, not the job: stopped, refused or unable to start the job.
SYSTEM_SIGNAL_REASONS = frozenset(
    {"agent_stop", "agent_refused", "agent_incompatible", "process_run_error", "stack_error"}
)
# Exit status -1: "Buildkite lost contact with the agent or it stopped reporting to us" (agent lifecycle).
LOST_AGENT_EXIT = -1


def job_state(job: Mapping[str, Any]) -> JobState:
    """A Buildkite job object's state as ours; a soft failure still failed on its agent."""
    state = job.get("state")
    exit_status = job.get("exit_status")
    if state in PENDING_STATES:
        return "running" if state in ("running", "canceling", "timing_out") else "queued"
    if state in FAILED_STATES or (job.get("soft_failed") and exit_status not in (0, None)):
        return "failed"
    if state == "passed":
        return "passed"
    if state == "finished":  # the raw state; passed/failed are derived from the exit status
        return "passed" if exit_status == 0 else "failed"
    return "cancelled"  # canceled, skipped, broken, expired: nothing ran to a verdict


def job_conclusion(job: Mapping[str, Any]) -> tuple[JobConclusion | None, str | None]:
    """A finished job's conclusion for its job record, and the reason Buildkite gave: the agent lost
    (exit status -1) or a signal reason that blames the agent is a system failure, not the script's."""
    state, exit_status, signal_reason = job.get("state"), job.get("exit_status"), job.get("signal_reason")
    said = str(signal_reason) if isinstance(signal_reason, str) and signal_reason else None
    if exit_status == LOST_AGENT_EXIT and state not in ("canceled", "skipped"):
        return JobConclusion.system_failure, said or "agent_lost"
    if said in SYSTEM_SIGNAL_REASONS:
        return JobConclusion.system_failure, said
    if state == "timed_out":
        return JobConclusion.timed_out, said
    if state == "canceled":
        return JobConclusion.cancelled, said
    verdict = job_state(job)
    if verdict == "passed":
        return JobConclusion.success, None
    if verdict == "failed":
        return JobConclusion.failure, said or (None if exit_status is None else f"exit_status {exit_status}")
    return None, None  # not finished, or never ran (skipped, broken, expired)


def timestamp(event: str, key: str, value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError) as error:
        raise PayloadInvalid(f"{event}: job.{key} {value!r} is not a timestamp") from error


def queue_of(job: Mapping[str, Any]) -> str | None:
    for rule in job.get("agent_query_rules") or []:
        key, _, value = str(rule).partition("=")
        if key == "queue" and value:
            return value
    return None
