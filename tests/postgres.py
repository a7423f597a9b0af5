"""A throwaway PostgreSQL server for tests: one per session, a fresh database per controller.

PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user on a data
directory it owns; as anyone else it runs as that user.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.servers import free_port

BIN_ENV = "RUNNERCTL_POSTGRES_BIN"


def postgres_bin() -> Path | None:
    """The newest installed server's bin directory (or RUNNERCTL_POSTGRES_BIN), None if none."""
    if os.environ.get(BIN_ENV):
        candidates = [Path(os.environ[BIN_ENV])]
    else:
        found = Path("/usr/lib/postgresql").glob("*/bin")
        candidates = sorted(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    for directory in reversed(candidates):
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    return None


def missing_reason() -> str | None:
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed (pip install -e '.[test]')"
    if postgres_bin() is None and os.environ.get(BIN_ENV):
        return f"{BIN_ENV}={os.environ[BIN_ENV]} holds no initdb and pg_ctl"
    if postgres_bin() is None:
        return (
            "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin "
            f"(apt-get install postgresql, or set {BIN_ENV})"
        )
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root, and runuser is missing to start PostgreSQL as the postgres user"
    return None


def _as_owner(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@dataclass
class PostgresServer:
    bin: Path
    directory: Path
    port: int
    data_dir: Path | None = None  # elsewhere than directory/data (then the WAL stays in directory/wal)

    @property
    def data(self) -> Path:
        return self.data_dir or self.directory / "data"

    @property
    def log(self) -> Path:
        return self.directory / "pg.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self) -> str:
        """A new, empty database; returns its name."""
        name = f"t_{secrets.token_hex(6)}"
        self._admin(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        # FORCE: a controller killed mid-test may leave sessions the server has not reaped yet.
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    @contextmanager
    def database(self) -> Iterator[str]:
        """A fresh database's URL, dropped afterwards."""
        name = self.create_database()
        try:
            yield self.url(name)
        finally:
            with contextlib.suppress(Exception):
                self.drop_database(name)

    def start(self) -> None:
        cmd = [
            str(self.bin / "pg_ctl"),
            *("-D", str(self.data), "-l", str(self.log), "-w", "-t", "60"),
            *("-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off"),
            "start",
        ]
        done = subprocess.run(_as_owner(cmd), capture_output=True, text=True, timeout=90)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({done.returncode}): {done.stderr}\n{log}")

    def stop(self) -> None:
        """Fast shutdown; a server that will not stop is killed, so no postmaster outlives the tests."""
        if not self.data.exists():
            return
        cmd = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop"]
        with contextlib.suppress(subprocess.SubprocessError):
            subprocess.run(_as_owner(cmd), capture_output=True, timeout=45)
        pid_file = self.data / "postmaster.pid"
        if pid_file.exists():
            with contextlib.suppress(ValueError, OSError):
                pid = int(pid_file.read_text().split("\n", 1)[0])
                # Killing the postmaster's process group takes its backends with it.
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)


def require_postgres() -> None:
    """Skip when no server can be started here, unless RUNNERCTL_REQUIRE_ALL=1 makes that a failure."""
    import pytest

    problem = missing_reason()
    if problem:
        if os.environ.get("RUNNERCTL_REQUIRE_ALL") == "1":
            pytest.fail(f"{problem} (RUNNERCTL_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(problem)


@contextmanager
def running_postgres(data_dir: Path | None = None, wal_dir: Path | None = None) -> Iterator[PostgresServer]:
    """Start a throwaway server on loopback (fsync off: the data dies with the test run).

    `data_dir`: an empty directory for the cluster's data (a small filesystem, say) instead of one beside
    the log; the WAL (`initdb --waldir`) then stays in the server's own temporary directory, as on a
    server whose pg_wal has its own volume. It must be writable by the user the server runs as.
    `wal_dir`: the WAL's own directory instead (a small filesystem: pg_wal's own volume), in 1 MiB
    segments so that a few MiB of writes need new ones."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError(missing_reason() or "PostgreSQL not found")
    # Not under pytest's tmp dir: that is private to root, and the server runs as `postgres`.
    directory = Path(tempfile.mkdtemp(prefix="runnerctl-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    initdb = [
        str(bin_dir / "initdb"),
        *(
            "-D",
            str(data_dir or directory / "data"),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
        ),
        *(("--waldir", str(directory / "wal")) if data_dir and not wal_dir else ()),
        *(("--waldir", str(wal_dir), "--wal-segsize", "1") if wal_dir else ()),
    ]
    server = PostgresServer(bin=bin_dir, directory=directory, port=0, data_dir=data_dir)
    try:
        done = subprocess.run(_as_owner(initdb), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr}")
        for attempt in range(3):  # the free port may be taken between probing and binding
            server.port = free_port()
            try:
                server.start()
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
