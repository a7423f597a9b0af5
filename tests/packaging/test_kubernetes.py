"""The Kubernetes manifests: valid against the Kubernetes JSON schemas (kubernetes-validate, generated from
the published OpenAPI description; strict: an unknown field is an error), RBAC exactly what a node drain
needs, and the agent's DaemonSet reading the host read-only and naming its node."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml

from controller.placement.kubernetes import TAINT_KEY, _fleet
from tests.servers import REPO

MANIFESTS = REPO / "packaging" / "kubernetes"
K8S_VERSION = "1.37.0"


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def by_kind(kind: str) -> dict[str, Any]:
    found = [
        d for path in sorted(MANIFESTS.glob("*.yaml")) for d in documents(path.name) if d["kind"] == kind
    ]
    assert len(found) == 1, kind
    return found[0]


@pytest.mark.parametrize("name", sorted(p.name for p in MANIFESTS.glob("*.yaml")))
def test_manifest_is_valid_against_the_kubernetes_schema(name: str) -> None:
    for document in documents(name):
        kubernetes_validate.validate(document, K8S_VERSION, strict=True)


def test_the_schema_check_refuses_a_misspelt_field() -> None:
    broken = by_kind("DaemonSet")
    broken["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []  # volumeMounts
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_rbac_is_exactly_what_a_node_drain_needs() -> None:
    rules = {
        (r["apiGroups"][0], r["resources"][0]): sorted(r["verbs"]) for r in by_kind("ClusterRole")["rules"]
    }
    assert rules == {
        ("", "nodes"): ["get", "list", "patch"],
        ("", "pods"): ["delete", "get", "list"],
        ("actions.github.com", "ephemeralrunners"): ["delete", "get", "list"],
    }
    binding = by_kind("ClusterRoleBinding")
    account = by_kind("ServiceAccount")["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert by_kind("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]


def test_agent_reads_the_host_read_only_names_its_node_and_never_calls_the_api() -> None:
    pod = by_kind("DaemonSet")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["RUNNER_AGENT_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "runner-agent-token"
    host = {v["name"] for v in pod["volumes"] if "hostPath" in v}
    writable = {m["name"] for m in container["volumeMounts"] if m["name"] in host and not m.get("readOnly")}
    assert writable == {"spool"}  # the disk and cache checks read; only the spool is written
    assert pod["automountServiceAccountToken"] is False
    assert {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_controller_takes_its_database_from_a_secret_and_a_valid_placement() -> None:
    (container,) = by_kind("Deployment")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert "value" not in env["RUNNER_CONTROLLER_DB"]
    assert env["RUNNER_CONTROLLER_DB"]["valueFrom"]["secretKeyRef"] == {
        "name": "runner-controller-db",
        "key": "url",
    }
    placements = yaml.safe_load(env["RUNNER_CONTROLLER_PLACEMENTS"]["value"])
    for pool, options in placements["kubernetes"]["fleets"].items():
        assert _fleet(pool, options).runner == "arc"
