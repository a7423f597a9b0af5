#!/usr/bin/env bash
# run.sh SEED: generate fleet SEED, import it into a fresh controller with `runnerctl import`, and save
# its verdicts in runs/SEED/ (eval/sims/heldout/run_fleet.sh says what).
HERE="$(cd "$(dirname "$0")" && pwd)"
exec "$HERE/../heldout/run_fleet.sh" heldout2 "$HERE/gen.py" "$HERE/../heldout/import_feed.py" "$@"
