"""The simulator keeps its promises: deterministic, valid on the wire, and true to its own truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.sim import (
    BadImage,
    BrokenTest,
    FlakyTest,
    Fleet,
    HardShard,
    Interaction,
    Outage,
    PeriodicPressure,
    PlatformTest,
    PoolSpec,
    ResourceSensitiveTest,
    Scenario,
    SickMachine,
    SickPool,
    SickRunner,
    SilentAgent,
    SlowDisk,
    WarningRunner,
    build_catalog,
    simulate,
)
from tests.sim.scenarios import SCENARIOS, kitchen_sink, quiet_fleet, seed_story, storm

FAILING = {"failed", "error"}


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _iso(t: datetime) -> str:
    """The simulator's own time format, so record times compare as strings (much faster than parsing)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


@pytest.fixture(scope="module")
def story() -> Fleet:
    return simulate(seed_story(), 11)


@pytest.fixture(scope="module")
def sink() -> Fleet:
    return simulate(kitchen_sink(), 5)


@pytest.fixture(scope="module")
def quiet() -> Fleet:
    return simulate(quiet_fleet(), 2)


@pytest.fixture(scope="module")
def stormy() -> Fleet:
    return simulate(storm(), 3)


def _rate(rows: list[dict[str, Any]]) -> tuple[float, int]:
    """Failure rate among the tests that ran (skips left out), and how many ran."""
    ran = [r for r in rows if r["outcome"] != "skipped"]
    if not ran:
        return 0.0, 0
    return sum(r["outcome"] in FAILING for r in ran) / len(ran), len(ran)


def _readings(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["check"]: r for r in report["readings"]}


def _work_ratio(report: dict[str, Any]) -> float | None:
    disk = _readings(report).get("disk")
    if disk is None or disk["status"] == "unknown":
        return None
    return float(next(p for p in disk["paths"] if p["path"] == "/work")["free_ratio"])


# --- determinism ----------------------------------------------------------------------------------------


def test_same_seed_same_output() -> None:
    a, b = simulate(seed_story(), 4), simulate(seed_story(), 4)
    assert a.results == b.results
    assert a.reports == b.reports
    assert a.truth == b.truth
    assert a.causes == b.causes


def test_different_seed_different_output() -> None:
    a, b = simulate(seed_story(), 4), simulate(seed_story(), 5)
    assert a.results != b.results
    assert a.reports != b.reports
    assert a.truth.sick == b.truth.sick  # the scenario decides the truth, the seed the noise


@pytest.mark.slow
def test_output_does_not_depend_on_the_hash_seed() -> None:
    script = (
        "import hashlib; from tests.sim import simulate; from tests.sim.scenarios import seed_story; "
        "f = simulate(seed_story(), 8); "
        "print(hashlib.sha256('\\n'.join(f.ndjson_lines()).encode()).hexdigest())"
    )
    root = Path(__file__).resolve().parents[2]
    digests = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": h},
        ).stdout
        for h in ("1", "2")
    }
    assert len(digests) == 1


def test_catalog_does_not_depend_on_the_seed() -> None:
    a, b = simulate(seed_story(), 1), simulate(seed_story(), 2)
    assert {r["test_id"] for r in a.results} <= set(build_catalog(seed_story()).ids)
    assert a.truth.flaky_tests == b.truth.flaky_tests


# --- wire validity and order ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - {"kitchen_sink"}))
def test_every_record_validates(name: str) -> None:
    fleet = simulate(SCENARIOS[name](), 1)
    fleet.validate()
    assert fleet.results and fleet.reports
    assert all("kind" not in r for r in fleet.reports)
    assert all(r["time"].endswith("Z") for r in fleet.results)
    json.dumps(fleet.results[:100])
    json.dumps(fleet.reports[:100])


@pytest.mark.slow
def test_kitchen_sink_validates(sink: Fleet) -> None:
    sink.validate()


def test_records_are_time_ordered(story: Fleet) -> None:
    times = [_t(r["time"]) for r in story.results]
    assert times == sorted(times)
    observed = [_t(r["observed_at"]) for r in story.reports]
    assert observed == sorted(observed)


def test_ndjson_merges_by_event_time(story: Fleet) -> None:
    lines = [json.loads(line) for line in story.ndjson_lines()]
    assert len(lines) == len(story.results) + len(story.reports)
    stamps = [_t(x["observed_at"] if x.get("kind") == "report" else x["time"]) for x in lines]
    assert stamps == sorted(stamps)
    assert sum(x.get("kind") == "report" for x in lines) == len(story.reports)


def test_ndjson_without_cached_times_matches(story: Fleet) -> None:
    plain = Fleet(results=story.results[:500], reports=story.reports[:100], truth=story.truth)
    cached = Fleet(
        results=story.results[:500],
        reports=story.reports[:100],
        truth=story.truth,
        result_ms=story.result_ms[:500] if story.result_ms else None,
        report_ms=story.report_ms[:100] if story.report_ms else None,
    )
    assert list(plain.ndjson_lines()) == list(cached.ndjson_lines())


def test_agent_reports_are_numbered_per_boot(sink: Fleet) -> None:
    seen: dict[tuple[str, str], list[int]] = defaultdict(list)
    for rep in sink.reports:
        seen[(rep["agent_id"], rep["boot_id"])].append(rep["seq"])
    for seqs in seen.values():
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # linux-11's clock was fixed (end=...), and a fixed runner comes back with a new boot.
    assert len({b for a, b in seen if a == "linux-11"}) == 2


def test_results_carry_runs_commits_and_retries(story: Fleet) -> None:
    assert len({r["commit"] for r in story.results}) > 10
    assert all(r["run_id"] and r["job_id"] and r["attempt"] in (1, 2) for r in story.results)
    retried = [r for r in story.results if r["attempt"] == 2]
    assert retried
    first_runs = {r["run_id"] for r in story.results if r["attempt"] == 1}
    assert {r["run_id"] for r in retried} <= first_runs


# --- truth: the seed story ------------------------------------------------------------------------------


def test_seed_story_truth(story: Fleet) -> None:
    t = story.truth
    assert t.sick == {("runner", "linux-03")}
    assert t.sick_dimension[("runner", "linux-03")] == "disk"
    assert len(t.flaky_tests) == 2
    assert not t.outages and not t.broken_tests and not t.warning_runners


def test_sick_runner_fails_far_more_than_peers_after_onset(story: Fleet) -> None:
    onset = story.truth.sick_onset[("runner", "linux-03")]
    late = [r for r in story.results if _t(r["time"]) >= onset]
    sick, n_sick = _rate([r for r in late if r["runner"]["id"] == "linux-03"])
    peers, n_peers = _rate([r for r in late if r["runner"]["id"] != "linux-03"])
    before, _ = _rate([r for r in story.results if r["runner"]["id"] == "linux-03" and _t(r["time"]) < onset])
    assert n_sick > 200 and n_peers > 1000
    assert sick > 0.1
    assert sick > 10 * max(peers, 0.001)
    assert before < 0.02
    broken = {
        r["test_id"]
        for r in story.results
        if r["runner"]["id"] == "linux-03" and _t(r["time"]) >= onset and r["outcome"] in FAILING
    }
    assert len(broken) >= 12  # breadth: a sick runner breaks many unrelated tests
    # Static sharding: those tests ran nowhere else, and before onset they passed on linux-03.
    assert all(r["runner"]["id"] == "linux-03" for r in story.results if r["test_id"] in broken)


def test_sick_disk_shows_in_readings_slightly_before_onset(story: Fleet) -> None:
    onset = story.truth.sick_onset[("runner", "linux-03")]
    mine = [r for r in story.reports if r["agent_id"] == "linux-03"]
    after = [x for r in mine if _t(r["observed_at"]) >= onset and (x := _work_ratio(r)) is not None]
    assert after and max(after) < 0.02
    just_before = [
        x
        for r in mine
        if onset - timedelta(minutes=14) <= _t(r["observed_at"]) < onset and (x := _work_ratio(r)) is not None
    ]
    assert just_before and max(just_before) < 0.02
    long_before = [
        x
        for r in mine
        if _t(r["observed_at"]) < onset - timedelta(hours=3) and (x := _work_ratio(r)) is not None
    ]
    assert min(long_before) > 0.2


def test_healthy_readings_are_healthy(quiet: Fleet) -> None:
    assert not quiet.truth.sick and not quiet.truth.warning_runners
    for rep in quiet.reports:
        rd = _readings(rep)
        if rd["disk"]["status"] != "unknown":
            assert all(p["free_ratio"] > 0.15 for p in rd["disk"]["paths"])
            assert rd["disk"]["status"] == "ok"
        if rd["memory"]["status"] != "unknown":
            assert 0.2 < rd["memory"]["available_ratio"] < 0.96
            assert rd["memory"]["oom_kills"] == 0
        if rd["clock"].get("offset_s") is not None:
            assert abs(rd["clock"]["offset_s"]) < 0.05
            assert len([s for s in rd["clock"]["servers"] if "offset_s" in s]) >= 1


def test_cache_digests_agree_across_a_healthy_pool(quiet: Fleet) -> None:
    digests: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rep in quiet.reports:
        cache = _readings(rep).get("cache")
        if cache and cache["status"] == "ok":
            for c in cache["caches"]:
                digests[(rep["runner"]["pool"], c["key"])].add(c["digest"])
    assert digests
    assert all(len(d) == 1 for d in digests.values())


def test_quiet_fleet_has_only_flaky_and_background_failures(quiet: Fleet) -> None:
    causes = Counter(c for c in quiet.causes if c)
    assert set(causes) <= {"flaky", "base", "abort"}
    assert causes["flaky"] > 20


# --- truth: the kitchen sink ----------------------------------------------------------------------------


def test_kitchen_sink_size() -> None:
    # How long it takes is bench/analysis.py's to report: tests check behaviour, never times.
    fleet = simulate(kitchen_sink(), 9)
    assert 100_000 < len(fleet.results) <= 300_000
    kinds = {k for k, _ in fleet.truth.sick}
    assert kinds == {"runner", "machine", "image", "pool"}


def test_every_sick_entity_fails_more_after_onset(sink: Fleet) -> None:
    field = {"runner": "id", "machine": "machine", "image": "image", "pool": "pool"}
    causes = dict(zip(map(id, sink.results), sink.causes, strict=True))
    for (kind, name), onset in sink.truth.sick_onset.items():
        key = field[kind]
        pool = next(r["runner"]["pool"] for r in sink.results if r["runner"].get(key) == name)
        cut = _iso(onset + timedelta(hours=1))
        late = [r for r in sink.results if r["time"] >= cut]
        sick, n = _rate([r for r in late if r["runner"].get(key) == name])
        # Peers: the same pool (other pools for a pool), leaving out failures other sick entities caused.
        healthy = [r for r in late if r["runner"].get(key) != name and not causes[id(r)].startswith("sick:")]
        others, _ = _rate([r for r in healthy if (r["runner"]["pool"] == pool) != (kind == "pool")])
        assert n > 100, (kind, name)
        assert sick > 3 * others and sick > 0.05, (kind, name, sick, others)


def test_sick_machine_fails_on_every_runner_it_hosts(sink: Fleet) -> None:
    onset = sink.truth.sick_onset[("machine", "mac-vm-02")]
    by_runner = defaultdict(list)
    for r in sink.results:
        if r["runner"]["machine"] == "mac-vm-02" and _t(r["time"]) >= onset:
            by_runner[r["runner"]["id"]].append(r["outcome"] in FAILING)
    assert set(by_runner) == {"mac-03", "mac-04"}
    assert all(sum(v) / len(v) > 0.1 for v in by_runner.values())


def test_ephemeral_runners_are_single_use_and_report_under_their_machine(sink: Fleet) -> None:
    jobs_per_runner: dict[str, set[str]] = defaultdict(set)
    for r in sink.results:
        if r["runner"].get("ephemeral"):
            jobs_per_runner[r["runner"]["id"]].add(r["job_id"])
    assert len(jobs_per_runner) > 100
    assert all(len(j) == 1 for j in jobs_per_runner.values())
    eph_agents = {rep["agent_id"] for rep in sink.reports if rep["runner"].get("ephemeral")}
    assert eph_agents == {f"k8s-host-{i:02d}" for i in range(1, 5)}
    assert all(
        rep["runner"]["id"] == rep["runner"]["machine"]
        for rep in sink.reports
        if rep["runner"].get("ephemeral")
    )


def test_sick_readings_show_their_dimension(sink: Fleet) -> None:
    def after(agent: str, onset: datetime) -> list[dict[str, dict[str, Any]]]:
        mine = [r for r in sink.reports if r["agent_id"] == agent]
        return [_readings(r) for r in mine if _t(r["observed_at"]) >= onset]

    clock_onset = sink.truth.sick_onset[("runner", "linux-11")]
    clock = [
        rd["clock"] for rd in after("linux-11", clock_onset)[:100] if rd["clock"].get("offset_s") is not None
    ]
    assert clock and all(25 < c["offset_s"] < 35 for c in clock)
    assert all(all(25 < s["offset_s"] < 35 for s in c["servers"] if "offset_s" in s) for c in clock)
    mem = [
        rd["memory"]
        for rd in after("k8s-host-02", sink.truth.sick_onset[("machine", "k8s-host-02")])
        if rd["memory"]["status"] != "unknown"
    ]
    assert mem and all(m["available_ratio"] < 0.07 and m["psi_some_avg10"] > 25 for m in mem)
    assert sum(m["oom_kills"] for m in mem) > len(mem)


def test_poisoned_cache_differs_from_the_pool_majority(sink: Fleet) -> None:
    onset = sink.truth.sick_onset[("runner", "mac-05")]
    by_key: dict[str, Counter[str]] = defaultdict(Counter)
    mine: dict[str, set[str]] = defaultdict(set)
    for rep in sink.reports:
        cache = _readings(rep).get("cache")
        if rep["runner"]["pool"] != "mac" or not cache or cache["status"] != "ok":
            continue
        if _t(rep["observed_at"]) < onset:
            continue
        for c in cache["caches"]:
            if rep["agent_id"] == "mac-05":
                mine[c["key"]].add(c["digest"])
            elif rep["agent_id"] != "mac-02":
                by_key[c["key"]][c["digest"]] += 1
    differing = [k for k, d in mine.items() if k in by_key and not d & {by_key[k].most_common(1)[0][0]}]
    assert differing


def test_outage_fails_most_runners_at_once(sink: Fleet) -> None:
    ((start, end),) = sink.truth.outages
    inside = [r for r in sink.results if start <= _t(r["time"]) < end]
    machines = {r["runner"]["machine"] for r in inside}
    failing = {r["runner"]["machine"] for r in inside if r["outcome"] in FAILING}
    assert len(failing) >= 0.6 * len(machines)
    net_rate, _ = _rate([r for r in inside if "/net/" in r["test_id"]])
    assert net_rate > 0.3
    down = [
        r
        for r in sink.reports
        if start <= _t(r["observed_at"]) < end and _readings(r)["clock"].get("reason") == "NoServerAnswered"
    ]
    assert len({r["agent_id"] for r in down}) >= 0.6 * len({r["agent_id"] for r in sink.reports})


def test_storm_two_sick_workers_and_an_outage(stormy: Fleet) -> None:
    assert stormy.truth.sick == {("runner", "workers-01"), ("runner", "workers-02")}
    assert len(stormy.truth.outages) == 1
    onset = max(stormy.truth.sick_onset.values())
    late = [r for r in stormy.results if _t(r["time"]) >= onset]
    workers = ("workers-01", "workers-02", "workers-03")
    rates = {w: _rate([r for r in late if r["runner"]["id"] == w])[0] for w in workers}
    assert rates["workers-01"] > 5 * rates["workers-03"]
    assert rates["workers-02"] > 5 * rates["workers-03"]


def test_broken_test_fails_every_run_after_since(sink: Fleet) -> None:
    scenario = kitchen_sink()
    events = [ev for ev in scenario.events if isinstance(ev, BrokenTest)]
    catalog = build_catalog(scenario)
    assert sink.truth.broken_tests == {catalog.ids[catalog.index(ev.test)] for ev in events}
    for ev in events:
        test_id = catalog.ids[catalog.index(ev.test)]
        assert isinstance(ev.since, timedelta)
        since = scenario.start + ev.since
        until = scenario.start + ev.until if isinstance(ev.until, timedelta) else scenario.end
        runs = [r for r in sink.results if r["test_id"] == test_id]
        # Runs that started before a commit landed may still finish after it, on the older commit.
        inside = [r for r in runs if since + timedelta(hours=1) <= _t(r["time"]) < until]
        outside = [r for r in runs if _t(r["time"]) < since or _t(r["time"]) >= until + timedelta(hours=1)]
        assert inside and all(r["outcome"] in FAILING for r in inside)
        assert outside and sum(r["outcome"] in FAILING for r in outside) < 0.2 * len(outside)


def test_flaky_cluster_fails_together_across_runners(quiet: Fleet) -> None:
    by_run: dict[tuple[str, int], set[str]] = defaultdict(set)
    runners: dict[tuple[str, int], set[str]] = defaultdict(set)
    for r, c in zip(quiet.results, quiet.causes, strict=True):
        if c == "flaky":
            by_run[(r["run_id"], r["attempt"])].add(r["test_id"])
            runners[(r["run_id"], r["attempt"])].add(r["runner"]["id"])
    together = [k for k, tests in by_run.items() if len(tests) >= 3]
    assert together  # a shared dependency breaks several tests in one run...
    assert any(len(runners[k]) >= 3 for k in together)  # ...on several runners at once


def test_platform_test_fails_only_on_its_pool(sink: Fleet) -> None:
    (test_id,) = sink.truth.platform_tests
    runs = [r for r in sink.results if r["test_id"] == test_id]
    on = [r for r in runs if r["runner"]["pool"] == "mac"]
    off = [r for r in runs if r["runner"]["pool"] != "mac"]
    assert on and all(r["outcome"] in FAILING for r in on)
    assert off and sum(r["outcome"] in FAILING for r in off) < 0.2 * len(off)


def test_interaction_fails_on_one_runner_only(sink: Fleet) -> None:
    ((test_id, runner),) = sink.truth.interaction
    assert ("runner", runner) not in sink.truth.sick
    runs = [(r, c) for r, c in zip(sink.results, sink.causes, strict=True) if r["test_id"] == test_id]
    mine = [r for r, _ in runs if r["runner"]["id"] == runner]
    assert sum(r["outcome"] in FAILING for r in mine) > 0.3 * len(mine)
    elsewhere = [r for r, _ in runs if r["runner"]["id"] != runner]
    assert sum(r["outcome"] in FAILING for r in elsewhere) < 0.1 * len(elsewhere)
    assert {r["runner"]["id"] for r, c in runs if c.startswith("interaction:")} == {runner}


def test_flaky_tests_fail_anywhere_and_often_pass_on_retry(sink: Fleet) -> None:
    for test_id in sink.truth.flaky_tests:
        runs = [r for r in sink.results if r["test_id"] == test_id]
        rate = sum(r["outcome"] in FAILING for r in runs) / len(runs)
        assert 0.02 < rate < 0.4, (test_id, rate)
        assert len({r["runner"]["machine"] for r in runs if r["outcome"] in FAILING}) >= 2
    retries = [r for r in sink.results if r["test_id"] in sink.truth.flaky_tests and r["attempt"] == 2]
    assert sum(r["outcome"] == "passed" for r in retries) > 0.5 * len(retries)


def test_warning_runners_have_bad_readings_but_no_failure_excess(sink: Fleet) -> None:
    for runner in sink.truth.warning_runners:
        reps = [_readings(r) for r in sink.reports if r["agent_id"] == runner]
        assert any(any(x["status"] == "problem" for x in rd.values()) for rd in reps), runner
        special = sink.truth.resource_sensitive_tests | sink.truth.broken_tests | sink.truth.flaky_tests
        mine, n = _rate(
            [r for r in sink.results if r["runner"]["id"] == runner and r["test_id"] not in special]
        )
        assert n > 500 and mine < 0.02, (runner, mine)


def test_resource_sensitive_tests_fail_where_readings_show_pressure(sink: Fleet) -> None:
    sick_names = {e for _, e in sink.truth.sick}
    for test_id in sink.truth.resource_sensitive_tests:
        runs = [r for r in sink.results if r["test_id"] == test_id]
        fails = [r["runner"] for r in runs if r["outcome"] in FAILING]

        def pressured(ident: dict[str, Any]) -> bool:
            names = {ident["id"], ident.get("machine"), ident.get("image"), ident.get("pool")}
            return ident["id"] in sink.truth.warning_runners or bool(names & sick_names)

        assert len(fails) > 5, test_id
        assert sum(map(pressured, fails)) > 0.9 * len(fails), test_id
        elsewhere = [r for r in runs if not pressured(r["runner"])]
        assert sum(r["outcome"] in FAILING for r in elsewhere) < 0.05 * len(elsewhere)


def test_causes_are_aligned_with_results(sink: Fleet) -> None:
    assert len(sink.causes) == len(sink.results)
    for r, c in zip(sink.results, sink.causes, strict=True):
        assert (c != "") == (r["outcome"] in FAILING)


# --- knobs ----------------------------------------------------------------------------------------------


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="linux-99"):
        simulate(Scenario(events=(SickRunner("linux-99", "disk", onset=timedelta(hours=1)),)), 1)
    with pytest.raises(ValueError, match="unknown test"):
        simulate(Scenario(events=(FlakyTest("tests/nope.py::test_x"),)), 1)
    with pytest.raises(ValueError, match="fail_prob"):
        bad = SickRunner("linux-01", "disk", onset=timedelta(hours=1), fail_prob=1.5)
        simulate(Scenario(events=(bad,)), 1)
    with pytest.raises(ValueError, match="dimension"):
        simulate(Scenario(events=(WarningRunner("linux-01", "cpu"),)), 1)  # type: ignore[arg-type]


def test_multi_runner_vms_and_label_routing() -> None:
    scenario = Scenario(
        pools=(PoolSpec("mac", 6, runners_per_machine=3, sharding="label", label_groups=2),),
        duration_days=0.5,
    )
    fleet = simulate(scenario, 1)
    fleet.validate()
    machines = {r["runner"]["id"]: r["runner"]["machine"] for r in fleet.results}
    assert Counter(machines.values()) == {"mac-vm-01": 3, "mac-vm-02": 3}
    groups: dict[str, set[str]] = defaultdict(set)
    for r in fleet.results:
        labels = r["runner"].get("labels", ())
        groups[r["test_id"]].update(label for label in labels if label.startswith("group-"))
    assert all(len(g) == 1 for g in groups.values())
    # Runners on one VM share its disk, memory and clock.
    totals: dict[str, set[int]] = defaultdict(set)
    for rep in fleet.reports:
        mem = _readings(rep)["memory"]
        if mem["status"] != "unknown":
            totals[rep["runner"]["machine"]].add(mem["total_bytes"])
    assert all(len(t) == 1 for t in totals.values())


def test_cli_writes_ndjson_and_truth(tmp_path: Path) -> None:
    out, truth = tmp_path / "fleet.ndjson", tmp_path / "truth.json"
    causes = tmp_path / "causes.txt"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.sim",
            "--scenario",
            "bad_rollout",
            "--seed",
            "2",
            "--out",
            str(out),
            "--truth",
            str(truth),
            "--causes",
            str(causes),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert "bad_rollout seed 2" in proc.stderr
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])
    assert any(json.loads(line).get("kind") == "report" for line in lines[:200])
    data = json.loads(truth.read_text())
    assert [(s["kind"], s["entity"]) for s in data["sick"]] == [("image", "ubuntu-22.04-20260915")]
    cause_lines = causes.read_text().splitlines()
    results = [x for x in map(json.loads, lines) if x.get("kind") != "report"]
    assert len(cause_lines) == len(results)
    sick_causes = {c for c in cause_lines if c.startswith("sick:")}
    assert sick_causes == {"sick:image:ubuntu-22.04-20260915"}


def test_silent_agents_send_nothing_and_hide_the_dimension(sink: Fleet) -> None:
    assert sink.truth.silent_agents == {"linux-15", "linux-16"}
    assert sink.truth.sick_dimension[("runner", "linux-15")] == "unknown"
    start = kitchen_sink().start
    gap = [
        r
        for r in sink.reports
        if r["agent_id"] == "linux-16"
        and start + timedelta(hours=10) <= _t(r["observed_at"]) < start + timedelta(hours=16)
    ]
    assert not gap
    assert any(
        r["agent_id"] == "linux-16" and _t(r["observed_at"]) >= start + timedelta(hours=16)
        for r in sink.reports
    )
    assert not any(r["runner"]["pool"] == "arm" for r in sink.reports)  # a pool without agents


def test_hard_shard_fails_its_tests_everywhere_not_its_runner(sink: Fleet) -> None:
    assert sink.truth.hard_shards == {("linux", "4")}
    assert ("runner", "linux-05") not in sink.truth.sick
    linux = [r for r in sink.results if r["runner"]["pool"] == "linux"]
    hard = {r["test_id"] for r in linux if r["runner"]["shard"] == "4"}
    # Background only: leave out what the other injected causes broke.
    background = [r for r, c in zip(sink.results, sink.causes, strict=True) if c in ("", "base", "abort")]
    on_runner, _ = _rate([r for r in background if r["runner"]["id"] == "linux-05"])
    peers, _ = _rate(
        [r for r in background if r["runner"]["pool"] == "linux" and r["runner"]["id"] != "linux-05"]
    )
    assert on_runner > 5 * peers  # the red herring: under static sharding linux-05 looks bad
    elsewhere, n = _rate([r for r in background if r["test_id"] in hard and r["runner"]["pool"] == "mac"])
    assert n > 300 and elsewhere > 0.01  # but the same tests fail elsewhere too


def test_unusual_combinations_generate_valid_records() -> None:
    def h(x: float) -> timedelta:
        return timedelta(hours=x)

    scenario = Scenario(
        pools=(
            PoolSpec("eph", 6, ephemeral=True, hosts=2, shards=3, caches=()),
            PoolSpec("vm", 4, runners_per_machine=2, images=("a", "b")),
            PoolSpec("small", 2, sharding="static", suites=("unit",)),
        ),
        n_tests=60,
        suites=("unit", "api", "weird"),
        duration_days=0.5,
        events=(
            SickMachine("eph-host-01", "clock", onset=h(2)),
            Interaction(3, "eph-host-02"),
            WarningRunner("vm-01", "clock"),
            ResourceSensitiveTest(4, "clock"),
            PeriodicPressure("vm-03", "disk", period_hours=2),
            ResourceSensitiveTest(5, "disk"),
            SickPool("small", "cache", onset=h(3)),
            BadImage("c", "vm", onset=h(4), dimension="cache", fraction_of_pool=0.5),
            SickRunner("vm-02", "memory", onset=h(100)),  # after the end: not in the truth
            Outage(start=h(11), minutes=120),
            SlowDisk("vm-04", start=h(0), days=0.3),
            BrokenTest(7, since=h(0)),
            PlatformTest(8, "small"),
            HardShard("small", 1),
            SilentAgent("eph-host-02"),
        ),
    )
    fleet = simulate(scenario, 3)
    fleet.validate()
    assert fleet.truth.sick == {
        ("machine", "eph-host-01"),
        ("runner", "vm-04"),
        ("pool", "small"),
        ("image", "c"),
    }
    assert fleet.truth.sick_dimension[("image", "c")] == "cache"
    assert fleet.truth.sick_onset[("runner", "vm-04")] > scenario.start + h(1)
    assert {r["runner"]["image"] for r in fleet.results if r["runner"]["pool"] == "vm"} == {"a", "b", "c"}
    assert not any(r["agent_id"] == "eph-host-02" for r in fleet.reports)
    assert all(len(_readings(r)) == 3 for r in fleet.reports if r["runner"]["pool"] == "eph")  # no caches


@pytest.mark.parametrize("name", ["quiet_fleet", "red_herrings"])
def test_nothing_sick_in_the_false_positive_scenarios(name: str) -> None:
    fleet = simulate(SCENARIOS[name](), 6)
    assert not fleet.truth.sick and not fleet.truth.outages
    assert not any(c.startswith(("sick:", "outage")) for c in fleet.causes)


@pytest.mark.parametrize(
    ("name", "kind"), [("slow_drift", "runner"), ("bad_rollout", "image"), ("ephemeral_host", "machine")]
)
def test_focused_scenarios_have_one_sick_entity(name: str, kind: str) -> None:
    fleet = simulate(SCENARIOS[name](), 6)
    ((got, entity),) = fleet.truth.sick
    assert got == kind
    assert sum(c == f"sick:{kind}:{entity}" for c in fleet.causes) > 50
