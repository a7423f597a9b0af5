"""The agent report: one round of readings from one runner, numbered for exactly-once delivery."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from common.identity import Name, RunnerIdentity
from common.readings import Reading
from common.timeutil import EventTime


class AgentReport(BaseModel):
    """Deduplicated by (agent_id, boot_id, seq): a resend after a lost acknowledgement stores nothing twice.

    `dropped` counts reports the agent's spool had to discard since its last acknowledged send, so a
    loss is never silent.
    """

    model_config = ConfigDict(extra="ignore")

    agent_id: Name
    boot_id: Name
    # Bounded to fit the columns they are stored in (BIGINT, INTEGER); seq to 2**53 - 1, the largest
    # integer a JSON reader that parses numbers as doubles (and a JSON schema's maximum) holds exactly.
    seq: int = Field(ge=0, le=2**53 - 1)
    observed_at: EventTime
    runner: RunnerIdentity
    readings: list[Reading] = Field(default_factory=list, max_length=32)
    dropped: int = Field(default=0, ge=0, le=2**31 - 1)
    # Reports still waiting in the agent's spool when this one was written: a controller that cannot
    # keep up, or a network that drops, shows here before anything is lost.
    spool_depth: int | None = Field(default=None, ge=0, le=2**31 - 1)
    agent_version: str | None = Field(default=None, max_length=100)


class ReportBatch(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reports: list[AgentReport] = Field(max_length=10_000)
