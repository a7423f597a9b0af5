"""Typed health readings, one per agent check.

A reading says what the check saw (raw numbers, so the controller can apply its own thresholds) and
the agent's own condition for it: `ok`, `problem` or `unknown` with a CamelCase reason. `unknown` is
never "sick": it means the check could not look.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator


class Status(StrEnum):
    ok = "ok"
    problem = "problem"
    unknown = "unknown"


# Unknown fields are ignored so that a newer agent can talk to an older controller. Infinity and NaN
# are refused: JSON cannot carry them back out (they were stored as null), and no check measures them.
_WIRE = ConfigDict(extra="ignore", allow_inf_nan=False)


class _Reading(BaseModel):
    model_config = _WIRE

    status: Status = Status.ok
    reason: str | None = Field(default=None, max_length=100)
    message: str | None = Field(default=None, max_length=2000)


class DiskPath(BaseModel):
    model_config = _WIRE

    path: str
    mount_point: str | None = None
    device: str | None = None
    total_bytes: int | None = Field(default=None, ge=0)
    free_bytes: int | None = Field(default=None, ge=0)
    free_ratio: float | None = Field(default=None, ge=0, le=1)
    inodes_total: int | None = Field(default=None, ge=0)
    inodes_free: int | None = Field(default=None, ge=0)
    inodes_free_ratio: float | None = Field(default=None, ge=0, le=1)
    read_only: bool | None = None
    write_probe_ok: bool | None = None


class DiskReading(_Reading):
    check: Literal["disk"] = "disk"
    paths: list[DiskPath] = Field(default_factory=list, max_length=64)


class MemoryReading(_Reading):
    check: Literal["memory"] = "memory"
    total_bytes: int | None = Field(default=None, ge=0)
    available_bytes: int | None = Field(default=None, ge=0)
    available_ratio: float | None = Field(default=None, ge=0, le=1)
    swap_used_bytes: int | None = Field(default=None, ge=0)
    psi_some_avg10: float | None = Field(default=None, ge=0)
    psi_some_avg60: float | None = Field(default=None, ge=0)
    psi_full_avg10: float | None = Field(default=None, ge=0)
    psi_full_avg60: float | None = Field(default=None, ge=0)
    oom_kills: int | None = Field(default=None, ge=0, description="OOM kills since the previous reading")


class NtpServerReading(BaseModel):
    model_config = _WIRE

    server: str
    offset_s: float | None = None
    delay_s: float | None = None
    stratum: int | None = None
    error: str | None = None


class ClockReading(_Reading):
    check: Literal["clock"] = "clock"
    offset_s: float | None = Field(default=None, description="median offset over the servers that answered")
    servers: list[NtpServerReading] = Field(default_factory=list, max_length=32)


class CacheDigest(BaseModel):
    model_config = _WIRE

    key: str
    path: str | None = None
    digest: str | None = None
    files: int | None = Field(default=None, ge=0)
    bytes: int | None = Field(default=None, ge=0)
    full_rehash: bool | None = None


class CacheReading(_Reading):
    check: Literal["cache"] = "cache"
    caches: list[CacheDigest] = Field(default_factory=list, max_length=64)


class OtherReading(_Reading):
    """A check this controller does not know yet: stored as sent, never used as evidence."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    check: str = Field(min_length=1, max_length=40)

    @model_validator(mode="after")
    def _finite_extras(self) -> OtherReading:
        # Extra fields are not typed, so allow_inf_nan does not reach them; they are stored as JSON.
        for key, value in (self.model_extra or {}).items():
            if not _finite(value):
                raise ValueError(f"{key}: Infinity and NaN cannot be stored; send a finite number or null")
        return self


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    return True


_KNOWN = frozenset({"disk", "memory", "clock", "cache"})


def _check_of(value: Any) -> str:
    check = value.get("check") if isinstance(value, dict) else getattr(value, "check", None)
    # Anything but a known name, an unhashable value included, goes to OtherReading to be judged there.
    return check if isinstance(check, str) and check in _KNOWN else "other"


Reading = Annotated[
    Annotated[DiskReading, Tag("disk")]
    | Annotated[MemoryReading, Tag("memory")]
    | Annotated[ClockReading, Tag("clock")]
    | Annotated[CacheReading, Tag("cache")]
    | Annotated[OtherReading, Tag("other")],
    Discriminator(_check_of),
]
