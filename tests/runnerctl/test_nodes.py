"""runnerctl cordon | uncordon | drain node/NAME, get nodes and describe node, over real HTTP to a real
controller whose placement is a fake kube-apiserver on loopback (tests/fakes/kube_apiserver.py).

The pool is in `approve` mode: the controller itself acts on no node, so every write the fake receives
is the operator's, and a drain here is the approval the mode waits for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fakes.kube_apiserver import FakeKubeApiserver
from tests.runnerctl.test_get_describe import run
from tests.servers import Controller, running_controller

NS = "arc-runners"
ER = f"/apis/actions.github.com/v1alpha1/namespaces/{NS}/ephemeralrunners"
TAINT = {"key": "runnerctl.io/sick", "value": "true", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeKubeApiserver, Controller]]:
    tmp = tmp_path_factory.mktemp("nodes")
    kube = FakeKubeApiserver("kube-cli")
    kube.start()
    (tmp / "kubeconfig").write_text(kube.kubeconfig())
    placements = {
        "kubernetes": {
            "kubeconfig": str(tmp / "kubeconfig"),
            "fleets": {"linux": {"runner": "arc", "namespace": NS, "node_selector": "pool=linux"}},
        }
    }
    env = {
        "RUNNER_CONTROLLER_PLACEMENTS": json.dumps(placements),
        "RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps({"linux": {"mode": "approve"}}),
        "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.5",
    }
    try:
        with running_controller(tmp, env=env) as controller:
            yield kube, controller
    finally:
        kube.stop()


@pytest.fixture
def kube(cluster: tuple[FakeKubeApiserver, Controller]) -> FakeKubeApiserver:
    """A fresh cluster per test: four nodes of pool linux, one of no fleet; no write received yet."""
    fake = cluster[0]
    with fake.lock:
        fake.nodes.clear()
        fake.pods.clear()
        fake.runners.clear()
        fake.requests.clear()
    fake.down.on = False
    for name in ("n1", "n2", "n3", "n4"):
        fake.add_node(name, {"pool": "linux"})
    fake.add_node("other")
    return fake


@pytest.fixture
def controller(cluster: tuple[FakeKubeApiserver, Controller]) -> Controller:
    return cluster[1]


def test_dry_run_lists_each_call_and_sends_none(kube: FakeKubeApiserver, controller: Controller) -> None:
    kube.add_arc_runner(NS, "idle-1", "n1")
    kube.add_arc_runner(NS, "busy-1", "n1", job="42")
    drain = run(controller, "drain", "node/n1", "--rerun", "--dry-run")
    assert drain.returncode == 0, drain.stderr
    assert drain.stdout.splitlines() == [
        "node/n1 cordoned (dry run)",
        "  PATCH /api/v1/nodes/n1 (not sent) (merge patch: spec.unschedulable=true, taint "
        "runnerctl.io/sick:NoSchedule)",
        f"  DELETE {ER}/idle-1 (not sent) (idle: EphemeralRunner has no status.jobId (phase Running))",
        "node/n1 drained (dry run)",
    ]
    assert "no open incident on this node: no failed jobs to rerun" in drain.stderr
    cordon = run(controller, "cordon", "node", "n1", "--dry-run")
    assert (cordon.returncode, cordon.stdout) == (
        0,
        "node/n1 cordoned (dry run)\n  PATCH /api/v1/nodes/n1 (not sent) (merge patch: "
        "spec.unschedulable=true, taint runnerctl.io/sick:NoSchedule)\n",
    )
    assert kube.calls() == []  # no PATCH, no DELETE
    assert "unschedulable" not in kube.node("n1")["spec"] and (NS, "idle-1") in kube.runners
    assert controller.get("/v1/actions", params={"runner": "node/n1"}).json()["items"] == []


def test_drain_deletes_idle_runners_leaves_busy_ones_and_uncordon_undoes_it(
    kube: FakeKubeApiserver, controller: Controller
) -> None:
    kube.add_arc_runner(NS, "idle-2", "n2")
    kube.add_arc_runner(NS, "busy-2", "n2", job="7")
    kube.add_arc_runner(NS, "idle-3", "n3")  # another node's: untouched
    done = run(controller, "drain", "node/n2", "--reason", "disk errors in dmesg")
    assert (done.returncode, done.stdout) == (0, "node/n2 cordoned\nnode/n2 drained\n"), done.stderr
    assert f"idle runner {NS}/idle-2 deleted" in done.stderr
    assert "left to finish: busy-2 (EphemeralRunner status.jobId=7)" in done.stderr
    assert kube.calls() == ["PATCH /api/v1/nodes/n2", f"DELETE {ER}/idle-2"]
    node = kube.node("n2")
    assert node["spec"]["unschedulable"] is True and TAINT in node["spec"]["taints"]
    assert node["metadata"]["annotations"]["runnerctl.io/cordoned-by"] == "admin-token"
    assert {(NS, "busy-2"), (NS, "idle-3")} <= set(kube.runners) and (NS, "idle-2") not in kube.runners

    audit = controller.get("/v1/actions", params={"runner": "node/n2"}).json()["items"]
    by_action = {a["action"]: a for a in audit}
    assert {a["actor"] for a in audit} == {"admin-token"}
    assert by_action["cordon"]["status"] == "done" and by_action["cordon"]["reason"] == "disk errors in dmesg"
    assert "PATCH /api/v1/nodes/n2 -> ok" in by_action["cordon"]["detail"]
    assert f"DELETE {ER}/idle-2 -> ok" in by_action["evict"]["detail"]
    assert "left to finish: busy-2" in by_action["drain"]["detail"]

    again = run(controller, "cordon", "node/n2")
    assert (again.returncode, again.stdout) == (0, "node/n2 already cordoned\n")
    dry = run(controller, "uncordon", "node/n2", "--dry-run")
    assert dry.stdout.splitlines() == [
        "node/n2 uncordoned (dry run)",
        "  PATCH /api/v1/nodes/n2 (not sent) (merge patch: uncordon: spec.unschedulable removed, taint removed)",
    ]
    assert kube.calls() == ["PATCH /api/v1/nodes/n2", f"DELETE {ER}/idle-2"]
    undone = run(controller, "uncordon", "node/n2")
    assert (undone.returncode, undone.stdout) == (0, "node/n2 uncordoned\n"), undone.stderr
    node = kube.node("n2")
    assert "unschedulable" not in node["spec"] and TAINT not in node["spec"].get("taints", [])
    assert "runnerctl.io/cordoned" not in node["metadata"]["labels"]
    assert run(controller, "uncordon", "node/n2").stdout == "node/n2 already uncordoned\n"


def test_budget_refuses_a_drain_unless_ignore_budget(kube: FakeKubeApiserver, controller: Controller) -> None:
    # A plain cordon is the operator's own and not bound by the budget; it does take the pool's one slot.
    assert run(controller, "cordon", "node/n1").returncode == 0
    refused = run(controller, "drain", "node/n3")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith(
        "error: node/n3 not changed: pool linux: 1 of 1 controller cordons in use"
    )
    assert "budget exhausted" in refused.stderr and "drain it anyway with --ignore-budget" in refused.stderr
    dry = run(controller, "drain", "node/n3", "--dry-run")
    assert dry.returncode == 1 and "would not be changed (dry run)" in dry.stderr
    assert kube.calls() == ["PATCH /api/v1/nodes/n1"]

    forced = run(controller, "drain", "node/n3", "--ignore-budget")
    assert (forced.returncode, forced.stdout) == (0, "node/n3 cordoned\nnode/n3 drained\n"), forced.stderr
    assert kube.calls() == ["PATCH /api/v1/nodes/n1", "PATCH /api/v1/nodes/n3"]


def test_someone_elses_cordon_is_never_taken_over(kube: FakeKubeApiserver, controller: Controller) -> None:
    with kube.lock:
        kube.nodes["n4"]["spec"]["unschedulable"] = True  # `kubectl cordon n4`: no runnerctl label
    kube.add_arc_runner(NS, "idle-4", "n4")
    cordon = run(controller, "cordon", "node/n4")
    assert (cordon.returncode, cordon.stdout) == (0, "node/n4 already cordoned\n")
    assert "cordoned by someone else, not runnerctl" in cordon.stderr
    drain = run(controller, "drain", "node/n4")
    assert drain.returncode == 1
    assert "runnerctl neither takes it over nor drains it (use kubectl)" in drain.stderr
    uncordon = run(controller, "uncordon", "node/n4")
    assert uncordon.returncode == 1
    assert "runnerctl leaves it alone; uncordon it anyway with --force" in uncordon.stderr
    assert kube.calls() == [] and (NS, "idle-4") in kube.runners

    forced = run(controller, "uncordon", "node/n4", "--force")
    assert (forced.returncode, forced.stdout) == (0, "node/n4 uncordoned\n"), forced.stderr
    assert kube.calls() == ["PATCH /api/v1/nodes/n4"]
    assert "unschedulable" not in kube.node("n4")["spec"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("cordon", "node/nope"), 1, "error: node 'nope' not found in the cluster"),
        (
            ("drain", "node/other"),
            1,
            "error: node other is in the cluster but in no configured fleet (node selectors: linux: pool=linux)",
        ),
        (("cordon", "pod/x"), 2, "'pod/x' is not node/NAME or runner/ID"),
        (("cordon", "node/n1", "-l", "pool=linux"), 2, "-l applies to runners only"),
        (("uncordon", "node/BAD_NAME"), 1, "error: path.name: String should match pattern"),
    ],
    ids=["unknown-node", "no-fleet", "unknown-type", "selector-with-node", "invalid-name"],
)
def test_nodes_no_fleet_covers_and_usage_errors(
    kube: FakeKubeApiserver, controller: Controller, args: tuple[str, ...], code: int, message: str
) -> None:
    done = run(controller, *args)
    assert (done.returncode, done.stdout) == (code, "")
    assert message in done.stderr
    assert kube.calls() == []


def test_get_nodes_and_describe_node(kube: FakeKubeApiserver, controller: Controller) -> None:
    kube.add_arc_runner(NS, "idle-1", "n1")
    kube.add_arc_runner(NS, "busy-1", "n1", job="42")
    with kube.lock:
        kube.nodes["n4"]["spec"]["unschedulable"] = True
    assert run(controller, "cordon", "node/n1", "--reason", "fan noise").returncode == 0

    table = run(controller, "get", "nodes")
    assert table.returncode == 0, table.stderr
    assert [line.split() for line in table.stdout.splitlines()] == [
        ["NAME", "POOL", "STATUS", "CORDONED-BY", "TAINT", "INCIDENT", "BUSY", "IDLE"],
        ["n1", "linux", "cordoned", "admin-token", "runnerctl.io/sick", "<none>", "1", "1"],
        ["n2", "linux", "schedulable", "<none>", "<none>", "<none>", "0", "0"],
        ["n3", "linux", "schedulable", "<none>", "<none>", "<none>", "0", "0"],
        ["n4", "linux", "cordoned", "by", "someone", "else", "someone", "else", "<none>", "<none>", "0", "0"],
    ]
    assert run(controller, "get", "nodes", "-o", "name").stdout == "node/n1\nnode/n2\nnode/n3\nnode/n4\n"
    n1 = json.loads(run(controller, "get", "nodes", "-o", "json").stdout)[0]
    assert (n1["runnerctl"], n1["cordoned"], n1["tainted"]) == (True, True, True)

    described = run(controller, "describe", "node", "n1")
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    assert lines[:4] == ["Name:         n1", "Pool:         linux (arc runners)", "Status:       cordoned",
                         "Cordoned by:  admin-token"]  # fmt: skip
    assert "Taint:        runnerctl.io/sick=true:NoSchedule" in lines
    assert "Runner pods:  1 busy, 1 idle" in lines
    assert f"  {NS}/busy-1  busy  EphemeralRunner status.jobId=42" in lines
    newest = lines[lines.index("Actions:") + 1]  # newest first; earlier tests' entries follow
    assert (
        " cordon done by admin-token (fan noise): calls: GET /api/v1/nodes?labelSelector=pool=linux -> ok"
        in newest
    )
    assert "; PATCH /api/v1/nodes/n1 -> ok (merge patch: cordon: spec.unschedulable=true" in newest

    kube.down.on = True
    down = run(controller, "get", "nodes")
    kube.down.on = False
    assert down.returncode == 1
    assert down.stderr.startswith(
        "error: the cluster could not be read: kubernetes: GET /api/v1/namespaces/arc-runners/pods"
    )
    assert "HTTP 503" in down.stderr
