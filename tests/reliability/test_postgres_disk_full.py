"""PostgreSQL's data disk fills up under ingest: every refused request is a 507 with Retry-After naming
the server's full disk, health and reads are still served, nothing acknowledged is lost, a real
runner-agent keeps its reports spooled and delivers them afterwards, and ingest comes back by itself
once space is freed: same controller process, same server, no restart of either.

The cluster's data directory is on a 64 MiB loop-mounted ext4 (`loopfs`, as the SQLite disk-full
test); its WAL is on the machine's disk (`initdb --waldir`), as on a server whose pg_wal has its own
volume. That is the full disk a controller can ride out: a table or index cannot grow (SQLSTATE 53100,
"could not extend file"), the transaction rolls back, the server stays up. A full WAL volume is another
case (test_postgres_wal_full.py): the server panics and shuts down.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.agent import agent_process
from tests.postgres import require_postgres, running_postgres
from tests.reliability import loopfs
from tests.reliability.traffic import (
    Client,
    Ledger,
    agent_report,
    agent_seqs,
    assert_agent_delivered_once,
    reports_body,
    result_records,
    spooled,
    stored,
    wait_until,
)
from tests.servers import running_controller

pytestmark = [pytest.mark.slow, pytest.mark.needs_postgres]

AGENT = "pg-full-runner"  # the real runner-agent
CLIENT = "pg-full-client"  # reports sent by the traffic helpers, three readings each


def test_postgres_data_disk_full_refuses_clearly_and_recovers_by_itself(tmp_path: Path) -> None:
    loopfs.skip_unless_possible()
    require_postgres()
    ledger = Ledger()
    (tmp_path / "agent").mkdir()
    state = tmp_path / "agent" / "state"
    # Not under pytest's tmp dir, which is private to root: the server runs as `postgres`.
    outside = Path(tempfile.mkdtemp(prefix="runnerctl-pgfull-"))
    outside.chmod(0o755)
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, outside, ignore_errors=True)
        volume = cleanup.enter_context(loopfs.loop_filesystem(outside, size_mib=64))
        volume.chmod(0o755)
        data = volume / "pgdata"  # initdb refuses a mount point (lost+found) as the data directory
        data.mkdir()
        shutil.chown(data, "postgres", "postgres")
        with running_postgres(data_dir=data) as server, server.database() as url:
            with running_controller(tmp_path, url) as controller:
                served_by = controller.process.pid if controller.process else None
                client = Client(lambda: controller.url, controller.admin_token, ledger)
                for number in range(3):
                    assert client.send_results(f"before-{number}", 500), ledger.errors[-1:]
                assert client.send_reports([agent_report(CLIENT, "boot-1", s) for s in range(1, 11)])
                config = agent_process.write_config(
                    tmp_path / "agent",
                    controller.url,
                    controller.token("agent", AGENT),
                    identity={"id": AGENT, "pool": "linux", "discover": False},
                    cache={"enabled": False},
                )
                agent = agent_process.start(config, tmp_path / "agent.log")
                try:
                    wait_until(lambda: len(agent_seqs(url, AGENT)) >= 3, 30, "the agent's first reports")
                    before = stored(url, ledger, agent_prefix=CLIENT)

                    filler = loopfs.fill(volume)
                    # Tables and indexes may still have room in pages they hold: send until PostgreSQL
                    # cannot extend a file, and every answer on the way is a success or that refusal.
                    refusal = None
                    for number in range(60):
                        job = f"full-{number}"
                        ledger.sent_batch(job, 2000)
                        response = client.post(
                            "/v1/results", json.dumps(result_records(job, 2000)).encode(), "application/json"
                        )
                        assert response is not None and response.status_code in (200, 507), (
                            response and response.text
                        )
                        if response.status_code == 507:
                            refusal = response
                            break
                        ledger.ack_batch(job)
                    assert refusal is not None, "the full disk never refused a write"
                    detail = refusal.json()["detail"]
                    assert detail.startswith("the PostgreSQL server's disk is full (could not extend file"), (
                        detail
                    )
                    assert "No space left on device" in detail and "nothing was stored" in detail, detail
                    assert refusal.headers["Retry-After"] == "30"

                    reports = client.post(
                        "/v1/reports",
                        reports_body([agent_report(CLIENT, "boot-1", s) for s in range(11, 400)]),
                        "application/json",
                    )
                    assert reports is not None and reports.status_code == 507, reports and reports.text
                    assert "disk is full" in reports.json()["detail"]
                    assert reports.headers["Retry-After"] == "30"

                    # The server and the controller are up; reads are served from what is stored.
                    assert controller.get("/healthz").status_code == 200
                    assert controller.get("/readyz").status_code == 200
                    runners = controller.get("/v1/runners")
                    assert runners.status_code == 200, runners.text
                    assert AGENT in runners.text
                    assert controller.get(f"/v1/runners/{AGENT}").status_code == 200

                    # The real agent meets the full disk too, and keeps what it could not deliver.
                    wait_until(lambda: spooled(state) >= 5, 60, "the agent to spool while the disk is full")
                    during = stored(url, ledger, agent_prefix=CLIENT)
                    assert during.problems() == []
                    assert during.reports_stored == before.reports_stored == 10
                    assert during.results_stored == ledger.results_acked

                    filler.unlink()
                    # Nothing restarted: the next resend of each sender simply succeeds.
                    started = time.monotonic()
                    assert client.send_results("after-space-freed", 2000), ledger.errors[-1:]
                    assert client.send_reports([agent_report(CLIENT, "boot-1", s) for s in range(11, 400)])
                    wait_until(lambda: spooled(state) <= 2, 90, "the agent to deliver its backlog")
                    recovered_s = time.monotonic() - started
                    assert controller.process is not None and controller.process.pid == served_by
                    assert controller.process.poll() is None
                finally:
                    assert agent_process.stop(agent) == 0
                last = assert_agent_delivered_once(
                    state, controller.url, controller.token("agent", AGENT), url, AGENT
                )
            after = stored(url, ledger, agent_prefix=CLIENT)

    log = (tmp_path / "agent.log").read_text()
    assert "controller answered HTTP 507" in log  # the agent met the full disk and kept its reports
    assert after.problems() == []
    assert after.reports_stored == 399
    assert after.results_stored == ledger.results_acked
    print(
        f"\n{len(ledger.batches_acked)} result batches acknowledged ({ledger.results_acked} results), "
        f"{last} agent reports, all stored once; backlog delivered {recovered_s:.1f} s after the filler went"
    )
