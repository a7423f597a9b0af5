"""Turn a simulated fleet into the analysis frame (validated through the wire models on the way)."""

from __future__ import annotations

from pydantic import TypeAdapter

from common.reports import AgentReport
from common.results import TestResult
from common.timeutil import to_ms
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import Analysis, analyse
from controller.analysis.frame import Frame
from tests.sim import Fleet

_RESULTS = TypeAdapter(list[TestResult])
_REPORTS = TypeAdapter(list[AgentReport])


def frame_of(fleet: Fleet) -> Frame:
    frame = Frame()
    results = _RESULTS.validate_python(fleet.results)
    frame.append_results(
        [
            (
                i,
                to_ms(r.time),
                r.outcome.value,
                r.runner.ephemeral,
                r.test_id,
                r.runner.id,
                r.runner.effective_machine(),
                r.runner.effective_pool(),
                r.runner.image,
                r.runner.shard,
                r.job_id,
                r.run_id,
                r.commit,
            )
            for i, r in enumerate(results, start=1)
        ]
    )
    rows = []
    for report in _REPORTS.validate_python(fleet.reports):
        for reading in report.readings:
            rows.append(
                (
                    len(rows) + 1,
                    to_ms(report.observed_at),
                    report.runner.id,
                    report.runner.effective_machine(),
                    report.runner.effective_pool(),
                    report.runner.image,
                    reading.check,
                    reading.status.value,
                    reading.model_dump_json(exclude_none=True),
                )
            )
    frame.append_readings(rows)
    return frame


def analyse_fleet(fleet: Fleet, config: AnalysisConfig | None = None) -> Analysis:
    return analyse(frame_of(fleet), config=config)
