"""tests/sim as a generator like the held-out ones: gen.py SEED OUTDIR [END_TIME], scenario from $EVAL_SCENARIO.

EVAL_SCENARIO is a name in tests/sim/scenarios.py or `random-N`, tests/sim/random_fleet.py's scenario N
(36 on are the shapes the analysis was not developed against).

Writes OUTDIR/history.ndjson (results and `"kind": "report"` lines in event order), truth.json
(`tests.sim.Truth.to_json()`) and causes.txt.gz (the true cause of each result, in history order, "" for
a pass; eval/adapters.py reads it, the product never sees it). END_TIME is ignored: a scenario has its own
dates. Run from the repository root (eval/sims/heldout/run_fleet.sh puts it on PYTHONPATH).
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

from tests.sim.random_fleet import random_scenario
from tests.sim.scenarios import SCENARIOS
from tests.sim.simulate import simulate


def main() -> int:
    seed, out = int(sys.argv[1]), Path(sys.argv[2])
    name = os.environ.get("EVAL_SCENARIO", "kitchen_sink")
    scenario = random_scenario(int(name[7:])) if name.startswith("random-") else SCENARIOS[name]()
    fleet = simulate(scenario, seed)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "history.ndjson").open("w", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in fleet.ndjson_lines())
    (out / "truth.json").write_text(json.dumps(fleet.truth.to_json(), indent=1) + "\n")
    with gzip.open(out / "causes.txt.gz", "wt", compresslevel=1) as fh:
        fh.writelines(f"{c}\n" for c in fleet.causes)
    print(
        f"sim:{name} seed {seed}: {len(fleet.results)} results, {len(fleet.reports)} reports, {len(fleet.truth.sick)} sick"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
