"""How many failed jobs, and hours, each planted black hole took to be named: delays.py RUNDIR...

Reads truth.json (the finish times of the jobs each black hole failed) and incidents.json (what the
product named, through the API). A black hole not named says so.
"""

from __future__ import annotations

import json
import sys
from bisect import bisect_right
from datetime import datetime
from pathlib import Path


def seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main() -> None:
    for run in map(Path, sys.argv[1:]):
        truth = json.loads((run / "truth.json").read_text())
        data = json.loads((run / "incidents.json").read_text())
        incidents = data["items"] if isinstance(data, dict) else data
        for hole in truth["black_holes"]:
            jobs = hole["jobs"]
            named = [
                seconds(i["decided_at"])
                for i in incidents
                if i["kind"] == "runner"
                and i["entity"] == hole["entity"]
                and jobs
                and seconds(i["onset"]) <= jobs[-1]
                and seconds(i["decided_at"]) >= jobs[0] - 1
            ]
            where = f"{run.name} {hole['entity']} ({len(jobs)} failed jobs)"
            if not named:
                print(f"{where}: not named")
                continue
            decided = min(named)
            print(
                f"{where}: named after {bisect_right(jobs, decided + 0.001)} failed jobs, "
                f"{(decided - jobs[0]) / 3600:.2f} h after its first"
            )


if __name__ == "__main__":
    main()
