"""Probe before return: with a provider that can pin a job to a cordoned runner, the runner returns to
rotation only once a rerun of a job that failed there has passed there, run while it stays cordoned.

Over a real (migrated) SQLite database with the provider double of test_loop.py taught to probe; the real
thing is tests/e2e/test_remediation_buildbot.py on a Buildbot master.
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy.engine import Engine

from controller.errors import ProviderUnavailable
from controller.providers.base import JobRef, Prober, ProbeResult
from tests.controller.remediation.test_loop import Crash, Double
from tests.controller.remediation.test_probation import READINGS_FINE, RECOVERY, WINDOW_S, World


class ProbingDouble(Double):
    """Pins a probe to the runner it names, unless told where it ran instead (`ran_on`)."""

    def __init__(self, pins_probes: bool = True) -> None:
        super().__init__()
        self.pins_probes = pins_probes
        self.probes: dict[str, tuple[str, str]] = {}  # probe id -> (runner, job probed)
        self.results: dict[str, ProbeResult] = {}

    def probe(self, runner: str, job: JobRef, reason: str) -> JobRef:
        self._call("probe", f"{runner}:{job.id}")
        self.paused[runner] = f"runnerctl: probe of {job.id}: {reason}"
        if self.crash_after == "probe":
            raise Crash("after probe")
        found = JobRef(f"probe-{len(self.probes) + 1}")
        self.probes[found.id] = (runner, job.id)
        return found

    def probe_result(self, probe: JobRef) -> ProbeResult:
        if self.down:
            raise ProviderUnavailable(self.NAME, "probe result: timed out")
        return self.results.get(probe.id, ProbeResult("pending"))

    def finish(self, world: World, outcome: str, failed: int = 0, ran_on: str | None = None) -> str:
        """The newest probe ran (as build `b<n>`) and uploaded its results; returns the build's id."""
        probe_id = f"probe-{len(self.probes)}"
        runner, _job = self.probes[probe_id]
        build = f"b{len(self.probes)}"
        world.job(build, failed=failed, runner=ran_on or runner)
        self.results[probe_id] = ProbeResult(outcome, JobRef(build), ran_on or runner)  # type: ignore[arg-type]
        return build


@pytest.fixture
def world(engine: Engine) -> World:
    """r1 sick and cordoned by the controller; j1 failed 5 tests on it, j2 none that were stored."""
    found = World(engine, dict(RECOVERY), provider=ProbingDouble())
    found.job("j1", failed=5)
    found.tick()
    assert found.provider.paused.keys() == {"r1"}
    return found


def probing(world: World) -> ProbingDouble:
    provider = world.provider
    assert isinstance(provider, ProbingDouble) and isinstance(provider, Prober)
    world.health["r1"] = dict(READINGS_FINE)
    world.tick()
    return provider


def test_a_passing_probe_returns_the_runner_and_it_was_cordoned_until_then(world: World) -> None:
    provider = probing(world)
    # The job with the most failed tests there, rerun on r1 only, while r1 stays paused to all else.
    assert provider.calls[-1] == ("probe", "r1:j1") and provider.count("uncordon") == 0
    assert world.state() == "draining" and "r1" in provider.paused
    ((key, status, detail),) = world.audit("probe")
    assert (key, status) == ("probe:inc-r1:r1:1", "done")
    assert detail == "queued as probe-1, pinned to r1; it stays cordoned to every other job"
    assert "1 of 1 controller cordons in use" in world.rem.budget("linux").explain()  # counted once
    world.tick()
    world.tick()  # pending: nothing changes, no second probe
    assert provider.count("probe") == 1 and "r1" in provider.paused

    build = provider.finish(world, "passed")
    world.tick()
    assert world.state() == "active" and "r1" not in provider.paused
    ((_k, status, detail),) = world.audit("probation")
    assert (status, detail) == (
        "done",
        f"probe passed: job {build} (a rerun of j1) passed on r1; recovered, back in rotation",
    )
    shown = world.rem.probes.view("r1")
    assert shown is not None and (shown["state"], shown["of"], shown["ran"]) == ("passed", "j1", build)
    world.tick()
    assert (provider.count("cordon"), provider.count("uncordon"), provider.count("probe")) == (1, 1, 1)


def test_a_failing_probe_keeps_it_cordoned_and_the_dwell_starts_over(world: World) -> None:
    world.set_policy(recovery_dwell_s=WINDOW_S)
    provider = world.provider
    assert isinstance(provider, ProbingDouble)
    world.health["r1"] = dict(READINGS_FINE)
    world.tick()
    time.sleep(WINDOW_S + 0.05)
    world.tick()
    assert provider.count("probe") == 1
    build = provider.finish(world, "failed", failed=4)
    world.tick()

    assert provider.count("uncordon") == 0 and world.state() == "draining"
    # The ordinary pause is back: a probe still queued would no longer be pinned to it.
    assert provider.paused["r1"].startswith("runnerctl: inc-r1: sick")
    ((_k, status, detail),) = world.audit("probation")
    assert status == "failed"
    assert detail == (
        f"probe failed: job {build} (a rerun of j1) failed on r1: 4 tests (t::0, t::1, t::2, t::3); "
        "it stays cordoned, the dwell starts over"
    )
    world.tick()  # the dwell began again: too early for a second probe
    assert provider.count("probe") == 1
    time.sleep(WINDOW_S + 0.05)
    world.tick()
    world.tick()
    assert provider.count("probe") == 2 and world.audit("probe")[-1][0] == "probe:inc-r1:r1:2"


def test_a_probe_that_ran_elsewhere_proves_nothing(world: World) -> None:
    provider = probing(world)
    provider.finish(world, "passed", ran_on="r2")
    world.tick()
    assert "r1" in provider.paused and provider.count("uncordon") == 0
    ((_k, status, detail),) = world.audit("probation")
    assert status == "failed" and "ran on r2, not on r1: the provider did not pin it" in str(detail)


def test_a_probe_that_never_finishes_fails_at_the_timeout(world: World) -> None:
    world.set_policy(probe_timeout_s=WINDOW_S)
    provider = probing(world)
    world.tick()
    assert world.audit("probation") == []
    time.sleep(WINDOW_S + 0.05)
    world.tick()
    ((_k, status, detail),) = world.audit("probation")
    assert status == "failed" and f"did not finish within {WINDOW_S:.0f} s" in str(detail)
    assert "r1" in provider.paused and provider.count("uncordon") == 0


def test_without_the_providers_pin_it_keeps_the_half_open_probation(engine: Engine) -> None:
    world = World(engine, dict(RECOVERY), provider=ProbingDouble(pins_probes=False))
    world.job("j1", failed=5)
    world.tick()
    world.health["r1"] = dict(READINGS_FINE)
    world.tick()
    assert world.state() == "probation" and world.provider.count("probe") == 0
    assert world.audit("uncordon")[0][0] == "probation:inc-r1:r1:1"


def test_a_probe_interrupted_by_a_crash_is_never_resubmitted(world: World) -> None:
    world.provider.crash_after = "probe"
    with pytest.raises(Crash):
        probing(world)
    world.provider.crash_after = None
    world.restart()
    ((_k, status, detail),) = world.audit("probe")
    assert status == "failed" and "not resubmitted" in str(detail)
    world.tick()
    # The ordinary pause went back first; with a dwell of 0 a new probe follows, under its own number.
    provider = world.provider
    repause = [c for c in provider.calls if c == ("cordon", "r1")]
    assert len(repause) == 2 and provider.calls.index(repause[1]) < len(provider.calls) - 1
    assert [(k, s) for k, s, _d in world.audit("probe")] == [
        ("probe:inc-r1:r1:1", "failed"),
        ("probe:inc-r1:r1:2", "done"),
    ]
    assert world.probations()[0][0] == "failed"


def test_a_provider_that_refuses_the_probe_leaves_it_cordoned(world: World) -> None:
    world.provider.busy["probe"] = 1
    provider = probing(world)
    ((_k, status, detail),) = world.audit("probe")
    assert status == "failed" and "it stays cordoned and its dwell starts over" in str(detail)
    world.tick()
    assert "r1" in provider.paused and provider.count("uncordon") == 0
    assert world.probations()[0] == ("failed", detail)


def test_an_operator_uncordon_ends_the_probe(world: World) -> None:
    provider = probing(world)
    result = world.rem.uncordon("r1", "alice", dry_run=False, force=True)
    assert result.ok and "r1" not in provider.paused
    world.tick()
    assert world.probations()[-1][0] == "ended" and world.state() == "active"


def test_the_budget_counts_a_probed_runner_once(world: World) -> None:
    probing(world)
    # Held and on probation at once: one controller cordon, not two.
    assert world.rem.budget("linux").by_controller == 1


def test_unavailable_provider_while_probing_changes_nothing(world: World) -> None:
    provider = probing(world)
    provider.down = True
    world.tick()
    provider.down = False
    assert "r1" in provider.paused and world.audit("probation") == []
    provider.finish(world, "passed")
    world.tick()
    assert world.state() == "active"
