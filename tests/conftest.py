"""Controllers over both databases: every test that takes `controller` or `shared_controller` runs on
SQLite and on PostgreSQL (one server per test process, a fresh database per controller)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.postgres import PostgresServer, missing_reason, running_postgres
from tests.servers import Controller, running_controller

DATABASES = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.needs_postgres),
]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL on loopback for the whole session.

    Missing: skip, unless RUNNERCTL_REQUIRE_ALL=1 (CI) makes that a failure.
    """
    problem = missing_reason()
    if problem:
        if os.environ.get("RUNNERCTL_REQUIRE_ALL") == "1":
            pytest.fail(f"{problem} (RUNNERCTL_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(problem)
    with running_postgres() as server:
        yield server


@contextmanager
def fresh_database(request: pytest.FixtureRequest, kind: str, tmp: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'controller.db'}"
        return
    # Looked up only here, so the SQLite half never waits for (or skips on) PostgreSQL.
    server: PostgresServer = request.getfixturevalue("postgres_server")
    with server.database() as url:
        yield url


@pytest.fixture(params=DATABASES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database, once SQLite and once PostgreSQL."""
    with fresh_database(request, request.param, tmp_path) as url:
        yield url


@pytest.fixture(scope="module", params=DATABASES)
def shared_database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_database(request, request.param, tmp_path_factory.mktemp("db")) as url:
        yield url


@pytest.fixture
def controller(tmp_path: Path, database_url: str) -> Iterator[Controller]:
    with running_controller(tmp_path, database_url) as running:
        yield running


@pytest.fixture(scope="module")
def shared_controller(
    tmp_path_factory: pytest.TempPathFactory, shared_database_url: str
) -> Iterator[Controller]:
    """One controller for a module whose tests do not disturb each other."""
    with running_controller(tmp_path_factory.mktemp("controller"), shared_database_url) as running:
        yield running
