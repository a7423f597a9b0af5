"""CI providers the controller can drain runners through and rerun jobs on; one module each."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from controller.providers import buildbot, buildkite, github, gitlab, jenkins
from controller.providers.base import Provider
from controller.providers.memory import RunnerMemory

PROVIDERS = (
    buildbot.BuildbotProvider,
    buildkite.BuildkiteProvider,
    github.GitHubProvider,
    gitlab.GitLabProvider,
    jenkins.JenkinsProvider,
)


def build_providers(config: dict[str, dict[str, Any]], engine: Engine | None = None) -> dict[str, Provider]:
    """Providers by name from settings (`{"buildbot": {"url": ...}}`); unknown names are an error.

    A provider that must remember something between cordon and uncordon (`REMEMBERS = True`) gets a
    `RunnerMemory` in the controller's database.
    """
    known = {cls.NAME: cls for cls in PROVIDERS}
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"unknown provider(s) {unknown}; known: {', '.join(sorted(known))}")
    built: dict[str, Provider] = {}
    for name, options in config.items():
        cls: Any = known[name]
        extra = {"memory": RunnerMemory(engine, name)} if engine and getattr(cls, "REMEMBERS", False) else {}
        try:
            built[name] = cls(**options, **extra)
        except TypeError as error:  # an unknown or missing key in RUNNER_CONTROLLER_PROVIDERS
            raise ValueError(f"provider {name}: {error}") from None
    return built
