"""bench/load.py still runs and still checks what it must: a few seconds of a small fleet on SQLite,
nothing lost, no error. The figures come from the full run (docs/reliability.md), not from here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.servers import REPO

pytestmark = pytest.mark.slow


def test_load_bench_smoke() -> None:
    command = [sys.executable, "-m", "bench.load", "--seconds", "2", "--agents", "60", "--period", "1"]
    command += ["--multiple", "2", "--results-rate", "500", "--only", "sqlite"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    phases = [line for line in lines if "reports:" in line]
    assert len(phases) == 2 and all("errors 0 | lost acknowledged: 0 reports, 0 results" in p for p in phases)
    assert lines[-1] == "no errors, no acknowledged report or result lost"
