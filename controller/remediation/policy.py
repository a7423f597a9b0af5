"""What the controller may do, per pool: the mode, the disruption budget and the storm guard.

Pure functions of counts, so every refusal can be explained with the numbers that caused it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from common.identity import DEFAULT_POOL

Mode = Literal["observe", "approve", "auto"]


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Mode = "observe"
    # The most restrictive of the count and the share wins; at least one is always allowed.
    budget_count: int = Field(default=10, ge=1, description="controller cordons per pool at once")
    budget_ratio: float = Field(default=0.10, gt=0, le=1, description="share of a pool cordoned at once")
    min_active: int = Field(default=1, ge=1, description="a pool never drops below this many in rotation")
    max_reruns_per_job: int = Field(default=1, ge=0)
    recovery_dwell_s: float = Field(default=1800, ge=0, description="healthy this long before uncordon")
    auto_uncordon: bool = Field(
        default=False, description="in auto mode, uncordon on probation after the dwell without an operator"
    )
    # Probation (probation.py): the runner's next jobs are the probe job most providers cannot pin.
    probe_jobs: int = Field(default=2, ge=1, description="jobs that must pass on it to end its probation")
    probe_fail_tests: int = Field(
        default=3, ge=1, description="distinct failed tests in one probe job that re-cordon it (breadth)"
    )
    probe_timeout_s: float = Field(
        default=3600, gt=0, description="a probation that sees too few jobs this long ends idle"
    )


def policy_for(pool: str | None, default_mode: str, overrides: dict[str, dict[str, Any]]) -> Policy:
    # A runner stored with no pool is judged among its peers in pool "default" (effective_pool), and
    # its operator names it so: `{"default": {"mode": "auto"}}` must reach it.
    found = overrides.get(pool or DEFAULT_POOL, {})
    return Policy(**({"mode": default_mode} | found))


@dataclass(frozen=True)
class Budget:
    """The disruption budget of one pool at one moment."""

    pool: str
    size: int  # runners known in the pool
    limit: int  # controller cordons allowed at once
    by_controller: int  # runners the controller holds cordoned now
    out_of_rotation: int  # cordoned by anyone
    min_active: int
    # Of `by_controller`: runners back in rotation on probation. Each keeps its slot until the probation
    # ends, so re-cordoning one whose probe failed never waits for room.
    on_probation: int = 0

    @property
    def allows(self) -> bool:
        return self.by_controller < self.limit and self.leaves_enough

    @property
    def leaves_enough(self) -> bool:
        """Whether one more runner out of rotation still leaves `min_active` in it."""
        return self.size - self.out_of_rotation - 1 >= self.min_active

    def explain(self) -> str:
        probation = f" ({self.on_probation} on probation)" if self.on_probation else ""
        head = (
            f"pool {self.pool}: {self.by_controller} of {self.limit} controller cordons in use{probation}, "
            f"{self.out_of_rotation} of {self.size} runners out of rotation"
        )
        if self.by_controller >= self.limit:
            return f"{head}; budget exhausted (max(1, {self.limit}) at once)"
        if not self.leaves_enough:
            return f"{head}; cordoning one more would leave fewer than {self.min_active} in rotation"
        return f"{head}; one more allowed"

    def hold(self) -> str:
        """Why one more runner waits, in a few words: `held: <this>` in status and describe."""
        if self.by_controller >= self.limit:
            return f"budget {self.by_controller} of {self.limit} in use"
        return f"min_active {self.min_active}: {self.out_of_rotation} of {self.size} out of rotation"

    def as_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "size": self.size,
            "limit": self.limit,
            "cordoned_by_controller": self.by_controller,
            "out_of_rotation": self.out_of_rotation,
            "on_probation": self.on_probation,
            "allows_one_more": self.allows,
            "explanation": self.explain(),
        }


def budget(
    pool: str, size: int, by_controller: int, out_of_rotation: int, policy: Policy, on_probation: int = 0
) -> Budget:
    limit = max(1, min(policy.budget_count, math.floor(size * policy.budget_ratio)))
    return Budget(pool, size, limit, by_controller, out_of_rotation, policy.min_active, on_probation)


def is_storm(fleet_size: int, sick: int, ratio: float, min_runners: int) -> bool:
    """A storm is an outage, not many sick runners: draining them all would only make it worse."""
    return fleet_size > 0 and sick >= min_runners and sick / fleet_size > ratio
