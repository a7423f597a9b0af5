"""Pivot: executions and failures by shard, runner, machine, image or pool over a time window."""

from __future__ import annotations

from typing import Any

import numpy as np

from controller.analysis.baseline import unique_pairs
from controller.analysis.frame import Frame

DIMENSIONS = ("shard", "runner", "machine", "image", "pool")


def pivot(frame: Frame, rows: np.ndarray, by: str) -> list[dict[str, Any]]:
    """One line per value of `by` among the selected rows (a boolean mask), busiest first."""
    idx = np.flatnonzero(rows)
    if idx.size == 0:
        return []
    keys = frame.cols[by][idx]
    codes, inverse = np.unique(keys, return_inverse=True)
    executions = np.bincount(inverse)
    failures = np.bincount(inverse, weights=frame.fail[idx].astype(float))
    failed = frame.fail[idx]
    pairs, _ = unique_pairs(inverse[failed], frame.cols["test"][idx][failed])
    distinct = np.bincount(pairs[0], minlength=codes.size) if pairs.size else np.zeros(codes.size, int)
    lines: list[dict[str, Any]] = [
        {
            by: frame.name(by, int(code)) or "<none>",
            "executions": int(executions[i]),
            "failures": int(failures[i]),
            "failure_rate": round(float(failures[i] / executions[i]), 4),
            "distinct_failed_tests": int(distinct[i]),
        }
        for i, code in enumerate(codes)
    ]
    lines.sort(key=lambda line: (-int(line["failures"]), str(line[by])))
    return lines


def window(frame: Frame, start_ms: int, end_ms: int) -> np.ndarray:
    return (frame.time_ms >= start_ms) & (frame.time_ms < end_ms)
