"""Outages of what a group of tests shares: a service or the network goes down, and across the fleet
the tests that use it fail together in the same hours, while the rest of each job passes.

The fleet-wide look (outages.py) needs most hosts failing far beyond their usual rates at once. An
outage of a service a tenth of the suite uses reaches only the jobs that ran those tests in those
minutes, and at its edges only a few: jobs running at the time fail a dozen tests each and look like
runners with breadth. Tests that fail together (cofailing.py) name who depends on what; an hour in
which many more attempts than usual failed a group's tests together, on several hosts, is that
group's outage — unless those jobs failed much else besides (a sick place fails much of what it
runs; cofailing.others_failing), or were all on one pool (or image) while others ran the tests
cleanly then (a sick pool fails the tests it breaks together, and little else), lasted longer than
an outage does, or the tests kept failing after (broken together by one commit). Its rows (the
group's tests in those hours) are left out like an outage's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from controller.analysis.baseline import combine
from controller.analysis.cofailing import CoFailingGroups, attempt_of, host_of, one_place_only, others_failing
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import Frame

HOUR_MS = 3_600_000


@dataclass(frozen=True)
class GroupOutage:
    unit: int  # the group's unit (its smallest test code)
    start_ms: int
    end_ms: int
    failures: int  # of the group's tests' runs in the span
    executions: int
    expected: float  # failures at the group's usual rate
    hosts_failing: int  # most hosts in one of its hours with two or more of the tests failing in a job
    hosts_active: int  # most hosts in one of its hours running the tests


def find_group_outages(
    frame: Frame, rows: np.ndarray, groups: CoFailingGroups, config: AnalysisConfig
) -> list[GroupOutage]:
    """Per group of tests that fail together, the hours (merged into spans) in which far more of the
    attempts running its tests failed two or more of them than the group's usual share (binomial,
    p < group_outage_p), on `group_outage_min_hosts` hosts or more."""
    test = frame.cols["test"]
    n_tests = int(test.max()) + 1 if test.size else 0
    idx = np.flatnonzero(rows & groups.in_group()[test] & (frame.cols["job"] >= 0))
    if idx.size == 0:
        return []
    unit, fail, hour = groups.unit[idx].astype(np.int64), frame.fail[idx], frame.time_ms[idx] // HOUR_MS
    # One cell per (group, attempt): did two or more of the group's tests fail in it?
    cells, first, inverse = np.unique(
        combine(unit, attempt_of(frame)[idx]), return_index=True, return_inverse=True
    )
    failed_tests = np.unique(inverse[fail].astype(np.int64) * n_tests + test[idx][fail])
    together = np.bincount(failed_tests // n_tests, minlength=cells.size) >= 2
    cell_unit, cell_hour, cell_host = unit[first], hour[first], host_of(frame)[idx][first]
    cell_attempt = attempt_of(frame)[idx][first]
    cell_places = (frame.cols["pool"][idx][first], frame.cols["image"][idx][first])
    span = int(cell_host.max()) + 1

    outages: list[GroupOutage] = []
    for group in np.unique(cell_unit[together]).tolist():
        mine = cell_unit == group
        usual = float(together[mine].mean())
        hours, hour_of, attempts = np.unique(cell_hour[mine], return_inverse=True, return_counts=True)
        hit = np.bincount(hour_of, weights=together[mine]).astype(np.int64)
        host_hours = hour_of.astype(np.int64) * span + cell_host[mine]
        active = np.bincount(np.unique(host_hours) // span, minlength=hours.size)
        failing = np.bincount(np.unique(host_hours[together[mine]]) // span, minlength=hours.size)
        flagged = (stats.binom.sf(hit - 1, attempts, usual) < config.group_outage_p) & (
            failing >= config.group_outage_min_hosts
        )
        runs_of_group = unit == group
        rate = float(fail[runs_of_group].mean())
        tests = np.flatnonzero(groups.code_unit == group)
        for start, stop in _runs(hours, flagged):
            start_ms, end_ms = int(hours[start]) * HOUR_MS, (int(hours[stop - 1]) + 1) * HOUR_MS
            if (int(hours[stop - 1]) - int(hours[start])) * HOUR_MS > config.outage_max_s * 1000:
                continue  # longer than an outage lasts
            after = runs_of_group & (hour > hours[stop - 1])
            if after.sum() >= config.broken_min_runs and fail[after].mean() >= 0.5:
                continue  # its tests kept failing after: broken, not an outage
            in_span = mine & (cell_hour >= hours[start]) & (cell_hour <= hours[stop - 1])
            if any(one_place_only(place[in_span], together[in_span]) for place in cell_places):
                continue  # only one pool's (or image's) jobs failed them together: a sick place
            struck = in_span & together
            others = others_failing(frame, rows, cell_attempt[struck], tests, (start_ms, end_ms))
            if others > config.max_others_failing:
                continue  # the jobs failed much else besides: a sick place, not what the group shares
            inside = runs_of_group & (hour >= hours[start]) & (hour <= hours[stop - 1])
            outages.append(
                GroupOutage(
                    unit=int(group),
                    start_ms=start_ms,
                    end_ms=end_ms,
                    failures=int(fail[inside].sum()),
                    executions=int(inside.sum()),
                    expected=rate * int(inside.sum()),
                    hosts_failing=int(failing[start:stop].max()),
                    hosts_active=int(active[start:stop].max()),
                )
            )
    outages.sort(key=lambda o: (o.start_ms, o.unit))
    return outages


def _runs(hours: np.ndarray, flagged: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges [start, stop) of flagged hours that follow each other (no hour between)."""
    runs: list[tuple[int, int]] = []
    for i in np.flatnonzero(flagged).tolist():
        if runs and runs[-1][1] == i and hours[i] == hours[i - 1] + 1:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def group_outage_rows(frame: Frame, groups: CoFailingGroups, outage: GroupOutage) -> np.ndarray:
    """The rows an outage of a group takes: its tests' runs within its span."""
    mask: np.ndarray = (
        (groups.unit == outage.unit) & (frame.time_ms >= outage.start_ms) & (frame.time_ms < outage.end_ms)
    )
    return mask
