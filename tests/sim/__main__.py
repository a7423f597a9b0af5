"""Write a simulated fleet as NDJSON (results and reports), with its truth and per-result causes.

python -m tests.sim --scenario kitchen_sink --seed 1 --out fleet.ndjson [--truth truth.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from tests.sim.scenarios import SCENARIOS
from tests.sim.simulate import simulate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.sim", description=__doc__)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="seed_story")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="NDJSON file for results and reports ('-': stdout)")
    parser.add_argument("--truth", help="JSON file for the ground truth")
    parser.add_argument(
        "--causes",
        help="text file: the true cause of each result, one line per result in NDJSON order ('' for a pass)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name in sorted(SCENARIOS):
            doc = (SCENARIOS[name].__doc__ or "").strip().splitlines()
            print(f"{name:16} {doc[0] if doc else ''}")
        return 0
    if not args.out:
        parser.error("--out is required (use '-' for stdout)")
    started = time.perf_counter()
    fleet = simulate(SCENARIOS[args.scenario](), args.seed)
    elapsed = time.perf_counter() - started
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for line in fleet.ndjson_lines():
            out.write(line)
            out.write("\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if args.truth:
        with open(args.truth, "w", encoding="utf-8") as fh:
            json.dump(fleet.truth.to_json(), fh, indent=2)
            fh.write("\n")
    if args.causes:
        with open(args.causes, "w", encoding="utf-8") as fh:
            fh.writelines(f"{c}\n" for c in fleet.causes)
    print(
        f"{args.scenario} seed {args.seed}: {len(fleet.results)} results, {len(fleet.reports)} reports, "
        f"{len(fleet.truth.sick)} sick, generated in {elapsed:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
