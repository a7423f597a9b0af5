"""The way back for a runner the controller cordoned: its readings healthy for the pool's dwell, then a
pinned probe (probe.py) or the half-open probation (probation.py) in `auto` with `auto_uncordon`, or an
audit entry saying an operator may uncordon it. Only the controller's own cordons are ever considered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine

from controller.analysis.config import AnalysisConfig
from controller.remediation import store
from controller.remediation.actions import CONTROLLER, Actions
from controller.remediation.audit import now_ms
from controller.remediation.policy import Policy
from controller.remediation.probation import Probations
from controller.remediation.probe import Probes

# A held runner's readings count as healthy only while its agent reports: silence is not health. The
# analysis lets a reading speak for this long too.
READINGS_FRESH_MS = AnalysisConfig().reading_stale_s * 1000


class Recovery:
    def __init__(
        self,
        engine: Engine,
        actions: Actions,
        probations: Probations,
        probes: Probes,
        policy_of: Callable[[str], Policy],
        health: Callable[[str], dict[str, Any]],
    ) -> None:
        self.engine = engine
        self.actions = actions
        self.probations = probations
        self.probes = probes
        self.policy_of = policy_of  # by runner
        self.health = health
        # runner -> when its readings turned healthy. In memory on purpose: a new leader (or a restart)
        # starts the dwell afresh, which only ever delays a return, never hastens one.
        self.healthy_since: dict[str, int] = {}

    def readings_healthy(self, runner: str, now: int) -> bool:
        """Its latest readings show no pressure and its agent still reports. Not the verdict: a held runner
        runs no jobs, so its incident cannot resolve until it is back in rotation (the probation)."""
        if self.health(runner).get("warnings"):
            return False
        with self.engine.connect() as conn:
            reported = store.last_report_ms(conn, runner)
        return reported is not None and now - reported <= READINGS_FRESH_MS

    def forget(self) -> None:
        """A new leader's term: the dwell restarts."""
        self.healthy_since.clear()

    def tick(self) -> None:
        """Own cordons of runners healthy again: after the dwell, uncordon on probation (auto_uncordon)
        or say an operator may."""
        now = now_ms()
        with self.engine.connect() as conn:
            mine = {
                rid: row for rid, row in store.out_of_rotation(conn).items() if row.source == "controller"
            }
        for runner in set(self.healthy_since) - set(mine):
            del self.healthy_since[runner]  # back in rotation: a later cordon's dwell starts afresh
        on_trial = self.probations.runners()
        for runner, row in mine.items():
            if runner in on_trial:
                continue  # its probe decides now
            if not self.readings_healthy(runner, now):
                self.healthy_since.pop(runner, None)
                continue
            since = self.healthy_since.setdefault(runner, now)
            policy = self.policy_of(runner)
            if now - since >= policy.recovery_dwell_s * 1000:
                self._return(runner, row.incident_id, policy)

    def _return(self, runner: str, incident_id: str | None, policy: Policy) -> None:
        if policy.mode == "auto" and policy.auto_uncordon:
            # Probe before return where the provider can pin a probe, else the half-open probation.
            # A probe tried, even one the provider refused, starts the dwell over; an uncordon that
            # failed is retried next pass.
            probe = self.probes.start(runner, incident_id, policy.recovery_dwell_s)
            if (
                probe.status != "no probe"
                or self.probations.start(runner, incident_id, policy, policy.recovery_dwell_s).ok
            ):
                del self.healthy_since[runner]
            return
        self.actions.note(
            f"recoverable:{incident_id}:{runner}",
            "uncordon",
            "skipped",
            actor=CONTROLLER,
            runner_id=runner,
            incident_id=incident_id,
            mode=policy.mode,
            detail=(
                f"readings healthy for {policy.recovery_dwell_s:.0f} s: an operator may `runnerctl "
                f"uncordon {runner}` (with --force while the incident it was cordoned for is open)"
            ),
        )
