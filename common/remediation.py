"""Wire models of the remediation API: cordon, uncordon, drain and the answer to each."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CordonRequest(_Body):
    reason: str = Field(default="", max_length=500)
    expires_in_s: float | None = Field(default=None, gt=0, description="uncordon by itself after this long")
    dry_run: bool = False


class UncordonRequest(_Body):
    dry_run: bool = False
    force: bool = Field(default=False, description="uncordon a runner the controller still judges sick")


class DrainRequest(_Body):
    reason: str = Field(default="", max_length=500)
    rerun: bool = Field(default=True, description="rerun the jobs that failed on it during its incident")
    dry_run: bool = False


class ActionAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    runner: str
    status: str = Field(description="cordoned, already cordoned, uncordoned, already uncordoned, ...")
    dry_run: bool = False
    detail: str = ""
    notes: list[str] = Field(default_factory=list)
    cordon: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None
