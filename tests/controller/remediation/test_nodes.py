"""Node drains over a real (migrated) SQLite database, a fake kube-apiserver on loopback, and an in-process
CI provider double that records reruns: the drain's order, budget, dry run and fail-closed rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from controller.db import tables
from controller.placement.kubernetes import KubernetesPlacement
from controller.providers.base import JobRef
from controller.remediation.actions import Actions
from controller.remediation.nodes import NodeDrains
from controller.remediation.policy import Policy
from tests.fakes.kube_apiserver import FakeKubeApiserver
from tests.fakes.server import Response

NS = "arc-runners"
ER = f"/apis/actions.github.com/v1alpha1/namespaces/{NS}/ephemeralrunners"


class Reruns:
    NAME = "double"

    def __init__(self) -> None:
        self.rerun_jobs: list[str] = []

    def rerun(self, job: JobRef) -> JobRef:
        self.rerun_jobs.append(job.id)
        return JobRef(f"{job.id}-again")


def incident(node: str, jobs: int = 1) -> dict[str, Any]:
    return {
        "id": f"machine:{node}",
        "kind": "machine",
        "entity": node,
        "state": "sick",
        "dimension": "disk",
        "pool": ["linux"],
        "affected_jobs": [{"job_id": f"{node}-job-{i}", "runner_id": f"{node}-eph-{i}"} for i in range(jobs)],
        "tests": [{"test_id": "t1"}],
    }


@pytest.fixture
def kube() -> Iterator[FakeKubeApiserver]:
    fake = FakeKubeApiserver("t")
    fake.start()
    for name in ("n1", "n2", "n3", "n4"):
        fake.add_node(name, {"pool": "linux"})
    yield fake
    fake.stop()


class World:
    def __init__(self, engine: Engine, kube: FakeKubeApiserver, tmp: Path, **fleet: Any) -> None:
        (tmp / "kubeconfig").write_text(kube.kubeconfig())
        self.placement = KubernetesPlacement(
            {"linux": {"runner": "arc", "namespace": NS, "node_selector": "pool=linux", **fleet}},
            kubeconfig=str(tmp / "kubeconfig"),
        )
        self.provider = Reruns()
        self.incidents: list[dict[str, Any]] = []
        self.policy = Policy(mode="auto", budget_count=1, budget_ratio=1.0)
        self.engine = engine
        self.actions = Actions(engine, lambda _runner: self.provider)  # type: ignore[arg-type,return-value]
        self.drains = NodeDrains(
            engine, self.actions, {"kubernetes": self.placement}, lambda: self.incidents, lambda _pool: self.policy,
            lambda _runner, _now: False,
        )  # fmt: skip

    def audit(self, action: str | None = None) -> list[Any]:
        t = tables.actions
        query = select(t).order_by(t.c.id)
        with self.engine.connect() as conn:
            return [r for r in conn.execute(query) if action is None or r.action == action]


@pytest.fixture
def world(engine: Engine, kube: FakeKubeApiserver, tmp_path: Path) -> Iterator[World]:
    built = World(engine, kube, tmp_path)
    yield built
    built.placement.close()


def test_idle_runners_go_before_the_rerun_and_busy_ones_stay(world: World, kube: FakeKubeApiserver) -> None:
    kube.add_arc_runner(NS, "idle-1", "n3")
    kube.add_arc_runner(NS, "busy-1", "n3", job="99")
    world.incidents = [incident("n3", jobs=2)]
    # A load balancer's bare 503, no Status body: still a failure the drain waits out.
    kube.fail_next("DELETE", rf"{ER}/idle-1", Response(503, b""))

    world.drains.tick()
    assert kube.node("n3")["spec"]["unschedulable"] is True
    assert world.provider.rerun_jobs == []  # an idle runner is still there to take the rerun
    failed = world.audit("evict")[0]
    assert failed.status == "failed" and f"DELETE {ER}/idle-1 -> error without Content-Type" in failed.detail

    world.drains.tick()
    assert (NS, "idle-1") not in kube.runners and (NS, "busy-1") in kube.runners
    assert sorted(world.provider.rerun_jobs) == ["n3-job-0", "n3-job-1"]
    assert [r.status for r in world.audit("cordon")] == ["done"]  # one cordon, not one a pass
    (busy,) = world.audit("drain")
    assert "busy-1 (EphemeralRunner status.jobId=99)" in busy.detail


def test_busy_runner_past_the_deadline_is_reported_not_killed(
    engine: Engine, kube: FakeKubeApiserver, tmp_path: Path
) -> None:
    world = World(engine, kube, tmp_path, drain_timeout_s=0)
    kube.add_arc_runner(NS, "busy-1", "n3", job="99")
    world.incidents = [incident("n3")]
    world.drains.tick()
    world.drains.tick()
    timeout = [r for r in world.audit("drain") if r.status == "failed"]
    assert len(timeout) == 1 and "still busy after 0 s: busy-1" in timeout[0].detail
    assert (NS, "busy-1") in kube.runners
    assert kube.calls() == ["PATCH /api/v1/nodes/n3"]
    world.placement.close()


def test_budget_holds_a_second_sick_node(world: World, kube: FakeKubeApiserver) -> None:
    world.incidents = [incident("n2"), incident("n3")]
    world.drains.tick()
    assert kube.calls() == ["PATCH /api/v1/nodes/n2"]
    (refused,) = [r for r in world.audit("cordon") if r.status == "refused"]
    assert refused.runner_id == "node/n3"
    assert "1 of 1 controller cordons in use" in refused.detail and "budget exhausted" in refused.detail
    assert world.provider.rerun_jobs == ["n2-job-0"]


def test_api_down_fails_closed_and_reruns_nothing(world: World, kube: FakeKubeApiserver) -> None:
    world.incidents = [incident("n3")]
    kube.down.on = True
    world.drains.tick()
    kube.down.on = False
    assert kube.calls() == [] and world.provider.rerun_jobs == []
    (entry,) = [r for r in world.audit("cordon")]
    assert entry.status == "failed" and entry.detail.startswith(
        "fail closed: kubernetes: GET /api/v1/nodes/n3: HTTP 503"
    )


def test_dry_run_fleet_lists_each_call_and_sends_none(
    engine: Engine, kube: FakeKubeApiserver, tmp_path: Path
) -> None:
    world = World(engine, kube, tmp_path, dry_run=True)
    kube.add_arc_runner(NS, "idle-1", "n3")
    world.incidents = [incident("n3")]
    world.drains.tick()
    assert kube.calls() == [] and world.provider.rerun_jobs == []
    (entry,) = world.audit("cordon")
    assert entry.status == "dry-run"
    assert "PATCH /api/v1/nodes/n3 (not sent) (merge patch: spec.unschedulable=true" in entry.detail
    assert f"DELETE {ER}/idle-1 (not sent)" in entry.detail
    world.placement.close()


def test_observe_mode_says_what_a_drain_would_send(world: World, kube: FakeKubeApiserver) -> None:
    world.policy = Policy(mode="observe")
    world.incidents = [incident("n3")]
    world.drains.tick()
    assert kube.calls() == []
    (entry,) = world.audit("cordon")
    assert (
        entry.status == "skipped" and "a drain would send: PATCH /api/v1/nodes/n3 (not sent)" in entry.detail
    )


def test_recovery_lifts_its_own_cordons_only_never_an_operators(
    engine: Engine, kube: FakeKubeApiserver, tmp_path: Path
) -> None:
    world = World(engine, kube, tmp_path)
    world.policy = Policy(mode="auto", auto_uncordon=True, recovery_dwell_s=0)
    world.drains.readings_healthy = world.drains.recovery.readings_healthy = lambda _runner, _now: True
    with engine.begin() as conn:  # each node's agent reports: its readings are what recovery waits for
        for node in ("n2", "n3"):
            conn.execute(tables.runners.insert().values(id=f"agent-{node}", machine=node, last_report_ms=1))
    fleet = world.placement.fleets["linux"]
    world.placement.cordon("n2", fleet, "machine:n2", "sick (disk)", by="runner-controller")
    world.placement.cordon("n3", fleet, "", "fan noise", by="alice")
    world.drains.tick()
    assert kube.node("n2")["metadata"]["annotations"]["runnerctl.io/probation-since-ms"]  # on probation
    assert kube.node("n3")["spec"]["unschedulable"] is True  # alice's: left as it is
    assert [r.runner_id for r in world.audit("uncordon")] == ["node/n2"]
    world.placement.close()
