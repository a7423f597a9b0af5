"""The controller's SQLite volume fills up under ingest: a clear 507 naming the disk, no corruption,
everything stored before intact, and ingest back on its own once space is freed — no restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.reliability import loopfs
from tests.reliability.traffic import Client, Ledger, agent_report, reports_body, result_records, stored
from tests.servers import database, running_controller

pytestmark = pytest.mark.slow


def test_full_disk_refuses_clearly_and_recovers_without_restart(tmp_path: Path) -> None:
    loopfs.skip_unless_possible()
    ledger = Ledger()
    with loopfs.loop_filesystem(tmp_path, size_mib=16) as volume:
        db = f"sqlite:///{volume / 'controller.db'}"
        with running_controller(tmp_path, db) as controller:
            client = Client(lambda: controller.url, controller.admin_token, ledger)
            for number in range(3):
                assert client.send_results(f"before-{number}", 500)
            assert client.send_reports([agent_report("disk-agent", "boot-1", s) for s in range(1, 11)])
            before = stored(db, ledger)

            filler = loopfs.fill(volume)
            # SQLite may still fit a write into pages it has already allocated: send until the disk
            # refuses, and every answer on the way must be a success or that refusal, never a 500.
            refusal = None
            for number in range(40):
                job = f"full-{number}"
                ledger.sent_batch(job, 2000)
                response = client.post(
                    "/v1/results", json.dumps(result_records(job, 2000)).encode(), "application/json"
                )
                assert response is not None and response.status_code in (200, 507), response and response.text
                if response.status_code == 507:
                    refusal = response
                    break
                ledger.ack_batch(job)
            assert refusal is not None, "the full disk never refused a write"
            detail = refusal.json()["detail"]
            assert "disk is full" in detail and str(volume / "controller.db") in detail, detail
            assert refusal.headers["Retry-After"] == "30"
            reports = client.post(
                "/v1/reports",
                reports_body([agent_report("disk-agent", "boot-1", s) for s in range(11, 200)]),
                "application/json",
            )
            assert reports is not None and reports.status_code == 507, reports and reports.text
            assert controller.get("/healthz").status_code == 200  # alive, reads still served
            with database(db) as conn:
                assert conn.execute(text("PRAGMA integrity_check")).scalar_one() == "ok"
            during = stored(db, ledger)
            assert during.problems() == []
            assert during.reports_stored == before.reports_stored == 10

            filler.unlink()
            assert client.send_results("after-space-freed", 2000), ledger.errors[-1:]
            assert client.send_reports([agent_report("disk-agent", "boot-1", s) for s in range(11, 200)])
            assert controller.process is not None and controller.process.poll() is None  # never restarted
        after = stored(db, ledger)
        with database(db) as conn:
            assert conn.execute(text("PRAGMA integrity_check")).scalar_one() == "ok"
    assert after.problems() == []
    assert after.reports_stored == 199
    assert after.results_stored == ledger.results_acked
