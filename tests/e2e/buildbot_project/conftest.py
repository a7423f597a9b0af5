"""The build's environment for the small suite Buildbot runs: scratch space, simulated flakes, a hold.

RUNNERCTL_SCRATCH is set by the Buildbot step from the worker's state; the suite itself knows nothing
about sick workers, it just fails when the runner's scratch space is broken, as real suites do.
RUNNERCTL_FLAKY names tests that fail wherever they run; RUNNERCTL_HOLD_SECONDS makes the run that slow.
"""

import os
import shutil
import time
from pathlib import Path

import pytest
from scratchspace import Scratch


def _scratch_root() -> Path:
    return Path(os.environ.get("RUNNERCTL_SCRATCH") or "scratch").absolute()


def pytest_sessionstart(session: pytest.Session) -> None:
    # Each run starts from empty scratch space, like a fresh runner; a broken one stays broken.
    shutil.rmtree(_scratch_root(), ignore_errors=True)
    time.sleep(float(os.environ.get("RUNNERCTL_HOLD_SECONDS") or 0))


def _flaky_names() -> set[str]:
    return {name.strip() for name in os.environ.get("RUNNERCTL_FLAKY", "").split(",") if name.strip()}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    # A flake is a failure that belongs to one test, not to the runner: it fails wherever it runs.
    if item.name in _flaky_names():
        raise AssertionError(f"simulated flake in {item.name} (RUNNERCTL_FLAKY)")


@pytest.fixture
def scratch(request: pytest.FixtureRequest) -> Scratch:
    return Scratch(_scratch_root() / request.node.name)
