"""Kubernetes as the placement: cordon a node through the API, taint it, delete its idle runner pods (or
ARC's EphemeralRunners), and lift all of it again. The client is lightkube (docs/providers.md says why);
only the controller imports it, and only when a placement is configured.

What runnerctl holds is written on the node itself: the label `runnerctl.io/cordoned` (so its nodes are one
list call away) and annotations with the incident and times. A restarted controller or a new leader reads
them back; a node someone else cordoned has no label and is never uncordoned by runnerctl.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
from lightkube import ApiError, Client, KubeConfig
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import PatchType

from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.placement.base import ApiCall, Fleet, NodeState, PlannedVerb, RunnerKind, RunnerPod
from controller.placement.runners import ARC_GROUP, ARC_VERSION, SELECTORS, classify
from controller.placement.selectors import parse_selector

LABEL = "runnerctl.io/cordoned"
INCIDENT = "runnerctl.io/incident"
REASON = "runnerctl.io/reason"
CORDONED_AT = "runnerctl.io/cordoned-at-ms"
PROBATION = "runnerctl.io/probation-since-ms"
CORDONED_BY = "runnerctl.io/cordoned-by"
TAINT_KEY = "runnerctl.io/sick"
# A patch that carries metadata.resourceVersion is refused with 409 when the node changed since it was
# read (the taints list is replaced whole); read again and retry, a bounded number of times.
CONFLICT_RETRIES = 3
EphemeralRunner = create_namespaced_resource(ARC_GROUP, ARC_VERSION, "EphemeralRunner", "ephemeralrunners")


class KubernetesPlacement:
    NAME = "kubernetes"

    def __init__(
        self,
        fleets: dict[str, dict[str, Any]],
        kubeconfig: str | None = None,
        context: str | None = None,
        timeout_s: float = 10.0,
        client: Client | None = None,
    ) -> None:
        self.fleets = {pool: _fleet(pool, options) for pool, options in fleets.items()}
        # Each thread records its own calls: the loop's audit entries list what the loop asked, and an
        # operator's listing of nodes neither mixes its reads in nor waits for the loop to finish a pass.
        self._record = threading.local()
        if client is None:
            # In a pod: the service account's token and CA; elsewhere the kubeconfig file and context.
            config = KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
            single = config.get(context_name=context) if context else config
            client = Client(single, timeout=httpx2.Timeout(timeout_s), field_manager="runnerctl")
        self.client = client
        self.clock: Callable[[], float] = time.time

    @property
    def calls(self) -> list[ApiCall]:
        found: list[ApiCall] | None = getattr(self._record, "calls", None)
        if found is None:
            found = self._record.calls = []
        return found

    def close(self) -> None:
        self.client.close()

    def __repr__(self) -> str:  # never the credentials the client holds
        return f"KubernetesPlacement(pools={sorted(self.fleets)})"

    # -- reads ----------------------------------------------------------------------------------------

    def fleet(self, pool: str) -> Fleet | None:
        return self.fleets.get(pool)

    def node_of(self, machine: str) -> str:
        return machine  # the agent's machine is the downward API's spec.nodeName

    def node(self, name: str) -> NodeState:
        with self._call("GET", f"/api/v1/nodes/{name}", f"node {name}"):
            found = self.client.get(Node, name)
        return _state(found.to_dict())

    def nodes(self, fleet: Fleet) -> list[NodeState]:
        query = f"?labelSelector={fleet.node_selector}" if fleet.node_selector else ""
        with self._call("GET", f"/api/v1/nodes{query}", "nodes"):
            found = list(self.client.list(Node, labels=parse_selector(fleet.node_selector)))
        return [_state(node.to_dict()) for node in found]

    def runner_pods(self, name: str, fleet: Fleet) -> list[RunnerPod]:
        return [pod for _node, pod in self._pods(fleet, name)]

    def fleet_pods(self, fleet: Fleet) -> dict[str, list[RunnerPod]]:
        found: dict[str, list[RunnerPod]] = {}
        for node, pod in self._pods(fleet, None):
            found.setdefault(node, []).append(pod)
        return found

    def _pods(self, fleet: Fleet, node: str | None) -> list[tuple[str, RunnerPod]]:
        """(node, pod) for the fleet's runner pods, on one node or (None) on all of them."""
        selector = fleet.selector or SELECTORS[fleet.runner]
        fields: dict[str, Any] | None = {"spec.nodeName": node} if node else None
        on_node = f"&fieldSelector=spec.nodeName={node}" if node else ""
        path = f"/api/v1/namespaces/{fleet.namespace}/pods?labelSelector={selector}{on_node}"
        with self._call("GET", path, "runner pods"):
            pods = [
                p.to_dict()
                for p in self.client.list(
                    Pod, namespace=fleet.namespace, labels=parse_selector(selector), fields=fields
                )
            ]
        arc: dict[str, dict[str, Any]] = {}
        if fleet.runner == "arc" and pods:
            with self._call(
                "GET",
                f"/apis/{ARC_GROUP}/{ARC_VERSION}/namespaces/{fleet.namespace}/ephemeralrunners",
                "EphemeralRunners",
            ):
                for runner in self.client.list(EphemeralRunner, namespace=fleet.namespace):
                    found: dict[str, Any] = runner.to_dict()  # type: ignore[no-untyped-call]
                    arc[str(found["metadata"]["name"])] = found
        return [
            (str((pod.get("spec") or {}).get("nodeName") or ""), classify(fleet.runner, pod, arc))
            for pod in pods
        ]

    # -- writes ---------------------------------------------------------------------------------------

    def cordon(self, name: str, fleet: Fleet, incident: str, reason: str, by: str | None = None) -> bool:
        def change(node: dict[str, Any]) -> dict[str, Any] | None:
            state = _state(node)
            if (
                state.ours
                and state.unschedulable
                and (state.tainted or not fleet.taint)
                and not state.probation_since_ms
            ):
                return None
            if state.unschedulable and not state.ours:
                return None  # someone else's cordon: record it, never take it over
            patch: dict[str, Any] = {
                "metadata": {
                    "labels": {LABEL: "true"},
                    "annotations": {
                        INCIDENT: incident,
                        REASON: reason[:500],
                        CORDONED_AT: str(int(self.clock() * 1000)),
                        PROBATION: None,
                        CORDONED_BY: by,
                    },
                },
                "spec": {"unschedulable": True},
            }
            if fleet.taint:
                patch["spec"]["taints"] = _taints(node, add=True)
            return patch

        return self._patch_node(
            name,
            change,
            "cordon: spec.unschedulable=true" + (f", taint {TAINT_KEY}:NoSchedule" if fleet.taint else ""),
        )

    def uncordon(
        self, name: str, fleet: Fleet, *, probation_since_ms: int | None, force: bool = False
    ) -> None:
        def change(node: dict[str, Any]) -> dict[str, Any] | None:
            state = _state(node)
            if not state.ours and not (force and state.unschedulable):
                return None  # not ours to lift
            if not state.ours:  # a person's forced uncordon of someone else's cordon: only the cordon
                return {"metadata": {}, "spec": {"unschedulable": None}}
            annotations: dict[str, Any] = {PROBATION: str(probation_since_ms) if probation_since_ms else None}
            labels: dict[str, Any] = {}
            if probation_since_ms is None:
                labels[LABEL] = None
                annotations |= {INCIDENT: None, REASON: None, CORDONED_AT: None, CORDONED_BY: None}
            return {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {"unschedulable": None, "taints": _taints(node, add=False)},
            }

        self._patch_node(
            name,
            change,
            "uncordon: spec.unschedulable removed, taint removed"
            + (", on probation" if probation_since_ms else ""),
        )

    def release(self, name: str) -> None:
        def change(node: dict[str, Any]) -> dict[str, Any] | None:
            if not _state(node).ours:
                return None
            gone = dict.fromkeys((INCIDENT, REASON, CORDONED_AT, PROBATION, CORDONED_BY))
            return {"metadata": {"labels": {LABEL: None}, "annotations": gone}}

        self._patch_node(name, change, "release: runnerctl's label and annotations removed")

    def remove(self, pod: RunnerPod) -> bool:
        kind = "EphemeralRunner" if "/ephemeralrunners/" in pod.delete_path else "pod"
        try:
            with self._call("DELETE", pod.delete_path, f"{kind} {pod.namespace}/{pod.name}"):
                if kind == "pod":
                    self.client.delete(Pod, pod.name, namespace=pod.namespace)
                else:
                    self.client.delete(EphemeralRunner, pod.name, namespace=pod.namespace)
        except RunnerNotFound:
            return False  # gone already: what a repeated delete after a crash finds
        return True

    def planned(self, name: str, fleet: Fleet, verb: PlannedVerb = "drain") -> list[ApiCall]:
        state = self.node(name)
        path = f"/api/v1/nodes/{name}"
        if verb == "uncordon":
            if state.ours and not state.unschedulable:
                return [
                    ApiCall(
                        "PATCH", path, note="merge patch: release: runnerctl's label and annotations removed"
                    )
                ]
            if state.unschedulable:
                return [
                    ApiCall(
                        "PATCH", path, note="merge patch: uncordon: spec.unschedulable removed, taint removed"
                    )
                ]
            return []
        writes: list[ApiCall] = []
        if not state.unschedulable or (fleet.taint and not state.tainted and state.ours):
            taint = f", taint {TAINT_KEY}:NoSchedule" if fleet.taint else ""
            writes.append(ApiCall("PATCH", path, note=f"merge patch: spec.unschedulable=true{taint}"))
        if verb == "cordon":
            return writes
        for pod in self.runner_pods(name, fleet):
            if not pod.busy:
                writes.append(ApiCall("DELETE", pod.delete_path, note=f"idle: {pod.why}"))
        return writes

    # -- plumbing -------------------------------------------------------------------------------------

    def _patch_node(
        self, name: str, change: Callable[[dict[str, Any]], dict[str, Any] | None], note: str
    ) -> bool:
        """Read, decide, patch with the resourceVersion read (409 when it moved on: read again)."""
        for _attempt in range(CONFLICT_RETRIES):
            with self._call("GET", f"/api/v1/nodes/{name}", f"node {name}"):
                node = self.client.get(Node, name).to_dict()
            patch = change(node)
            if patch is None:
                return False
            patch["metadata"]["resourceVersion"] = node["metadata"].get("resourceVersion")
            try:
                with self._call(
                    "PATCH", f"/api/v1/nodes/{name}", f"node {name}", note=f"merge patch: {note}"
                ):
                    self.client.patch(Node, name, patch, patch_type=PatchType.MERGE)
                return True
            except ProviderRejected as error:
                if error.status != 409:
                    raise
        raise ProviderUnavailable(
            self.NAME, f"node {name} kept changing under the patch (409 Conflict {CONFLICT_RETRIES} times)"
        )

    @contextmanager
    def _call(self, method: str, path: str, what: str, note: str = "") -> Iterator[None]:
        """Record the call and map lightkube's errors onto the provider error hierarchy."""
        try:
            yield
        except ApiError as error:
            code = int(error.status.code or 0)
            self.calls.append(ApiCall(method, path, str(code), note))
            message = f"{method} {path}: HTTP {code} {error.status.reason or ''}: {error.status.message or ''}".strip()
            if code == 404:
                raise RunnerNotFound(self.NAME, f"{what} not found ({method} {path}: HTTP 404)") from None
            if code == 429 or code >= 500:
                raise ProviderUnavailable(self.NAME, message) from None
            raise ProviderRejected(self.NAME, message, code) from None
        except KeyError:
            # lightkube reads an error's Content-Type header unguarded: an answer without one (a load
            # balancer's bare 503) surfaces as KeyError. Something other than the apiserver answered.
            self.calls.append(ApiCall(method, path, "error without Content-Type", note))
            raise ProviderUnavailable(self.NAME, f"{method} {path}: an error answer without a body") from None
        except httpx2.HTTPError as error:
            self.calls.append(ApiCall(method, path, "unreachable", note))
            raise ProviderUnavailable(self.NAME, f"{method} {path}: {type(error).__name__}") from None
        self.calls.append(ApiCall(method, path, "ok", note))


def _fleet(pool: str, options: dict[str, Any]) -> Fleet:
    try:
        fleet = Fleet(pool=pool, **options)
    except TypeError as error:
        raise ValueError(f"kubernetes fleet {pool}: {error}") from None
    kinds: tuple[RunnerKind, ...] = ("arc", "gitlab", "buildkite")
    if fleet.runner not in kinds:
        raise ValueError(f"kubernetes fleet {pool}: runner must be one of {', '.join(kinds)}")
    return fleet


def _taints(node: dict[str, Any], *, add: bool) -> list[dict[str, Any]]:
    """The node's taints with runnerctl's added or removed; a merge patch replaces the list whole."""
    kept = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != TAINT_KEY]
    return [*kept, {"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}] if add else kept


def _state(node: dict[str, Any]) -> NodeState:
    meta = node.get("metadata") or {}
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    spec = node.get("spec") or {}

    def ms(key: str) -> int | None:
        value = notes.get(key)
        return int(value) if value and str(value).isdigit() else None

    return NodeState(
        name=str(meta.get("name", "")),
        unschedulable=bool(spec.get("unschedulable")),
        ours=labels.get(LABEL) == "true",
        tainted=any(t.get("key") == TAINT_KEY for t in spec.get("taints") or []),
        incident=notes.get(INCIDENT),
        cordoned_at_ms=ms(CORDONED_AT),
        probation_since_ms=ms(PROBATION),
        cordoned_by=notes.get(CORDONED_BY),
    )
