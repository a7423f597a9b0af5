"""How each kind of Kubernetes-hosted CI runner shows on a node: the label selector of its pods, whether
one is busy (running a job, so left to finish), and what deleting an idle one deletes.

Sources (docs/providers.md, "Kubernetes-hosted runners", cites them with commits):
- ARC runner scale sets: each runner is an `EphemeralRunner` (actions.github.com/v1alpha1) whose pod has
  the same name and namespace and the label `actions-ephemeral-runner: "True"`; the runner has a job when
  `status.jobId` is set (`HasJob()`). Deleting an idle runner's pod alone would only make ARC recreate it
  on the same node's replacement: the EphemeralRunner is what goes.
- GitLab Runner's Kubernetes executor: one pod per CI job, labelled `manager.runner.gitlab.com/name`; the
  pod *is* the job, so a pod that is Pending or Running is busy and there is never an idle one.
- Buildkite agent-stack-k8s: one Kubernetes Job (one pod) per Buildkite job, labelled
  `buildkite.com/job-uuid`; busy likewise while Pending or Running.
"""

from __future__ import annotations

from typing import Any

from controller.placement.base import RunnerKind, RunnerPod

ARC_GROUP = "actions.github.com"
ARC_VERSION = "v1alpha1"
SELECTORS: dict[RunnerKind, str] = {
    "arc": "actions-ephemeral-runner=True",
    "gitlab": "manager.runner.gitlab.com/name",
    "buildkite": "buildkite.com/job-uuid",
}
# A pod in these phases still holds its job: Pending (pulling images, init) or Running.
LIVE_PHASES = ("Pending", "Running")


def arc_runner_path(namespace: str, name: str) -> str:
    return f"/apis/{ARC_GROUP}/{ARC_VERSION}/namespaces/{namespace}/ephemeralrunners/{name}"


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def classify(kind: RunnerKind, pod: dict[str, Any], arc_runners: dict[str, dict[str, Any]]) -> RunnerPod:
    """One runner pod, as plain JSON (metadata, status), judged busy or idle for its kind. `arc_runners`
    maps EphemeralRunner names in the pod's namespace to their objects (empty for other kinds)."""
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    phase = str((pod.get("status") or {}).get("phase") or "Unknown")
    if kind == "arc":
        runner = arc_runners.get(name)
        if runner is None:
            # No EphemeralRunner owns it any more: ARC is tearing it down; the pod is all there is.
            return RunnerPod(
                namespace, name, False, "no EphemeralRunner (being removed)", pod_path(namespace, name)
            )
        status = runner.get("status") or {}
        job = status.get("jobId") or ""
        if job:
            return RunnerPod(
                namespace, name, True, f"EphemeralRunner status.jobId={job}", arc_runner_path(namespace, name)
            )
        return RunnerPod(
            namespace,
            name,
            False,
            f"EphemeralRunner has no status.jobId (phase {status.get('phase') or 'unknown'})",
            arc_runner_path(namespace, name),
        )
    busy = phase in LIVE_PHASES
    why = f"pod phase {phase}: {'its job is running' if busy else 'its job has ended'}"
    return RunnerPod(namespace, name, busy, why, pod_path(namespace, name))
