"""The deployment files: systemd units verified by systemd, the compose file's shape, and the Dockerfile's
health check run against a real controller. The image is built only where a Docker daemon answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.servers import REPO, Controller, free_port, running_controller

PACKAGING = REPO / "packaging"
BIN = Path(sys.executable).parent


def unit(name: str) -> dict[str, list[str]]:
    """A unit's settings; a key may repeat (SystemCallFilter=), so each maps to all its values."""
    found: dict[str, list[str]] = {}
    for line in (PACKAGING / "systemd" / name).read_text().splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("name", ["runner-controller", "runner-agent"])
def test_systemd_unit_verifies(name: str, tmp_path: Path) -> None:
    # The units name /opt/<program>/bin/<program>; verify checks that it exists, so point at this install.
    text = (PACKAGING / "systemd" / f"{name}.service").read_text()
    assert f"ExecStart=/opt/{name}/bin/{name} " in text
    local = tmp_path / f"{name}.service"
    local.write_text(text.replace(f"/opt/{name}/bin/{name}", str(BIN / name)))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(local)], capture_output=True, text=True, timeout=60
    )
    # Unknown or misspelt directives are only warnings: any output at all is a failure here.
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_controller_unit_is_confined() -> None:
    settings = unit("runner-controller.service")
    assert settings["DynamicUser"] == ["yes"] and settings["StateDirectory"] == ["runner-controller"]
    assert settings["ProtectSystem"] == ["strict"] and settings["CapabilityBoundingSet"] == [""]
    assert "sqlite:////var/lib/runner-controller/" in settings["Environment"][0]


def test_agent_unit_can_read_proc_statvfs_and_spool() -> None:
    settings = unit("runner-agent.service")
    assert settings["StateDirectory"] == ["runner-agent"]  # the spool
    assert "/var/lib/runner-agent" in settings["ReadWritePaths"]
    assert "ProtectProc" not in settings and "ProcSubset" not in settings  # /proc/meminfo, /proc/vmstat
    assert settings["PrivateTmp"] == ["no"] and "ProtectHome" not in settings  # statvfs of /tmp and work dirs
    assert settings["ProtectSystem"] == ["strict"] and settings["NoNewPrivileges"] == ["yes"]
    assert settings["Environment"] == ["MALLOC_ARENA_MAX=1"]  # one malloc arena: docs/agent.md, Footprint


def test_compose_migrates_once_then_serves_two_replicas() -> None:
    compose = yaml.safe_load((PACKAGING / "compose" / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"postgres", "migrate", "controller-1", "controller-2"}
    assert services["migrate"]["command"] == ["migrate"]
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for replica in ("controller-1", "controller-2"):
        service = services[replica]
        assert service["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
        assert service["environment"]["RUNNER_CONTROLLER_DB"].startswith("postgresql://runnerctl:")
        assert service["build"] == {"context": "../..", "dockerfile": "packaging/Dockerfile"}
    assert services["postgres"]["healthcheck"]["test"][0] == "CMD-SHELL"


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker is not installed")
def test_compose_config_is_valid() -> None:
    env = os.environ | {"RUNNER_CONTROLLER_DB_PASSWORD": "test"}
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip("docker compose is not available")
    done = subprocess.run(
        ["docker", "compose", "-f", str(PACKAGING / "compose" / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def instructions() -> list[tuple[str, str]]:
    text = (PACKAGING / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0], line.split(None, 1)[1]) for line in lines]


def test_dockerfile_shape() -> None:
    found = instructions()
    assert found[0] == ("FROM", "python:3.11-slim")
    user = [args for op, args in found if op == "USER"]
    assert user and not user[-1].startswith(("root", "0"))
    assert ("VOLUME", '["/var/lib/runner-controller"]') in found
    assert ("ENTRYPOINT", '["runner-controller"]') in found


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    with running_controller(tmp_path_factory.mktemp("health")) as running:
        yield running


def test_dockerfile_healthcheck_probes_the_real_health_path(controller: Controller) -> None:
    check = next(args for op, args in instructions() if op == "HEALTHCHECK")
    command = json.loads(check.split(" CMD ", 1)[1])
    assert command[0] == "python"
    argv = [sys.executable, *command[1:]]
    healthy = subprocess.run(
        argv, env=os.environ | {"RUNNER_CONTROLLER_PORT": str(controller.port)}, timeout=30
    )
    assert healthy.returncode == 0
    down = subprocess.run(
        argv, env=os.environ | {"RUNNER_CONTROLLER_PORT": str(free_port())}, capture_output=True, timeout=30
    )
    assert down.returncode != 0


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not docker_answers(), reason="no Docker daemon answers here")
def test_image_builds_and_runs_as_non_root() -> None:
    tag = "runner-controller:test"
    build = subprocess.run(
        ["docker", "build", "-f", str(PACKAGING / "Dockerfile"), "-t", tag, str(REPO)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    whoami = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "id", tag, "-u"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert whoami.stdout.strip() == "10001"
