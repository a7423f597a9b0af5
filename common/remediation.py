"""Wire models of the remediation API: cordon, uncordon, drain and the answer to each."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The database cannot store NUL in text (PostgreSQL refuses it).
NO_NUL = r"^[^\x00]*$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CordonRequest(_Body):
    reason: str = Field(default="", max_length=500, pattern=NO_NUL)
    # At most ten years: the expiry must stay a time the controller can store and print.
    expires_in_s: float | None = Field(
        default=None, gt=0, le=10 * 365 * 86400, description="uncordon by itself after this long"
    )
    dry_run: bool = False


class UncordonRequest(_Body):
    dry_run: bool = False
    force: bool = Field(default=False, description="uncordon a runner the controller still judges sick")


class DrainRequest(_Body):
    reason: str = Field(default="", max_length=500, pattern=NO_NUL)
    rerun: bool = Field(default=True, description="rerun the jobs that failed on it during its incident")
    dry_run: bool = False
    ignore_budget: bool = Field(
        default=False, description="cordon it even where the pool's disruption budget is spent"
    )


class ActionAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    runner: str
    status: str = Field(description="cordoned, already cordoned, uncordoned, already uncordoned, ...")
    dry_run: bool = False
    detail: str = ""
    notes: list[str] = Field(default_factory=list)
    cordon: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None


class NodeCordonRequest(_Body):
    reason: str = Field(default="", max_length=500, pattern=NO_NUL)
    dry_run: bool = False


class NodeUncordonRequest(_Body):
    dry_run: bool = False
    force: bool = Field(
        default=False,
        description="uncordon a node the controller still judges sick, or one someone else cordoned",
    )


class NodeActionAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    node: str
    pool: str
    status: str = Field(description="cordoned, already cordoned, uncordoned, already uncordoned")
    dry_run: bool = False
    detail: str = ""
    calls: list[str] = Field(
        default_factory=list, description="a dry run: each Kubernetes API write it would send (none sent)"
    )
    notes: list[str] = Field(default_factory=list, description="pods deleted or left to finish, reruns")
    budget: dict[str, Any] | None = None
