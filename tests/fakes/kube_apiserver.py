"""A fake kube-apiserver: nodes, pods and ARC's EphemeralRunners, over real HTTP on loopback.

Built from the published descriptions, not from our client:
- `kubernetes/kubernetes` `api/openapi-spec/v3/api__v1_openapi.json` (commit 001a778f): `GET /api/v1/nodes`
  and `/api/v1/namespaces/{namespace}/pods` take `labelSelector` and `fieldSelector` and answer a `NodeList`
  / `PodList`; `PATCH /api/v1/nodes/{name}` accepts `application/json-patch+json`,
  `application/merge-patch+json` and `application/strategic-merge-patch+json` and answers 200 with the Node;
  `DELETE` takes `DeleteOptions` (`gracePeriodSeconds`, `propagationPolicy`).
- Errors as a `meta/v1 Status` (`kind: Status`, `status: Failure`, `reason`, `code`): 401 Unauthorized,
  404 NotFound, 409 Conflict when a write's `metadata.resourceVersion` is not the object's current one,
  415 UnsupportedMediaType for a patch type the resource does not take.
- `actions/actions-runner-controller` `charts/gha-runner-scale-set-controller/crds/
  actions.github.com_ephemeralrunners.yaml` (commit 2ee6b3b8): group `actions.github.com`, version
  `v1alpha1`, plural `ephemeralrunners`, namespaced, `status.jobId` / `status.phase`.

Chosen by this fake where the documents leave it open (docs/providers.md lists them): JSON patch and
server-side apply answer 415 here (the spec accepts them; the controller never sends them); a strategic
merge patch merges `spec.taints` by `key` (the Go type's patchMergeKey) and is a merge patch otherwise;
deleting an EphemeralRunner deletes its pod at once (the garbage collector, without delay);
`DELETE` of a pod answers 200 with the pod.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.server import FakeServer, Request, Response, json_response

ARC = "/apis/actions.github.com/v1alpha1"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
DOCUMENTED_PATCHES = ("application/json-patch+json", MERGE, STRATEGIC, "application/apply-patch+yaml")
NAME = r"(?P<name>[a-z0-9.-]+)"
NS = r"(?P<ns>[a-z0-9-]+)"


def status(
    code: int, reason: str, message: str, kind: str | None = None, name: str | None = None
) -> Response:
    details = {"name": name, "kind": kind} if name else {}
    return json_response(
        code,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details,
            "code": code,
        },
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def matches(labels: dict[str, str], selector: str) -> bool:
    """Equality-based selectors: `k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated (all must hold)."""
    for term in (t.strip() for t in selector.split(",") if t.strip()):
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, _, value = term.replace("==", "=").partition("=")
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


@dataclass
class Down:
    """While set, every request answers 503 as an apiserver behind an unhealthy load balancer would."""

    on: bool = False


class FakeKubeApiserver(FakeServer):
    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.runners: dict[tuple[str, str], dict[str, Any]] = {}
        self.down = Down()
        self.conflicts = 0  # the next PATCHes find the node changed under them (another writer)
        self.on_delete: Callable[[str, str], None] | None = None  # (namespace, name) of a deleted runner
        self._versions = itertools.count(1000)
        self.route("GET", r"/api/v1/nodes", self._list_nodes)
        self.route("GET", rf"/api/v1/nodes/{NAME}", self._get_node)
        self.route("PATCH", rf"/api/v1/nodes/{NAME}", self._patch_node)
        self.route("GET", rf"/api/v1/namespaces/{NS}/pods", self._list_pods)
        self.route("DELETE", rf"/api/v1/namespaces/{NS}/pods/{NAME}", self._delete_pod)
        self.route("GET", rf"{ARC}/namespaces/{NS}/ephemeralrunners", self._list_runners)
        self.route("DELETE", rf"{ARC}/namespaces/{NS}/ephemeralrunners/{NAME}", self._delete_runner)

    # -- the world a test sets up ---------------------------------------------------------------------

    def add_node(self, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        with self.lock:
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
                "spec": {},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }
            self._stamp(node)
            self.nodes[name] = node
            return node

    def add_pod(
        self, namespace: str, name: str, node: str, labels: dict[str, str], phase: str = "Running"
    ) -> dict[str, Any]:
        with self.lock:
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                "spec": {"nodeName": node, "containers": [{"name": "runner", "image": "runner:latest"}]},
                "status": {"phase": phase},
            }
            self._stamp(pod)
            self.pods[(namespace, name)] = pod
            return pod

    def add_arc_runner(
        self, namespace: str, name: str, node: str, job: str | None = None, scale_set: str = "linux"
    ) -> None:
        """An EphemeralRunner and its pod (same name and namespace, ARC's labels); `job`: its jobId."""
        labels = {
            "actions-ephemeral-runner": "True",
            "app.kubernetes.io/component": "runner",
            "actions.github.com/scale-set-name": scale_set,
        }
        with self.lock:
            runner = {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunner",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                "spec": {"githubConfigUrl": "https://github.com/acme/web", "githubConfigSecret": "arc"},
                "status": {"phase": "Running", "ready": True, **({"jobId": job} if job else {})},
            }
            self._stamp(runner)
            self.runners[(namespace, name)] = runner
        self.add_pod(namespace, name, node, labels)

    def set_job(self, namespace: str, name: str, job: str | None) -> None:
        with self.lock:
            status = self.runners[(namespace, name)]["status"]
            if job:
                status["jobId"] = job
            else:
                status.pop("jobId", None)

    def finish(self, namespace: str, name: str) -> None:
        """A runner's job ended: ARC deletes the single-use runner and its pod."""
        with self.lock:
            self.runners.pop((namespace, name), None)
            self.pods.pop((namespace, name), None)

    def node(self, name: str) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self.nodes[name])

    def patches(self, name: str) -> list[tuple[str, Any]]:
        """(content type, body) of every PATCH of the node, in order."""
        with self.lock:
            return [
                (r.headers.get("content-type", ""), r.json())
                for r in self.requests
                if r.method == "PATCH" and r.path == f"/api/v1/nodes/{name}"
            ]

    # -- serving --------------------------------------------------------------------------------------

    def dispatch(self, request: Request) -> Response:
        if self.down.on:
            with self.lock:
                self.requests.append(request)
            return status(503, "ServiceUnavailable", "the server is currently unable to handle the request")
        return super().dispatch(request)

    def authenticate(self, request: Request) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return status(401, "Unauthorized", "Unauthorized")
        return None

    def not_found(self, request: Request) -> Response:
        return status(404, "NotFound", "the server could not find the requested resource")

    def _stamp(self, obj: dict[str, Any]) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._versions))
        obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
        obj["metadata"].setdefault("creationTimestamp", "2026-12-01T00:00:00Z")

    def _list(self, kind: str, items: list[dict[str, Any]], request: Request) -> Response:
        selector = request.arg("labelSelector") or ""
        fields = request.arg("fieldSelector") or ""
        chosen = [i for i in items if matches(i["metadata"].get("labels") or {}, selector)]
        for term in (t for t in fields.split(",") if t):
            key, _, value = term.partition("=")
            if key != "spec.nodeName":
                return status(400, "BadRequest", f'field label not supported: "{key}"')
            chosen = [i for i in chosen if i["spec"].get("nodeName") == value]
        return json_response(
            200,
            {
                "kind": f"{kind}List",
                "apiVersion": items[0]["apiVersion"] if items else "v1",
                "metadata": {"resourceVersion": str(next(self._versions))},
                "items": copy.deepcopy(chosen),
            },
        )

    def _list_nodes(self, request: Request, match: re.Match[str]) -> Response:
        return self._list("Node", list(self.nodes.values()), request)

    def _get_node(self, request: Request, match: re.Match[str]) -> Response:
        node = self.nodes.get(match["name"])
        if node is None:
            return status(404, "NotFound", f'nodes "{match["name"]}" not found', "nodes", match["name"])
        return json_response(200, node)

    def _patch_node(self, request: Request, match: re.Match[str]) -> Response:
        name = match["name"]
        node = self.nodes.get(name)
        if node is None:
            return status(404, "NotFound", f'nodes "{name}" not found', "nodes", name)
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind not in (MERGE, STRATEGIC):
            why = "not implemented by this fake" if kind in DOCUMENTED_PATCHES else "not supported"
            return status(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format: {kind} ({why})",
            )
        try:
            patch = request.json()
        except ValueError:
            return status(400, "BadRequest", "the request body is not JSON")
        if self.conflicts > 0:
            self.conflicts -= 1
            self._stamp(node)  # another writer got there first
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != node["metadata"]["resourceVersion"]:
            return status(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on nodes "{name}": the object has been modified; please apply '
                "your changes to the latest version and try again",
                "nodes",
                name,
            )
        patch = copy.deepcopy(patch)
        (patch.get("metadata") or {}).pop("resourceVersion", None)
        taints = (patch.get("spec") or {}).pop("taints", None) if kind == STRATEGIC else None
        updated = merge_patch(node, patch)
        if taints is not None:  # patchMergeKey=key: merged entry by entry, not replaced
            by_key = {t["key"]: t for t in updated["spec"].get("taints", [])}
            by_key |= {t["key"]: t for t in taints}
            updated["spec"]["taints"] = list(by_key.values())
        self._stamp(updated)
        self.nodes[name] = updated
        return json_response(200, updated)

    def _list_pods(self, request: Request, match: re.Match[str]) -> Response:
        pods = [p for (ns, _n), p in self.pods.items() if ns == match["ns"]]
        return self._list("Pod", pods, request)

    def _delete_pod(self, request: Request, match: re.Match[str]) -> Response:
        pod = self.pods.pop((match["ns"], match["name"]), None)
        if pod is None:
            return status(404, "NotFound", f'pods "{match["name"]}" not found', "pods", match["name"])
        return json_response(200, pod)

    def _list_runners(self, request: Request, match: re.Match[str]) -> Response:
        runners = [r for (ns, _n), r in self.runners.items() if ns == match["ns"]]
        return self._list("EphemeralRunner", runners, request)

    def _delete_runner(self, request: Request, match: re.Match[str]) -> Response:
        key = (match["ns"], match["name"])
        runner = self.runners.pop(key, None)
        if runner is None:
            return status(404, "NotFound", f'ephemeralrunners.actions.github.com "{key[1]}" not found')
        self.pods.pop(key, None)  # its pod goes with it (ownerReferences)
        if self.on_delete is not None:
            self.on_delete(*key)
        return json_response(200, runner)

    def kubeconfig(self) -> str:
        """A kubeconfig (YAML is a superset of JSON) for a client of this fake."""
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                "users": [{"name": "runnerctl", "user": {"token": self.token}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "runnerctl"}}],
                "current-context": "fake",
            }
        )
