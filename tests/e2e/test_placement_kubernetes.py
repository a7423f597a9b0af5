"""The whole story on a Kubernetes-hosted ARC fleet (a fake kube-apiserver and a fake GitHub on loopback,
a real controller in auto mode): the results of ephemeral runner pods name their node as `machine`, the
node's agent (a DaemonSet pod) reads its disk full, the controller cordons and taints node n3 through the
API, leaves the busy runner there to finish, deletes the idle one's EphemeralRunner, reruns the failed
jobs through GitHub — they land on other nodes — clears the tests' flake records, and, once n3's readings
are healthy, uncordons it on probation until a job passes there, then lets it go.

The test plays ARC's part where the two fakes meet: a deleted EphemeralRunner de-registers its GitHub
runner and a replacement is scheduled on a schedulable node.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.e2e.provider_story import FAST, Agents, actions, wait_for
from tests.fakes.github import FakeGitHub, Job
from tests.fakes.kube_apiserver import FakeKubeApiserver
from tests.servers import Controller, running_controller

pytestmark = pytest.mark.slow

NS = "arc-runners"
NODES = ("n1", "n2", "n3")
JOBS = ("unit", "lint", "integration")
RUNS_ON = ["self-hosted", "linux-x64"]
ROUNDS = 3
NODE_PATH = "/api/v1/nodes/n3"
ER_PATH = f"/apis/actions.github.com/v1alpha1/namespaces/{NS}/ephemeralrunners"


class Fleet:
    """ARC as the test plays it: one idle runner per node, plus a busy one on n3 running a long job."""

    def __init__(self, kube: FakeKubeApiserver, github: FakeGitHub) -> None:
        self.kube, self.github = kube, github
        self.node_of: dict[str, str] = {}
        for node in NODES:
            self.add(f"linux-{node}-a", node)
        self.add("linux-n3-busy", "n3", job="777")
        github.runner("linux-n3-busy").busy = True  # its long job holds it
        kube.on_delete = self.deleted

    def add(self, name: str, node: str, job: str | None = None) -> None:
        self.kube.add_arc_runner(NS, name, node, job=job)
        self.github.add_runner(name, ["linux-x64"])
        self.node_of[name] = node

    def deleted(self, _namespace: str, name: str) -> None:
        with self.github.lock:  # ARC removes the runner from GitHub, then scales back up elsewhere
            self.github.runners = {k: r for k, r in self.github.runners.items() if r.name != name}
        self.add(f"{name}-again", "n1")


def result(job: Job, fleet: Fleet) -> dict[str, Any]:
    assert job.runner is not None
    node = fleet.node_of[job.runner.name]
    return {
        "test_id": f"job:{job.name}",
        "outcome": "passed" if job.conclusion == "success" else "failed",
        "time": datetime.now(UTC).isoformat(),
        "job_id": f"acme/web/{job.id}",
        "run_id": f"acme/web/{job.run_id}",
        "attempt": job.run_attempt,
        # An ephemeral runner: a fresh id per job, judged by the node it ran on (the downward API's NODE_NAME).
        "runner": {
            "id": f"{job.runner.name}-{job.id}",
            "name": job.runner.name,
            "machine": node,
            "pool": "linux",
            "provider": "github",
            "ephemeral": True,
        },
    }


def post_results(controller: Controller, jobs: list[Job], fleet: Fleet) -> None:
    answer = controller.post("/v1/results", json=[result(j, fleet) for j in jobs])
    assert answer.status_code == 200, answer.text


@pytest.fixture(scope="module")
def story(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[FakeKubeApiserver, FakeGitHub, Fleet, Controller, Agents]]:
    tmp = tmp_path_factory.mktemp("kubernetes")
    kube = FakeKubeApiserver("kube-e2e")
    github = FakeGitHub("acme", "web", token="ghp_e2e", webhook_secret="s3cret")
    kube.start()
    github.start()
    for node in NODES:
        kube.add_node(node, {"pool": "linux"})
    fleet = Fleet(kube, github)
    github.fails_on = {"linux-n3-a"}
    (tmp / "kubeconfig").write_text(kube.kubeconfig())
    env = FAST | {
        "RUNNER_CONTROLLER_PROVIDERS": json.dumps(
            {
                "github": {
                    "api_url": github.url,
                    "token": "ghp_e2e",
                    "webhook_secret": "s3cret",
                    "owner": "acme",
                    "repo": "web",
                }
            }
        ),
        "RUNNER_CONTROLLER_PLACEMENTS": json.dumps(
            {
                "kubernetes": {
                    "kubeconfig": str(tmp / "kubeconfig"),
                    "fleets": {"linux": {"runner": "arc", "namespace": NS, "node_selector": "pool=linux"}},
                }
            }
        ),
        "RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps(
            {"linux": {"mode": "auto", "auto_uncordon": True, "recovery_dwell_s": 1, "probe_jobs": 1}}
        ),
    }
    try:
        with running_controller(tmp, env=env) as controller:
            # The per-node agents (the DaemonSet): each reports as its node's machine; n3's disk is full.
            identities = {f"agent-{n}": {"id": f"agent-{n}", "machine": n, "pool": "linux"} for n in NODES}
            agents = Agents(controller, identities, sick={"agent-n3"})
            agents.start()
            github.start_ticking()
            try:
                yield kube, github, fleet, controller, agents
            finally:
                agents.stop()
    finally:
        github.stop()
        kube.stop()


def test_sick_node_drained_by_the_cluster_reruns_elsewhere_and_it_comes_back_on_probation(
    story: tuple[FakeKubeApiserver, FakeGitHub, Fleet, Controller, Agents],
) -> None:
    kube, github, fleet, controller, agents = story
    for _round in range(ROUNDS):
        for node in NODES:
            for name in JOBS:
                github.queue(name, RUNS_ON, pin=f"linux-{node}-a")
    github.wait_idle()
    first = list(github.jobs.values())
    post_results(controller, first, fleet)
    failed = sorted(f"acme/web/{j.id}" for j in first if j.conclusion == "failure")
    assert len(failed) == len(JOBS) * ROUNDS

    incident = wait_for(
        controller,
        "n3 judged sick",
        lambda: next(
            (
                i
                for i in controller.get("/v1/incidents").json()["items"]
                if i["entity"] == "n3" and i["state"] == "sick"
            ),
            None,
        ),
        60,
    )
    assert incident["kind"] == "machine" and incident["dimension"] == "disk"

    # The cluster drains: one cordon (merge patch, tainted), the idle runner's EphemeralRunner deleted,
    # the busy one left to finish.
    wait_for(
        controller,
        "every failed job rerun",
        lambda: len(actions(controller, action="rerun", status="done")) == len(failed),
        60,
    )
    node = kube.node("n3")
    assert node["spec"]["unschedulable"] is True
    assert {"key": "runnerctl.io/sick", "value": "true", "effect": "NoSchedule"} in node["spec"]["taints"]
    writes = kube.calls()
    assert writes[:2] == [f"PATCH {NODE_PATH}", f"DELETE {ER_PATH}/linux-n3-a"]
    assert f"DELETE {ER_PATH}/linux-n3-busy" not in writes
    assert (NS, "linux-n3-busy") in kube.runners
    cordon = actions(controller, action="cordon", status="done")[0]
    assert cordon["runner"] == "node/n3" and f"PATCH {NODE_PATH} -> ok" in cordon["detail"]
    evict = actions(controller, action="evict", status="done")[0]
    assert f"DELETE {ER_PATH}/linux-n3-a -> ok" in evict["detail"]
    busy = actions(controller, action="drain")[0]
    assert "linux-n3-busy (EphemeralRunner status.jobId=777)" in busy["detail"]

    # The reruns went through GitHub, after the drain, and landed on the other nodes.
    github.wait_idle()
    again = [j for j in github.jobs.values() if j.run_attempt == 2]
    assert len(again) == len(failed)
    assert {fleet.node_of[j.runner.name] for j in again if j.runner} <= {"n1", "n2"}
    assert all(j.conclusion == "success" for j in again)
    post_results(controller, again, fleet)
    clearance = wait_for(
        controller, "the flake clearance", lambda: controller.get("/v1/clearances").json()["items"], 60
    )[0]
    assert clearance["incident"] == incident["id"]
    assert sorted(clearance["tests"]) == sorted(f"job:{n}" for n in JOBS)

    # n3's disk is fixed: after the dwell it is uncordoned on probation, still runnerctl's.
    agents.sick.clear()

    def fleet_ran_clean_since() -> bool:
        # Readings count as of the newest result stored: the rest of the fleet goes on running jobs.
        jobs = [github.queue("lint", RUNS_ON, pin=f"linux-{node}-a") for node in ("n1", "n2")]
        github.wait_idle()
        post_results(controller, jobs, fleet)
        return not kube.node("n3")["spec"].get("unschedulable")

    wait_for(controller, "n3 on probation", fleet_ran_clean_since, 60)
    assert kube.node("n3")["metadata"]["labels"].get("runnerctl.io/cordoned") == "true"
    assert "taints" not in kube.node("n3")["spec"] or not kube.node("n3")["spec"]["taints"]
    # ARC schedules a runner there again; its job passes: the probe passed and runnerctl lets the node go.
    fleet.add("linux-n3-b", "n3")
    probe = github.queue("unit", RUNS_ON, pin="linux-n3-b")
    github.wait_idle()
    post_results(controller, [probe], fleet)
    wait_for(
        controller,
        "n3 released",
        lambda: "runnerctl.io/cordoned" not in kube.node("n3")["metadata"]["labels"],
        60,
    )
    # The audit entry is written before the release and finished after it: wait for it to be finished.
    wait_for(
        controller,
        "the probation's entry finished",
        lambda: actions(controller, action="probation")[0]["status"] != "intended",
        60,
    )
    outcome = actions(controller, action="probation")[0]
    assert outcome["status"] == "done" and "probe passed" in outcome["detail"]
