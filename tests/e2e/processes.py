"""Long-running child processes for e2e tests that are always reaped, and free loopback ports for them."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

import psutil


class ChildProcesses:
    """Children started each as the leader of its own session, output to `<logdir>/<name>.out`."""

    def __init__(self, logdir: Path) -> None:
        self._logdir = logdir
        self._running: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def spawn(self, name: str, argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        self._logdir.mkdir(parents=True, exist_ok=True)
        # If this test process dies without unwinding (SIGKILL, OOM), the kernel kills the child too.
        # The signal fires when the *thread* that spawned it ends, so spawn from a long-lived thread.
        if shutil.which("setpriv"):
            argv = ["setpriv", "--pdeathsig", "KILL", "--", *argv]
        log = (self._logdir / f"{name}.out").open("wb")
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            log.close()
            raise
        self._running.append((proc, log))
        return proc

    def stop_all(self, timeout: float) -> None:
        """SIGTERM every child's process group, SIGKILL what is left after `timeout`, reap everything."""
        # Programs like Buildbot's worker run commands in process groups of their own: find every
        # descendant before the parents exit and their children are re-parented out of reach.
        descendants: dict[int, psutil.Process] = {}
        for proc, _ in self._running:
            with contextlib.suppress(psutil.Error):
                descendants.update({p.pid: p for p in psutil.Process(proc.pid).children(recursive=True)})
        try:
            for proc, _ in self._running:
                _signal_group(proc, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for proc, _ in self._running:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            for proc, _ in self._running:
                _signal_group(proc, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            for child in descendants.values():
                with contextlib.suppress(psutil.Error):
                    child.kill()
            psutil.wait_procs(list(descendants.values()), timeout=5)
        finally:
            for _, log in self._running:
                log.close()
            self._running.clear()


def _signal_group(proc: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signum)


def free_ports(count: int) -> list[int]:
    """Distinct free TCP ports on 127.0.0.1 (free now: the caller binds them a moment later)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def port_listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
