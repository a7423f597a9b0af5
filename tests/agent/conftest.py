from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.sink import Sink, running_sink
from tests.chrony import Chrony, chrony_pair


@pytest.fixture
def sink() -> Iterator[Sink]:
    with running_sink() as s:
        yield s


@pytest.fixture(scope="session")
def chrony(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chrony]:
    with chrony_pair(tmp_path_factory.mktemp("chrony")) as pair:
        yield pair
