"""Feed a generated fleet to a running controller: feed.py OUTDIR.

The first part of the window (up to truth["feed"]["backfill_until"], by arrival time) is written to
backfill.ndjson and loaded with `runnerctl import`, as an operator backfilling history would; the rest is
sent live, in arrival order, one simulated hour at a time, to the public endpoints as the fleet would:
the CI's uploader POSTs its jobs' results to /v1/results (NDJSON) with an ingest token, the agents POST
their reports to /v1/reports (at most 500 a request) — two of them with their own `agent` token, the
rest through an ingest token (a gateway). The analysis loop runs on its own meanwhile. At the end it
asks for a full pass (POST /v1/analysis/run) and checks that everything sent was stored exactly once.

Environment: RUNNERCTL_SERVER, RUNNERCTL_TOKEN (admin), HELDOUT_INGEST_TOKEN, HELDOUT_AGENT_TOKENS (JSON
{runner: token}), BIN (for runnerctl).
"""

from __future__ import annotations

import json
import os
import re
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

session = requests.Session()
problems: list[str] = []
tally = {
    "results_sent": 0,
    "results_new": 0,
    "results_dup": 0,
    "reports_sent": 0,
    "reports_new": 0,
    "reports_dup": 0,
    "requests": 0,
    "errors": 0,
}


def post(path: str, token: str, **kwargs) -> dict | None:
    for attempt in range(4):
        tally["requests"] += 1
        try:
            r = session.post(
                SERVER + path,
                headers={"Authorization": f"Bearer {token}", **kwargs.pop("headers", {})},
                timeout=600,
                **kwargs,
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
        body = "\n".join(part).encode()
        ans = post("/v1/results", INGEST, data=body, headers={"Content-Type": "application/x-ndjson"})
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
    body = ('{"reports":[' + ",".join(lines) + "]}").encode()
    ans = post("/v1/reports", token, data=body, headers={"Content-Type": "application/json"})
    tally["reports_sent"] += len(lines)
    if ans:
        tally["reports_new"] += len(ans["new"])
        tally["reports_dup"] += len(ans["duplicate"])


def main() -> None:
    out = Path(sys.argv[1])
    truth = json.loads((out / "truth.json").read_text())
    cut = truth["feed"]["backfill_until_ms"]
    with open(out / "feed.log", "w") as log:
        run(out, truth, cut, log)


def run(out: Path, truth: dict, cut: int, log) -> None:
    t0 = time.time()
    live = []
    n_back = 0
    with open(out / "feed.tsv") as fh, open(out / "backfill.ndjson", "w") as back:
        for line in fh:
            at, typ, sender, rec = line.rstrip("\n").split("\t", 3)
            at = int(at)
            if at < cut:
                n_back += 1
                back.write(rec + "\n" if typ == "result" else '{"kind":"report",' + rec[1:] + "\n")
            else:
                live.append((at, typ, sender, rec))
    imp = subprocess.run(
        [f"{BIN}/runnerctl", "import", str(out / "backfill.ndjson")], capture_output=True, text=True
    )
    print(
        f"backfill: {n_back} lines; runnerctl import exit {imp.returncode}: {imp.stdout.strip()} "
        f"{imp.stderr.strip()[-800:]}",
        file=log,
        flush=True,
    )
    m = re.search(r"imported (\d+) results \((\d+) new\) and (\d+) reports \((\d+) new\)", imp.stderr)
    back_counts = [int(x) for x in m.groups()] if m else [0, 0, 0, 0]
    if imp.returncode != 0:
        problems.append(f"runnerctl import exit {imp.returncode}: {imp.stderr.strip()[-800:]}")
    t1 = time.time()
    # live: one simulated hour per chunk
    hour = 3_600_000
    i = 0
    chunks = 0
    next_probe = cut + 24 * hour
    while i < len(live):
        end = (live[i][0] // hour + 1) * hour
        results: list[str] = []
        reports: dict[str, list[str]] = {}
        while i < len(live) and live[i][0] < end:
            _, typ, sender, rec = live[i]
            if typ == "result":
                results.append(rec)
            else:
                reports.setdefault(sender, []).append(rec)
            i += 1
        if reports:
            send_reports(reports)
        if results:
            send_results(results)
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
                print(
                    f"fed to {time.strftime('%Y-%m-%dT%H:%M', time.gmtime(end / 1000))}Z "
                    f"after {time.time() - t1:.0f} s: analysis {json.dumps(a)[:300]}; incidents "
                    f"{len(inc)}",
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
    uniq_r, uniq_p = truth["feed"]["unique_results"], truth["feed"]["unique_reports"]
    new_r = back_counts[1] + tally["results_new"]
    new_p = back_counts[3] + tally["reports_new"]
    if new_r != uniq_r:
        problems.append(f"stored results {new_r} != unique results sent {uniq_r}")
    if new_p != uniq_p:
        problems.append(f"stored reports {new_p} != unique reports sent {uniq_p}")
    summary = {
        "backfill_lines": n_back,
        "backfill": back_counts,
        "live_chunks": chunks,
        **tally,
        "stored_results": new_r,
        "unique_results": uniq_r,
        "stored_reports": new_p,
        "unique_reports": uniq_p,
        "import_s": round(t1 - t0, 1),
        "live_s": round(t2 - t1, 1),
        "final_pass_s": round(t3 - t2, 1),
        "final_analysis": ans,
        "problems": problems[:50],
        "problem_count": len(problems),
    }
    print(json.dumps(summary, indent=1), file=log)
    (out / "feed.json").write_text(json.dumps(summary, indent=1))
    print(
        f"feed: import {t1 - t0:.0f} s, live {t2 - t1:.0f} s ({chunks} chunks, {tally['requests']} requests), "
        f"final pass {t3 - t2:.0f} s; stored {new_r}/{uniq_r} results, {new_p}/{uniq_p} reports; "
        f"{len(problems)} problems"
    )
    for p in problems[:10]:
        print("  PROBLEM", p)
    (out / "backfill.ndjson").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
