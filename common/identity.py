"""Who a runner is: the identity every result and every agent report carries."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# The pool of a runner that names none (a GitHub or GitLab webhook names no pool): one pool of peers.
DEFAULT_POOL = "default"

# Names are bounded, not pattern-checked: a regex per field per record cost a third of ingest time.
# Clients that print names (runnerctl) strip control characters at output.
Name = Annotated[str, Field(min_length=1, max_length=200)]


# What a runner id may not hold, and the pattern the API description shows for it (described, not
# enforced by pydantic: the validator below refuses the same with a message that says why).
_NOT_IN_ID = re.compile(r"[/\x00-\x1f\x7f-\x9f]")
RUNNER_ID_PATTERN = r"^[^/\x00-\x1f\x7f-\x9f]+$"


def _addressable(value: str) -> str:
    # The id is a path segment (GET /v1/runners/{id}): a "/" would make the runner unreachable there,
    # and a control character (a newline, an escape) would forge lines wherever it is printed. One
    # search on one field per record: not the regex on every field the note above rules out.
    found = _NOT_IN_ID.search(value)
    if found is None:
        return value
    if found.group() == "/":
        raise ValueError("must not contain '/': it is a URL path segment (GET /v1/runners/{id})")
    raise ValueError(f"must not contain control characters (found {found.group()!r})")


RunnerId = Annotated[
    Name, AfterValidator(_addressable), Field(json_schema_extra={"pattern": RUNNER_ID_PATTERN})
]


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
        return self.pool or DEFAULT_POOL


class StoredIdentity(RunnerIdentity):
    """A runner as the controller answers about it: ids stored before `/` and control characters were
    refused stay readable (and so cordonable by an operator), rather than failing every listing."""

    id: Name
