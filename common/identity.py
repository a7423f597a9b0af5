"""Who a runner is: the identity every result and every agent report carries."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[^\x00-\x1f]{1,200}$"


class RunnerIdentity(BaseModel):
    """A CI runner as the controller knows it.

    Only `id` is required. `machine` is the host (VM or bare metal) the runner runs on; ephemeral
    runners get a fresh `id` per job, so they are judged by machine, image and pool instead.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=NAME_PATTERN)
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    machine: str | None = Field(default=None, pattern=NAME_PATTERN)
    pool: str | None = Field(default=None, pattern=NAME_PATTERN)
    image: str | None = Field(default=None, pattern=NAME_PATTERN)
    shard: str | None = Field(default=None, pattern=NAME_PATTERN)
    labels: tuple[str, ...] = Field(default=(), max_length=100)
    provider: str | None = Field(default=None, pattern=NAME_PATTERN)
    ephemeral: bool = False

    def effective_machine(self) -> str:
        return self.machine or self.id

    def effective_pool(self) -> str:
        return self.pool or "default"
