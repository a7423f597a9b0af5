"""A simulated fleet's history (results and agent reports, as wire records) with its ground truth."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter

from common.reports import AgentReport
from common.results import TestResult
from tests.sim.truth import Truth

_TIME_ADAPTER = TypeAdapter(datetime)


def _ms(text: str) -> int:
    return round(_TIME_ADAPTER.validate_python(text).timestamp() * 1000)


@dataclass
class Fleet:
    results: list[dict[str, Any]]  # public result records, time-ordered
    reports: list[dict[str, Any]]  # agent reports without "kind", time-ordered
    truth: Truth
    # Ground truth per result (same order as `results`): "" for a pass, else "flaky", "broken", "platform",
    # "outage", "base", "abort", "interaction:<runner>", "resource:<dimension>" or "sick:<kind>:<entity>".
    causes: list[str] = field(default_factory=list, repr=False)
    result_ms: list[int] | None = field(default=None, repr=False, compare=False)
    report_ms: list[int] | None = field(default=None, repr=False, compare=False)

    def noisy_tests(self, share: float = 0.01) -> set[str]:
        """Tests the truth calls healthy whose background failures ("base") reached `share` of their
        runs. The simulator lets healthy tests fail up to ~2 % at random; one failing a run in a
        hundred, passing on rerun, is flaky to whoever reruns it, so a verdict of flaky there is no
        error, and none is required either."""
        runs: Counter[str] = Counter()
        base: Counter[str] = Counter()
        for record, cause in zip(self.results, self.causes, strict=True):
            runs[record["test_id"]] += 1
            base[record["test_id"]] += cause == "base"
        return {test for test, n in runs.items() if base[test] >= share * n} - set(self.truth.flaky_tests)

    def ndjson_lines(self) -> Iterator[str]:
        """Results as-is and reports with "kind": "report", merged by event time (results first on ties)."""
        rms = self.result_ms if self.result_ms is not None else [_ms(r["time"]) for r in self.results]
        pms = self.report_ms if self.report_ms is not None else [_ms(r["observed_at"]) for r in self.reports]
        dumps = json.JSONEncoder(separators=(",", ":")).encode
        i = j = 0
        while i < len(self.results) or j < len(self.reports):
            if j >= len(self.reports) or (i < len(self.results) and rms[i] <= pms[j]):
                yield dumps(self.results[i])
                i += 1
            else:
                yield dumps({"kind": "report", **self.reports[j]})
                j += 1

    def validate(self) -> None:
        """Every record through the wire models; raises pydantic.ValidationError on the first bad one."""
        for rec in self.results:
            TestResult.model_validate(rec)
        for rep in self.reports:
            AgentReport.model_validate(rep)
