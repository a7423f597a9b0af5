"""The build's environment for the small suite Buildbot runs: a scratch directory and simulated flakes.

RUNNERCTL_SCRATCH is set by the Buildbot step from the worker's state; the suite itself knows nothing
about sick workers, it just fails when the runner's scratch space is broken, as real suites do.
"""

import os
from pathlib import Path

import pytest
from scratchspace import Scratch


def _flaky_names() -> set[str]:
    return {name.strip() for name in os.environ.get("RUNNERCTL_FLAKY", "").split(",") if name.strip()}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    # A flake is a failure that belongs to one test, not to the runner: it fails wherever it runs.
    if item.name in _flaky_names():
        raise AssertionError(f"simulated flake in {item.name} (RUNNERCTL_FLAKY)")


@pytest.fixture
def scratch(request: pytest.FixtureRequest) -> Scratch:
    root = Path(os.environ.get("RUNNERCTL_SCRATCH") or "scratch").absolute()
    return Scratch(root / request.node.name)
