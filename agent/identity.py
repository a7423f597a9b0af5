"""Who this runner is: explicit configuration first, then what the machine and the CI runner's own
configuration say (hostname, machine-id, os-release, GitHub `.runner`, GitLab `config.toml`,
Buildkite `buildkite-agent.cfg`), and in a Kubernetes pod the downward API's NODE_NAME, POD_NAME and
POD_NAMESPACE: there the node is the machine, so readings and results of single-use runner pods add up
on the node the controller can cordon."""

from __future__ import annotations

import json
import os
import re
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.settings import IdentitySettings
from common.identity import RunnerIdentity

GITHUB_RUNNER_FILES = (
    "/home/runner/actions-runner/.runner",
    "/actions-runner/.runner",
    "/opt/actions-runner/.runner",
    "/home/github/actions-runner/.runner",
)
GITLAB_CONFIGS = ("/etc/gitlab-runner/config.toml",)
BUILDKITE_CONFIGS = (
    "/etc/buildkite-agent/buildkite-agent.cfg",
    "/usr/local/etc/buildkite-agent/buildkite-agent.cfg",
)
# GitHub's hosted-runner images write their version here; self-built images often copy the habit.
IMAGE_VERSION_FILES = ("/imagegeneration/imagedata.json",)


@dataclass
class Discovered:
    """What the machine says about itself; every field may be missing."""

    hostname: str | None = None
    machine_id: str | None = None
    image: str | None = None
    provider: str | None = None
    name: str | None = None
    pool: str | None = None
    labels: list[str] = field(default_factory=list)
    ephemeral: bool | None = None
    node: str | None = None  # the Kubernetes node this pod runs on
    pod: str | None = None


@dataclass(frozen=True)
class Roots:
    """Where discovery looks; tests point it at fixture trees."""

    etc: Path = Path("/etc")
    github: tuple[str, ...] = GITHUB_RUNNER_FILES
    gitlab: tuple[str, ...] = GITLAB_CONFIGS
    buildkite: tuple[str, ...] = BUILDKITE_CONFIGS
    image_files: tuple[str, ...] = IMAGE_VERSION_FILES
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)


def resolve(config: IdentitySettings, roots: Roots | None = None) -> RunnerIdentity:
    found = discover(config, roots or Roots()) if config.discover else Discovered()
    runner_id = config.id or found.name or found.pod or found.hostname or found.machine_id or "unknown-runner"
    labels = tuple(dict.fromkeys([*config.labels, *([] if config.labels else found.labels)]))
    return RunnerIdentity(
        id=_clean(runner_id) or "unknown-runner",
        name=_clean(config.name or found.name),
        machine=_clean(config.machine or found.node or found.hostname),
        pool=_clean(config.pool or found.pool),
        image=_clean(config.image or found.image),
        shard=_clean(config.shard),
        labels=tuple(x for x in (_clean(label) for label in labels[:100]) if x),
        provider=_clean(config.provider or found.provider),
        ephemeral=config.ephemeral if config.ephemeral is not None else bool(found.ephemeral),
    )


def discover(config: IdentitySettings, roots: Roots) -> Discovered:
    found = Discovered(hostname=socket.gethostname() or None)
    found.machine_id = _read(roots.etc / "machine-id")
    _downward_api(roots.env, found)
    found.image = _image(roots)
    extra = (config.runner_config,) if config.runner_config else ()
    for path in (*extra, *roots.github, *roots.gitlab, *roots.buildkite):
        p = Path(path)
        if not p.is_file():
            continue
        if p.name == ".runner":
            _github(p, found)
        elif p.suffix == ".toml":
            _gitlab(p, found)
        elif p.suffix == ".cfg":
            _buildkite(p, found)
        if found.provider:
            break
    return found


def _downward_api(env: Mapping[str, str], found: Discovered) -> None:
    """The pod spec's `env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}, ...]`
    (packaging/kubernetes/agent.yaml): a pod's hostname is its own name, never the node's."""
    found.node = env.get("NODE_NAME") or None
    found.pod = env.get("POD_NAME") or None
    namespace = env.get("POD_NAMESPACE")
    if found.node and namespace:
        found.labels.append(f"k8s-namespace={namespace}")


def _image(roots: Roots) -> str | None:
    for name in roots.image_files:
        try:
            data = json.loads(Path(name).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, list):  # imagedata.json: [{"group": "Operating System", "detail": ...}, ...]
            for item in data:
                if isinstance(item, dict) and "Image Version" in str(item.get("group", "")):
                    return str(item.get("detail", "")).strip() or None
    release = _os_release(roots.etc / "os-release")
    image_id, version = release.get("IMAGE_ID"), release.get("IMAGE_VERSION")
    if image_id:
        return f"{image_id}:{version}" if version else image_id
    return None


def _os_release(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (_read(path) or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out


def _github(path: Path, found: Discovered) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # the runner writes a BOM
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    found.provider = "github"
    found.name = _str(data.get("agentName"))
    found.pool = _str(data.get("poolName"))
    if isinstance(data.get("ephemeral"), bool):  # written by `config.sh --ephemeral`
        found.ephemeral = data["ephemeral"]


def _gitlab(path: Path, found: Discovered) -> None:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return
    runners = data.get("runners")
    if not isinstance(runners, list) or not runners or not isinstance(runners[0], dict):
        return
    found.provider = "gitlab"
    found.name = _str(runners[0].get("name"))  # never the token that sits next to it


def _buildkite(path: Path, found: Discovered) -> None:
    values: dict[str, str] = {}
    for line in (_read(path) or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.lstrip().startswith("#"):
            values[key.strip()] = value.strip().strip('"')
    found.provider = "buildkite"
    name = values.get("name")
    if name and "%" not in name:  # %hostname-%spawn is expanded by the agent at start: not known here
        found.name = name
    tags = [t.strip() for t in re.split(r"[,\n]", values.get("tags", "")) if t.strip()]
    found.labels = tags
    for tag in tags:
        key, _, value = tag.partition("=")
        if key == "queue" and value:
            found.pool = value


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    text = "".join(ch for ch in value if ch >= " ")[:200]
    return text or None
