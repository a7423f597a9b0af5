"""PostgreSQL restarted under load: the controller reconnects by itself, requests during the gap fail
fast with a 503 that says why, and a real runner-agent keeps its spool and delivers every report after."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests

from tests.agent import agent_process
from tests.postgres import PostgresServer
from tests.reliability.traffic import (
    Ledger,
    Senders,
    agent_report,
    agent_seqs,
    assert_agent_delivered_once,
    reports_body,
    spooled,
    stored,
    wait_until,
)
from tests.servers import running_controller

pytestmark = [pytest.mark.slow, pytest.mark.needs_postgres]

AGENT = "pg-agent"


def test_postgres_restart_under_load(tmp_path: Path, postgres_server: PostgresServer) -> None:
    ledger = Ledger()
    (tmp_path / "agent").mkdir()
    with postgres_server.database() as url, running_controller(tmp_path, url) as controller:
        config = agent_process.write_config(
            tmp_path / "agent",
            controller.url,
            controller.token("agent", AGENT),
            identity={"id": AGENT, "pool": "linux", "discover": False},
            cache={"enabled": False},
        )
        agent = agent_process.start(config, tmp_path / "agent.log")
        state = tmp_path / "agent" / "state"
        try:
            with Senders(
                lambda: controller.url, controller.admin_token, ledger, reporters=2, uploaders=1, name="pg"
            ):
                wait_until(
                    lambda: len(ledger.batches_acked) >= 2 and len(agent_seqs(url, AGENT)) >= 3, 30, "ingest"
                )
                served_by = controller.process.pid if controller.process else None

                postgres_server.stop()
                started = time.monotonic()
                gap = requests.post(
                    controller.url + "/v1/reports",
                    data=reports_body([agent_report("pg-probe", "boot-1", 1)]),
                    headers=controller.headers() | {"Content-Type": "application/json"},
                    timeout=30,
                )
                assert time.monotonic() - started < 5, "a request during the outage hung"
                assert gap.status_code == 503, gap.text
                assert gap.json()["detail"].startswith("database unavailable (")
                assert gap.headers["Retry-After"] == "5"
                assert controller.get("/readyz").status_code == 503
                wait_until(lambda: spooled(state) >= 5, 20, "the agent to spool while the database is down")
                refused = len(ledger.errors)

                postgres_server.start()
                wait_until(
                    lambda: controller.get("/readyz").status_code == 200, 30, "the controller to reconnect"
                )
                acked = len(ledger.batches_acked)
                wait_until(lambda: len(ledger.batches_acked) >= acked + 2, 30, "ingest after the restart")
                assert controller.process is not None and controller.process.pid == served_by
                assert controller.process.poll() is None
                wait_until(lambda: spooled(state) <= 2, 30, "the agent to deliver its backlog")
        finally:
            assert agent_process.stop(agent) == 0
        assert_agent_delivered_once(state, controller.url, controller.token("agent", AGENT), url, AGENT)
        after = stored(url, ledger, agent_prefix="pg-agent-")

    assert "controller answered HTTP 503" in (tmp_path / "agent.log").read_text()  # it met the outage
    assert refused > 0 and any("HTTP 503" in e and "database unavailable" in e for e in ledger.errors)
    assert after.problems() == []
    assert after.reports_stored == len(ledger.reports_acked) > 0
