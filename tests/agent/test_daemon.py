from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agent.cli import plain_run
from agent.daemon import Agent, boot_id
from agent.settings import AgentSettings
from tests.agent import agent_process as ap
from tests.agent.sink import Sink

# What `runner-agent run` must never load, since it stays resident on every runner: the command-line
# framework and table output (only `once` and `config` need them), requests' charset detector (the
# controller answers JSON), and our modules behind the other commands. asyncio and multiprocessing are
# not listed because libraries the daemon needs import them unconditionally: APScheduler 3
# (`from asyncio import iscoroutinefunction`, its process pool executor) and pydantic-settings.
# `-X importtime` also lists imports that failed or were blocked (requests tries `chardet`), so a package
# counts as loaded by its submodules, which every one of these imports as soon as it really loads.
NO_PACKAGES = ("typer", "click", "rich", "shellingham", "charset_normalizer")
NO_MODULES = ("agent.commands", "agent.tomlout")


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


def test_the_daemon_never_loads_what_only_the_other_commands_need(sink: Sink, tmp_path: Path) -> None:
    config = ap.write_config(tmp_path, sink.url, sink.token)
    log = tmp_path / "agent.log"
    proc = ap.start(config, log, python_options=("-X", "importtime"))  # the interpreter lists each import
    try:
        ap.wait_for(
            lambda: (
                {r["readings"][0]["check"] for r in list(sink.store.reports.values())}
                >= {"cache", "disk", "memory"}
            ),
            20,
            "a report from every enabled check",
        )
    finally:
        assert ap.stop(proc) == 0
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in log.read_text().splitlines()
        if line.startswith("import time:")
    }

    assert {"agent.daemon", "agent.checks.cache", "requests", "apscheduler"} <= imported  # a real trace
    unwanted = sorted(
        m for m in imported if m in NO_MODULES or (m.partition(".")[0] in NO_PACKAGES and "." in m)
    )
    assert unwanted == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run"], (True, None)),
        (["run", "--config", "/etc/a.toml"], (True, "/etc/a.toml")),
        (["run", "-c", "a.toml"], (True, "a.toml")),
        (["run", "--config=a.toml"], (True, "a.toml")),
        (["run", "--help"], (False, None)),
        (["run", "--config"], (False, None)),
        (["run", "-c", "a.toml", "--verbose"], (False, None)),
        (["once", "--config", "a.toml"], (False, None)),
        ([], (False, None)),
    ],
)
def test_only_a_plain_run_skips_the_command_line_framework(
    argv: list[str], expected: tuple[bool, str | None]
) -> None:
    assert plain_run(argv) == expected
