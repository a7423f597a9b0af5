#!/usr/bin/env bash
# run_fleet.sh NAME GEN FEED SEED: the held-out simulators' shared runner (every heldoutN/run.sh calls it).
# Generate fleet SEED with GEN (a gen.py), feed it to a fresh controller with FEED (heldout4-8's
# feed.py: backfill with `runnerctl import`, then live over HTTP in arrival order; heldout1-3's
# import_feed.py: one `runnerctl import`), and save its verdicts in GEN's folder's runs/SEED/
# (truth.json, incidents.json, tests.json, runners.json, outages.json, analysis.json, controller.db,
# history.ndjson.gz, feed.json and failures.tsv.gz where written, and logs). RUNS=DIR puts it in
# DIR/SEED; BIN=DIR uses another virtualenv's bin; END_TIME moves the end. FEED reads the
# controller's address and tokens from RUNNERCTL_SERVER, RUNNERCTL_TOKEN (admin), HELDOUT_INGEST_TOKEN,
# HELDOUT_AGENT_TOKENS (JSON runner -> agent token), HELDOUT_DB and BIN.
set -euo pipefail
NAME="$1" GEN="$2" FEED="$3" SEED="$4"
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
BIN="${BIN:-$REPO/.venv/bin}"
OUT="${RUNS:-$(dirname "$GEN")/runs}/$SEED"
END="${END_TIME:-2026-12-05T08:00:00Z}"
TMP="$(mktemp -d /tmp/$NAME-run.XXXXXX)"
mkdir -p "$OUT"
rm -f "$OUT"/controller.db "$OUT"/*.json "$OUT"/*.log "$OUT"/history.ndjson* "$OUT"/feed.tsv "$OUT"/failures.tsv* "$OUT"/causes.txt* "$OUT"/product.txt
# grade the code of the checkout this script lives in, not whatever the virtualenv's editable install points at
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
{ git -C "$REPO" rev-parse HEAD; git -C "$REPO" status --porcelain --untracked-files=no | sed 's/^/dirty: /'; } >"$OUT/product.txt" 2>/dev/null || true
T0=$(date +%s)
"$BIN/python" "$GEN" "$SEED" "$OUT" "$END" 2>"$OUT/gen.log" || {
    echo "gen failed"
    cat "$OUT/gen.log"
    exit 1
}
cat "$OUT/gen.log"
T1=$(date +%s)
DB="$TMP/controller.db"
"$BIN/runner-controller" migrate --db "$DB" >"$OUT/migrate.log" 2>&1
TOKEN="$("$BIN/runner-controller" token create --role admin --name "$NAME-admin" --db "$DB")"
INGEST="$("$BIN/runner-controller" token create --role ingest --name "$NAME-ci" --db "$DB")"
AGENTS="{}"
for R in $("$BIN/python" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1])).get("agent_token_runners", [])))' "$OUT/truth.json"); do
    T="$("$BIN/runner-controller" token create --role agent --runner "$R" --name "agent-$R" --db "$DB")"
    AGENTS="$("$BIN/python" -c 'import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]=sys.argv[3]; print(json.dumps(d))' "$AGENTS" "$R" "$T")"
done
PORT="$("$BIN/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$BIN/runner-controller" serve --db "$DB" --host 127.0.0.1 --port "$PORT" >"$OUT/controller.log" 2>&1 &
CPID=$!
trap 'kill $CPID 2>/dev/null || true; wait $CPID 2>/dev/null || true; rm -rf "$TMP"' EXIT
# runnerctl import keeps its resume offsets under the state directory: keep them out of $HOME
export RUNNERCTL_SERVER="http://127.0.0.1:$PORT" RUNNERCTL_TOKEN="$TOKEN" XDG_STATE_HOME="$TMP/state"
export HELDOUT_INGEST_TOKEN="$INGEST" HELDOUT_AGENT_TOKENS="$AGENTS" BIN HELDOUT_DB="$DB"
for _ in $(seq 100); do curl -sf "$RUNNERCTL_SERVER/healthz" >/dev/null && break; sleep 0.2; done
"$BIN/python" "$FEED" "$OUT" || echo "feed failed: see $OUT/feed.log"
T2=$(date +%s)
"$BIN/runnerctl" get incidents -o json >"$OUT/incidents.json"
"$BIN/runnerctl" get tests --all -o json >"$OUT/tests.json"
"$BIN/runnerctl" get runners -o json >"$OUT/runners.json"
curl -sf -H "Authorization: Bearer $TOKEN" "$RUNNERCTL_SERVER/v1/outages" >"$OUT/outages.json"
curl -sf -H "Authorization: Bearer $TOKEN" "$RUNNERCTL_SERVER/v1/analysis" >"$OUT/analysis.json" || true
kill "$CPID"
wait "$CPID" 2>/dev/null || true
cp "$DB" "$OUT/controller.db"
rm -f "$OUT/feed.tsv"
gzip -1 -f "$OUT/history.ndjson"
[ ! -f "$OUT/failures.tsv" ] || gzip -1 -f "$OUT/failures.tsv"
# which simulator and seed, for `python -m eval score` (EVAL_SIM: the harness's name, e.g. sim:kitchen_sink)
"$BIN/python" -c 'import json,sys; print(json.dumps({"sim": sys.argv[1], "seed": sys.argv[2]}))' "${EVAL_SIM:-$NAME}" "$SEED" >"$OUT/eval.json"
echo "seed $SEED: gen $((T1 - T0)) s, feed $((T2 - T1)) s, total $(($(date +%s) - T0)) s" | tee "$OUT/timing.log"
