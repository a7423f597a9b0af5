"""Runners the controller would cordon now but the disruption budget holds back: per pool a queue,
oldest incident first, shown by `runnerctl get runners`, `status` and `describe runner`.

Worked out from stored state and the served incidents, the way the loop decides (loop.py), so every
replica shows the same queue: a follower has no memory of the leader's passes, only its database.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from controller.providers.base import Provider
from controller.remediation import audit, store
from controller.remediation.policy import Budget, Policy


@dataclass(frozen=True)
class Hold:
    runner: str
    incident_id: str
    # The pool's budget as the loop will find it at this runner's turn: counting the runners ahead of
    # it that it is about to cordon, so it reads as the loop's own refusal will.
    budget: Budget
    place: int  # 1: cordoned first once the budget has room
    queued: int  # runners of the pool held back

    def as_dict(self) -> dict[str, Any]:
        return {
            "reason": "budget",
            "incident": self.incident_id,
            "summary": self.budget.hold(),
            "place": self.place,
            "queued": self.queued,
            "budget": self.budget.as_dict(),
        }


@dataclass(frozen=True)
class Lookups:
    """What the loop itself consults, by runner or pool; the Remediator provides them."""

    pool_of: Callable[[str], str | None]
    policy_of: Callable[[str | None], Policy]
    budget_of: Callable[[str | None], Budget]
    provider_for: Callable[[str], Provider | None]
    on_probation: Callable[[], set[str]]


def holds(engine: Engine, targets: Iterable[tuple[dict[str, Any], str]], look: Lookups) -> dict[str, Hold]:
    """runner -> its hold, for every sick runner in an `auto` pool the budget keeps in rotation.

    The loop walks its targets in this order and cordons while the budget allows, so a runner counts as
    held only once the runners ahead of it would have used up the room. The caller leaves storms out:
    the loop acts on nothing then, and its `fleet-incident` says why, not the budget."""
    with engine.connect() as conn:
        out = store.out_of_rotation(conn)
        candidates = [
            (incident, runner)
            for incident, runner in targets
            if runner not in out
            # Cordoned for this incident before and uncordoned since: a person decided, not the budget.
            and audit.status_of(conn, f"cordon:{incident['id']}:{runner}") != "done"
        ]
    trying = look.on_probation()
    held: dict[str | None, list[tuple[str, str, Budget]]] = {}
    rooms: dict[str | None, Budget] = {}
    for incident, runner in candidates:
        pool = look.pool_of(runner)
        if runner in trying or look.policy_of(pool).mode != "auto" or look.provider_for(runner) is None:
            continue
        if pool not in rooms:
            rooms[pool] = look.budget_of(pool)
        room = rooms[pool]
        if room.allows:  # cordoned on the next pass: it takes its slot from those behind it
            rooms[pool] = dataclasses.replace(
                room, by_controller=room.by_controller + 1, out_of_rotation=room.out_of_rotation + 1
            )
        else:
            held.setdefault(pool, []).append((runner, incident["id"], room))
    return {
        runner: Hold(runner, incident_id, room, place, len(queue))
        for queue in held.values()
        for place, (runner, incident_id, room) in enumerate(queue, start=1)
    }
