"""The evaluation harness: generate fleets, feed each to a fresh controller, score the verdicts, one table.

    python -m eval run --sim heldout4,heldout7,sim:kitchen_sink --seeds 1 2 3 --out /tmp/eval
    python -m eval score /tmp/eval/*/*          # rescore saved runs without regenerating
    python -m eval score -v /tmp/eval/heldout7/1  # also every error and miss, one line each

A seed is the simulator's own seed (heldout7 seed 701 is the fleet its README quotes). See eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from eval.adapters import load_truth
from eval.score import Score, score_run
from eval.table import render
from tests.sim.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent
SIMS = ROOT / "eval" / "sims"
RUN_FLEET = SIMS / "heldout" / "run_fleet.sh"
IMPORT = SIMS / "heldout" / "import_feed.py"
FEEDS = {
    "blackhole": SIMS / "blackhole" / "feed.py",
    "heldout": IMPORT,
    "heldout2": IMPORT,
    "heldout3": IMPORT,
    "heldout4": SIMS / "heldout4" / "feed.py",
    "heldout5": SIMS / "heldout5" / "feed.py",
    "heldout6": SIMS / "heldout5" / "feed.py",
    "heldout7": SIMS / "heldout7" / "feed.py",
    "heldout8": SIMS / "heldout7" / "feed.py",
}


SIM_NAMES = "sim:(random-[0-9]+|" + "|".join(SCENARIOS) + ")"


def _dirname(sim: str) -> str:
    return sim.replace(":", "-")


def generate_and_feed(sim: str, seed: int, out: Path, bin_dir: Path) -> Path:
    """eval/sims/heldout/run_fleet.sh: generate, start `runner-controller serve` on a fresh SQLite file,
    feed, read the verdicts back through the API into out/<sim>/<seed>/."""
    env = dict(os.environ, RUNS=str(out / _dirname(sim)), BIN=str(bin_dir), EVAL_SIM=sim)
    env.setdefault("END_TIME", "2026-12-05T08:00:00Z")
    if sim.startswith("sim:"):
        gen, feed, env["EVAL_SCENARIO"] = SIMS / "sim" / "gen.py", IMPORT, sim.split(":", 1)[1]
    else:
        gen, feed = SIMS / sim / "gen.py", FEEDS[sim]
    run = out / _dirname(sim) / str(seed)
    done = subprocess.run(
        [str(RUN_FLEET), sim.replace(":", "-"), str(gen), str(feed), str(seed)], env=env, check=False
    )
    if done.returncode:
        print(f"{sim} seed {seed}: run_fleet.sh exit {done.returncode}", file=sys.stderr)
    return run


def sim_of(run: Path) -> str:
    meta = run / "eval.json"
    if meta.exists():
        return str(json.loads(meta.read_text())["sim"])
    name = run.resolve().parent.name  # eval/sims/heldout7/runs/701 or /tmp/h7/701: guess from the folder
    for sim in sorted(FEEDS, key=len, reverse=True):
        if sim in str(run.resolve()):
            return sim
    return name.replace("sim-", "sim:", 1)


def score_dirs(runs: list[Path], verbose: bool) -> list[Score]:
    scores = []
    for run in runs:
        if not (run / "truth.json").exists() or not (run / "incidents.json").exists():
            print(f"== {run}: incomplete run, skipped", file=sys.stderr)
            continue
        try:
            truth = load_truth(run, sim_of(run))
        except KeyError as exc:
            print(f"== {run}: {exc.args[0]}", file=sys.stderr)
            continue
        s = score_run(run, truth)
        scores.append(s)
        if verbose or s.errors:
            print(f"== {s.sim} {s.seed} ({run}): {sum(s.errors.values())} errors")
            lines = s.lines if verbose else [x for x in s.lines if not x.startswith("  (")]
            print("\n".join(lines))
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="generate, feed and score fleets")
    run.add_argument("--sim", required=True, help="comma-separated: heldout4,heldout7,sim:kitchen_sink,...")
    run.add_argument("--seeds", type=int, nargs="+", required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument(
        "--bin", type=Path, default=Path(sys.executable).parent, help="virtualenv bin with the product"
    )
    run.add_argument("-v", "--verbose", action="store_true")
    score = sub.add_parser("score", help="rescore saved run directories")
    score.add_argument("runs", type=Path, nargs="+")
    score.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.cmd == "run":
        sims = args.sim.split(",")
        unknown = [x for x in sims if x not in FEEDS and not re.fullmatch(SIM_NAMES, x)]
        if unknown:
            parser.error(
                f"unknown simulator {unknown}: blackhole, heldout..heldout8, sim:random-N or sim:{'|'.join(sorted(SCENARIOS))}"
            )
        dirs = [generate_and_feed(sim, seed, args.out, args.bin) for sim in sims for seed in args.seeds]
    else:
        dirs = sorted(args.runs, key=lambda p: (str(p.parent), p.name))
    scores = score_dirs(dirs, args.verbose)
    print()
    print(render(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
