"""What every check's configuration shares: whether it runs, how often, and how long it may take."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CheckConfig(BaseModel):
    """Frozen, so a running check can never see its configuration change under it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    interval_s: float = Field(default=30.0, gt=0)
    jitter_s: float = Field(default=2.0, ge=0)
    timeout_s: float = Field(default=20.0, gt=0)
