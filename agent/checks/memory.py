"""The memory check: available memory, swap, pressure stall information and OOM kills.

Reads /proc directly (under a configurable root, so tests use fixture trees as node_exporter does).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

from pydantic import Field

from agent.checks.base import CheckConfig
from common.plural import counted
from common.readings import MemoryReading, Status

NAME = "memory"
OOM_STATE_FILE = "memory-oom.json"


class MemoryConfig(CheckConfig):
    interval_s: float = Field(default=30.0, gt=0)
    timeout_s: float = Field(default=10.0, gt=0)
    proc_root: str = "/proc"
    state_dir: str | None = Field(default=None, description="where the OOM counter is kept; the agent's")
    min_available_ratio: float = Field(default=0.05, ge=0, le=1)
    max_psi_full_avg60: float = Field(default=10.0, ge=0, description="percent of time all tasks stalled")


# The previous oom_kill counter, per proc root, for when no state dir is configured.
_last_oom: dict[str, int] = {}
_lock = threading.Lock()


def collect(config: MemoryConfig) -> MemoryReading:
    root = Path(config.proc_root)
    try:
        info = _meminfo(root / "meminfo")
    except OSError as exc:
        return MemoryReading(status=Status.unknown, reason="NoMeminfo", message=f"{root}/meminfo: {exc}")
    total = info.get("MemTotal")
    available = info.get("MemAvailable")
    swap_used = None
    if "SwapTotal" in info and "SwapFree" in info:
        swap_used = max(0, info["SwapTotal"] - info["SwapFree"])
    psi = _psi(root / "pressure" / "memory")
    oom = _oom_since_last(root, config)
    reading = MemoryReading(
        total_bytes=total,
        available_bytes=available,
        available_ratio=(min(1.0, available / total) if total and available is not None else None),
        swap_used_bytes=swap_used,
        psi_some_avg10=psi.get(("some", "avg10")),
        psi_some_avg60=psi.get(("some", "avg60")),
        psi_full_avg10=psi.get(("full", "avg10")),
        psi_full_avg60=psi.get(("full", "avg60")),
        oom_kills=oom,
    )
    problems: list[tuple[str, str]] = []
    if oom:
        problems.append(("OomKills", f"{counted(oom, 'OOM kill')} since the previous reading"))
    if reading.available_ratio is not None and reading.available_ratio < config.min_available_ratio:
        problems.append(("MemoryLow", f"{reading.available_ratio:.1%} of memory available"))
    if reading.psi_full_avg60 is not None and reading.psi_full_avg60 > config.max_psi_full_avg60:
        problems.append(
            (
                "MemoryPressure",
                f"all tasks stalled on memory {reading.psi_full_avg60:.1f}% of the last minute",
            )
        )
    if problems:
        reading.status = Status.problem
        reading.reason = problems[0][0]
        reading.message = "; ".join(m for _, m in problems)
    elif total is None or available is None:
        reading.status = Status.unknown
        reading.reason = "NoMeminfo"
        reading.message = "MemTotal or MemAvailable missing from meminfo"
    return reading


def _meminfo(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        try:
            value = int(parts[0])
        except ValueError:
            continue
        out[key.strip()] = value * 1024 if len(parts) > 1 and parts[1] == "kB" else value
    return out


def _psi(path: Path) -> dict[tuple[str, str], float]:
    """`some avg10=0.00 avg60=0.00 avg300=0.00 total=0`; absent on kernels without CONFIG_PSI."""
    out: dict[tuple[str, str], float] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        kind, *fields = line.split()
        for field in fields:
            name, _, value = field.partition("=")
            if name in ("avg10", "avg60"):
                with contextlib.suppress(ValueError):
                    out[(kind, name)] = float(value)
    return out


def _oom_since_last(root: Path, config: MemoryConfig) -> int | None:
    try:
        counter = _vmstat_oom(root / "vmstat")
    except OSError:
        return None
    if counter is None:
        return None
    with _lock:
        key = str(root.resolve())
        previous = _load(config, key)
        _store(config, key, counter)
    if previous is None or counter < previous:  # first reading, or the counter reset with a reboot
        return 0
    return counter - previous


def _vmstat_oom(path: Path) -> int | None:
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill":
            return int(value.strip())
    return None


def _state_file(config: MemoryConfig) -> Path | None:
    return Path(config.state_dir) / OOM_STATE_FILE if config.state_dir else None


def _load(config: MemoryConfig, key: str) -> int | None:
    state = _state_file(config)
    if state is None:
        return _last_oom.get(key)
    try:
        value = json.loads(state.read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def _store(config: MemoryConfig, key: str, counter: int) -> None:
    state = _state_file(config)
    if state is None:
        _last_oom[key] = counter
        return
    try:
        data = json.loads(state.read_text())
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data[key] = counter
    tmp = state.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, state)  # a crash mid-write leaves the old counter, never a torn file
    except OSError:
        _last_oom[key] = counter
