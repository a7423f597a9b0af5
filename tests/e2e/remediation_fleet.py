"""The whole loop on real processes: a Buildbot fleet uploading JUnit to a real controller, and a real
runner-agent beside each worker whose disk check watches that worker's scratch filesystem.

A sick worker gets two real faults that a real full disk would cause together: its scratch filesystem
is a 512 KiB tmpfs filled to the last byte (what its agent measures and write-probes), and its builds'
scratch space breaks (the harness's sick marker), so most of its tests fail. A tmpfs is used instead of
a skewed chronyd because it needs no ports, settles at once and is judged by one threshold (free bytes)
that no healthy worker on this machine comes near.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tests.agent import agent_process
from tests.e2e.buildbot import SUCCESS, BuildbotError, BuildbotFleet, start_fleet
from tests.servers import Controller, running_controller

TMPFS_BYTES = 512 * 1024


def mount_full_tmpfs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(path)],
        check=True,
        capture_output=True,
        timeout=10,
    )
    with contextlib.suppress(OSError), (path / "filler").open("wb") as out:
        while True:
            out.write(b"\0" * 4096)
            out.flush()


def can_mount_tmpfs(tmp: Path) -> str | None:
    """None when this host lets us mount a tmpfs (root in a privileged enough place), else why not."""
    probe = tmp / "mount-probe"
    probe.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True, timeout=10
    )
    if done.returncode != 0:
        return f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}"
    subprocess.run(["umount", str(probe)], check=True, timeout=10)
    return None


@dataclass
class Loop:
    controller: Controller
    fleet: BuildbotFleet
    ingest_token: str
    agents: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    scratch: dict[str, Path] = field(default_factory=dict)  # each worker's scratch space, its agent watches

    def runnerctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        from tests.servers import REPO, runnerctl_cmd

        return subprocess.run(
            runnerctl_cmd("--server", self.controller.url, "--token", self.controller.admin_token, *args),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=timeout,
        )

    def restart_controller(self, **env: str) -> None:
        """Stop the controller and start it again on the same database, with `env` changed."""
        self.controller.stop()
        self.controller.env = self.controller.env | env
        self.controller.start()

    def heal(self, worker: str) -> None:
        """Fix a sick worker for real: its full tmpfs unmounted (the directory below has room, which its
        agent reports) and its builds' scratch space working again."""
        self.heal_disk(worker)
        self.heal_builds(worker)

    def heal_disk(self, worker: str) -> None:
        """Only what its agent measures: its readings turn healthy while its builds still fail."""
        subprocess.run(
            ["umount", "-l", str(self.scratch[worker])], check=True, capture_output=True, timeout=10
        )

    def heal_builds(self, worker: str) -> None:
        self.fleet.sick_marker(worker).unlink()

    def with_probe_hook(self) -> dict[str, str]:
        """The controller's provider settings with Buildbot's probe hook on (the test master has it)."""
        providers = json.loads(self.controller.env["RUNNER_CONTROLLER_PROVIDERS"])
        providers["buildbot"]["probe_hook"] = True
        return {"RUNNER_CONTROLLER_PROVIDERS": json.dumps(providers)}

    def paused(self) -> dict[str, bool]:
        return {name: bool(w["paused"]) for name, w in self.fleet.worker_states().items()}

    def incidents(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.controller.get("/v1/incidents").json()["items"]
        return items

    def actions(self, **params: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.controller.get("/v1/actions", params=params).json()["items"]
        return items

    def wait_for(self, what: str, done: Any, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = done()
            if found:
                return found
            time.sleep(0.5)
        log = self.controller.log.read_text(errors="replace")[-4000:]
        raise AssertionError(
            f"timed out after {timeout:.0f} s waiting for {what}\n{self._verdicts()}\n--- controller log\n{log}"
        )

    def reruns_green(self, failed: set[str], healthy: set[str]) -> None:
        """Waits until each failed build was rebuilt once; asserts each rebuild ran green on a healthy
        worker."""
        reruns: list[dict[str, Any]] = self.wait_for(
            "every failed build rerun",
            lambda: (
                (found := self.actions(action="rerun", status="done")) and len(found) == len(failed) and found
            ),
            timeout=60,
        )
        assert {a["job"] for a in reruns} == failed
        for action in reruns:
            request = int(action["detail"].rpartition("buildrequest:")[2])
            build = self.fleet.wait_build_for_request(request, timeout=90)
            assert (self.fleet.workername(build), build["results"]) in {(w, SUCCESS) for w in healthy}

    def _verdicts(self) -> str:
        """What the controller had concluded when a wait timed out: its incidents and its actions."""
        try:
            incidents = [
                (i["kind"], i["entity"], i["state"], i["dimension"], i["statistics"].get("ratio"))
                for i in self.incidents()
            ]
            actions = [(a["action"], a["runner"], a["status"], a.get("detail")) for a in self.actions()]
            builds = [
                (b.get("properties", {}).get("workername", [None])[0], b.get("results"))
                for b in self.fleet.builds(complete="true")
            ]
        except Exception as error:  # the controller may be what failed
            return f"--- verdicts unavailable: {error}"
        return f"--- incidents\n{incidents}\n--- actions\n{actions}\n--- builds (worker id, result)\n{builds}"

    def force_round(self, per_worker: int) -> None:
        """Queue `per_worker` builds pinned to each worker and wait until all of them are complete."""
        before = len(self.fleet.builds(complete="true"))
        for _ in range(per_worker):
            for worker in self.fleet.workers:
                self.fleet.force_build(worker=worker)
        self.fleet.wait_builds(before + per_worker * len(self.fleet.workers), timeout=120)


@dataclass
class PauseSamples:
    """The workers the controller had paused (its `runnerctl:` mark), read from Buildbot itself while a
    test runs, each sample beside the budget in force when it was taken."""

    bound: int
    seen: list[tuple[int, frozenset[str]]] = field(default_factory=list)

    def over(self) -> list[tuple[int, frozenset[str]]]:
        return [(bound, paused) for bound, paused in self.seen if len(paused) > bound]

    def most(self, bound: int) -> int:
        return max((len(paused) for b, paused in self.seen if b == bound), default=0)


@contextlib.contextmanager
def sampling_pauses(fleet: BuildbotFleet, bound: int, interval_s: float = 0.25) -> Iterator[PauseSamples]:
    """Sample Buildbot's worker states in a thread until the block ends; raise `bound` as the test
    loosens the budget (before the controller that may use it starts)."""
    samples = PauseSamples(bound)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            bound = samples.bound
            with contextlib.suppress(requests.RequestException, BuildbotError):
                states = fleet.worker_states().items()
                ours = [
                    n for n, w in states if w["paused"] and (w["pause_reason"] or "").startswith("runnerctl:")
                ]
                samples.seen.append((bound, frozenset(ours)))
            stop.wait(interval_s)

    thread = threading.Thread(target=sample, name="pause-sampler", daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(timeout=30)


@contextlib.contextmanager
def running_loop(
    tmp: Path,
    venv: Path,
    sick: tuple[str, ...],
    env: dict[str, str] | None = None,
    workers: tuple[str, ...] = ("w1", "w2", "w3"),
    setup_fails: tuple[str, ...] = (),
) -> Iterator[Loop]:
    """Controller, fleet and agents up, the `sick` workers broken; everything torn down afterwards.
    The `setup_fails` workers' builds fail at their first step, before any test (a set-up step is
    added to every build then); their disks are fine."""
    mounts: list[Path] = []
    agents: dict[str, subprocess.Popen[bytes]] = {}
    scratches: dict[str, Path] = {}
    with running_controller(tmp, env=env) as controller:
        ingest = controller.token("ingest")
        results_url = f"{controller.url}/v1/results/junit"
        with start_fleet(
            tmp / "buildbot",
            venv=venv,
            workers=workers,
            results_url=results_url,
            status_push_url=f"{controller.url}/v1/webhooks/buildbot",
            token=ingest,
            setup_step=bool(setup_fails),
        ) as fleet:
            # Only now is the master's URL known: restart the controller with it as its provider.
            controller.stop()
            providers = {"buildbot": {"url": fleet.url, "timeout_s": 5}}
            controller.env = controller.env | {"RUNNER_CONTROLLER_PROVIDERS": json.dumps(providers)}
            controller.start()
            try:
                for worker in fleet.workers:
                    home = tmp / "agents" / worker
                    home.mkdir(parents=True)
                    scratch = scratches[worker] = home / "scratch"
                    if worker in sick:
                        mount_full_tmpfs(scratch)
                        mounts.append(scratch)
                        fleet.sick_marker(worker).touch()
                    else:
                        scratch.mkdir()
                    if worker in setup_fails:
                        fleet.sick_marker(worker).touch()
                    config = agent_process.write_config(
                        home,
                        controller.url,
                        controller.token("agent", worker),
                        identity={
                            "id": worker,
                            "name": worker,
                            "machine": worker,
                            "pool": "buildbot",
                            "provider": "buildbot",
                        },
                        disk={
                            "interval_s": 1.0,
                            "paths": [str(scratch)],
                            "probe_dir": str(scratch),
                            "min_free_bytes": 1 << 30,
                            "min_free_ratio": 0.05,
                        },
                        memory={"interval_s": 2.0},
                        cache={"enabled": False},
                    )
                    agents[worker] = agent_process.start(config, home / "agent.log")
                yield Loop(controller, fleet, ingest, agents, scratches)
            finally:
                for proc in agents.values():
                    with contextlib.suppress(AssertionError):
                        agent_process.stop(proc)
                for mount in mounts:
                    subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=10)
