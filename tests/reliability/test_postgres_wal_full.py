"""PostgreSQL's WAL volume fills up under ingest: the case test_postgres_disk_full.py leaves out.

The WAL is on its own 16 MiB loop-mounted ext4 (`loopfs`), as with pg_wal on a volume of its own, and
filled to the last block. PostgreSQL cannot ride that out: the backend that needs a new WAL segment
PANICs ("could not write to file pg_wal/xlogtemp…: No space left on device"), crash recovery then needs
a segment too and fails, and the postmaster shuts down. Nothing in the controller can bring the server
back; what it must do is answer every request clearly while the server is gone (503 with Retry-After,
never a 500), lose nothing it acknowledged, and carry on by itself, same process, once an operator (or
the server's supervisor) frees space and starts the server again.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.postgres import require_postgres, running_postgres
from tests.reliability import loopfs
from tests.reliability.traffic import Client, Ledger, result_records, stored, wait_until
from tests.servers import running_controller

pytestmark = [pytest.mark.slow, pytest.mark.needs_postgres]


def test_a_full_wal_volume_stops_the_server_and_the_controller_says_so_until_it_is_back(
    tmp_path: Path,
) -> None:
    loopfs.skip_unless_possible()
    require_postgres()
    ledger = Ledger()
    # Not under pytest's tmp dir, which is private to root: the server runs as `postgres`.
    outside = Path(tempfile.mkdtemp(prefix="runnerctl-walfull-"))
    outside.chmod(0o755)
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, outside, ignore_errors=True)
        volume = cleanup.enter_context(loopfs.loop_filesystem(outside, size_mib=16))
        volume.chmod(0o755)
        wal = volume / "wal"
        wal.mkdir()
        shutil.chown(wal, "postgres", "postgres")
        with running_postgres(wal_dir=wal) as server, server.database() as url:
            with running_controller(tmp_path, url) as controller:
                served_by = controller.process.pid if controller.process else None
                client = Client(lambda: controller.url, controller.admin_token, ledger)
                for number in range(3):
                    assert client.send_results(f"before-{number}", 500), ledger.errors[-1:]

                filler = loopfs.fill(volume)
                # The WAL segments the server holds still have room: send until one more is needed.
                statuses = []
                for number in range(60):
                    job = f"full-{number}"
                    ledger.sent_batch(job, 2000)
                    response = client.post(
                        "/v1/results", json.dumps(result_records(job, 2000)).encode(), "application/json"
                    )
                    assert response is not None, ledger.errors[-1:]
                    statuses.append(response.status_code)
                    if response.status_code != 200:
                        break
                    ledger.ack_batch(job)
                refusal = response
                # Never a 500. The backend that needed the segment PANICs; when that is the one serving
                # this request, PostgreSQL sends its error first (SQLSTATE 53100, disk full): a 507 naming
                # the WAL. When another process (the WAL writer) hit it, the connection just drops: a 503.
                assert statuses[-1] in (503, 507), (statuses, refusal.text)
                detail = refusal.json()["detail"]
                if refusal.status_code == 507:
                    assert detail.startswith(
                        "the PostgreSQL server's disk is full (could not write to file"
                    ), detail
                    assert "pg_wal/xlogtemp" in detail and "nothing was stored" in detail, detail
                    assert refusal.headers["Retry-After"] == "30"
                else:
                    assert detail.startswith("database unavailable ("), detail
                    assert refusal.headers["Retry-After"] == "5"
                log = server.log.read_text(errors="replace")
                assert 'PANIC:  could not write to file "pg_wal/xlogtemp' in log
                assert "No space left on device" in log

                # The server is gone, not just this request: crash recovery needs a WAL segment too, so the
                # postmaster gives up (the manual's "may panic and shut down"). Every request says so, fast.
                wait_until(
                    lambda: (
                        "shutting down due to startup process failure"
                        in server.log.read_text(errors="replace")
                    ),
                    30,
                    "the postmaster to stop",
                )
                started = time.monotonic()
                assert not client.send_results("while-down", 500)
                assert time.monotonic() - started < 5, "a request while the server is down hung"
                assert "HTTP 503" in ledger.errors[-1] and "database unavailable" in ledger.errors[-1]
                assert controller.get("/healthz").status_code == 200  # alive: nothing to restart here
                assert controller.get("/readyz").status_code == 503

                # Space back, and the server started again, as its supervisor would: no controller restart.
                filler.unlink()
                server.start()
                wait_until(
                    lambda: controller.get("/readyz").status_code == 200, 30, "the controller to reconnect"
                )
                assert client.send_results("after-space-freed", 2000), ledger.errors[-1:]
                assert controller.process is not None and controller.process.pid == served_by
                assert controller.process.poll() is None
            after = stored(url, ledger)

    assert after.problems() == []  # every acknowledged batch stored once, none half-stored
    assert after.results_stored == ledger.results_acked
    print(f"\n{statuses.count(200)} result batches acknowledged after the fill, then HTTP {statuses[-1]}")
