"""How far back the analysis reads. Rows older than the horizon never change a verdict, so retention
(controller/retention.py) may prune them, and the leader drops them from its frame.

Results count from `window_days` before as_of, rounded down to a UTC day. Readings reach further:
evidence looks back `evidence_lookback_s` before a cluster's onset, a reading speaks for
`reading_stale_s`, and cache digests are compared with what the pool held within a few hours, so
readings start whole days earlier — enough to cover all three.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.analysis.config import AnalysisConfig

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Horizon:
    results_from_ms: int
    readings_from_ms: int


def horizon(as_of_ms: int, config: AnalysisConfig) -> Horizon:
    results_from = (as_of_ms - int(config.window_days * DAY_MS)) // DAY_MS * DAY_MS
    reach_s = max(config.evidence_lookback_s, config.reading_stale_s)
    readings_from = results_from - DAY_MS * (1 + math.ceil(reach_s / 86_400))
    return Horizon(results_from, readings_from)
