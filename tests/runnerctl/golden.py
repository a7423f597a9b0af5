"""Golden files for runnerctl's output, and the one honest normalisation they need.

Everything the simulated fleet determines (event times, counts, verdicts, ids) is compared exactly.
Only wall-clock values — when an operator acted, audit keys stamped with that moment — vary between
runs: each ISO time outside the fleet's own days becomes `<now>` and each epoch-millisecond stamp near
the present becomes `<now-ms>`. A table whose cells changed is re-aligned the way runnerctl aligns it
(two spaces between columns), and a table with nothing to mask must already be in that form.

RUNNERCTL_UPDATE_SNAPSHOTS=1 rewrites the files instead of comparing.
"""

from __future__ import annotations

import difflib
import os
import re
import time
from datetime import datetime, timedelta
from pathlib import Path

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("RUNNERCTL_UPDATE_SNAPSHOTS") == "1"

_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
_EPOCH_MS = re.compile(r"(?<!\d)1\d{12}(?!\d)")
_HEADER = re.compile(r"^[A-Z][A-Z0-9%_-]*(?:  +[A-Z][A-Z0-9%_-]*)+$")


class Normaliser:
    def __init__(self, start: datetime, end: datetime) -> None:
        self.start = start - timedelta(days=1)
        self.end = end + timedelta(days=1)

    def _iso(self, found: re.Match[str]) -> str:
        at = datetime.fromisoformat(found.group(0).replace("Z", "+00:00"))
        return found.group(0) if self.start <= at <= self.end else "<now>"

    @staticmethod
    def _ms(found: re.Match[str]) -> str:
        near_now = abs(int(found.group(0)) - time.time() * 1000) < 86_400_000
        return "<now-ms>" if near_now else found.group(0)

    def text(self, raw: str) -> str:
        return _EPOCH_MS.sub(self._ms, _ISO.sub(self._iso, raw))

    def output(self, raw: str) -> str:
        """Mask wall-clock values; re-align a leading table whose cells changed."""
        lines = raw.split("\n")
        if not lines or not _HEADER.match(lines[0]):
            return self.text(raw)
        end = next((n for n, line in enumerate(lines) if not line.strip()), len(lines))
        table, rest = lines[:end], lines[end:]
        starts = [m.start() for m in re.finditer(r"\S+", table[0])]
        cells = [
            [row[a:b].rstrip() for a, b in zip(starts, [*starts[1:], None], strict=True)] for row in table
        ]
        aligned = _render(cells)
        assert aligned == table, "runnerctl's table is not aligned two spaces apart:\n" + "\n".join(table)
        masked = _render([[self.text(cell) for cell in row] for row in cells])
        return "\n".join([*masked, *(self.text(line) for line in rest)])


def _render(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[n]) for row in rows) for n in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def check(name: str, actual: str) -> None:
    path = SNAPSHOTS / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(
            f"no snapshot {path}: run with RUNNERCTL_UPDATE_SNAPSHOTS=1 and review the new file"
        )
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), actual.splitlines(keepends=True), str(path), "actual"
            )
        )
        raise AssertionError(
            f"{name} differs from its snapshot (RUNNERCTL_UPDATE_SNAPSHOTS=1 to accept):\n{diff}"
        )
