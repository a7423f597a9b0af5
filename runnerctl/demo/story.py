"""The demo's story, told deterministically: a pool of six runners, three dozen tests, two of them
genuinely flaky, and one runner whose disk fills and which then fails twelve distinct tests.

A pure function of the end time and the machine's own healthy readings, so the same story is told on
every run; what the controller concludes from it is not scripted here.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from xml.etree import ElementTree

POOL = "linux"
IMAGE = "ubuntu-24.04-2026.09"
PROVIDER = "buildbot"
BUILDER = "linux-tests"
BUILDER_ID = 1
SICK = "linux-04"
SEED = 2026
HISTORY = timedelta(hours=10)  # under 12 h: the reruns, added later, must not change the analysis's bins
BUILD_EVERY = timedelta(minutes=25)
BUILD_TAKES = timedelta(minutes=6)
COMMIT_EVERY = timedelta(minutes=50)  # each commit is built on several runners: flaky is pass and fail on one
REPORT_EVERY = timedelta(minutes=10)
FILL_STARTS = timedelta(hours=4)  # before the end: the sick runner's disk starts filling
FILL_TAKES = timedelta(hours=1)
FULL_RATIO = 0.002
GIB = 1 << 30

# Tests that write to disk: the ones a full disk breaks. Twelve of them.
VICTIMS = (
    "tests/test_archive.py::test_extracts_nested_tarball",
    "tests/test_artifacts.py::test_uploads_build_log",
    "tests/test_build.py::test_wheel_builds_from_sdist",
    "tests/test_cache_store.py::test_spills_to_disk",
    "tests/test_codegen.py::test_writes_generated_module",
    "tests/test_export.py::test_exports_csv",
    "tests/test_fs.py::test_atomic_rename",
    "tests/test_logs.py::test_rotates_at_limit",
    "tests/test_snapshot.py::test_restores_snapshot",
    "tests/test_sqlite_store.py::test_commits_batch",
    "tests/test_tmpdir.py::test_cleans_up_on_error",
    "tests/test_upload.py::test_resumes_partial_upload",
)
# Genuinely flaky, on every runner alike: a timeout race and a timer. (test id, failure probability)
FLAKY = (
    ("tests/test_http_client.py::test_retries_on_timeout", 0.14),
    ("tests/test_scheduler.py::test_timer_fires_once", 0.09),
)
STEADY = (
    "tests/test_api.py::test_lists_runners",
    "tests/test_api.py::test_rejects_bad_token",
    "tests/test_auth.py::test_hashes_token",
    "tests/test_auth.py::test_expired_token_refused",
    "tests/test_cli.py::test_help_lists_commands",
    "tests/test_cli.py::test_unknown_flag_exits_2",
    "tests/test_config.py::test_reads_toml",
    "tests/test_config.py::test_env_overrides_file",
    "tests/test_forms.py::test_validates_email",
    "tests/test_math.py::test_median_of_even_count",
    "tests/test_models.py::test_runner_round_trip",
    "tests/test_models.py::test_result_defaults",
    "tests/test_parser.py::test_parses_junit",
    "tests/test_parser.py::test_rejects_entities",
    "tests/test_render.py::test_table_alignment",
    "tests/test_render.py::test_escapes_control_chars",
    "tests/test_selectors.py::test_matches_labels",
    "tests/test_serializers.py::test_dumps_iso_times",
    "tests/test_utils.py::test_chunks_evenly",
    "tests/test_utils.py::test_slugify",
    "tests/test_views.py::test_runner_page",
    "tests/test_views.py::test_incident_page",
)
TESTS = tuple(sorted((*VICTIMS, *(t for t, _ in FLAKY), *STEADY)))
DISK_FULL_MESSAGE = "OSError: [Errno 28] No space left on device: '/home/runner/work/_temp/{name}'"
FLAKY_MESSAGES = {
    FLAKY[0][0]: "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='127.0.0.1'): Read timed out.",
    FLAKY[1][0]: "AssertionError: timer fired 2 times, expected 1",
}


@dataclass(frozen=True)
class Runner:
    id: str
    workerid: int

    @property
    def machine(self) -> str:
        return self.id.replace("linux-", "linux-vm-")

    def identity(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.id,
            "machine": self.machine,
            "pool": POOL,
            "image": IMAGE,
            "labels": ["self-hosted", "linux"],
            "provider": PROVIDER,
        }


@dataclass(frozen=True)
class Build:
    """One CI build: its id is the job id our results carry (as Buildbot's build ids are)."""

    buildid: int
    buildrequestid: int
    buildsetid: int
    runner: str
    started: datetime
    commit: str
    failures: tuple[tuple[str, str], ...]  # (test id, message)

    @property
    def finished(self) -> datetime:
        return self.started + BUILD_TAKES

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class Story:
    end: datetime
    runners: tuple[Runner, ...]
    builds: tuple[Build, ...]
    reports: tuple[dict[str, Any], ...]
    disk_fills_at: datetime  # the sick runner's disk starts filling
    disk_full_at: datetime

    @property
    def start(self) -> datetime:
        return self.end - HISTORY

    def runner(self, runner_id: str) -> Runner:
        return next(r for r in self.runners if r.id == runner_id)

    def results(self) -> Iterator[dict[str, Any]]:
        """Every test execution, in the public result format (`POST /v1/results`)."""
        for build in self.builds:
            failed = dict(build.failures)
            identity = self.runner(build.runner).identity()
            for index, test_id in enumerate(TESTS):
                yield {
                    "test_id": test_id,
                    "outcome": "failed" if test_id in failed else "passed",
                    "time": _iso(build.started + timedelta(seconds=5 + 9 * index)),
                    "duration_s": 1.0 + (index % 7) * 0.4,
                    "job_id": str(build.buildid),
                    "run_id": str(build.buildsetid),
                    "attempt": 1,
                    "commit": build.commit,
                    "message": failed.get(test_id),
                    "runner": identity,
                }

    def failed_tests(self, runner_id: str) -> set[str]:
        return {t for b in self.builds if b.runner == runner_id for t, _ in b.failures}


def tell(end: datetime, healthy: list[dict[str, Any]]) -> Story:
    """The story ending at `end`; `healthy` is one round of real agent readings (the wire format of
    `common.readings`), the shape every healthy runner reports."""
    end = end.astimezone(UTC).replace(microsecond=0)
    rng = random.Random(SEED)
    runners = tuple(Runner(f"linux-{k:02d}", workerid=k) for k in range(1, 7))
    fills_at = end - FILL_STARTS
    full_at = fills_at + FILL_TAKES
    builds = _builds(end, runners, fills_at, rng)
    reports = tuple(_reports(end, runners, healthy, fills_at))
    return Story(end, runners, builds, reports, fills_at, full_at)


def _builds(
    end: datetime, runners: tuple[Runner, ...], fills_at: datetime, rng: random.Random
) -> tuple[Build, ...]:
    planned: list[tuple[datetime, Runner]] = []
    for offset, runner in enumerate(runners):
        at = end - HISTORY + timedelta(minutes=4 * offset)
        while at + BUILD_TAKES < end:
            planned.append((at, runner))
            at += BUILD_EVERY
    planned.sort(key=lambda p: (p[0], p[1].id))
    builds: list[Build] = []
    broken = 0
    for number, (at, runner) in enumerate(planned):
        failures = [(test, FLAKY_MESSAGES[test]) for test, p in FLAKY if rng.random() < p]
        if runner.id == SICK and _free_ratio(at, fills_at, 0.3) < 0.02:
            # Each build trips over a different handful of the disk-writing tests, as real ones do.
            for k in range(5):
                victim = VICTIMS[(broken * 5 + k) % len(VICTIMS)]
                failures.append((victim, DISK_FULL_MESSAGE.format(name=victim.rpartition("::")[2])))
            broken += 1
        builds.append(
            Build(
                buildid=1001 + number,
                buildrequestid=501 + number,
                buildsetid=301 + number,
                runner=runner.id,
                started=at,
                commit=_commit((at - planned[0][0]) // COMMIT_EVERY),
                failures=tuple(sorted(failures)),
            )
        )
    return tuple(builds)


def _free_ratio(at: datetime, fills_at: datetime, healthy: float) -> float:
    """The sick runner's free disk share: steady, then filling linearly over FILL_TAKES, then full."""
    if at <= fills_at:
        return healthy
    done = min(1.0, (at - fills_at) / FILL_TAKES)
    return healthy + (FULL_RATIO - healthy) * done


def _reports(
    end: datetime, runners: tuple[Runner, ...], healthy: list[dict[str, Any]], fills_at: datetime
) -> Iterator[dict[str, Any]]:
    for offset, runner in enumerate(runners):
        at = end - HISTORY + timedelta(seconds=37 * offset)
        seq = 0
        while at <= end:
            readings = [_vary(r, offset) for r in healthy]
            if runner.id == SICK:
                readings = [_filling(r, at, fills_at) if r.get("check") == "disk" else r for r in readings]
            yield {
                "agent_id": runner.id,
                "boot_id": f"demo-boot-{runner.id}",
                "seq": seq,
                "observed_at": _iso(at),
                "runner": runner.identity(),
                "readings": readings,
                "agent_version": "demo",
            }
            seq += 1
            at += REPORT_EVERY


def _vary(reading: dict[str, Any], offset: int) -> dict[str, Any]:
    """Six runners are not one machine: shift each one's free disk a little, never below the healthy."""
    if reading.get("check") != "disk":
        return reading
    varied = copy.deepcopy(reading)
    for path in varied.get("paths", []):
        total, free = path.get("total_bytes"), path.get("free_bytes")
        if total and free is not None:
            free = min(total, int(free * (1.0 + 0.03 * (offset - 2))))
            path["free_bytes"], path["free_ratio"] = free, free / total
    return varied


def _filling(reading: dict[str, Any], at: datetime, fills_at: datetime) -> dict[str, Any]:
    """The disk reading a real agent would send from a filling disk: the numbers, and its own verdict."""
    filled = copy.deepcopy(reading)
    problems = []
    for path in filled.get("paths", []):
        total = path.get("total_bytes")
        if not total:
            continue
        ratio = _free_ratio(at, fills_at, path.get("free_ratio") or 0.3)
        path["free_bytes"], path["free_ratio"] = int(total * ratio), ratio
        if ratio < 0.05 or total * ratio < GIB:
            problems.append(f"{path['path']}: {total * ratio / GIB:.2f} GiB free ({ratio:.1%})")
    if problems:
        filled |= {"status": "problem", "reason": "DiskFull", "message": "; ".join(problems)}
    return filled


def rerun_junit(at: datetime) -> bytes:
    """The JUnit XML a rebuild produces on a healthy runner: its disk-writing tests write
    again, and pass. The flaky tests happen to pass too: a demo should not hinge on a coin."""
    suite = ElementTree.Element(
        "testsuite", name="pytest", tests=str(len(TESTS)), failures="0", timestamp=_iso(at)
    )
    for index, test_id in enumerate(TESTS):
        file, _, name = test_id.partition("::")
        ElementTree.SubElement(
            suite,
            "testcase",
            file=file,
            classname=file.removesuffix(".py").replace("/", "."),
            name=name,
            time=f"{1.0 + (index % 7) * 0.4:.1f}",
        )
    root = ElementTree.Element("testsuites")
    root.append(suite)
    xml: bytes = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml


def _commit(number: int) -> str:
    return hashlib.sha256(f"demo-commit-{number}".encode()).hexdigest()[:12]


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")
