"""What the provider end-to-end stories share: a real controller in auto mode that judges quickly, the
runner-agent readings that prove a runner sick (posted as agents post them), and waiting with the
controller's log in the failure message."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from tests.servers import Controller

FAST_AUTO = {
    "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.3",
    "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.3",
    "RUNNER_CONTROLLER_POLL_INTERVAL_S": "0.3",
    "RUNNER_CONTROLLER_REMEDIATION_POLICIES": '{"linux": {"mode": "auto"}}',
}
GIB = 1 << 30


def report(runner: str, disk_full: bool, seq: int, provider: str) -> dict[str, Any]:
    """One round of readings as a runner-agent sends it: a full disk on the sick runner."""
    free = 100 * 1024 if disk_full else 50 * GIB
    return {
        "agent_id": f"agent-{runner}",
        "boot_id": "boot-1",
        "seq": seq,
        "observed_at": datetime.now(UTC).isoformat(),
        "runner": {"id": runner, "name": runner, "pool": "linux", "provider": provider},
        "readings": [
            {
                "check": "disk",
                "status": "problem" if disk_full else "ok",
                "reason": "DiskFull" if disk_full else None,
                "paths": [
                    {
                        "path": "/var/lib/ci",
                        "total_bytes": 100 * GIB,
                        "free_bytes": free,
                        "free_ratio": free / (100 * GIB),
                        "write_probe_ok": not disk_full,
                    }
                ],
            }
        ],
    }


def post_readings(controller: Controller, runners: list[str], sick: str, provider: str) -> None:
    seq = int(uuid.uuid4().int % 1_000_000)
    batch = [report(r, r == sick, seq, provider) for r in runners]
    answer = controller.post("/v1/reports", json={"reports": batch})
    assert answer.status_code == 200, answer.text


def wait_for(controller: Controller, what: str, done: Any, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = done()
        if found:
            return found
        time.sleep(0.2)
    log = controller.log.read_text(errors="replace")[-4000:]
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n--- controller log\n{log}")


def sick_incident(controller: Controller, runner: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        items = controller.get("/v1/incidents").json()["items"]
        return next((i for i in items if i["entity"] == runner and i["state"] == "sick"), None)

    incident: dict[str, Any] = wait_for(controller, f"{runner} judged sick", found)
    return incident


def actions(controller: Controller, **params: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = controller.get("/v1/actions", params=params).json()["items"]
    return items
