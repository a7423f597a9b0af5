"""Real chronyd servers on loopback for clock tests: one serving this machine's time, one serving a
fixed skew by following the first with an `offset` (real-components.md: no makestep, always -x)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import ntplib
import pytest


@dataclass(frozen=True)
class Chrony:
    good: str  # "127.0.0.1:PORT"
    skewed: str
    skew_s: float
    dead: str  # a port nothing answers on


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_chronyd() -> str:
    path = shutil.which("chronyd") or ("/usr/sbin/chronyd" if os.path.exists("/usr/sbin/chronyd") else None)
    if path is None:
        reason = "chronyd is not installed (apt-get install chrony)"
        if os.environ.get("RUNNERCTL_REQUIRE_ALL") == "1":
            pytest.fail(reason + " and RUNNERCTL_REQUIRE_ALL=1")
        pytest.skip(reason)
    return path


@contextmanager
def chrony_pair(workdir: Path, skew_s: float = 30.0) -> Iterator[Chrony]:
    chronyd = require_chronyd()
    good_port, skew_port, dead_port = free_udp_port(), free_udp_port(), free_udp_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_start(chronyd, workdir, "good", [f"port {good_port}", "local stratum 8"]))
        _wait_answer(good_port, lambda offset: abs(offset) < 1)
        procs.append(
            _start(
                chronyd,
                workdir,
                "skewed",
                [
                    f"port {skew_port}",
                    f"server 127.0.0.1 port {good_port} iburst minpoll -2 maxpoll -2 offset {skew_s}",
                    "local stratum 9",
                ],
            )
        )
        _wait_answer(skew_port, lambda offset: abs(offset - skew_s) < 0.05)
        yield Chrony(f"127.0.0.1:{good_port}", f"127.0.0.1:{skew_port}", skew_s, f"127.0.0.1:{dead_port}")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def _start(chronyd: str, workdir: Path, name: str, lines: list[str]) -> subprocess.Popen[bytes]:
    conf = workdir / f"{name}.conf"
    conf.write_text(
        "\n".join(
            ["bindaddress 127.0.0.1", "cmdport 0", "allow 127.0.0.1", f"pidfile {workdir / name}.pid", *lines]
        )
        + "\n"
    )
    # -x: never touch this machine's clock; -d: stay in the foreground so we own the process.
    with open(workdir / f"{name}.log", "wb") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([chronyd, "-x", "-d", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=log)


def _wait_answer(port: int, ok: object, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            r = ntplib.NTPClient().request("127.0.0.1", port=port, version=3, timeout=0.5)
            if r.stratum and callable(ok) and ok(r.offset):
                return
            last = f"offset {r.offset:+.3f} stratum {r.stratum}"
        except (ntplib.NTPException, OSError) as exc:
            last = str(exc)
        time.sleep(0.2)
    raise RuntimeError(f"chronyd on port {port} not ready within {timeout_s} s: {last}")
