"""Ingest over real HTTP into a real controller process on a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import itertools
import json
import signal
import threading
from typing import Any

import pytest
import requests
from sqlalchemy import select

from controller.db import tables
from tests.servers import Controller, database


def result(
    test_id: str = "tests/test_io.py::test_read", outcome: str = "failed", **extra: Any
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "test_id": test_id,
        "outcome": outcome,
        "time": "2026-09-21T10:00:00Z",
        "duration_s": 1.2,
        "job_id": "job-17",
        "run_id": "run-9",
        "attempt": 1,
        "message": "disk full",
        "runner": {
            "id": "linux-03",
            "name": "linux-03",
            "machine": "linux-vm-03",
            "pool": "linux",
            "image": "linux-img-2026.09",
            "shard": "3",
            "labels": ["self-hosted", "linux"],
            "provider": "buildbot",
            "ephemeral": False,
        },
    }
    record.update(extra)
    return record


def report(seq: int, runner: str = "linux-03", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "agent_id": f"agent-{runner}",
        "boot_id": "boot-1",
        "seq": seq,
        "observed_at": "2026-09-21T10:00:00Z",
        "runner": {"id": runner, "pool": "linux"},
        "readings": [
            {
                "check": "disk",
                "status": "problem",
                "reason": "DiskFull",
                "paths": [{"path": "/", "free_ratio": 0.01}],
            },
            {
                "check": "clock",
                "offset_s": 0.002,
                "servers": [{"server": "127.0.0.1:123", "offset_s": 0.002}],
            },
        ],
    }
    body.update(extra)
    return body


def count(controller: Controller, table: str) -> int:
    return controller.count(table)


def test_results_are_stored_once_and_read_back(controller: Controller) -> None:
    batch = [result(), result("tests/test_io.py::test_write", "passed")]
    first = controller.post("/v1/results", json=batch)
    assert first.status_code == 200, first.text
    assert first.json() == {"accepted": 2, "new": 2, "duplicate": 0}
    again = controller.post("/v1/results", json=batch)
    assert again.json() == {"accepted": 2, "new": 0, "duplicate": 2}
    assert count(controller, "results") == 2
    runner = controller.get("/v1/runners/linux-03").json()
    assert runner["identity"]["machine"] == "linux-vm-03"
    assert runner["identity"]["labels"] == ["self-hosted", "linux"]
    assert (runner["executions"], runner["failures"]) == (2, 1)
    assert runner["last_seen"] == "2026-09-21T10:00:00Z"


def test_ndjson_and_epoch_seconds(controller: Controller) -> None:
    lines = [json.dumps(result(time=1758448800 + i, test_id=f"t{i}")) for i in range(3)]
    response = controller.post(
        "/v1/results", data="\n".join(lines) + "\n", headers={"Content-Type": "application/x-ndjson"}
    )
    assert response.json()["new"] == 3
    assert controller.get("/v1/runners/linux-03").json()["last_seen"] == "2025-09-21T10:00:02Z"


def test_only_required_fields(controller: Controller) -> None:
    minimal = {
        "test_id": "t",
        "outcome": "passed",
        "time": "2026-09-21T10:00:00+02:00",
        "runner": {"id": "r1"},
    }
    assert controller.post("/v1/results", json=[minimal]).json()["new"] == 1
    assert controller.get("/v1/runners/r1").json()["last_seen"] == "2026-09-21T08:00:00Z"


def test_reports_deduplicated_by_agent_boot_sequence(controller: Controller) -> None:
    first = controller.post("/v1/reports", json={"reports": [report(1), report(2)]})
    # The answer also says whether the runner is cordoned (the agent's on_cordon acts on it).
    directives = [{"runner": "linux-03", "cordoned": False, "reason": None}]
    assert first.json() == {"accepted": 2, "new": [1, 2], "duplicate": [], "directives": directives}
    second = controller.post("/v1/reports", json={"reports": [report(2), report(3)]})
    assert second.json() == {"accepted": 2, "new": [3], "duplicate": [2], "directives": directives}
    assert count(controller, "reports") == 3
    assert count(controller, "readings") == 6
    readings = controller.get("/v1/runners/linux-03").json()["last_readings"]
    disk = next(r for r in readings if r["check"] == "disk")
    assert disk["reason"] == "DiskFull" and disk["paths"][0]["free_ratio"] == 0.01


BAD_RESULTS = [
    ("malformed-json", b'[{"test_id": "a",', "Invalid JSON"),
    ("wrong-type", json.dumps([result(duration_s="slow")]).encode(), "record 0: duration_s"),
    (
        "missing-field",
        json.dumps([{k: v for k, v in result().items() if k != "outcome"}]).encode(),
        "record 0: outcome: Field required",
    ),
    ("unknown-outcome", json.dumps([result(), result(outcome="flaky")]).encode(), "record 1: outcome"),
    (
        "missing-runner-id",
        json.dumps([result(runner={"name": "x"})]).encode(),
        "record 0: runner.id: Field required",
    ),
    ("bad-time", json.dumps([result(time="yesterday")]).encode(), "record 0: time"),
    ("empty", b"", "empty body"),
]


@pytest.mark.parametrize(
    ("body", "message"), [(b, m) for _, b, m in BAD_RESULTS], ids=[i for i, _, _ in BAD_RESULTS]
)
def test_bad_results_are_rejected_whole(shared_controller: Controller, body: bytes, message: str) -> None:
    controller = shared_controller
    before = count(controller, "results"), count(controller, "runners")
    response = controller.post("/v1/results", data=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]
    assert (count(controller, "results"), count(controller, "runners")) == before


def test_bad_ndjson_line_is_named(shared_controller: Controller) -> None:
    controller = shared_controller
    before = count(controller, "results")
    body = json.dumps(result()) + "\n" + json.dumps(result(outcome="meh")) + "\n"
    response = controller.post("/v1/results", data=body, headers={"Content-Type": "application/x-ndjson"})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("line 2: outcome: Input should be")
    assert count(controller, "results") == before


def test_oversized_body_is_refused_unread(tmp_path: Any, database_url: str) -> None:
    from tests.servers import running_controller

    with running_controller(
        tmp_path, database_url, env={"RUNNER_CONTROLLER_MAX_BODY_BYTES": "4096"}
    ) as small:
        body = json.dumps([result(test_id=f"t{i}") for i in range(100)])
        response = small.post("/v1/results", data=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 413
        assert "exceeds the limit of 4096 bytes" in response.json()["detail"]

        def chunks():  # no Content-Length: the server must still stop reading at the limit
            for _ in range(100):
                yield b" " * 1024

        streamed = small.post("/v1/results", data=chunks(), headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413
        assert count(small, "results") == 0


def test_bad_report_names_the_field(shared_controller: Controller) -> None:
    controller = shared_controller
    before = count(controller, "reports")
    bad = report(1)
    bad["readings"][0]["paths"][0]["free_ratio"] = 7
    response = controller.post("/v1/reports", json={"reports": [report(2), bad]})
    assert response.status_code == 422
    assert "reports[1].readings[0].disk.paths[0].free_ratio" in response.json()["detail"]
    assert count(controller, "reports") == before


def test_auth_roles(controller: Controller) -> None:
    missing = requests.post(controller.url + "/v1/results", json=[result()], timeout=30)
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    assert "missing bearer token" in missing.json()["detail"]
    basic = controller.post("/v1/results", json=[result()], headers={"Authorization": "Basic eDp5"})
    assert basic.status_code == 401
    assert controller.post("/v1/results", token="rct_not-a-token", json=[result()]).status_code == 401
    reader = controller.token("read")
    forbidden = controller.post("/v1/results", token=reader, json=[result()])
    assert forbidden.status_code == 403
    assert "role 'read' may not do this" in forbidden.json()["detail"]
    assert controller.get("/v1/runners", token=reader).status_code == 200
    agent = controller.token("agent", runner="linux-03")
    assert controller.post("/v1/reports", token=agent, json={"reports": [report(1)]}).status_code == 200
    other = controller.post("/v1/reports", token=agent, json={"reports": [report(2, runner="linux-04")]})
    assert other.status_code == 403
    assert "may not report for: linux-04" in other.json()["detail"]
    assert controller.post("/v1/results", token=agent, json=[result()]).status_code == 403
    assert controller.get("/v1/runners", token=agent).status_code == 403
    assert count(controller, "reports") == 1


def test_kill_during_ingest_loses_nothing_acknowledged(controller: Controller) -> None:
    """SIGKILL while batches are in flight: every acknowledged batch is stored, none half-written."""
    size, acked, refused = 500, [], []
    enough = threading.Event()

    def post_until_killed() -> None:
        for start in itertools.count(0, size):
            batch = [result(test_id=f"t{i}") for i in range(start, start + size)]
            try:
                response = controller.post("/v1/results", json=batch)
            except requests.RequestException:
                return  # killed mid-request: not acknowledged, so the sender would retry it
            (acked if response.status_code == 200 else refused).append(start)
            if len(acked) >= 4:
                enough.set()

    poster = threading.Thread(target=post_until_killed)
    poster.start()
    assert enough.wait(120), "the controller did not acknowledge four batches"
    controller.stop(signal.SIGKILL)
    poster.join(60)
    assert not poster.is_alive() and refused == []
    controller.start()
    with database(controller.db) as conn:
        stored = set(conn.execute(select(tables.results.c.test_id)).scalars())
    missing = {f"t{i}" for start in acked for i in range(start, start + size)} - stored
    assert missing == set()
    assert len(stored) % size == 0  # a batch is one transaction: all of it or none
    assert controller.get("/v1/runners/linux-03").json()["executions"] == len(stored)


def test_health_ready_metrics_and_openapi(controller: Controller) -> None:
    assert controller.get("/healthz").json() == {"status": "ok"}
    assert controller.get("/readyz").json()["status"] == "ready"
    controller.post("/v1/results", json=[result()])
    metrics = controller.get("/metrics").text
    assert 'runnerctl_ingest_results_total{status="new"} 1.0' in metrics
    spec = controller.get("/openapi.json").json()
    assert {"/v1/results", "/v1/results/junit", "/v1/reports", "/v1/runners"} <= set(spec["paths"])
