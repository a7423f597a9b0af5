"""Feed a simulated fleet through the real ingest code into a real SQLite file and analyse it."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import TypeAdapter

from common.reports import AgentReport
from common.results import TestResult
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import Analysis, analyse
from controller.analysis.frame import Frame
from controller.db.engine import make_engine
from controller.db.schema import migrate
from controller.ingest.reports import store_reports
from controller.ingest.results import store_results
from tests.sim import Fleet

_RESULTS = TypeAdapter(list[TestResult])
_REPORTS = TypeAdapter(list[AgentReport])


def load_fleet(fleet: Fleet, directory: Path) -> Frame:
    engine = make_engine(f"sqlite:///{directory / 'analysis.db'}")
    migrate(engine)
    now = int(time.time() * 1000)
    results = _RESULTS.validate_python(fleet.results)
    reports = _REPORTS.validate_python(fleet.reports)
    with engine.begin() as conn:
        for start in range(0, len(results), 50_000):
            store_results(conn, results[start : start + 50_000], now)
        for start in range(0, len(reports), 5_000):
            store_reports(conn, reports[start : start + 5_000], now)
    frame = Frame()
    with engine.connect() as conn:
        frame.load(conn)
    engine.dispose()
    return frame


def analyse_fleet(fleet: Fleet, directory: Path, config: AnalysisConfig | None = None) -> Analysis:
    return analyse(load_fleet(fleet, directory), config=config)
