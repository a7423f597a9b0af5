"""`kill -9` of a controller in the middle of heavy ingest from several concurrent senders: after a
restart on the same database every acknowledged report and result is there exactly once, and nothing is
half-written. Real processes and real HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.reliability.traffic import Ledger, Senders, stored, wait_until
from tests.servers import database, running_controller

pytestmark = pytest.mark.slow


def test_kill_9_during_ingest_loses_and_doubles_nothing(tmp_path: Path, database_url: str) -> None:
    ledger = Ledger()
    with running_controller(tmp_path, database_url) as controller:
        token = controller.token("admin")
        with Senders(lambda: controller.url, token, ledger, reporters=4, uploaders=2):
            wait_until(lambda: len(ledger.batches_acked) >= 4, 30, "a few acknowledged uploads")
            # Mid-flight: senders are inside requests right now; some commits race the kill.
            controller.stop(signal.SIGKILL)
            acked_at_kill = (len(ledger.reports_acked), len(ledger.batches_acked))
            time.sleep(0.5)  # senders meet a dead port and keep their unacknowledged batches
            controller.start()
            wait_until(
                lambda: len(ledger.batches_acked) >= acked_at_kill[1] + 4,
                30,
                "uploads acknowledged by the restarted controller",
            )
        after = stored(controller.db, ledger)

    assert acked_at_kill[0] > 0 and acked_at_kill[1] > 0
    assert any("ConnectionError" in e for e in ledger.errors)  # senders met the dead port and resent
    assert after.problems() == []
    assert after.reports_stored >= len(ledger.reports_acked) > acked_at_kill[0]
    assert after.results_stored >= ledger.results_acked
    if database_url.startswith("sqlite"):
        with database(database_url) as conn:
            assert conn.execute(text("PRAGMA integrity_check")).scalar_one() == "ok"
            assert conn.execute(text("PRAGMA foreign_key_check")).all() == []
