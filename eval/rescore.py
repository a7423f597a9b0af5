"""Re-analyse stored runs in process, with config overrides, for `python -m eval score`.

    python -m eval.rescore OUT RUNDIR... [-s field=json ...] [-j N]
    python -m eval score OUT/*/*

Each RUNDIR is what `python -m eval run` (or run_fleet.sh) left (controller.db, truth.json,
history.ndjson.gz, eval.json). OUT/<sim>/<seed>/ gets the incidents, tests and outages as runnerctl
prints them, with links to the truth and what the adapters read beside it, so that a change is graded
in a minute instead of a fresh import. The runners keep what the stored run listed, with this
analysis's health in place of the stored one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from common.api import Health
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import analyse
from controller.analysis.frame import Frame
from controller.db import tables
from controller.db.engine import make_engine


def rescore(out: str, run: str, overrides: list[str]) -> str:
    config = AnalysisConfig(**{k: json.loads(v) for k, v in (s.split("=", 1) for s in overrides)})
    engine = make_engine(f"sqlite:///{Path(run) / 'controller.db'}")
    # Runs stored before a table the analysis reads existed (jobs, 0009) get it empty, as a migration would.
    tables.metadata.create_all(engine, tables=[tables.jobs])
    frame = Frame()
    with engine.connect() as conn:
        frame.load(conn)
    engine.dispose()
    analysis = analyse(frame, config=config)
    target = Path(out) / Path(run).resolve().parent.name / Path(run).name
    target.mkdir(parents=True, exist_ok=True)
    (target / "incidents.json").write_text(json.dumps(analysis.incidents, default=str))
    (target / "tests.json").write_text(json.dumps(analysis.tests, default=str))
    (target / "outages.json").write_text(json.dumps({"items": analysis.outages}, default=str))
    stored_runners = Path(run) / "runners.json"
    if stored_runners.exists():
        # The runners as the API lists them, each with the health this analysis gives it (the API's
        # Health defaults where it names none), so red herrings and false health are graded too.
        runners = json.loads(stored_runners.read_text())
        for runner in runners:
            runner["health"] = Health(**analysis.health.get(runner["identity"]["id"], {})).model_dump()
        (target / "runners.json").write_text(json.dumps(runners))
    for name in ("truth.json", "history.ndjson.gz", "eval.json", "causes.txt.gz", "failures.tsv.gz"):
        if not (target / name).exists() and (Path(run) / name).exists():
            os.symlink((Path(run) / name).resolve(), target / name)
    return str(target)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("-s", action="append", default=[], help="an AnalysisConfig field=JSON value")
    parser.add_argument("-j", type=int, default=1, help="processes")
    args = parser.parse_args()
    with ProcessPoolExecutor(args.j) as pool:
        for done in pool.map(rescore, [args.out] * len(args.runs), args.runs, [args.s] * len(args.runs)):
            print(done, file=sys.stderr)


if __name__ == "__main__":
    main()
