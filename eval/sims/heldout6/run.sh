#!/usr/bin/env bash
# run.sh SEED: generate fleet SEED, feed it to a fresh controller with heldout5's feed.py (backfill with
# `runnerctl import` and JUnit uploads, then live over HTTP in arrival order), and save its verdicts in
# runs/SEED/ (eval/sims/heldout/run_fleet.sh says what).
HERE="$(cd "$(dirname "$0")" && pwd)"
exec "$HERE/../heldout/run_fleet.sh" heldout6 "$HERE/gen.py" "$HERE/../heldout5/feed.py" "$@"
