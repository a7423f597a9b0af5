"""A real Buildbot 4.3 master and workers on loopback for end-to-end tests, always torn down.

`start_fleet()` owns the processes: it creates the master and workers in a directory, starts them in the
foreground of their own sessions and stops them (SIGTERM, then SIGKILL for them and anything they
spawned) however the `with` block ends. Buildbot lives in its own venv (it pins Twisted and friends);
the builds run the small suite in buildbot_project/ with this process's interpreter.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tests.e2e.processes import ChildProcesses, free_ports, port_listens

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROJECT_DIR = HERE / "buildbot_project"
MASTER_CFG = HERE / "buildbot_master_cfg.py"
# The probe hook runnerctl ships for Buildbot masters; master.cfg imports it from the master's directory.
PROBE_HOOK = REPO / "packaging" / "buildbot" / "runnerctl_probe.py"
DEFAULT_WORKERS = ("w1", "w2", "w3")
PROJECT_TEST_COUNT = 12  # tests in buildbot_project/; 9 of them use the scratch space a sick worker breaks
# Name/value slots of the force scheduler's form; force_build() takes at most this many properties.
PROPERTY_SLOTS = 8
RESULT_NAMES = ("success", "warnings", "failure", "skipped", "exception", "retry", "cancelled")
SUCCESS, WARNINGS, FAILURE = 0, 1, 2
# Each poll is a REST query the master answers in Python; polling faster slows the builds down.
POLL_INTERVAL = 0.25


class BuildbotError(RuntimeError):
    """The fleet did not start, did not answer, or refused a call; the message carries the evidence."""


def buildbot_venv_path() -> Path:
    return Path(os.environ.get("RUNNERCTL_BUILDBOT_VENV") or REPO / ".venv-buildbot")


def buildbot_venv_problem(venv: Path) -> str | None:
    """Why `venv` cannot run a fleet, or None when it can."""
    missing = [name for name in ("buildbot", "buildbot-worker") if not (venv / "bin" / name).is_file()]
    if not missing:
        return None
    return (
        f"no Buildbot venv at {venv} (missing bin/{', bin/'.join(missing)}); create it with "
        f"`python3 -m venv {venv} && {venv}/bin/pip install buildbot==4.3.0 buildbot-worker==4.3.0 "
        "buildbot-www==4.3.0` or point RUNNERCTL_BUILDBOT_VENV at one"
    )


@dataclass
class BuildbotFleet:
    """A running master and its workers, driven through the REST and JSON-RPC API at `url + "api/v2/"`."""

    url: str
    workers: list[str]
    workdir: Path
    pids: list[int] = field(default_factory=list)  # master first, then the workers
    request_timeout: float = 10.0

    def sick_marker(self, worker: str) -> Path:
        """Touch this file and the worker's next builds fail most tests; remove it and they pass again."""
        if worker not in self.workers:
            raise ValueError(f"unknown worker {worker!r}; the fleet has {self.workers}")
        return self.workdir / "sick" / worker

    # -- raw API --------------------------------------------------------------------------------------

    def api(self, path: str, **params: Any) -> dict[str, Any]:
        """GET `api/v2/<path>`; raise BuildbotError on anything but 200."""
        response = requests.get(self.url + "api/v2/" + path, params=params, timeout=self.request_timeout)
        if response.status_code != 200:
            raise BuildbotError(f"GET {path} {params}: HTTP {response.status_code}: {response.text[:500]}")
        body: dict[str, Any] = response.json()
        return body

    def rpc(self, path: str, method: str, **params: Any) -> Any:
        """Call a JSON-RPC control method on `api/v2/<path>` and return its result."""
        payload = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
        response = requests.post(self.url + "api/v2/" + path, json=payload, timeout=self.request_timeout)
        is_json = response.headers.get("content-type", "").startswith("application/json")
        body = response.json() if is_json else {}
        if response.status_code != 200 or "error" in body:
            raise BuildbotError(f"{method} on {path}: HTTP {response.status_code}: {response.text[:500]}")
        return body.get("result")

    # -- workers --------------------------------------------------------------------------------------

    def worker_states(self) -> dict[str, dict[str, Any]]:
        return {w["name"]: w for w in self.api("workers")["workers"]}

    def connected_workers(self) -> list[str]:
        return sorted(name for name, w in self.worker_states().items() if w.get("connected_to"))

    def pause(self, worker: str, reason: str = "paused by test") -> None:
        self.rpc(f"workers/{worker}", "pause", reason=reason)

    def unpause(self, worker: str) -> None:
        self.rpc(f"workers/{worker}", "unpause")

    # -- builds ---------------------------------------------------------------------------------------

    def builder_id(self, builder: str) -> int:
        found = self.api("builders", name=builder)["builders"]
        if not found:
            raise BuildbotError(f"no builder named {builder!r}")
        return int(found[0]["builderid"])

    def force_build(self, builder: str = "tests", **props: str | int | float) -> int:
        """Queue a build through the force scheduler and return its **buildrequest id**.

        Properties become build properties. Those the builder understands: `worker` (pin the build to
        that worker; a rebuild ignores the pin), `flaky` (comma-separated test names that fail wherever
        they run) and `hold_seconds` (the suite sleeps that long before its tests: a busy worker).
        """
        if "worker" in props and props["worker"] not in self.workers:
            # Buildbot would queue it for a worker that never comes.
            raise ValueError(f"unknown worker {props['worker']!r}; the fleet has {self.workers}")
        if len(props) > PROPERTY_SLOTS:
            raise ValueError(f"at most {PROPERTY_SLOTS} properties per forced build, got {len(props)}")
        builderid = self.builder_id(builder)
        params: dict[str, Any] = {"builderid": builderid, "reason": "forced by test"}
        for slot, (name, value) in enumerate(sorted(props.items())):
            params[f"property{slot}_name"] = name
            params[f"property{slot}_value"] = str(value)
        # Result: [buildsetid, {"<builderid>": buildrequestid}]
        _bsid, brids = self.rpc("forceschedulers/force", "force", **params)
        return int(brids[str(builderid)])

    def rebuild(self, buildid: int) -> int:
        """Rebuild a finished build as a new buildset; return the new **buildrequest id**."""
        _bsid, brids = self.rpc(f"builds/{buildid}", "rebuild")
        return int(next(iter(brids.values())))

    def builds(self, **filters: Any) -> list[dict[str, Any]]:
        """Builds with their `workername` property, oldest first; filters are REST field filters."""
        found = self.api("builds", property="workername", order="buildid", **filters)["builds"]
        return list(found)

    def wait_builds(self, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        """Wait until at least `count` builds are complete; return all complete builds, oldest first."""
        done: list[dict[str, Any]] = []

        def enough() -> bool:
            nonlocal done
            done = self.builds(complete="true")
            return len(done) >= count

        self.wait_until(enough, timeout, lambda: f"{len(done)} of {count} builds complete")
        return done

    def wait_build_for_request(self, buildrequestid: int, timeout: float = 60) -> dict[str, Any]:
        """Wait until the (last) build of a buildrequest is complete and return it."""
        found: list[dict[str, Any]] = []

        def complete() -> bool:
            nonlocal found
            found = self.builds(buildrequestid=buildrequestid)
            return bool(found) and bool(found[-1]["complete"])

        self.wait_until(complete, timeout, lambda: f"buildrequest {buildrequestid}: builds {found}")
        return found[-1]

    def wait_until(
        self, done: Callable[[], bool], timeout: float = 60, what: str | Callable[[], str] = "condition"
    ) -> None:
        """Poll `done` every POLL_INTERVAL; on timeout raise TimeoutError with `what` and the logs."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                detail = what() if callable(what) else what
                raise TimeoutError(f"after {timeout:.0f} s: {detail}\n{self.log_tails()}")
            time.sleep(POLL_INTERVAL)

    def log_tails(self, lines: int = 30) -> str:
        """The end of the master's and workers' logs, for failure messages."""
        parts = []
        logs = sorted(self.workdir.glob("*/twistd.log")) + sorted(self.workdir.glob("workers/*/twistd.log"))
        for log in logs:
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.relative_to(self.workdir)}\n" + "\n".join(tail))
        return "\n".join(parts)

    @staticmethod
    def workername(build: dict[str, Any]) -> str:
        """The worker that ran a build listed with `property=workername`."""
        return str(build["properties"]["workername"][0])


def result_name(results: int | None) -> str:
    return "running" if results is None else RESULT_NAMES[results]


@contextlib.contextmanager
def start_fleet(
    workdir: Path,
    *,
    workers: tuple[str, ...] | list[str] = DEFAULT_WORKERS,
    venv: Path | None = None,
    results_url: str | None = None,
    status_push_url: str | None = None,
    token: str = "runnerctl-test-token",
    uploader: str = "auto",
    setup_step: bool = False,
    python: str = sys.executable,
    start_timeout: float = 60,
    stop_timeout: float = 15,
) -> Iterator[BuildbotFleet]:
    """Start a master (www and PB on free loopback ports) and `workers`, yield the fleet, stop it all.

    `results_url`: each build POSTs its JUnit XML there with `Authorization: Bearer <token>` and query
    `job_id=<buildid>&run_id=<buildsetid>&runner_id=<worker>&pool=buildbot&machine=<worker>&provider=buildbot`.
    `uploader`: "curl", "python" (urllib, for hosts without curl) or "auto" (curl when installed).
    `setup_step`: a first step that makes the build's scratch space; it fails on a sick worker.
    `status_push_url`: Buildbot's HttpStatusPush posts each build's dict there at start and finish.
    The processes get SIGKILL if the thread that called this dies without unwinding (setpriv --pdeathsig).
    """
    venv = venv or buildbot_venv_path()
    problem = buildbot_venv_problem(venv)
    if problem:
        raise BuildbotError(problem)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "sick").mkdir(exist_ok=True)
    www_port, pb_port = free_ports(2)
    url = f"http://127.0.0.1:{www_port}/"
    password = secrets.token_hex(8)
    env = _clean_env(venv)
    processes = ChildProcesses(workdir / "logs")
    try:
        _create(workdir, venv, env, list(workers), pb_port, password)
        master = workdir / "master"
        shutil.copyfile(MASTER_CFG, master / "master.cfg")
        shutil.copyfile(PROBE_HOOK, master / PROBE_HOOK.name)
        secret_dir = master / "secrets"
        secret_dir.mkdir(mode=0o700, exist_ok=True)
        token_file = secret_dir / "results_token"
        token_file.write_text(token, encoding="utf-8")
        token_file.chmod(0o600)  # SecretInAFile refuses secrets others can read
        fleet_config = {
            "url": url,
            "www_port": www_port,
            "pb_port": pb_port,
            "workers": list(workers),
            "password": password,
            "python": python,
            "project_dir": str(PROJECT_DIR),
            "sick_dir": str(workdir / "sick"),
            "results_url": results_url,
            "status_push_url": status_push_url,
            "token": token,
            "uploader": uploader,
            "property_slots": PROPERTY_SLOTS,
            "setup_step": setup_step,
        }
        (master / "fleet.json").write_text(json.dumps(fleet_config, indent=2), encoding="utf-8")
        fleet = BuildbotFleet(url=url, workers=list(workers), workdir=workdir)

        master_proc = processes.spawn(
            "master", [str(venv / "bin/buildbot"), "start", "--nodaemon", "master"], cwd=workdir, env=env
        )
        fleet.pids.append(master_proc.pid)
        # Workers that find no PB port back off for seconds before retrying, so start them once it listens.
        _wait_until(
            lambda: port_listens(pb_port), start_timeout, [master_proc], fleet, "master's PB port to listen"
        )
        worker_procs = [
            processes.spawn(
                name,
                [str(venv / "bin/buildbot-worker"), "start", "--nodaemon", name],
                cwd=workdir / "workers",
                env=env,
            )
            for name in workers
        ]
        fleet.pids.extend(p.pid for p in worker_procs)
        _wait_until(
            lambda: fleet.connected_workers() == sorted(workers),
            start_timeout,
            [master_proc, *worker_procs],
            fleet,
            f"workers {sorted(workers)} to connect",
        )
        yield fleet
    finally:
        processes.stop_all(stop_timeout)


def _create(
    workdir: Path, venv: Path, env: dict[str, str], workers: list[str], pb_port: int, password: str
) -> None:
    """Run create-master and create-worker in parallel: each costs a second or two of imports."""
    (workdir / "workers").mkdir(exist_ok=True)
    commands = [
        [
            str(venv / "bin/buildbot"),
            "create-master",
            "-r",
            "--db",
            "sqlite:///state.sqlite",
            str(workdir / "master"),
        ]
    ]
    commands += [
        [
            str(venv / "bin/buildbot-worker"),
            "create-worker",
            "-r",
            str(workdir / "workers" / name),
            f"127.0.0.1:{pb_port}",
            name,
            password,
        ]
        for name in workers
    ]
    procs = [
        subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for cmd in commands
    ]
    failures = []
    try:
        for cmd, proc in zip(commands, procs, strict=True):
            try:
                output, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = proc.communicate()
            if proc.returncode != 0:
                failures.append(f"{' '.join(cmd)} -> {proc.returncode}\n{output.decode(errors='replace')}")
    finally:
        for proc in procs:  # only left running when interrupted (Ctrl-C) above
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    if failures:
        raise BuildbotError("creating the fleet failed:\n" + "\n".join(failures))


def _wait_until(
    done: Callable[[], bool],
    timeout: float,
    procs: list[subprocess.Popen[bytes]],
    fleet: BuildbotFleet,
    what: str,
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(requests.RequestException, BuildbotError):
            if done():
                return
        dead = [p.args for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = f"exited: {dead}" if dead else f"timed out after {timeout:.0f} s"
            raise BuildbotError(f"waiting for {what}: {why}\n{fleet.log_tails()}")
        time.sleep(0.1)


# Builds see only these from the test process: Buildbot writes a step's whole environment into its log,
# and CI tokens or PYTEST_* variables (PYTEST_ADDOPTS, PYTEST_CURRENT_TEST) have no business there.
_PASSED_ENV = ("HOME", "LANG", "LC_ALL", "LOGNAME", "SHELL", "TMPDIR", "TZ", "USER")


def _clean_env(venv: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}"
    return env
