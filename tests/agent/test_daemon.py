from __future__ import annotations

import threading
import time
from pathlib import Path

from agent.daemon import Agent, boot_id
from agent.settings import AgentSettings
from tests.agent.sink import Sink


def test_agent_reports_every_check_with_its_identity(sink: Sink, tmp_path: Path) -> None:
    (tmp_path / "boot_id").write_text("boot-xyz\n")
    cfg = AgentSettings.model_validate(
        {
            "server": sink.url,
            "token": sink.token,
            "state_dir": str(tmp_path / "state"),
            "work_dir": str(tmp_path),
            "boot_id_file": str(tmp_path / "boot_id"),
            "speedup": 60,
            "identity": {"id": "linux-03", "pool": "linux", "discover": False},
            "sender": {"idle_poll_s": 0.1},
            "disk": {"paths": [str(tmp_path)], "min_free_bytes": 0, "min_free_ratio": 0.0},
            "clock": {"servers": ["127.0.0.1:9"], "query_timeout_s": 0.2},
            "cache": {"caches": {"deps": str(tmp_path)}},
        }
    )
    agent = Agent(cfg)
    thread = threading.Thread(target=agent.run)
    thread.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        checks = {r["readings"][0]["check"] for r in list(sink.store.reports.values())}
        if checks == {"cache", "clock", "disk", "memory"}:
            break
        time.sleep(0.1)
    agent.stop()
    thread.join(10)

    assert not thread.is_alive()
    reports = list(sink.store.reports.values())
    assert {r["readings"][0]["check"] for r in reports} == {"cache", "clock", "disk", "memory"}
    assert {(r["agent_id"], r["boot_id"], r["runner"]["pool"]) for r in reports} == {
        ("linux-03", "boot-xyz", "linux")
    }
    clock = next(r["readings"][0] for r in reports if r["readings"][0]["check"] == "clock")
    assert (clock["status"], clock["reason"]) == ("unknown", "NtpUnreachable")


def test_boot_id_fallback(tmp_path: Path) -> None:
    assert boot_id(tmp_path / "missing") == "unknown-boot"
