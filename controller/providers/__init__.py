"""CI providers the controller can drain runners through and rerun jobs on; one module each."""

from __future__ import annotations

from typing import Any

from controller.providers import buildbot, buildkite, jenkins
from controller.providers.base import Provider

PROVIDERS = (
    buildbot.BuildbotProvider,
    buildkite.BuildkiteProvider,
    jenkins.JenkinsProvider,
)


def build_providers(config: dict[str, dict[str, Any]]) -> dict[str, Provider]:
    """Providers by name from settings (`{"buildbot": {"url": ...}}`); unknown names are an error."""
    known = {cls.NAME: cls for cls in PROVIDERS}
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"unknown provider(s) {unknown}; known: {', '.join(sorted(known))}")
    return {name: known[name](**options) for name, options in config.items()}
