#!/usr/bin/env bash
# run.sh SEED: generate fleet SEED, import it into a fresh controller with `runnerctl import`, and save
# its verdicts in runs/SEED/ (eval/sims/heldout/run_fleet.sh says what). END_TIME defaults to this hour.
HERE="$(cd "$(dirname "$0")" && pwd)"
export END_TIME="${END_TIME:-$(date -u +%Y-%m-%dT%H:00:00Z)}"
exec "$HERE/run_fleet.sh" heldout "$HERE/gen.py" "$HERE/import_feed.py" "$@"
