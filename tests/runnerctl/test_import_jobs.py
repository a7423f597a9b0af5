"""`kind: job` lines through `runnerctl import` into a real controller over HTTP, and back out through
`get jobs`, `get runners -o wide` and `describe runner`: a runner whose jobs die at set-up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runnerctl.test_import_explain import ctl
from tests.servers import Controller, running_controller

RUNNER = {"id": "bh-01", "machine": "vm-bh-01", "pool": "linux"}
PEER = {"id": "ok-01", "machine": "vm-ok-01", "pool": "linux"}


def job_line(job_id: str, runner: dict[str, str], conclusion: str, start: str, end: str, **extra: Any) -> str:
    record = {
        "kind": "job",
        "job_id": job_id,
        "run_id": "run-1",
        "attempt": 1,
        "name": "unit",
        "started": f"2026-09-21T10:{start}Z",
        "finished": f"2026-09-21T10:{end}Z",
        "conclusion": conclusion,
        "runner": runner,
    } | extra
    return json.dumps(record)


HISTORY = [
    json.dumps(
        {
            "test_id": "t::a",
            "outcome": "passed",
            "time": "2026-09-21T10:05:00Z",
            "runner": PEER,
            "job_id": "j-2",
        }
    ),
    job_line(
        "j-1",
        RUNNER,
        "system_failure",
        "00:00",
        "00:04",
        failed_step="checkout",
        failure_reason="runner_system_failure",
        tests=0,
    ),
    job_line("j-2", PEER, "success", "01:00", "05:10", tests=40),
    job_line(
        "j-3",
        RUNNER,
        "system_failure",
        "06:00",
        "06:06",
        failed_step="checkout",
        failure_reason="runner_system_failure",
        tests=0,
    ),
    job_line("j-4", RUNNER, "cancelled", "07:00", "07:30"),
]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    tmp = tmp_path_factory.mktemp("jobs-import")
    history = tmp / "history.ndjson"
    history.write_text("".join(line + "\n" for line in HISTORY))
    with running_controller(tmp, env={"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0"}) as controller:
        done = ctl(
            controller,
            "import",
            "--no-wait",
            str(history),
            state=tmp / "state",
            token=controller.token("ingest"),
        )
        assert done.returncode == 0, done.stderr
        assert "imported 1 result (1 new), 4 jobs (4 new) and 0 reports (0 new)" in done.stderr
        again = ctl(controller, "import", "--no-wait", str(history), state=tmp / "state")
        assert "4 jobs (0 new)" in again.stderr
        yield controller


def test_get_jobs(imported: Controller) -> None:
    done = ctl(imported, "get", "jobs")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "JOB  NAME  RUNNER  CONCLUSION      DURATION  TESTS   FINISHED\n"
        "j-4  unit  bh-01   cancelled       30s       <none>  2026-09-21T10:07:30Z\n"
        "j-3  unit  bh-01   system_failure  6s        0       2026-09-21T10:06:06Z\n"
        "j-2  unit  ok-01   success         4m10s     40      2026-09-21T10:05:10Z\n"
        "j-1  unit  bh-01   system_failure  4s        0       2026-09-21T10:00:04Z\n"
    )


def test_get_jobs_wide_and_selected(imported: Controller) -> None:
    done = ctl(imported, "get", "jobs", "-l", "runner=bh-01,conclusion!=cancelled", "-o", "wide")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "JOB  NAME  RUNNER  CONCLUSION      DURATION  TESTS  FINISHED              RUN    ATTEMPT  STEP      REASON                 POOL\n"
        "j-3  unit  bh-01   system_failure  6s        0      2026-09-21T10:06:06Z  run-1  1        checkout  runner_system_failure  linux\n"
        "j-1  unit  bh-01   system_failure  4s        0      2026-09-21T10:00:04Z  run-1  1        checkout  runner_system_failure  linux\n"
    )
    named = ctl(imported, "get", "jobs", "--conclusion", "success", "-o", "name")
    assert named.stdout == "job/j-2\n"


def test_get_runners_wide_shows_their_jobs(imported: Controller) -> None:
    done = ctl(imported, "get", "runners", "-o", "wide")
    assert done.returncode == 0, done.stderr
    # The cancelled job is not counted; the median of 4 s and 6 s is 5 s. Both jobs died in seconds
    # with no test while its peer's job ran its tests: bh-01 is what the job-health term calls sick.
    assert done.stdout == (
        "NAME   POOL   HEALTH   DIMENSION  CORDONED  FAILURES  LAST-SEEN             MACHINE   IMAGE   SHARD   LABELS  LAST-REPORT  JOBS  JOB-FAIL%  MEDIAN-JOB\n"
        "bh-01  linux  sick     jobs       no        0/0       2026-09-21T10:07:30Z  vm-bh-01  <none>  <none>  <none>  <none>       2     100%       5s\n"
        "ok-01  linux  healthy  <none>     no        0/1       2026-09-21T10:05:10Z  vm-ok-01  <none>  <none>  <none>  <none>       1     0%         4m10s\n"
    )


def test_describe_runner_shows_its_jobs(imported: Controller) -> None:
    done = ctl(imported, "describe", "runner", "bh-01")
    assert "Jobs:         2 (2 failed, 100%); median 5s\n" in done.stdout


def test_a_bad_job_line_is_named_by_file_and_line(imported: Controller, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_text(HISTORY[2] + "\n\n" + job_line("j-9", RUNNER, "exploded", "00:00", "00:01") + "\n")
    done = ctl(imported, "import", "--no-wait", str(bad), state=tmp_path / "state")
    assert done.returncode == 1
    assert f"{bad}:3: conclusion: Input should be" in done.stderr, done.stderr
