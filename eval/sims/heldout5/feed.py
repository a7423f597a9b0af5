"""Feed a generated heldout5 (or heldout6) fleet to a running controller: feed.py OUTDIR.

Three channels, as a real installation would have them:

* backfill: everything that arrived before truth["feed"]["backfill_until_ms"]. The JUnit files of
  the pool whose CI uploads JUnit (windows in heldout5, mac in heldout6) go first: a few through `runnerctl import --no-wait` with identity flags (an operator
  importing old Jenkins artifacts by hand), the rest through `POST /v1/results/junit` with the identity
  as query parameters; then the NDJSON results and reports through one `runnerctl import`, which waits
  for the verdicts;
* live: the rest in arrival order, one simulated hour per chunk: NDJSON results (`POST /v1/results`),
  agent reports (`POST /v1/reports`, at most 500 a request; two agents with their own `agent` token),
  each Jenkins job's JUnit (`POST /v1/results/junit`); about 2 % of the hourly result batches are sent
  twice (an uploader retrying after a lost acknowledgement);
* a final `POST /v1/analysis/run`, then the stored counts are checked against what was generated.

Environment: RUNNERCTL_SERVER, RUNNERCTL_TOKEN (admin), HELDOUT_INGEST_TOKEN, HELDOUT_AGENT_TOKENS (JSON
{runner: token}), HELDOUT_DB, BIN (for runnerctl): eval/sims/heldout/run_fleet.sh sets them.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import requests

SERVER = os.environ["RUNNERCTL_SERVER"]
ADMIN = os.environ["RUNNERCTL_TOKEN"]
INGEST = os.environ.get("HELDOUT_INGEST_TOKEN") or ADMIN
AGENTS = json.loads(os.environ.get("HELDOUT_AGENT_TOKENS") or "{}")
BIN = os.environ.get("BIN", str(Path(__file__).resolve().parents[2] / ".venv" / "bin"))
DB = os.environ.get("HELDOUT_DB")

session = requests.Session()
problems: list[str] = []
tally = {
    "results_sent": 0,
    "results_new": 0,
    "results_dup": 0,
    "reports_sent": 0,
    "reports_new": 0,
    "reports_dup": 0,
    "junit_posts": 0,
    "junit_new": 0,
    "junit_cli": 0,
    "requests": 0,
    "errors": 0,
}


def post(path: str, token: str, **kwargs) -> dict | None:
    headers = kwargs.pop("headers", {})
    for attempt in range(4):
        tally["requests"] += 1
        try:
            r = session.post(
                SERVER + path, headers={"Authorization": f"Bearer {token}", **headers}, timeout=600, **kwargs
            )
        except requests.RequestException as error:
            problems.append(f"POST {path}: {error!r}")
            tally["errors"] += 1
            time.sleep(2)
            continue
        if r.status_code < 300:
            return r.json()
        tally["errors"] += 1
        problems.append(f"POST {path} -> {r.status_code}: {r.text[:600]}")
        if r.status_code in (500, 502, 503, 504, 507) and attempt < 3:
            time.sleep(2 + attempt * 3)
            continue
        return None
    return None


def send_results(lines: list[str]) -> None:
    for i in range(0, len(lines), 20000):
        part = lines[i : i + 20000]
        ans = post(
            "/v1/results",
            INGEST,
            data="\n".join(part).encode(),
            headers={"Content-Type": "application/x-ndjson"},
        )
        tally["results_sent"] += len(part)
        if ans:
            tally["results_new"] += ans["new"]
            tally["results_dup"] += ans["duplicate"]


def send_reports(by_sender: dict[str, list[str]]) -> None:
    gateway: list[str] = []
    for sender, lines in by_sender.items():
        if sender in AGENTS:
            for i in range(0, len(lines), 500):
                _reports(lines[i : i + 500], AGENTS[sender])
        else:
            gateway.extend(lines)
    for i in range(0, len(gateway), 500):
        _reports(gateway[i : i + 500], INGEST)


def _reports(lines: list[str], token: str) -> None:
    ans = post(
        "/v1/reports",
        token,
        data=('{"reports":[' + ",".join(lines) + "]}").encode(),
        headers={"Content-Type": "application/json"},
    )
    tally["reports_sent"] += len(lines)
    if ans:
        tally["reports_new"] += len(ans["new"])
        tally["reports_dup"] += len(ans["duplicate"])


def send_junit(payload: str) -> None:
    d = json.loads(payload)
    params = {k: str(v) for k, v in d["params"].items()}
    ans = post(
        "/v1/results/junit",
        INGEST,
        params=params,
        data=d["xml"].encode(),
        headers={"Content-Type": "application/xml"},
    )
    tally["junit_posts"] += 1
    if ans:
        tally["junit_new"] += ans.get("new", 0)


def junit_cli(payload: str, tmp: Path, n: int) -> None:
    d = json.loads(payload)
    p = d["params"]
    f = tmp / f"jenkins-{p['job_id']}.xml"
    f.write_text(d["xml"])
    cmd = [
        f"{BIN}/runnerctl",
        "import",
        "--no-wait",
        "--runner-id",
        p["runner_id"],
        "--pool",
        p["pool"],
        "--machine",
        p["machine"],
        "--image",
        p["image"],
        "--job-id",
        p["job_id"],
        "--run-id",
        p["run_id"],
        str(f),
    ]
    imp = subprocess.run(cmd, capture_output=True, text=True)
    tally["junit_cli"] += 1
    if imp.returncode != 0:
        problems.append(f"runnerctl import (JUnit) exit {imp.returncode}: {imp.stderr.strip()[-400:]}")
    f.unlink(missing_ok=True)


def main() -> None:
    out = Path(sys.argv[1])
    truth = json.loads((out / "truth.json").read_text())
    with open(out / "feed.log", "w") as log:
        run(out, truth, truth["feed"]["backfill_until_ms"], log)


def run(out: Path, truth: dict, cut: int, log) -> None:
    rng = random.Random(truth["seed"])
    t0 = time.time()
    live = []
    junit_back = []
    n_back = 0
    with open(out / "feed.tsv") as fh, open(out / "backfill.ndjson", "w") as back:
        for line in fh:
            at, ch, sender, rec = line.rstrip("\n").split("\t", 3)
            at = int(at)
            if at < cut:
                if ch == "junit":
                    junit_back.append(rec)
                else:
                    n_back += 1
                    back.write(rec + "\n" if ch == "result" else '{"kind":"report",' + rec[1:] + "\n")
            else:
                live.append((at, ch, sender, rec))
    tmp = out / "junit-tmp"
    tmp.mkdir(exist_ok=True)
    n_cli = min(15, len(junit_back) // 4)
    cli_idx = set(rng.sample(range(len(junit_back)), n_cli)) if n_cli else set()
    for i, rec in enumerate(junit_back):
        if i in cli_idx:
            junit_cli(rec, tmp, i)
        else:
            send_junit(rec)
    tmp.rmdir()
    tj = time.time()
    imp = subprocess.run(
        [f"{BIN}/runnerctl", "import", str(out / "backfill.ndjson")], capture_output=True, text=True
    )
    print(
        f"backfill: {len(junit_back)} JUnit jobs ({n_cli} by runnerctl import) in {tj - t0:.0f} s; "
        f"{n_back} NDJSON lines; runnerctl import exit {imp.returncode}: {imp.stdout.strip()[-300:]} "
        f"{imp.stderr.strip()[-600:]}",
        file=log,
        flush=True,
    )
    m = re.search(
        r"imported (\d+) results \((\d+) new\) and (\d+) reports \((\d+) new\)", imp.stderr + imp.stdout
    )
    back_counts = [int(x) for x in m.groups()] if m else [0, 0, 0, 0]
    if imp.returncode != 0:
        problems.append(f"runnerctl import exit {imp.returncode}: {imp.stderr.strip()[-800:]}")
    t1 = time.time()
    hour = 3_600_000
    i = 0
    chunks = 0
    next_probe = cut + 24 * hour
    stale_probes = []
    while i < len(live):
        end = (live[i][0] // hour + 1) * hour
        results: list[str] = []
        reports: dict[str, list[str]] = {}
        junits: list[str] = []
        while i < len(live) and live[i][0] < end:
            _, ch, sender, rec = live[i]
            if ch == "result":
                results.append(rec)
            elif ch == "junit":
                junits.append(rec)
            else:
                reports.setdefault(sender, []).append(rec)
            i += 1
        if reports:
            send_reports(reports)
        if results:
            send_results(results)
            if rng.random() < 0.02:
                send_results(results[: max(1, len(results) // 2)])
        for rec in junits:
            send_junit(rec)
        chunks += 1
        if end >= next_probe:
            next_probe += 24 * hour
            try:
                a = session.get(
                    SERVER + "/v1/analysis", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60
                ).json()
                inc = session.get(
                    SERVER + "/v1/incidents", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=600
                ).json()["items"]
                if a.get("last_error"):
                    stale_probes.append(a.get("last_error"))
                print(
                    f"fed to {time.strftime('%Y-%m-%dT%H:%M', time.gmtime(end / 1000))}Z after "
                    f"{time.time() - t1:.0f} s: analysis {json.dumps(a)[:300]}; incidents {len(inc)}",
                    file=log,
                    flush=True,
                )
            except Exception as error:
                problems.append(f"probe: {error!r}")
    t2 = time.time()
    ans = None
    for _ in range(3):
        try:
            r = session.post(
                SERVER + "/v1/analysis/run", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=1800
            )
            ans = r.json() if r.status_code < 300 else None
            if ans is None:
                problems.append(f"POST /v1/analysis/run -> {r.status_code}: {r.text[:500]}")
            break
        except requests.RequestException as error:
            problems.append(f"POST /v1/analysis/run: {error!r}")
            time.sleep(5)
    t3 = time.time()
    stored = {}
    if DB:
        try:
            con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
            names = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
            for table in ("results", "reports", "agent_reports", "test_results"):
                if table in names:
                    stored[table] = con.execute(f"select count(*) from {table}").fetchone()[0]
            con.close()
        except sqlite3.Error as error:
            problems.append(f"counting stored rows: {error!r}")
    uniq_r, uniq_p = truth["feed"]["unique_results"], truth["feed"]["unique_reports"]
    n_res = stored.get("results", stored.get("test_results"))
    n_rep = stored.get("reports", stored.get("agent_reports"))
    if n_res is not None and n_res != uniq_r:
        problems.append(f"stored results {n_res} != unique results generated {uniq_r}")
    if n_rep is not None and n_rep != uniq_p:
        problems.append(f"stored reports {n_rep} != unique reports generated {uniq_p}")
    summary = {
        "backfill_ndjson_lines": n_back,
        "backfill_import": back_counts,
        "backfill_junit": len(junit_back),
        "backfill_junit_cli": n_cli,
        "live_chunks": chunks,
        **tally,
        "stored": stored,
        "unique_results": uniq_r,
        "unique_reports": uniq_p,
        "import_s": round(t1 - t0, 1),
        "live_s": round(t2 - t1, 1),
        "final_pass_s": round(t3 - t2, 1),
        "final_analysis": ans,
        "stale_probes": stale_probes[:5],
        "problems": problems[:50],
        "problem_count": len(problems),
    }
    print(json.dumps(summary, indent=1), file=log)
    (out / "feed.json").write_text(json.dumps(summary, indent=1))
    print(
        f"feed: backfill {t1 - t0:.0f} s, live {t2 - t1:.0f} s ({chunks} chunks, {tally['requests']} requests), "
        f"final pass {t3 - t2:.0f} s; stored {stored} of {uniq_r} results / {uniq_p} reports; "
        f"{len(problems)} problems"
    )
    for p in problems[:10]:
        print("  PROBLEM", p)
    (out / "backfill.ndjson").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
