"""The disruption budget and the storm guard: pure decisions over counts."""

from __future__ import annotations

import pytest

from controller.remediation.policy import Policy, budget, is_storm, policy_for

BUDGET_CASES = [
    # size, held by controller, out of rotation (anyone), policy, allows, limit
    (3, 0, 0, Policy(), True, 1),
    (3, 1, 1, Policy(), False, 1),
    (30, 2, 2, Policy(), True, 3),
    (30, 3, 3, Policy(), False, 3),
    (300, 9, 9, Policy(), True, 10),  # the count (10) is more restrictive than 10 % (30)
    (300, 10, 10, Policy(), False, 10),
    (2, 0, 0, Policy(), True, 1),  # 2 runners: one may go, one stays
    (2, 0, 1, Policy(), False, 1),  # a person holds one: cordoning the other would empty the pool
    (1, 0, 0, Policy(), False, 1),  # never the last runner of a pool
    (10, 0, 7, Policy(min_active=3), False, 1),
    (10, 1, 1, Policy(budget_ratio=0.5, budget_count=3), True, 3),
]


@pytest.mark.parametrize(
    ("size", "mine", "out", "policy", "allows", "limit"),
    BUDGET_CASES,
    ids=[
        "3-none-held",
        "3-one-held",
        "30-two-of-three",
        "30-exhausted",
        "300-count-wins",
        "300-count-exhausted",
        "2-one-may-go",
        "2-person-holds-other",
        "1-never-empty",
        "min-active",
        "custom-ratio",
    ],
)
def test_budget(size: int, mine: int, out: int, policy: Policy, allows: bool, limit: int) -> None:
    found = budget("linux", size, mine, out, policy)
    assert (found.allows, found.limit) == (allows, limit), found.explain()
    assert ("one more allowed" in found.explain()) is allows


@pytest.mark.parametrize(
    ("fleet", "sick", "storm"),
    [
        (10, 1, False),
        (10, 3, False),
        (10, 4, True),
        (3, 2, False),
        (4, 3, True),
        (100, 30, False),
        (0, 0, False),
    ],
    ids=["one", "at-threshold", "over", "small-fleet-two", "small-fleet-three", "exactly-30pct", "empty"],
)
def test_storm(fleet: int, sick: int, storm: bool) -> None:
    assert is_storm(fleet, sick, ratio=0.3, min_runners=3) is storm


def test_policy_defaults_are_conservative_and_pools_override() -> None:
    assert policy_for("linux", "observe", {}).mode == "observe"
    assert Policy().max_reruns_per_job == 1 and not Policy().auto_uncordon
    found = policy_for("linux", "observe", {"linux": {"mode": "auto"}})
    assert (
        found.mode == "auto" and policy_for("mac", "observe", {"linux": {"mode": "auto"}}).mode == "observe"
    )


def test_a_runner_with_no_pool_takes_the_default_pools_policy() -> None:
    """Its jobs and results are judged in pool "default": the policy named so is its own."""
    assert policy_for(None, "observe", {"default": {"mode": "auto"}}).mode == "auto"
    assert policy_for(None, "observe", {"linux": {"mode": "auto"}}).mode == "observe"
