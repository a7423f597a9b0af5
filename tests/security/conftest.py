"""Security tests run real `runner-controller serve` processes on SQLite: what they probe (the HTTP
server, the gate, the parsers) does not depend on the database, which tests/controller covers twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import Controller, running_controller


@pytest.fixture(scope="module")
def sqlite_controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    with running_controller(tmp_path_factory.mktemp("controller")) as running:
        yield running
