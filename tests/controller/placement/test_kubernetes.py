"""The Kubernetes placement against a fake kube-apiserver built from the published API description."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.placement import build_placements
from controller.placement.base import Fleet
from controller.placement.kubernetes import LABEL, TAINT_KEY, KubernetesPlacement
from tests.fakes.kube_apiserver import MERGE, FakeKubeApiserver


def fleet(placement: KubernetesPlacement, pool: str = "linux") -> Fleet:
    found = placement.fleet(pool)
    assert found is not None
    return found


def test_cordon_patches_once_and_is_idempotent(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    assert placement.cordon("n3", fleet(placement), "inc-1", "disk full") is True
    assert placement.cordon("n3", fleet(placement), "inc-1", "disk full") is False  # nothing left to do

    node = kube.node("n3")
    assert node["spec"]["unschedulable"] is True
    assert node["spec"]["taints"] == [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}]
    assert node["metadata"]["labels"][LABEL] == "true"
    assert node["metadata"]["annotations"]["runnerctl.io/incident"] == "inc-1"
    assert kube.calls() == ["PATCH /api/v1/nodes/n3"]
    ((kind, body),) = kube.patches("n3")
    assert kind == MERGE and body["spec"]["unschedulable"] is True
    state = placement.node("n3")
    assert (state.unschedulable, state.ours, state.tainted, state.incident) == (True, True, True, "inc-1")


def test_other_taints_are_kept_and_uncordon_removes_only_ours(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    with kube.lock:
        kube.nodes["n2"]["spec"]["taints"] = [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}]
    placement.cordon("n2", fleet(placement), "inc-2", "cache")
    assert [t["key"] for t in kube.node("n2")["spec"]["taints"]] == ["gpu", TAINT_KEY]

    placement.uncordon("n2", fleet(placement), probation_since_ms=None)
    node = kube.node("n2")
    assert "unschedulable" not in node["spec"]
    assert [t["key"] for t in node["spec"]["taints"]] == ["gpu"]
    assert LABEL not in node["metadata"]["labels"]
    assert "runnerctl.io/incident" not in node["metadata"].get("annotations", {})


def test_a_node_someone_else_cordoned_is_neither_taken_over_nor_uncordoned(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    with kube.lock:
        kube.nodes["n1"]["spec"]["unschedulable"] = True  # kubectl cordon n1
    assert placement.cordon("n1", fleet(placement), "inc-3", "disk") is False
    placement.uncordon("n1", fleet(placement), probation_since_ms=None)
    assert kube.calls() == []
    assert kube.node("n1")["spec"]["unschedulable"] is True
    assert placement.node("n1").ours is False


def test_probation_uncordons_but_keeps_the_node_ours(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    placement.cordon("n3", fleet(placement), "inc-1", "disk")
    placement.uncordon("n3", fleet(placement), probation_since_ms=1234)
    state = placement.node("n3")
    assert (state.unschedulable, state.tainted, state.ours, state.probation_since_ms) == (
        False,
        False,
        True,
        1234,
    )
    placement.release("n3")
    assert placement.node("n3").ours is False


def test_arc_busy_runner_is_left_and_idle_runner_deleted_as_its_ephemeralrunner(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    kube.add_arc_runner("arc-runners", "linux-abc", "n3")
    kube.add_arc_runner("arc-runners", "linux-def", "n3", job="4711")
    kube.add_arc_runner("arc-runners", "linux-ghi", "n1")  # another node: not listed

    pods = {p.name: p for p in placement.runner_pods("n3", fleet(placement))}
    assert sorted(pods) == ["linux-abc", "linux-def"]
    assert (pods["linux-abc"].busy, pods["linux-def"].busy) == (False, True)
    assert pods["linux-def"].why == "EphemeralRunner status.jobId=4711"

    assert placement.remove(pods["linux-abc"]) is True
    assert kube.calls() == [
        "DELETE /apis/actions.github.com/v1alpha1/namespaces/arc-runners/ephemeralrunners/linux-abc"
    ]
    assert [p.name for p in placement.runner_pods("n3", fleet(placement))] == ["linux-def"]
    assert placement.remove(pods["linux-abc"]) is False  # 404: gone already, as after a crash


@pytest.mark.parametrize(
    ("pool", "labels", "phase", "busy"),
    [
        ("gl", {"manager.runner.gitlab.com/name": "k8s-linux"}, "Running", True),
        ("gl", {"manager.runner.gitlab.com/name": "k8s-linux"}, "Succeeded", False),
        ("bk", {"buildkite.com/job-uuid": "0190-aa"}, "Pending", True),
        ("bk", {"buildkite.com/job-uuid": "0190-aa"}, "Failed", False),
    ],
    ids=["gitlab-running", "gitlab-finished", "buildkite-pending", "buildkite-finished"],
)
def test_gitlab_and_buildkite_pods_are_busy_while_their_job_runs(
    kube: FakeKubeApiserver,
    placement: KubernetesPlacement,
    pool: str,
    labels: dict[str, str],
    phase: str,
    busy: bool,
) -> None:
    namespace = fleet(placement, pool).namespace
    kube.add_pod(namespace, "job-pod", "n2", labels, phase)
    kube.add_pod(namespace, "not-a-runner", "n2", {"app": "cache-warmer"}, "Running")
    (pod,) = placement.runner_pods("n2", fleet(placement, pool))
    assert (pod.name, pod.busy) == ("job-pod", busy)
    assert pod.delete_path == f"/api/v1/namespaces/{namespace}/pods/job-pod"


def test_unknown_node_is_not_found(placement: KubernetesPlacement) -> None:
    with pytest.raises(RunnerNotFound, match="node n9 not found"):
        placement.node("n9")
    with pytest.raises(RunnerNotFound):
        placement.cordon("n9", fleet(placement), "inc-1", "disk")


def test_conflict_is_read_again_and_retried(kube: FakeKubeApiserver, placement: KubernetesPlacement) -> None:
    kube.conflicts = 2
    assert placement.cordon("n3", fleet(placement), "inc-1", "disk") is True
    assert kube.calls() == ["PATCH /api/v1/nodes/n3"] * 3
    assert [c.status for c in placement.calls if c.method == "PATCH"] == ["409", "409", "ok"]
    assert kube.node("n3")["spec"]["unschedulable"] is True


def test_conflict_that_never_ends_fails_closed(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    kube.conflicts = 10
    with pytest.raises(ProviderUnavailable, match="409 Conflict 3 times"):
        placement.cordon("n3", fleet(placement), "inc-1", "disk")
    assert "unschedulable" not in kube.node("n3")["spec"]


def test_api_down_raises_unavailable_and_changes_nothing(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    kube.down.on = True
    with pytest.raises(ProviderUnavailable, match="503"):
        placement.cordon("n3", fleet(placement), "inc-1", "disk")
    kube.down.on = False
    assert "unschedulable" not in kube.node("n3")["spec"]


def test_unreachable_api_is_unavailable(kube: FakeKubeApiserver, placement: KubernetesPlacement) -> None:
    kube.stop()
    with pytest.raises(ProviderUnavailable, match="GET /api/v1/nodes/n3"):
        placement.node("n3")


def test_wrong_token_is_rejected(kube: FakeKubeApiserver, tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(kube.kubeconfig().replace("kube-t0ken", "stolen"))
    wrong = KubernetesPlacement(
        {"linux": {"runner": "arc", "namespace": "arc-runners"}}, kubeconfig=str(config)
    )
    with pytest.raises(ProviderRejected, match="401") as raised:
        wrong.node("n3")
    wrong.close()
    assert raised.value.status == 401


def test_planned_lists_the_writes_and_sends_none(
    kube: FakeKubeApiserver, placement: KubernetesPlacement
) -> None:
    kube.add_arc_runner("arc-runners", "linux-abc", "n3")
    kube.add_arc_runner("arc-runners", "linux-def", "n3", job="4711")
    planned = [str(c) for c in placement.planned("n3", fleet(placement))]
    assert planned == [
        "PATCH /api/v1/nodes/n3 (not sent) (merge patch: spec.unschedulable=true, taint runnerctl.io/sick:NoSchedule)",
        "DELETE /apis/actions.github.com/v1alpha1/namespaces/arc-runners/ephemeralrunners/linux-abc (not sent) "
        "(idle: EphemeralRunner has no status.jobId (phase Running))",
    ]
    assert kube.calls() == []


def test_pool_nodes_by_node_selector(placement: KubernetesPlacement) -> None:
    assert sorted(n.name for n in placement.nodes(fleet(placement))) == ["n1", "n2", "n3"]
    assert sorted(n.name for n in placement.nodes(fleet(placement, "gl"))) == ["n1", "n2", "n3", "other"]


def test_unknown_placement_or_runner_kind_is_a_settings_error() -> None:
    with pytest.raises(ValueError, match="unknown placement"):
        build_placements({"nomad": {}})
    with pytest.raises(ValueError, match="runner must be one of arc, gitlab, buildkite"):
        build_placements(
            {
                "kubernetes": {
                    "kubeconfig": "/dev/null",
                    "fleets": {"x": {"runner": "jenkins", "namespace": "a"}},
                }
            }
        )
