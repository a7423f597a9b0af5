"""`get --watch` against a real controller: the listing, then only what changed, until Ctrl-C."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from tests.controller.api.test_ingest import result
from tests.runnerctl.test_get_describe import run
from tests.servers import REPO, Controller, interruptible, runnerctl_cmd, running_controller


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    """One controller; each test watches a pool of its own."""
    with running_controller(tmp_path_factory.mktemp("watch")) as running:
        yield running


def add_runner(controller: Controller, rid: str, pool: str = "linux") -> None:
    runner = {"id": rid, "machine": f"vm-{rid}", "pool": pool}
    assert controller.post("/v1/results", json=[result(runner=runner)]).status_code == 200


class Lines:
    """A child's stdout read line by line on a thread, so a test can wait for a line with a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(target=lambda: [self.queue.put(line) for line in stream], daemon=True).start()

    def until(self, needle: str, timeout: float = 20) -> list[str]:
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in self.seen):
            self.seen.append(self.queue.get(timeout=max(0.01, deadline - time.monotonic())))
        return self.seen


def test_watch_prints_changes_and_ends_cleanly_on_ctrl_c(controller: Controller) -> None:
    add_runner(controller, "linux-01")
    env = os.environ | {"RUNNERCTL_SERVER": controller.url, "RUNNERCTL_TOKEN": controller.admin_token}
    with subprocess.Popen(
        runnerctl_cmd("get", "runners", "-l", "pool=linux", "--watch", "--interval", "0.2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
        preexec_fn=interruptible,
    ) as watcher:
        try:
            lines = Lines(watcher)
            first = lines.until("linux-01")
            assert first[0].split()[:2] == ["NAME", "POOL"]
            time.sleep(0.6)  # polls that find nothing new print nothing
            add_runner(controller, "linux-02")
            add_runner(controller, "mac-01", pool="mac")  # outside the selector
            lines.until("linux-02")
            cordoned = run(controller, "cordon", "linux-01", "--reason", "watch test")
            assert cordoned.returncode == 0, cordoned.stderr
            lines.until(" yes ")
            watcher.send_signal(signal.SIGINT)
            assert watcher.wait(timeout=10) == 0
            assert watcher.stderr is not None
            assert watcher.stderr.read() == ""  # no traceback, no "Aborted!"
        finally:
            watcher.kill()
    header, *rows = lines.seen
    assert [row.split()[0] for row in rows] == ["linux-01", "linux-02", "linux-01"]
    assert [row.split()[4] for row in rows] == ["no", "no", "yes"]  # CORDONED, only the change reprinted
    assert all(row.index(" linux ") == header.index("POOL") - 1 for row in rows)  # aligned under the header


def test_bounded_watch_streams_json_objects(controller: Controller) -> None:
    add_runner(controller, "arm-01", pool="arm")
    bounded = ("-l", "pool=arm", "--watch-count", "2", "--interval", "0.1")
    done = run(controller, "get", "runners", "-o", "name", *bounded)
    assert (done.returncode, done.stdout, done.stderr) == (0, "runner/arm-01\n", "")
    as_json = run(controller, "get", "runners", "-o", "json", "-w", *bounded)
    assert as_json.stdout.startswith('{\n  "identity": {\n    "id": "arm-01"')


def test_selector_errors_name_the_keys(controller: Controller) -> None:
    for resource, known in (
        ("incidents", "dimension, entity, id, kind, pool, state"),
        ("tests", "discounted-by, test, verdict"),
        ("actions", "action, actor, incident, job, mode, runner, status"),
    ):
        done = run(controller, "get", resource, "-l", "stat=sick")
        assert done.returncode == 1
        assert done.stderr == f"error: selector: unknown key stat; use one of: {known}\n"
