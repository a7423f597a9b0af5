#!/usr/bin/env bash
# run.sh SEED: generate fleet SEED, feed it to a fresh controller, save its verdicts in runs/SEED/.
set -euo pipefail
SEED="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BIN="${BIN:-$REPO/.venv/bin}"
OUT="${RUNS:-$HERE/runs}/$SEED"
TMP="$(mktemp -d /tmp/indep4-run.XXXXXX)"
mkdir -p "$OUT"
END="${END_TIME:-$(date -u +%Y-%m-%dT%H:00:00Z)}"
T0=$(date +%s)
"$BIN/python" "$HERE/gen.py" "$SEED" "$OUT" "$END" | tee "$OUT/gen.log"
DB="$TMP/controller.db"
"$BIN/runner-controller" migrate --db "$DB" >"$TMP/migrate.log" 2>&1
TOKEN="$("$BIN/runner-controller" token create --role admin --db "$DB")"
PORT="$("$BIN/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$BIN/runner-controller" serve --db "$DB" --host 127.0.0.1 --port "$PORT" >"$OUT/controller.log" 2>&1 &
CPID=$!
trap 'kill $CPID 2>/dev/null || true; wait $CPID 2>/dev/null || true; rm -rf "$TMP"' EXIT
export RUNNERCTL_SERVER="http://127.0.0.1:$PORT" RUNNERCTL_TOKEN="$TOKEN"
for _ in $(seq 100); do curl -sf "$RUNNERCTL_SERVER/healthz" >/dev/null && break; sleep 0.2; done
T1=$(date +%s)
"$BIN/runnerctl" import "$OUT/history.ndjson" >"$OUT/import.log" 2>&1 || echo "import failed: see $OUT/import.log"
T2=$(date +%s)
"$BIN/runnerctl" get incidents -o json >"$OUT/incidents.json"
"$BIN/runnerctl" get tests --all -o json >"$OUT/tests.json"
"$BIN/runnerctl" get runners -o json >"$OUT/runners.json"
curl -sf -H "Authorization: Bearer $TOKEN" "$RUNNERCTL_SERVER/v1/outages" >"$OUT/outages.json"
curl -sf -H "Authorization: Bearer $TOKEN" "$RUNNERCTL_SERVER/v1/analysis" >"$OUT/analysis.json" || true
kill "$CPID"; wait "$CPID" 2>/dev/null || true
cp "$DB" "$OUT/controller.db"
rm -f "$OUT/history.ndjson.gz"; gzip -1 -f "$OUT/history.ndjson"
echo "seed $SEED: import $((T2 - T1)) s, total $(( $(date +%s) - T0 )) s" | tee -a "$OUT/gen.log"
