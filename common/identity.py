"""Who a runner is: the identity every result and every agent report carries."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# Names are bounded, not pattern-checked: a regex per field per record cost a third of ingest time.
# Clients that print names (runnerctl) strip control characters at output.
Name = Annotated[str, Field(min_length=1, max_length=200)]


def _addressable(value: str) -> str:
    # The id is a path segment (GET /v1/runners/{id}): a "/" would make the runner unreachable there,
    # and a control character (a newline, an escape) would forge lines wherever it is printed. Two
    # string scans at C speed, on one field: not the per-field regex the note above rules out.
    if "/" in value:
        raise ValueError("must not contain '/': it is a URL path segment (GET /v1/runners/{id})")
    if not value.isprintable():
        raise ValueError("must not contain control or other non-printable characters")
    return value


RunnerId = Annotated[Name, AfterValidator(_addressable)]


class RunnerIdentity(BaseModel):
    """A CI runner as the controller knows it.

    Only `id` is required. `machine` is the host (VM or bare metal) the runner runs on; ephemeral
    runners get a fresh `id` per job, so they are judged by machine, image and pool instead.
    """

    # Extra fields are ignored, not refused: CI systems add their own (region, os, arch).
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: RunnerId
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


class StoredIdentity(RunnerIdentity):
    """A runner as the controller answers about it: ids stored before `/` and control characters were
    refused stay readable (and so cordonable by an operator), rather than failing every listing."""

    id: Name
