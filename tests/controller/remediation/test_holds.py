"""Sick runners the disruption budget holds back: never cordoned past the budget, queued oldest incident
first, shown as held with the numbers that hold them, and released in that order when a slot frees.

A small pool of its own (s1..sN, beside conftest's ten linux runners), so its budget is the one under
test and the fleet is large enough that a few sick runners are not a storm.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from controller.db import tables
from controller.remediation.audit import now_ms
from controller.remediation.loop import Remediator
from controller.settings import ControllerSettings
from tests.controller.remediation.test_loop import Double, incident


def small_pool(engine: Engine, size: int) -> None:
    with engine.begin() as conn:
        conn.execute(
            tables.runners.insert(),
            [
                {
                    "id": f"s{i}",
                    "pool": "small",
                    "provider": "double",
                    "labels": "[]",
                    "ephemeral": False,
                    "last_report_ms": now_ms(),
                }
                for i in range(1, size + 1)
            ],
        )


def make(engine: Engine, provider: Double, incidents: list[dict[str, Any]], **policy: Any) -> Remediator:
    settings = ControllerSettings(
        remediation_mode="observe", remediation_policies={"small": {"mode": "auto"} | policy}
    )
    return Remediator(engine, settings, lambda: incidents, {"double": provider}, health=lambda _r: {})


def refusals(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(tables.actions)
            .where(tables.actions.c.action == "cordon", tables.actions.c.status == "refused")
            .order_by(tables.actions.c.id)
        )
        return [(r.runner_id, r.detail) for r in rows]


def held(rem: Remediator) -> dict[str, tuple[str, int, int]]:
    return {r: (h.budget.hold(), h.place, h.queued) for r, h in rem.holds().items()}


@pytest.mark.parametrize(
    ("policy", "summary", "why"),
    [
        ({}, "budget 1 of 1 in use", "budget exhausted (max(1, 1) at once)"),
        (
            {"budget_ratio": 1.0, "min_active": 2},
            "min_active 2: 1 of 3 out of rotation",
            "cordoning one more would leave fewer than 2 in rotation",
        ),
    ],
    ids=["budget", "min-active"],
)
def test_two_of_three_sick_cordons_one_and_holds_the_other_with_the_reason(
    engine: Engine, policy: dict[str, Any], summary: str, why: str
) -> None:
    # No history to tell them apart: the controller cordons the oldest incident's runner and keeps the
    # other in rotation, so the pool is never drained down to its last runner on one look.
    small_pool(engine, 3)
    provider = Double()
    rem = make(engine, provider, [incident("s2"), incident("s3")], **policy)
    for _ in range(3):
        rem.tick()
    assert list(provider.paused) == ["s2"] and provider.count("cordon") == 1
    assert held(rem) == {"s3": (summary, 1, 1)}
    ((runner, detail),) = refusals(engine)  # one entry however many passes: the numbers did not change
    assert runner == "s3"
    assert why in detail and detail.endswith("held: queued until the budget has room, oldest incident first")


def test_three_of_five_sick_queue_in_incident_order_and_go_as_slots_free(engine: Engine) -> None:
    small_pool(engine, 5)
    provider = Double()
    sick = [incident("s4"), incident("s1"), incident("s5")]  # oldest first, as the analysis lists them
    rem = make(engine, provider, sick, budget_count=1, budget_ratio=1.0)
    # Before any pass: the first would be cordoned, so the two behind it are the ones held.
    assert held(rem) == {"s1": ("budget 1 of 1 in use", 1, 2), "s5": ("budget 1 of 1 in use", 2, 2)}
    rem.tick()
    rem.tick()
    assert list(provider.paused) == ["s4"]
    assert held(rem) == {"s1": ("budget 1 of 1 in use", 1, 2), "s5": ("budget 1 of 1 in use", 2, 2)}

    # An operator takes s4 back: its slot goes to the first in the queue, not to the last.
    assert rem.uncordon("s4", "alice", dry_run=False, force=True).ok
    rem.tick()
    assert list(provider.paused) == ["s1"]
    assert held(rem) == {"s5": ("budget 1 of 1 in use", 1, 1)}
    # One entry each: what holds s5 back reads the same (1 of 1 in use, 1 of 5 out) before and after.
    assert [r for r, _d in refusals(engine)] == ["s1", "s5"]


def test_forty_percent_of_five_is_two_and_the_third_is_held(engine: Engine) -> None:
    small_pool(engine, 5)
    provider = Double()
    rem = make(engine, provider, [incident("s1"), incident("s2"), incident("s3")], budget_ratio=0.4)
    assert held(rem) == {"s3": ("budget 2 of 2 in use", 1, 1)}
    for _ in range(3):
        rem.tick()
    assert sorted(provider.paused) == ["s1", "s2"] and provider.count("cordon") == 2
    assert held(rem) == {"s3": ("budget 2 of 2 in use", 1, 1)}
    ((runner, detail),) = refusals(engine)
    assert runner == "s3" and "2 of 2 controller cordons in use, 2 of 5 runners out of rotation" in detail


@pytest.mark.parametrize(
    ("mode", "sick"),
    [("observe", 3), ("approve", 3), ("auto", 5)],
    ids=["observe", "approve", "storm"],
)
def test_nothing_is_held_where_the_controller_would_not_cordon(engine: Engine, mode: str, sick: int) -> None:
    # Only auto cordons on its own; and in a storm (5 of 15 sick > 30 %) it acts on nothing at all, which
    # its fleet-incident explains: that is not the budget.
    small_pool(engine, 5)
    provider = Double()
    rem = make(engine, provider, [incident(f"s{i}") for i in range(1, sick + 1)], mode=mode)
    assert rem.holds() == {}
    rem.tick()
    assert rem.holds() == {} and provider.count("cordon") == 0
