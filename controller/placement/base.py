"""The one interface a placement implements: the layer that decides which machine a runner pod lands on.

A CI provider reruns a job but cannot keep it off a host; where runners are single-use pods, the node is
the machine that gets sick and the only drain that works is the cluster's. So the cluster drains (cordon
the node, delete its idle runners, let busy ones finish) and the CI provider reruns. Implementations
raise only `controller.errors.ProviderError` subclasses, like providers, and record every API call they
make in `calls`, so the audit log can say exactly what was asked of the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

RunnerKind = Literal["arc", "gitlab", "buildkite"]
PlannedVerb = Literal["drain", "cordon", "uncordon"]


@dataclass(frozen=True)
class ApiCall:
    """One request to the cluster: `PATCH /api/v1/nodes/n1 -> ok`. `status` None: not sent (dry run)."""

    method: str
    path: str
    status: str | None = None  # "ok", or the HTTP status the cluster refused it with
    note: str = ""

    def __str__(self) -> str:
        sent = f" -> {self.status}" if self.status is not None else " (not sent)"
        return f"{self.method} {self.path}{sent}{f' ({self.note})' if self.note else ''}"


@dataclass(frozen=True)
class NodeState:
    """What the controller reads off a node. `ours`: cordoned by runnerctl (its label), so it may undo it;
    `cordoned_by`: who in runnerctl did (the controller, or an operator's token name; None on nodes
    cordoned before that was recorded, which only the controller did)."""

    name: str
    unschedulable: bool
    ours: bool
    tainted: bool = False
    incident: str | None = None
    cordoned_at_ms: int | None = None
    probation_since_ms: int | None = None
    cordoned_by: str | None = None


@dataclass(frozen=True)
class RunnerPod:
    """A runner pod on a node. `busy`: running a job, so it is left to finish; `why` says how we know.
    `delete_path` is what removing an idle one deletes: the EphemeralRunner for ARC (its controller would
    otherwise recreate the pod), the pod itself otherwise."""

    namespace: str
    name: str
    busy: bool
    why: str
    delete_path: str


@dataclass(frozen=True)
class Fleet:
    """Runner pods of one pool: where they run and how to find them (`RUNNER_CONTROLLER_PLACEMENTS`)."""

    pool: str
    runner: RunnerKind
    namespace: str
    selector: str = ""  # label selector of the runner pods; "" = the runner kind's own (runners.py)
    node_selector: str = ""  # label selector of the pool's nodes (the budget's size); "" = every node
    drain_timeout_s: float = 3600.0
    taint: bool = True
    dry_run: bool = False


class Placement(Protocol):
    NAME: str
    fleets: dict[str, Fleet]  # by pool

    @property
    def calls(self) -> list[ApiCall]:
        """The calls this thread made since it last cleared them (each thread keeps its own)."""
        ...

    def close(self) -> None: ...

    def fleet(self, pool: str) -> Fleet | None:
        """The fleet of this pool, or None when the pool's runners are not placed by this cluster."""
        ...

    def node_of(self, machine: str) -> str:
        """The node a runner's `machine` names (the agent reports the downward API's NODE_NAME)."""
        ...

    def node(self, name: str) -> NodeState:
        """Raises RunnerNotFound for a node the cluster does not know."""
        ...

    def nodes(self, fleet: Fleet) -> list[NodeState]: ...

    def cordon(self, name: str, fleet: Fleet, incident: str, reason: str, by: str | None = None) -> bool:
        """Mark unschedulable (and taint) as runnerctl's, `by` whom; False when it already was. Idempotent."""
        ...

    def uncordon(
        self, name: str, fleet: Fleet, *, probation_since_ms: int | None, force: bool = False
    ) -> None:
        """Schedulable again; with `probation_since_ms` it stays runnerctl's until its probe ends. A node
        runnerctl does not hold is left alone unless `force` (a person's explicit word)."""
        ...

    def release(self, name: str) -> None:
        """Forget the node: remove runnerctl's label and annotations (it is schedulable already)."""
        ...

    def runner_pods(self, name: str, fleet: Fleet) -> list[RunnerPod]: ...

    def fleet_pods(self, fleet: Fleet) -> dict[str, list[RunnerPod]]:
        """Every runner pod of the fleet by node name, in one list call (plus ARC's runners)."""
        ...

    def remove(self, pod: RunnerPod) -> bool:
        """Delete an idle runner; False when it was gone already."""
        ...

    def planned(self, name: str, fleet: Fleet, verb: PlannedVerb = "drain") -> list[ApiCall]:
        """The writes a drain (or a bare cordon, an uncordon) of this node would make now, read from the
        cluster but not sent."""
        ...
