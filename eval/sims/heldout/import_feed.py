"""Feed a generated fleet to the controller as one backfill: `runnerctl import OUT/history.ndjson`.

    python eval/sims/heldout/import_feed.py OUT

The first three held-out simulators are fed this way (eval/sims/heldout/run_fleet.sh runs it with
RUNNERCTL_SERVER, RUNNERCTL_TOKEN and BIN set); its output goes to OUT/import.log.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def main() -> int:
    out = Path(sys.argv[1])
    runnerctl = Path(os.environ["BIN"]) / "runnerctl"
    with (out / "import.log").open("w") as log:
        done = subprocess.run(
            [runnerctl, "import", out / "history.ndjson"], stdout=log, stderr=subprocess.STDOUT
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
