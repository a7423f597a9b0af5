"""A real `python -m agent.cli run` subprocess with a compressed schedule, for crash and outage tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.sender import Sender
from agent.settings import SenderSettings, SpoolSettings
from agent.spool import Spool

REPO = Path(__file__).resolve().parents[2]


def write_config(tmp: Path, server: str, token: str, **overrides: Any) -> Path:
    """A TOML config with fast checks and a fast sender; never any traffic beyond loopback."""
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    cache_dir = tmp / "cache-dir"
    cache_dir.mkdir(exist_ok=True)
    (cache_dir / "a.bin").write_bytes(b"x" * 4096)
    sections: dict[str, dict[str, Any]] = {
        "identity": {"id": "runner-test", "pool": "linux", "discover": False},
        "sender": {
            "backoff_base_s": 0.05,
            "backoff_max_s": 0.4,
            "read_timeout_s": 0.5,
            "connect_timeout_s": 0.5,
            "idle_poll_s": 0.1,
            "auth_backoff_s": 1.0,
        },
        "disk": {
            "interval_s": 0.2,
            "jitter_s": 0,
            "paths": [str(work)],
            "probe_dir": str(work),
            "min_free_bytes": 0,
            "min_free_ratio": 0.0,
        },
        "memory": {"interval_s": 0.2, "jitter_s": 0},
        "cache": {"interval_s": 0.5, "jitter_s": 0, "caches": {"deps": str(cache_dir)}},
        "clock": {"enabled": False},
    }
    for key, value in overrides.items():
        sections.setdefault(key, {}).update(value)
    lines = [
        f'server = "{server}"',
        f'token = "{token}"',
        f'state_dir = "{tmp / "state"}"',
        f'work_dir = "{work}"',
        'log_level = "DEBUG"',
    ]
    for name, table in sections.items():
        lines.append(f"[{name}]")
        for key, value in table.items():
            if isinstance(value, dict):
                continue
            lines.append(f"{key} = {json.dumps(value)}")
        for key, value in table.items():
            if isinstance(value, dict):
                lines.append(f"[{name}.{key}]")
                lines.extend(f"{k} = {json.dumps(v)}" for k, v in value.items())
    path = tmp / "agent.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def start(config: Path, log: Path, python_options: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    """`runner-agent run --config CONFIG` as the console script runs it; `python_options` go to the
    interpreter (e.g. `-X importtime`), stdout and stderr to `log`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_AGENT_")}
    env["PYTHONPATH"] = str(REPO)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, *python_options, "-m", "agent.cli", "run", "--config", str(config)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=out,
        )


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
        raise AssertionError("the agent did not stop within its timeout after SIGTERM") from None


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def drain(state_dir: Path, server: str, token: str, timeout_s: float = 20.0) -> Spool:
    """What a restarted agent does first: send what the spool still holds. Returns the (open) spool."""
    spool = Spool(state_dir, SpoolSettings())
    sender = Sender(
        server, token, spool, SenderSettings(backoff_base_s=0.05, backoff_max_s=0.2, read_timeout_s=2.0)
    )
    deadline = time.monotonic() + timeout_s
    try:
        while spool.stats()["reports"] and time.monotonic() < deadline:
            if sender.send_once().retry:
                time.sleep(0.1)
    finally:
        sender.close()
    return spool
