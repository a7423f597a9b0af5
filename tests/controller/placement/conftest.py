"""A fake kube-apiserver on loopback with three nodes of pool linux, and the placement as its client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.placement.kubernetes import KubernetesPlacement
from tests.fakes.kube_apiserver import FakeKubeApiserver

TOKEN = "kube-t0ken"
FLEETS = {
    "linux": {
        "runner": "arc",
        "namespace": "arc-runners",
        "node_selector": "pool=linux",
        "drain_timeout_s": 60,
    },
    "gl": {"runner": "gitlab", "namespace": "gitlab-jobs"},
    "bk": {"runner": "buildkite", "namespace": "buildkite"},
}


@pytest.fixture
def kube() -> Iterator[FakeKubeApiserver]:
    fake = FakeKubeApiserver(TOKEN)
    fake.start()
    for name in ("n1", "n2", "n3"):
        fake.add_node(name, {"pool": "linux"})
    fake.add_node("other", {"pool": "gpu"})
    yield fake
    fake.stop()


@pytest.fixture
def placement(kube: FakeKubeApiserver, tmp_path: Path) -> Iterator[KubernetesPlacement]:
    config = tmp_path / "kubeconfig"
    config.write_text(kube.kubeconfig())
    built = KubernetesPlacement(FLEETS, kubeconfig=str(config), timeout_s=5)
    yield built
    built.close()
