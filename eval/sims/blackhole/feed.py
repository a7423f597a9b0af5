"""Feed a black-hole fleet to a running controller over the public API: feed.py OUTDIR.

One simulated hour at a time, in arrival order, as a CI system's uploader would: the hour's test
results to POST /v1/results and its job records to POST /v1/jobs, with an ingest token. At the end it
asks for a full pass (POST /v1/analysis/run) and checks that every record was stored exactly once.

Environment: RUNNERCTL_SERVER, RUNNERCTL_TOKEN (admin), HELDOUT_INGEST_TOKEN.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

SERVER = os.environ["RUNNERCTL_SERVER"]
ADMIN = os.environ["RUNNERCTL_TOKEN"]
INGEST = os.environ.get("HELDOUT_INGEST_TOKEN") or ADMIN
CHUNK = 5000


def post(session: requests.Session, path: str, token: str, body: list[dict[str, Any]]) -> dict[str, Any]:
    response = session.post(
        SERVER + path, headers={"Authorization": f"Bearer {token}"}, json=body, timeout=600
    )
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def hour_of(line: dict[str, Any]) -> int:
    stamp = line["finished"] if line["kind"] == "job" else line["time"]
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() // 3600)


def main() -> None:
    out = Path(sys.argv[1])
    lines = [json.loads(line) for line in (out / "history.ndjson").open()]
    session = requests.Session()
    tally = {"results_sent": 0, "results_new": 0, "jobs_sent": 0, "jobs_new": 0, "requests": 0}
    problems: list[str] = []
    started = time.monotonic()
    hours: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        hours.setdefault(hour_of(line), []).append(line)
    for hour in sorted(hours):
        for kind, path in (("result", "/v1/results"), ("job", "/v1/jobs")):
            batch = [
                {k: v for k, v in line.items() if k != "kind"} for line in hours[hour] if line["kind"] == kind
            ]
            for at in range(0, len(batch), CHUNK):
                part = batch[at : at + CHUNK]
                try:
                    stored = post(session, path, INGEST, part)
                except requests.RequestException as error:
                    problems.append(f"POST {path}: {error!r}")
                    continue
                tally["requests"] += 1
                tally[f"{kind}s_sent"] += len(part)
                tally[f"{kind}s_new"] += int(stored["new"])
    for kind in ("result", "job"):
        if tally[f"{kind}s_new"] != tally[f"{kind}s_sent"]:
            problems.append(f"{kind}s: {tally[f'{kind}s_sent']} sent, {tally[f'{kind}s_new']} stored new")
    done = session.post(
        SERVER + "/v1/analysis/run", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=1200
    )
    if done.status_code != 200:
        problems.append(f"POST /v1/analysis/run: {done.status_code} {done.text[:200]}")
    summary = {**tally, "problems": problems, "problem_count": len(problems)}
    (out / "feed.json").write_text(json.dumps(summary, indent=1))
    print(
        f"feed: {time.monotonic() - started:.0f} s, {tally['requests']} requests; stored "
        f"{tally['results_new']}/{tally['results_sent']} results, {tally['jobs_new']}/{tally['jobs_sent']} jobs; "
        f"{len(problems)} problems"
    )


if __name__ == "__main__":
    main()
