"""A drained node's way back: once the readings of its agents have been healthy for the pool's
`recovery_dwell_s`, it is uncordoned on probation (auto + auto_uncordon) and its next jobs are the probe,
judged like a runner's (probation.judge): `probe_jobs` passing release it, a job failing with breadth
cordons it again. The probation's start lives on the node (an annotation), so a new leader carries on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from common.results import FAILING_OUTCOMES
from controller.db import tables
from controller.errors import ProviderError
from controller.placement.base import ApiCall, Fleet, NodeState, Placement
from controller.remediation import audit
from controller.remediation.actions import CONTROLLER, Actions
from controller.remediation.audit import now_ms
from controller.remediation.policy import Policy
from controller.remediation.probation import judge

log = logging.getLogger(__name__)


def calls_text(calls: list[ApiCall]) -> str:
    return "; ".join(str(c) for c in calls)


class NodeRecovery:
    def __init__(
        self,
        engine: Engine,
        actions: Actions,
        policy_of: Callable[[str | None], Policy],
        readings_healthy: Callable[[str, int], bool],
    ) -> None:
        self.engine = engine
        self.actions = actions
        self.policy_of = policy_of
        self.readings_healthy = readings_healthy
        self.healthy_since: dict[str, int] = {}  # in memory: a new leader's dwell starts afresh

    def _fields(self, incident_id: str | None, node: str, mode: str | None) -> dict[str, Any]:
        return {"actor": CONTROLLER, "runner_id": f"node/{node}", "incident_id": incident_id, "mode": mode}

    def held(self, placement: Placement, fleet: Fleet) -> None:
        try:
            # A node an operator cordoned through runnerctl is theirs, as a person's runner cordon is:
            # the controller never lifts it (its probation and recovery are for its own cordons).
            ours = [n for n in placement.nodes(fleet) if n.ours and n.cordoned_by in (None, CONTROLLER)]
        except ProviderError as error:
            log.warning("nodes of pool %s: %s", fleet.pool, error)
            return
        for node in ours:
            if node.probation_since_ms:
                self._judge(placement, fleet, node)
            elif node.unschedulable:
                self._recover(placement, fleet, node)

    def _recover(self, placement: Placement, fleet: Fleet, node: NodeState) -> None:
        now = now_ms()
        runners = self._runners_on(node.name)
        if not runners or not all(self.readings_healthy(r, now) for r in runners):
            self.healthy_since.pop(node.name, None)
            return
        since = self.healthy_since.setdefault(node.name, now)
        policy = self.policy_of(fleet.pool)
        if now - since < policy.recovery_dwell_s * 1000:
            return
        fields = self._fields(node.incident, node.name, policy.mode)
        if not (policy.mode == "auto" and policy.auto_uncordon):
            self.actions.note(
                f"node-recoverable:{node.incident}:{node.name}",
                "uncordon",
                "skipped",
                detail=f"readings healthy for {policy.recovery_dwell_s:.0f} s: an operator may `runnerctl "
                f"uncordon node/{node.name}` (with --force while its incident is open), or enable auto_uncordon",
                **fields,
            )
            return
        key = f"node-probation:{node.incident}:{node.name}:{node.cordoned_at_ms}"
        entry = self.actions.begin(
            key, "uncordon", reason=f"readings healthy for {policy.recovery_dwell_s:.0f} s", **fields
        )
        placement.calls.clear()
        try:
            placement.uncordon(node.name, fleet, probation_since_ms=now)
        except ProviderError as error:
            audit.finish(
                self.engine,
                entry.id,
                "failed",
                f"{self.actions.defer(key, error)}; calls: {calls_text(placement.calls)}",
            )
            return
        self.healthy_since.pop(node.name, None)
        audit.finish(
            self.engine,
            entry.id,
            "done",
            f"on probation: {policy.probe_jobs} jobs must pass on it; calls: {calls_text(placement.calls)}",
        )

    def _judge(self, placement: Placement, fleet: Fleet, node: NodeState) -> None:
        policy = self.policy_of(fleet.pool)
        since = node.probation_since_ms or 0
        jobs = self._probe_jobs(node.name, since)
        verdict = judge(jobs, policy, (now_ms() - since) / 1000, None)
        if verdict.outcome == "waiting":
            return
        fields = self._fields(node.incident, node.name, "auto")
        key = f"node-probation-{verdict.outcome}:{node.incident}:{node.name}:{since}"
        entry = self.actions.begin(key, "probation", detail=verdict.detail, **fields)
        placement.calls.clear()
        try:
            if verdict.outcome == "failed":
                placement.cordon(node.name, fleet, node.incident or "", verdict.detail)
            else:
                placement.release(node.name)
        except ProviderError as error:
            audit.finish(self.engine, entry.id, "failed", f"{error}; calls: {calls_text(placement.calls)}")
            return
        status = "failed" if verdict.outcome == "failed" else "done"
        audit.finish(self.engine, entry.id, status, f"{verdict.detail}; calls: {calls_text(placement.calls)}")

    def _runners_on(self, node: str) -> list[str]:
        t = tables.runners
        with self.engine.connect() as conn:
            return [
                str(r)
                for r in conn.execute(
                    select(t.c.id).where(t.c.machine == node, t.c.last_report_ms.is_not(None))
                ).scalars()
            ]

    def _probe_jobs(self, node: str, since_ms: int) -> dict[str, list[str]]:
        """job id -> distinct failed tests, for results stored since the probation from runners on the node."""
        r, t = tables.runners, tables.results
        query = (
            select(t.c.job_id, t.c.test_id, t.c.outcome)
            .join(r, r.c.id == t.c.runner_id)
            .where(r.c.machine == node, t.c.ingested_ms >= since_ms, t.c.job_id.is_not(None))
            .order_by(t.c.id)
        )
        jobs: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            for job_id, test_id, outcome in conn.execute(query):
                failed = jobs.setdefault(str(job_id), [])
                if outcome in FAILING_OUTCOMES and test_id not in failed:
                    failed.append(str(test_id))
        return jobs
