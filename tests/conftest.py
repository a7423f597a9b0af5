from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import Controller, running_controller


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    with running_controller(tmp_path) as running:
        yield running


@pytest.fixture(scope="module")
def shared_controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    """One controller for a module whose tests do not disturb each other."""
    with running_controller(tmp_path_factory.mktemp("controller")) as running:
        yield running
