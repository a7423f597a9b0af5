"""The demo's own runner-controller: the real program, run as the README would run it (`migrate`,
`token create`, `serve`) in child processes, on a SQLite file in the demo directory.

runnerctl never imports the controller; it runs `python -m controller.cli` with its own interpreter,
which is the one the package was installed into.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests

from runnerctl.demo.workdir import PID_FILE, DemoError

DEFAULT_PORT = 8080
START_TIMEOUT_S = 30.0


@dataclass
class LocalController:
    directory: Path
    port: int
    admin_token: str
    ingest_token: str
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db(self) -> Path:
        return self.directory / "runnerctl.db"

    @property
    def log(self) -> Path:
        return self.directory / "controller.log"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        """SIGTERM, as a service manager would; uvicorn finishes its requests and the loops stop."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        (self.directory / PID_FILE).unlink(missing_ok=True)


def choose_port(wanted: int | None) -> tuple[int, str | None]:
    """The port to serve on, and a note when it is not the one asked for (None: 8080, else any free)."""
    if wanted:
        return wanted, None
    if wanted is None and _free(DEFAULT_PORT):
        return DEFAULT_PORT, None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return port, None if wanted == 0 else f"port {DEFAULT_PORT} is taken: serving on {port} instead"


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "controller.cli", *args]


def start(
    directory: Path, port: int, settings: dict[str, str], on_step: Callable[[str], None]
) -> LocalController:
    """Migrate, create an admin and an ingest token, serve; returns once /healthz answers."""
    db = str(directory / "runnerctl.db")
    # Only the demo's settings: a RUNNER_CONTROLLER_* left in the operator's shell must not change it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_CONTROLLER_")} | settings
    on_step(f"runner-controller migrate --db {_shown(directory, db)}")
    _run(command("migrate", "--db", db), env)
    on_step("runner-controller token create --role admin / --role ingest")
    admin, ingest = _run_together(
        [
            command("token", "create", "--role", "admin", "--name", "demo-operator", "--db", db),
            command("token", "create", "--role", "ingest", "--name", "demo-ci", "--db", db),
        ],
        env,
    )
    on_step(f"runner-controller serve --port {port}")
    log = (directory / "controller.log").open("ab")
    with log:
        # Its own session: Ctrl-C reaches the demo, which stops the controller in order.
        process = subprocess.Popen(
            command("serve", "--db", db, "--host", "127.0.0.1", "--port", str(port)),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    controller = LocalController(directory, port, admin.strip(), ingest.strip(), process)
    (directory / PID_FILE).write_text(f"{process.pid}\n", encoding="utf-8")
    try:
        _wait_healthy(controller)
    except BaseException:  # a failed start or a Ctrl-C while waiting: never leave it running
        controller.stop()
        raise
    return controller


def _wait_healthy(controller: LocalController) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if not controller.alive():
            raise DemoError(
                f"runner-controller exited with {controller.process.returncode} at start; "
                f"its log ({controller.log}):\n{controller.log_tail()}"
            )
        with contextlib.suppress(requests.RequestException):
            if requests.get(controller.url + "/healthz", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise DemoError(f"runner-controller did not answer on {controller.url} within {START_TIMEOUT_S:.0f} s")


def _run(args: list[str], env: dict[str, str]) -> str:
    return _run_together([args], env)[0]


def _run_together(commands: list[list[str]], env: dict[str, str]) -> list[str]:
    """Run the commands at once (each is a fresh interpreter: seconds on a busy machine); their stdouts."""
    running = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for args in commands
    ]
    finished = []
    for process in running:
        try:
            finished.append(process.communicate(timeout=60))
        except subprocess.TimeoutExpired:
            process.kill()
            finished.append(process.communicate())
    for args, process, (out, err) in zip(commands, running, finished, strict=True):
        if process.returncode != 0:
            shown = " ".join(["runner-controller", *args[3:]])
            raise DemoError(f"`{shown}` failed: {err.strip() or out.strip() or 'no output'}")
    return [out for out, _err in finished]


def _shown(directory: Path, db: str) -> str:
    with contextlib.suppress(ValueError):
        return str(Path(db).relative_to(Path.cwd()))
    return db
