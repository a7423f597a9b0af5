from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agent.identity import Roots, resolve
from agent.settings import IdentitySettings

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "identity"


def roots(**kw: tuple[str, ...]) -> Roots:
    base: dict[str, tuple[str, ...]] = {"github": (), "gitlab": (), "buildkite": (), "image_files": ()}
    base.update(kw)
    return Roots(etc=FIX / "etc", **base)


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (
            {"github": (str(FIX / "github" / ".runner"),)},
            {"id": "gh-linux-03", "name": "gh-linux-03", "pool": "Default", "provider": "github"},
        ),
        (
            {"gitlab": (str(FIX / "gitlab" / "config.toml"),)},
            {"id": "gl-docker-07", "name": "gl-docker-07", "pool": None, "provider": "gitlab"},
        ),
        (
            {"buildkite": (str(FIX / "buildkite" / "buildkite-agent.cfg"),)},
            {
                "id": "bk-linux-12",
                "pool": "linux-large",
                "provider": "buildkite",
                "labels": ("queue=linux-large", "os=linux", "arch=amd64"),
            },
        ),
        ({}, {"id": socket.gethostname(), "name": None, "provider": None, "ephemeral": False}),
        (
            {"github": (str(FIX / "github-ephemeral" / ".runner"),)},
            {"id": "gh-jit-4411", "provider": "github", "ephemeral": True},
        ),
    ],
    ids=["github-runner", "gitlab-runner", "buildkite-agent", "bare-host", "github-ephemeral"],
)
def test_discovery(found: dict[str, tuple[str, ...]], expected: dict[str, object]) -> None:
    identity = resolve(IdentitySettings(), roots(**found))

    for key, value in expected.items():
        assert getattr(identity, key) == value, key
    assert identity.machine == socket.gethostname()
    assert identity.image == "ci-ubuntu-22:20261130.4"


def test_explicit_config_wins() -> None:
    config = IdentitySettings(
        id="linux-03",
        pool="linux",
        image="img:1",
        labels=("gpu",),
        provider="buildbot",
        ephemeral=True,
        machine="vm-03",
    )

    identity = resolve(config, roots(github=(str(FIX / "github" / ".runner"),)))

    assert (identity.id, identity.pool, identity.image, identity.provider) == (
        "linux-03",
        "linux",
        "img:1",
        "buildbot",
    )
    assert identity.labels == ("gpu",) and identity.ephemeral and identity.machine == "vm-03"
    assert identity.name == "gh-linux-03"  # not configured, so discovery still fills it


def test_configured_runner_config_path() -> None:
    config = IdentitySettings(runner_config=str(FIX / "gitlab" / "config.toml"))

    assert resolve(config, roots()).provider == "gitlab"


def test_no_discovery() -> None:
    identity = resolve(
        IdentitySettings(discover=False, id="x"), roots(github=(str(FIX / "github" / ".runner"),))
    )

    assert (identity.id, identity.provider, identity.machine, identity.image) == ("x", None, None, None)


@pytest.mark.parametrize(
    ("env", "config", "expected"),
    [
        (
            {
                "NODE_NAME": "ip-10-0-3-17",
                "POD_NAME": "linux-x7k2p-runner-abcde",
                "POD_NAMESPACE": "arc-runners",
            },
            {},
            {
                "id": "linux-x7k2p-runner-abcde",
                "machine": "ip-10-0-3-17",
                "labels": ("k8s-namespace=arc-runners",),
            },
        ),
        (
            {"NODE_NAME": "ip-10-0-3-17", "POD_NAME": "runner-agent-4f9zq", "POD_NAMESPACE": "runnerctl"},
            {"id": "agent-ip-10-0-3-17", "labels": ("role=node-agent",)},
            {"id": "agent-ip-10-0-3-17", "machine": "ip-10-0-3-17", "labels": ("role=node-agent",)},
        ),
        ({}, {}, {"id": socket.gethostname(), "machine": socket.gethostname(), "labels": ()}),
    ],
    ids=["runner-pod", "daemonset-agent", "not-in-a-pod"],
)
def test_downward_api_makes_the_node_the_machine(
    env: dict[str, str], config: dict[str, object], expected: dict[str, object]
) -> None:
    identity = resolve(
        IdentitySettings(**config),
        Roots(etc=FIX / "etc", github=(), gitlab=(), buildkite=(), image_files=(), env=env),
    )  # type: ignore[arg-type]
    assert {key: getattr(identity, key) for key in expected} == expected
