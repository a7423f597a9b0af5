"""Who a runner is: the identity every result and every agent report carries."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# Names are bounded, not pattern-checked: a regex per field per record cost a third of ingest time.
# Clients that print names (runnerctl) strip control characters at output.
Name = Annotated[str, Field(min_length=1, max_length=200)]


class RunnerIdentity(BaseModel):
    """A CI runner as the controller knows it.

    Only `id` is required. `machine` is the host (VM or bare metal) the runner runs on; ephemeral
    runners get a fresh `id` per job, so they are judged by machine, image and pool instead.
    """

    # Extra fields are ignored, not refused: CI systems add their own (region, os, arch).
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Name
    name: Name | None = None
    machine: Name | None = None
    pool: Name | None = None
    image: Name | None = None
    shard: Name | None = None
    labels: tuple[str, ...] = Field(default=(), max_length=100)
    provider: Name | None = None
    ephemeral: bool = False

    def effective_machine(self) -> str:
        return self.machine or self.id

    def effective_pool(self) -> str:
        return self.pool or "default"
