"""One analysis pass: outages, clusters and their attribution, evidence, incidents, runner health and
flake scores — a pure function of the frame and `as_of`, so a backfill gives what live traffic did.
Only rows inside the horizon (horizon.py) are read, so pruning older ones changes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from scipy import stats

from common.timeutil import iso, to_ms
from controller.analysis.attribution import Burst, find_clusters, in_stretch
from controller.analysis.cofailing import find_groups
from controller.analysis.config import AnalysisConfig, scaled_to
from controller.analysis.dependency_outages import DependencyOutage, find_companions, find_dependency_outages
from controller.analysis.evidence import Badness, judge_readings, latest_bad, nearest_reading
from controller.analysis.flake import FlakeInputs, failing_under, release_own_runs, score_tests
from controller.analysis.frame import NONE, Frame
from controller.analysis.group_outages import GroupOutage, find_group_outages, group_outage_rows
from controller.analysis.horizon import horizon
from controller.analysis.job_verdict import job_evidence, job_incident
from controller.analysis.jobs import find_episodes, job_table, recorded_job_tests
from controller.analysis.levels import build_levels
from controller.analysis.outages import Outage, find_outages, find_pool_outages, outage_mask, outage_rows
from controller.analysis.verdict import build_incident

HEALTH_ORDER = {"healthy": 0, "warning": 1, "suspect": 2, "sick": 3}
# How clearly a test must fail more under its runner's bad cache or clock readings than without them
# for those failures to be the readings', not the test's: a mild call, which only moves failures from
# the test's flake score to a warning.
WRONG_READINGS_P = 0.05
# The hours either side of an outage whose runs no incident holds show what those runs usually fail,
# and how far beyond that they must fail in it for the outage to stand beside incidents.
OUTAGE_AROUND_MS = 6 * 3_600_000
OUTAGE_BESIDE_P = 1e-3


@dataclass
class Analysis:
    as_of_ms: int
    incidents: list[dict[str, Any]] = field(default_factory=list)
    outages: list[dict[str, Any]] = field(default_factory=list)
    bursts: list[dict[str, Any]] = field(default_factory=list)  # see attribution.Burst
    health: dict[str, dict[str, Any]] = field(default_factory=dict)
    tests: list[dict[str, Any]] = field(default_factory=list)
    discount: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    reasons: list[str] = field(default_factory=list)
    bh_cutoff: float = 0.0
    hypotheses: int = 0
    frame: Frame = field(default_factory=Frame)  # the canonical frame the row-indexed fields refer to

    def tests_by_id(self) -> dict[str, dict[str, Any]]:
        return {t["test_id"]: t for t in self.tests}


# How far one runner's newest result may run ahead of every other runner's and still set `as_of`.
LONE_LEAD_MS = 3_600_000


def latest_shared_ms(frame: Frame) -> int:
    """The analysis' `as_of`: the newest result or job time, unless one runner alone runs more than an
    hour ahead of all the others (a clock far ahead, or a record dated wrong); then the newest of the
    others. One runner must not move `as_of`: every window hangs from it, and a day's jump would empty
    them. Job records count: a black-hole runner's jobs may be all that arrived lately."""
    latest = np.full(len(frame.codes["runner"].values) + 1, -1, dtype=np.int64)  # times are after 2000
    np.maximum.at(latest, frame.cols["runner"], frame.time_ms)
    by_runner = {frame.codes["runner"].values[c]: int(t) for c, t in enumerate(latest[:-1]) if t >= 0}
    jobs = frame.jobs.cols
    for runner, finished in zip(jobs["runner"].tolist(), jobs["finished_ms"].tolist(), strict=True):
        by_runner[runner] = max(by_runner.get(runner, -1), finished)
    present = np.array(sorted(by_runner.values()), np.int64)
    if present.size < 2:
        return int(present.max())
    runner_up, newest = (int(t) for t in present[-2:])
    return newest if newest - runner_up <= LONE_LEAD_MS else runner_up


def analyse(frame: Frame, as_of_ms: int | None = None, config: AnalysisConfig | None = None) -> Analysis:
    config = config or AnalysisConfig()
    if frame.size == 0 and frame.jobs.size == 0:
        return Analysis(as_of_ms=as_of_ms or 0)
    as_of = latest_shared_ms(frame) if as_of_ms is None else as_of_ms
    window = horizon(as_of, config)
    frame = frame.since(window.results_from_ms, window.readings_from_ms)
    # A job whose record is an early death is judged by it, not also as a test named after it (jobs.py).
    frame = frame.without(recorded_job_tests(frame, as_of, config)).canonical()
    if frame.size == 0:
        incidents = _job_verdicts(frame, as_of, judge_readings(frame, config), [], [], config)
        return Analysis(
            as_of_ms=as_of,
            incidents=incidents,
            health=_health(frame, incidents, judge_readings(frame, config), as_of, config),
            frame=frame,
        )
    selected = frame.time_ms <= as_of
    if selected.any():
        config = scaled_to(config, as_of - int(frame.time_ms[selected].min()))
    bins = frame.time_ms // (config.bin_s * 1000)

    pool = frame.cols["pool"]
    outages = find_outages(frame.cols, frame.time_ms, frame.fail, selected, config)
    in_outage = outage_mask(frame.time_ms, pool, outages) & selected
    outages += find_pool_outages(frame.cols, frame.time_ms, frame.fail, selected & ~in_outage, config)
    in_outage = outage_mask(frame.time_ms, pool, outages) & selected
    usable = selected & ~in_outage

    badness = judge_readings(frame, config)
    groups = find_groups(frame, usable, config)
    # What a group of tests shares going down takes their runs in those hours, as an outage does.
    group_outages = find_group_outages(frame, usable, groups, config)
    in_group_outage = [group_outage_rows(frame, groups, outage) & selected for outage in group_outages]
    for rows in in_group_outage:
        usable &= ~rows
    # One test failing most runs fleet-wide for a few hours, then passing: what it calls was down.
    dependency_outages = find_dependency_outages(frame, usable, config)
    for dependency_outage in dependency_outages:
        usable &= ~dependency_outage.rows
    levels = build_levels(frame, usable, config)
    found = find_clusters(frame, levels, usable, bins, badness, groups.unit, config)
    clusters, cutoff, tested = found.clusters, found.cutoff, found.tested
    incidents = []
    discount = np.full(frame.size, -1, np.int32)
    reasons: list[str] = []
    stretches = [in_stretch(levels[c.segment.level], c.segment, bins) for c in clusters]
    for number, cluster in enumerate(clusters):
        level = levels[cluster.segment.level]
        others = stretches[:number] + stretches[number + 1 :]
        incident, broke = build_incident(
            cluster, level, frame, badness, bins, usable, cutoff, as_of, config, others=others
        )
        incidents.append(incident)
        seg = cluster.segment
        # From the onset, not the scanned stretch's first bin: a test failing on its own before the
        # runner went sick (a flaky test on the only shard that runs it) keeps those failures.
        onset_ms = to_ms(datetime.fromisoformat(incident["onset"]))
        since = selected & (level.entity == seg.entity) & (frame.time_ms >= onset_ms)
        charged = since & (bins <= seg.last_bin)
        if incident["state"] != "resolved":
            # What its stretch broke, failing there since, is the same open verdict's, quieter; a
            # flaky test on a runner sick for days keeps its own failures after the stretch.
            charged |= since & np.isin(frame.cols["test"], broke)
        reasons.append(incident["id"])
        discount[charged & (discount < 0)] = len(reasons) - 1
    # An incident found beside an outage of some tests may hold that outage's failures too: a pool
    # whose file server fails a dozen tests together, little else, is no outage of what they share.
    by_incident = discount >= 0
    outage_dicts: list[dict[str, Any]] = []
    for outage in outages:
        inside = selected & outage_rows(frame.time_ms, pool, outage)
        if _incidents_hold(outage, inside, selected & ~in_outage, by_incident, frame):
            continue
        outage_id = f"outage-{len(outage_dicts) + 1}"
        outage_dicts.append(_outage_dict(outage_id, outage, frame))
        reasons.append(outage_id)
        discount[inside & (discount < 0)] = len(reasons) - 1
    of_places = len(outage_dicts)  # the outages of the fleet or of pools; those of tests follow
    anchors: list[tuple[int, int, frozenset[int]]] = []  # per outage of tests: its span and its tests
    for group_outage, inside in zip(group_outages, in_group_outage, strict=True):
        if _an_incidents_failures(inside, by_incident, frame):
            continue
        outage_id = f"outage-{len(outage_dicts) + 1}"
        members = np.flatnonzero(groups.code_unit == group_outage.unit).tolist()
        outage_dicts.append(_tests_outage_dict(outage_id, members, group_outage, frame))
        anchors.append((group_outage.start_ms, group_outage.end_ms, frozenset(members)))
        reasons.append(outage_id)
        discount[inside & (discount < 0)] = len(reasons) - 1
    for dependency_outage in dependency_outages:
        if _an_incidents_failures(dependency_outage.rows & selected, by_incident, frame):
            continue
        outage_id = f"outage-{len(outage_dicts) + 1}"
        outage_dicts.append(
            _tests_outage_dict(outage_id, list(dependency_outage.tests), dependency_outage, frame)
        )
        anchors.append(
            (dependency_outage.start_ms, dependency_outage.end_ms, frozenset(dependency_outage.tests))
        )
        reasons.append(outage_id)
        discount[dependency_outage.rows & selected & (discount < 0)] = len(reasons) - 1
    burst_dicts = []
    for number, burst in enumerate(found.bursts, start=1):
        burst_id = f"burst-{number}"
        burst_dicts.append(_burst_dict(burst_id, burst, frame))
        inside = (
            selected
            & (levels[burst.level].entity == burst.entity)
            & (frame.time_ms >= burst.start_ms)
            & (frame.time_ms <= burst.end_ms)
        )
        reasons.append(burst_id)
        discount[inside & (discount < 0)] = len(reasons) - 1
    _join_companions(frame, selected, discount, reasons, outage_dicts[of_places:], anchors, config)
    _charge_wrong_readings(frame, selected, badness, discount, reasons, config)
    resource_bad, resource_seen = _resource_pressure(frame, badness, config)
    release_own_runs(frame, selected & ~resource_bad, discount, len(incidents), config)
    incidents += _job_verdicts(frame, as_of, badness, outages, incidents, config)
    incidents.sort(key=lambda i: (i["onset"], i["kind"], i["entity"]))

    tests = score_tests(
        FlakeInputs(frame, selected, discount, reasons, resource_bad, resource_seen, groups, as_of), config
    )
    return Analysis(
        as_of_ms=as_of,
        incidents=incidents,
        outages=outage_dicts,
        bursts=burst_dicts,
        health=_health(frame, incidents, badness, as_of, config),
        tests=tests,
        discount=discount,
        reasons=reasons,
        bh_cutoff=cutoff,
        hypotheses=tested,
        frame=frame,
    )


def _job_verdicts(
    frame: Frame,
    as_of: int,
    badness: Badness,
    outages: list[Outage],
    incidents: list[dict[str, Any]],
    config: AnalysisConfig,
) -> list[dict[str, Any]]:
    """The job-health term's verdicts (jobs.py) not already held by an incident on the same entity
    at the same time: there they join it as its job evidence. Jobs in an outage of the fleet or their
    pool say nothing about one runner."""
    table = job_table(frame, as_of, config)
    if table.size == 0:
        return []
    pools = np.array([frame.codes["pool"].index.get(p, NONE) for p in table.cols["pool"].tolist()], np.int32)
    skip = outage_mask(table.cols["finished_ms"], pools, outages)
    added = []
    for episode in find_episodes(table, as_of, config, skip):
        onset = int(table.cols["finished_ms"][episode.onset])
        end = as_of if episode.end is None else int(table.cols["finished_ms"][episode.end])
        held = [
            i
            for i in incidents
            if (i["kind"], i["entity"]) == (episode.kind, episode.entity)
            and to_ms(datetime.fromisoformat(i["onset"])) <= end
            and (i["end"] is None or to_ms(datetime.fromisoformat(i["end"])) >= onset)
        ]
        if held:
            held[0]["jobs"] = job_evidence(table, episode, config)
        else:
            added.append(job_incident(table, episode, frame, badness, config))
    return added


def _an_incidents_failures(rows: np.ndarray, by_incident: np.ndarray, frame: Frame) -> bool:
    """Whether most failures among `rows` (an outage's) are charged to incidents."""
    failed = rows & frame.fail
    return bool(failed.any() and by_incident[failed].mean() >= 0.8)


def _incidents_hold(
    outage: Outage, inside: np.ndarray, outside: np.ndarray, by_incident: np.ndarray, frame: Frame
) -> bool:
    """Whether an outage of the fleet or of pools was the incidents' failures: two sick places
    bursting in the same hour (a pool's file server, a bad image on another pool) look like one. Most
    of its failures are charged to incidents, and the runs no incident holds (`inside` it; `outside`
    every outage) failed in it no more than in the hours around. In a real outage beside sick
    runners, the healthy ones fail too."""
    if not _an_incidents_failures(inside, by_incident, frame):
        return False
    time_ms, fail = frame.time_ms, frame.fail
    free = inside & ~by_incident
    around = (
        outside
        & ~by_incident
        & (time_ms >= outage.start_ms - OUTAGE_AROUND_MS)
        & (time_ms <= outage.end_ms + OUTAGE_AROUND_MS)
    )
    if outage.pools:
        around &= np.isin(frame.cols["pool"], outage.pools)
    usual = (float(fail[around].sum()) + 1.0) / (float(around.sum()) + 2.0)
    failed = int(fail[free].sum())
    return not (failed >= 3 and stats.poisson.sf(failed - 1, usual * int(free.sum())) < OUTAGE_BESIDE_P)


def _join_companions(
    frame: Frame,
    selected: np.ndarray,
    discount: np.ndarray,
    reasons: list[str],
    tests_outages: list[dict[str, Any]],
    anchors: list[tuple[int, int, frozenset[int]]],
    config: AnalysisConfig,
) -> None:
    """Tests that failed beside an outage of what other tests use join it (find_companions): their
    runs in their span are discounted for it, and the outage names them."""
    for companion in find_companions(frame, selected & (discount < 0), anchors, config):
        outage = tests_outages[companion.outage]
        outage["tests"] = sorted({*outage["tests"], frame.name("test", companion.test)})
        outage["failures"] += int(frame.fail[companion.rows].sum())
        outage["executions"] += int(companion.rows.sum())
        discount[companion.rows] = reasons.index(outage["id"])


def _outage_dict(outage_id: str, outage: Outage, frame: Frame) -> dict[str, Any]:
    """An outage of the whole fleet (`scope: fleet`) or of some pools only (`scope: pool`, naming them)."""
    pools = {"pools": sorted(frame.name("pool", p) or "" for p in outage.pools)} if outage.pools else {}
    return {
        "id": outage_id,
        "scope": outage.scope,
        **pools,
        "start": iso(outage.start_ms),
        "end": iso(outage.end_ms),
        "failures": outage.failures,
        "executions": outage.executions,
        "expected": round(outage.expected, 2),
        "runners_failing": outage.runners_failing,
        "runners_active": outage.runners_active,
    }


def _tests_outage_dict(
    outage_id: str, tests: list[int], outage: GroupOutage | DependencyOutage, frame: Frame
) -> dict[str, Any]:
    """An outage of what some tests use (a group's fixture, a service): `scope: tests`, naming them."""
    return {
        "id": outage_id,
        "scope": "tests",
        "tests": [frame.name("test", t) for t in tests],
        "start": iso(outage.start_ms),
        "end": iso(outage.end_ms),
        "failures": outage.failures,
        "executions": outage.executions,
        "expected": round(outage.expected, 2),
        "runners_failing": outage.hosts_failing,
        "runners_active": outage.hosts_active,
    }


def _burst_dict(burst_id: str, burst: Burst, frame: Frame) -> dict[str, Any]:
    return {
        "id": burst_id,
        "kind": burst.level,
        "entity": frame.name(burst.level, burst.entity),
        "start": iso(burst.start_ms),
        "end": iso(burst.end_ms),
        "failures": burst.failures,
        "executions": burst.executions,
    }


def _charge_wrong_readings(
    frame: Frame,
    selected: np.ndarray,
    badness: Badness,
    discount: np.ndarray,
    reasons: list[str],
    config: AnalysisConfig,
) -> None:
    """Failures no verdict holds, on a runner (an ephemeral one's host) whose nearest cache or clock
    reading was bad, are charged to that reading (`warning-<where>-<dimension>`), not to the tests,
    where their test fails under such readings beyond what it fails without (Fisher, WRONG_READINGS_P)
    and they are most of its failures (`resource_min_share`). A cache or a clock is wrong whenever it
    reads so; a poisoned cache that fails one test now and then is a warning, never a verdict, and
    that test is not flaky for it (held-out fleets 405 and 408: a conda cache failing one GPU test
    five times in forty runs). A test failing as often where the readings were fine (a broken test,
    a static shard's noisy test on the only runner that runs it) owes its failures nothing. Disk and
    memory pressure are what resource-sensitive tests fail under instead (flake._resource_sensitive)."""
    failed = np.flatnonzero(selected & frame.fail & (discount < 0))
    if failed.size == 0:
        return
    wrong, dimension_of = _under_wrong_readings(frame, failed, badness, config)
    if not wrong.any():
        return
    test = frame.cols["test"]
    suspects = np.unique(test[failed[wrong]])
    runs = np.flatnonzero(selected & (discount < 0) & np.isin(test, suspects))
    under, _ = _under_wrong_readings(frame, runs, badness, config)
    fail = frame.fail[runs]
    charged = np.zeros(frame.size, bool)
    for code in suspects:
        mine = test[runs] == code
        if failing_under(fail[mine], under[mine], config.resource_min_share) < WRONG_READINGS_P:
            charged[runs[mine & fail & under]] = True
    number: dict[str, int] = {}
    for place in np.flatnonzero(wrong & charged[failed]):
        row = failed[place]
        where = frame.name("machine", frame.cols["machine"][row]) if frame.ephemeral[row] else None
        reason = f"warning-{where or frame.name('runner', frame.cols['runner'][row])}-{dimension_of[place]}"
        if reason not in number:
            number[reason] = len(reasons)
            reasons.append(reason)
        discount[row] = number[reason]


def _under_wrong_readings(
    frame: Frame, rows: np.ndarray, badness: Badness, config: AnalysisConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `rows`: whether the nearest cache or clock reading of where it ran (an ephemeral
    runner's host) was bad, and which of the two."""
    dimension_of = np.full(rows.size, "", object)
    for dimension in ("cache", "clock"):
        readings = np.flatnonzero(frame.r_check == badness.check_of[dimension])
        if readings.size == 0:
            continue
        found = _nearest_where_ran(frame, readings, rows, config)
        bad = (found >= 0) & badness.bad[dimension][readings][np.maximum(found, 0)] & (dimension_of == "")
        dimension_of[bad] = dimension
    return dimension_of != "", dimension_of


def _resource_pressure(
    frame: Frame, badness: Badness, config: AnalysisConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: did the nearest disk or memory reading of where it ran show pressure, and was there one
    at all."""
    pressure = np.zeros(frame.size, bool)
    seen = np.zeros(frame.size, bool)
    every_row = np.arange(frame.size)
    for dimension in ("disk", "memory"):
        readings = np.flatnonzero(frame.r_check == badness.check_of[dimension])
        if readings.size == 0:
            continue
        found = _nearest_where_ran(frame, readings, every_row, config)
        seen |= found >= 0
        pressure |= (found >= 0) & badness.pressure[dimension][readings][np.maximum(found, 0)]
    return pressure, seen


def _nearest_where_ran(
    frame: Frame, readings: np.ndarray, rows: np.ndarray, config: AnalysisConfig
) -> np.ndarray:
    """Per row of `rows`: the position in `readings` of the nearest reading of where it ran, or -1.
    Where is the runner, or for an ephemeral runner (whose id is single-use) its host."""
    found = nearest_reading(frame, readings, frame.cols["runner"][rows], frame.time_ms[rows], config)
    ephemeral = frame.ephemeral[rows]
    if ephemeral.any():
        on_host = rows[ephemeral]
        found[ephemeral] = nearest_reading(
            frame, readings, frame.cols["machine"][on_host], frame.time_ms[on_host], config, "r_machine"
        )
    return found


def _health(
    frame: Frame, incidents: list[dict[str, Any]], badness: Badness, as_of: int, config: AnalysisConfig
) -> dict[str, dict[str, Any]]:
    """Per runner id: the worst open verdict on the runner itself or its host, else warnings."""
    health: dict[str, dict[str, Any]] = {}
    for incident in incidents:
        if incident["state"] == "resolved" or incident["kind"] not in ("runner", "machine"):
            continue
        # Ephemeral runner ids are single-use: the verdict is the host's, not theirs.
        targets = [incident["entity"]] if incident["kind"] == "runner" else incident["persistent_runners"]
        for runner in targets:
            current = health.get(runner)
            if current is None or HEALTH_ORDER[incident["state"]] > HEALTH_ORDER[current["health"]]:
                health[runner] = {
                    "health": incident["state"],
                    "dimension": incident["dimension"],
                    "incident_id": incident["id"],
                    "warnings": [],
                }
    for runner_code, dimensions in latest_bad(frame, badness, as_of, config).items():
        name = frame.name("runner", runner_code)
        if name is None:
            continue
        entry = health.setdefault(
            name, {"health": "warning", "dimension": dimensions[0], "incident_id": None, "warnings": []}
        )
        entry["warnings"] = [f"latest {d} reading is bad" for d in dimensions]
    return health
