"""Real processes for tests: a runner-controller under uvicorn on loopback over a real database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool

from common.auth import Role
from controller.db.engine import normalise_url
from controller.db.schema import migrate
from controller.tokens import create_token

REPO = Path(__file__).resolve().parent.parent


START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def controller_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "controller.cli", *args]


def interruptible() -> None:
    """`preexec_fn` for a child the test stops with Ctrl-C: a suite started in the background by a
    shell without job control (`cmd &` in a script) ignores SIGINT, and its children inherit that,
    unlike a program an operator starts from a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def runnerctl_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "runnerctl.main", *args]


@contextmanager
def database(db: str) -> Iterator[Connection]:
    """A connection to a controller's database, SQLite or PostgreSQL, in a transaction.

    No pool: a test must not hold connections that outlive it (PostgreSQL's DROP DATABASE, a
    SQLite file a killed controller left behind).
    """
    engine = create_engine(normalise_url(db), poolclass=NullPool)
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        engine.dispose()


def count_rows(db: str, table: str) -> int:
    with database(db) as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def migrate_db(db: str) -> None:
    # In this process, not through `runner-controller migrate` (tests/controller/db covers the CLI):
    # a fresh interpreter per controller costs seconds, paid twice now that each runs on two databases.
    engine = create_engine(normalise_url(db), poolclass=NullPool)
    try:
        migrate(engine)
    finally:
        engine.dispose()


def make_token(db: str, role: str, runner: str | None = None) -> str:
    with database(db) as conn:
        return create_token(conn, Role(role), f"{role}-token", runner, int(time.time() * 1000))


@dataclass
class Controller:
    url: str
    db: str
    port: int
    log: Path
    admin_token: str
    process: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.admin_token}"}

    def get(self, path: str, token: str | None = None, **kwargs: Any) -> requests.Response:
        return requests.get(self.url + path, headers=self.headers(token), timeout=30, **kwargs)

    def post(self, path: str, token: str | None = None, **kwargs: Any) -> requests.Response:
        headers = self.headers(token) | kwargs.pop("headers", {})
        return requests.post(self.url + path, headers=headers, timeout=60, **kwargs)

    def token(self, role: str, runner: str | None = None) -> str:
        return make_token(self.db, role, runner)

    def count(self, table: str) -> int:
        return count_rows(self.db, table)

    def start(self) -> None:
        env = os.environ | {"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.5"} | self.env
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                controller_cmd("serve", "--db", self.db, "--host", "127.0.0.1", "--port", str(self.port)),
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=env,
            )
        # A guard against a hang, not a measure of speed: on a loaded 2-core machine hundreds of
        # controllers start while others work, and one start may take far longer than the usual 2 s.
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"controller exited with {self.process.returncode}:\n{self.log.read_text()}"
                )
            try:
                if requests.get(self.url + "/healthz", timeout=5).status_code == 200:
                    return
            except requests.RequestException:  # not listening yet, or too busy to answer in time
                time.sleep(0.1)
        self.stop(signal.SIGKILL)  # never leave a half-started controller behind
        raise RuntimeError(f"controller did not start within {START_TIMEOUT_S} s:\n{self.log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None


@contextmanager
def running_controller(
    tmp: Path, db: str | None = None, env: dict[str, str] | None = None
) -> Iterator[Controller]:
    """A migrated database (a SQLite file in tmp unless db names one) served on a free port."""
    db = db or f"sqlite:///{tmp / 'controller.db'}"
    migrate_db(db)
    port = free_port()
    controller = Controller(
        url=f"http://127.0.0.1:{port}",
        db=db,
        port=port,
        log=tmp / "controller.log",
        admin_token=make_token(db, "admin"),
        env=env or {},
    )
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()
