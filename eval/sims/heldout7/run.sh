#!/usr/bin/env bash
# run.sh SEED: generate small fleet SEED, feed it to a fresh controller (backfill with `runnerctl import`,
# then live over HTTP in arrival order), and save its verdicts in runs/SEED/ (eval/sims/heldout/run_fleet.sh
# says what).
HERE="$(cd "$(dirname "$0")" && pwd)"
exec "$HERE/../heldout/run_fleet.sh" heldout7 "$HERE/gen.py" "$HERE/../heldout7/feed.py" "$@"
