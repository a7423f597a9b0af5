"""What the provider end-to-end stories share: a real controller in auto mode on SQLite that judges
quickly, agents' readings posted through POST /v1/reports (the sick runner's disk is full), and patient
assertions that show the controller's log when they give up.

The controller learns of jobs only through the fake provider's channel (signed webhooks, or polling),
acts on the provider only through its API, and learns of the reruns' outcome the same way.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from tests.servers import REPO, Controller, runnerctl_cmd, running_controller

T = TypeVar("T")
FAST = {
    "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.5",
    "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.5",
}
# For the stories whose runners are in pool `linux` and whose provider is polled as well.
FAST_AUTO = {
    "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.3",
    "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.3",
    "RUNNER_CONTROLLER_POLL_INTERVAL_S": "0.3",
    "RUNNER_CONTROLLER_REMEDIATION_POLICIES": '{"linux": {"mode": "auto"}}',
}
GIB = 1 << 30


def auto(pool: str) -> dict[str, str]:
    return {"RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps({pool: {"mode": "auto"}})}


def wait_for(controller: Controller, what: str, done: Callable[[], T | None], timeout: float = 20) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = done()
        if found:
            return found
        time.sleep(0.25)
    log = controller.log.read_text(errors="replace")[-4000:]
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n--- controller log\n{log}")


def disk_reading(full: bool) -> dict[str, Any]:
    free = 0 if full else 50 * GIB
    return {
        "check": "disk",
        "status": "problem" if full else "ok",
        "reason": "DiskFull" if full else None,
        "paths": [
            {
                "path": "/work",
                "total_bytes": 100 * GIB,
                "free_bytes": free,
                "free_ratio": free / (100 * GIB),
                "write_probe_ok": not full,
            }
        ],
    }


def post_readings(controller: Controller, runners: list[str], sick: str, provider: str) -> None:
    """One round of readings from every runner, as their agents send them: `sick`'s disk is full."""
    seq = int(uuid.uuid4().int % 1_000_000)
    batch = [
        {
            "agent_id": f"agent-{runner}",
            "boot_id": "boot-1",
            "seq": seq,
            "observed_at": datetime.now(UTC).isoformat(),
            "runner": {"id": runner, "name": runner, "pool": "linux", "provider": provider},
            "readings": [disk_reading(full=runner == sick)],
        }
        for runner in runners
    ]
    answer = controller.post("/v1/reports", json={"reports": batch})
    assert answer.status_code == 200, answer.text


@dataclass
class Agents:
    """One report a beat per runner, as the runner-agent's disk check would send: until `stop()`."""

    controller: Controller
    identities: dict[str, dict[str, Any]]
    sick: set[str]
    interval_s: float = 0.5

    def __post_init__(self) -> None:
        self.tokens = {rid: self.controller.token("agent", rid) for rid in self.identities}
        self.answers: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._seq = itertools.count()
        self._thread = threading.Thread(target=self._run, name="agents", daemon=True)

    def start(self) -> None:
        """Start reporting, and return once every runner has a reading on record for over a second:
        providers stamp jobs to the second, and a failure stamped before the runner's first reading
        has no reading to be explained by (in life, agents report long before the jobs come)."""
        self._thread.start()
        deadline = time.monotonic() + 30
        while len(self.answers) < len(self.identities) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.answers) == len(self.identities), "the agents' reports were not accepted"
        time.sleep(1.2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            for rid, identity in self.identities.items():
                report = {
                    "agent_id": rid,
                    "boot_id": "boot-1",
                    "seq": next(self._seq),
                    "observed_at": datetime.now(UTC).isoformat(),
                    "runner": identity,
                    "readings": [disk_reading(full=rid in self.sick)],
                }
                with contextlib.suppress(Exception):  # a report lost is the agent's spool's business
                    answer = self.controller.post(
                        "/v1/reports", token=self.tokens[rid], json={"reports": [report]}
                    )
                    self.answers[rid] = answer.json()
            self._stop.wait(self.interval_s)


@contextlib.contextmanager
def story_controller(tmp: Path, providers: dict[str, Any], pool: str) -> Iterator[Controller]:
    env = FAST | auto(pool) | {"RUNNER_CONTROLLER_PROVIDERS": json.dumps(providers)}
    with running_controller(tmp, env=env) as controller:
        yield controller


def sick_incident(
    controller: Controller, runner: str, jobs: list[str] | None = None, timeout: float = 30
) -> dict[str, Any]:
    """The runner's sick incident, once it names exactly `jobs` (if given) as the affected ones."""

    def found() -> dict[str, Any] | None:
        items = controller.get("/v1/incidents").json()["items"]
        return next(
            (
                i
                for i in items
                if i["entity"] == runner
                and i["state"] == "sick"
                and (jobs is None or sorted(j["job_id"] for j in i["affected_jobs"]) == jobs)
            ),
            None,
        )

    try:
        return wait_for(controller, f"{runner} judged sick", found, timeout)
    except AssertionError as error:
        seen = [i for i in controller.get("/v1/incidents").json()["items"] if i["entity"] == runner]
        health = controller.get(f"/v1/runners/{runner}").json()
        raise AssertionError(f"{error}\n--- incidents of {runner}: {seen}\n--- runner: {health}") from None


def actions(controller: Controller, **params: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = controller.get("/v1/actions", params=params).json()["items"]
    return items


def explain_runner(controller: Controller, runner: str) -> str:
    done = subprocess.run(
        runnerctl_cmd(
            "--server", controller.url, "--token", controller.admin_token, "explain", "runner", runner
        ),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
