"""This machine's own health readings, from the real `runner-agent once -o json`: the shape every
healthy runner of the demo reports.

A reading the agent itself calls a problem (a nearly full disk here, a skewed clock) would make every
demo runner look sick alike, so that one is replaced by a healthy synthetic reading, and said so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from common.readings import Reading

AGENT_TIMEOUT_S = 30.0
GIB = 1 << 30
_READING = TypeAdapter(Reading)
# What a healthy runner reads when this machine's own reading cannot serve.
SYNTHETIC: dict[str, dict[str, Any]] = {
    "disk": {
        "check": "disk",
        "status": "ok",
        "paths": [
            {
                "path": "/",
                "mount_point": "/",
                "total_bytes": 100 * GIB,
                "free_bytes": 40 * GIB,
                "free_ratio": 0.4,
                "inodes_free_ratio": 0.9,
                "read_only": False,
            }
        ],
    },
    "memory": {
        "check": "memory",
        "status": "ok",
        "total_bytes": 16 * GIB,
        "available_bytes": 10 * GIB,
        "available_ratio": 0.625,
        "psi_some_avg10": 0.0,
        "psi_full_avg10": 0.0,
        "oom_kills": 0,
    },
}


@dataclass
class Baseline:
    readings: list[dict[str, Any]]
    real: bool  # from this machine's agent (else all synthetic)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return ", ".join(_describe(r) for r in self.readings)


def measure(directory: Path) -> Baseline:
    """Run the real agent once, with a config that keeps its state in the demo directory."""
    config = directory / "agent.toml"
    state = directory / "agent-state"
    state.mkdir(exist_ok=True)
    # A short clock timeout: an unreachable NTP server should cost the demo seconds, not half a minute.
    config.write_text(f'state_dir = "{state}"\n\n[clock]\ntimeout_s = 8.0\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_AGENT_")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agent.cli", "once", "-o", "json", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=AGENT_TIMEOUT_S,
            env=env,
        )
        outcomes = json.loads(done.stdout)
        if not isinstance(outcomes, list):
            raise json.JSONDecodeError("not a list of readings", done.stdout, 0)
    except (subprocess.TimeoutExpired, json.JSONDecodeError, OSError) as error:
        why = "timed out" if isinstance(error, subprocess.TimeoutExpired) else type(error).__name__
        return Baseline(
            readings=list(SYNTHETIC.values()),
            real=False,
            notes=[f"runner-agent once did not answer ({why}): the healthy runners use synthetic readings"],
        )
    return sanitise([o["reading"] for o in outcomes if isinstance(o, dict) and "reading" in o])


def sanitise(found: list[dict[str, Any]]) -> Baseline:
    baseline = Baseline(readings=[], real=True)
    for reading in found:
        try:
            _READING.validate_python(reading)
        except ValidationError as error:
            baseline.notes.append(f"skipped an unreadable {reading.get('check', '?')} reading: {error}")
            continue
        check = reading.get("check", "?")
        pressed = _under_pressure(reading)
        if reading.get("status") == "problem" or pressed:
            if check in SYNTHETIC:
                baseline.readings.append(SYNTHETIC[check])
                why = pressed or f"a problem ({reading.get('reason')}: {reading.get('message')})"
                baseline.notes.append(
                    f"this machine's {check} reading is {why}; the demo's healthy runners use a synthetic "
                    "healthy one"
                )
            else:
                baseline.notes.append(
                    f"this machine's {check} reading is a problem ({reading.get('reason')}); left out"
                )
            continue
        baseline.readings.append(reading)
    if not any(r.get("check") == "disk" for r in baseline.readings):
        baseline.readings.append(SYNTHETIC["disk"])
        baseline.notes.append("no disk reading from this machine: the demo uses a synthetic healthy one")
    return baseline


def _under_pressure(reading: dict[str, Any]) -> str | None:
    """Below the controller's default warning levels (2 GiB or 10 % free disk, 15 % available memory):
    healthy runners reading that would be warnings, not the healthy baseline the story needs."""
    if reading.get("check") == "disk":
        for path in reading.get("paths") or []:
            ratio, free = path.get("free_ratio"), path.get("free_bytes")
            if (ratio is not None and ratio < 0.10) or (free is not None and free < 2 * GIB):
                return f"under pressure ({path.get('path')}: {(free or 0) / GIB:.1f} GiB free)"
    if reading.get("check") == "memory":
        ratio = reading.get("available_ratio")
        if ratio is not None and ratio < 0.15:
            return f"under pressure ({ratio:.0%} available)"
    return None


def _describe(reading: dict[str, Any]) -> str:
    check, status = reading.get("check", "?"), reading.get("status", "ok")
    if status != "ok":
        return f"{check} {status} ({reading.get('reason') or '-'})"
    if check == "disk":
        paths = reading.get("paths") or [{}]
        worst = min(paths, key=lambda p: p.get("free_ratio") if p.get("free_ratio") is not None else 1.0)
        return f"disk ok ({worst.get('path')}: {worst.get('free_ratio', 0):.0%} free)"
    if check == "memory" and reading.get("available_ratio") is not None:
        return f"memory ok ({reading['available_ratio']:.0%} available)"
    if check == "clock" and reading.get("offset_s") is not None:
        return f"clock ok (offset {reading['offset_s'] * 1000:.1f} ms)"
    return f"{check} ok"
