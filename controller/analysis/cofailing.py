"""Tests that fail together: several tests share a fixture or a service, it is down for one job, and
they all fail in that job on whatever runner ran it. Such a job is one event, not several
independent failures, so breadth (clusters.breadth) counts each group of them as one unit.

A sick runner's, host's, pool's or image's tests fail together too, but there only: that is the
sickness, and its breadth must stay. So where a pair of tests failed together at one place (host,
pool or image) far more often than the share of their runs there would have it, those attempts are
that place's, and the pair is judged on the rest, from the finest place to the coarsest. Then two
tests are linked when they failed in the same attempt of a job (one job on one runner)
`cofail_min_jobs` times or more, in half the failing attempts of the rarer and a quarter of the
commoner (not a rare test that failed only where something failed a common one too),
`cofail_min_lift` times as often as their rates would meet by chance, and on as many hosts as chance
would spread a fixture's bad jobs: `cofail_min_machines` at least, and half of what random draws
from the hosts that run them would reach. Linked tests form groups (connected components).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from controller.analysis.baseline import combine, sorted_codes
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import Frame

PLACES = ("machine", "pool", "image")  # finest first
DAY_MS = 86_400_000


@dataclass(frozen=True)
class CoFailingGroups:
    """Tests that fail together, as the analysis uses them."""

    unit: np.ndarray  # per row: its test's unit, the smallest test code of its group (or its own)
    code_unit: np.ndarray  # per test code: the same
    # Per row: it failed together with a test of its group in the same attempt, in a group whose
    # tests failed together again and again over days (a flaky fixture), not on a day or two (an outage
    # the fleet-wide look did not catch).
    with_recurring_group: np.ndarray

    def in_group(self) -> np.ndarray:
        """Per test code: whether it is in a group (shares its unit with another test)."""
        in_group: np.ndarray = np.bincount(self.code_unit, minlength=self.code_unit.size)[self.code_unit] >= 2
        return in_group


def find_groups(frame: Frame, rows: np.ndarray, config: AnalysisConfig) -> CoFailingGroups:
    """The groups of tests that fail together, judged over the `rows` mask."""
    test = frame.cols["test"]
    n_tests = int(test.max()) + 1 if test.size else 0
    alone = CoFailingGroups(test.copy(), np.arange(n_tests), np.zeros(test.size, bool))
    failed = _failing_attempts(frame, rows)
    if failed.size < 2:
        return alone
    candidates = _candidates(frame, rows, failed, config)
    if not candidates:
        return alone
    runs = _Runs(frame, rows, attempt_of(frame))
    links = [pair for pair in candidates if _linked(pair, runs, config)]
    if not links:
        return alone
    code_unit = _components(links, n_tests)
    recurring = np.zeros(n_tests, bool)
    for pair in links:
        if _recurring(frame.time_ms[pair.together], config):
            recurring[pair.a] = recurring[pair.b] = True
    unit = code_unit[test].astype(test.dtype)
    return CoFailingGroups(unit, code_unit, _with_group(frame, unit, recurring))


def _components(links: list[_Pair], n_tests: int) -> np.ndarray:
    """Per test code: its group's smallest test code (its own where it is in none). Canonical codes
    give the same units every pass."""
    a, b = np.asarray([p.a for p in links]), np.asarray([p.b for p in links])
    graph = coo_matrix((np.ones(a.size), (a, b)), shape=(n_tests, n_tests))
    _, component = connected_components(graph, directed=False)
    smallest = np.full(int(component.max()) + 1, n_tests, np.int64)
    np.minimum.at(smallest, component, np.arange(n_tests))
    grouped = np.zeros(n_tests, bool)
    grouped[a] = grouped[b] = True
    code_unit: np.ndarray = np.where(grouped, smallest[component], np.arange(n_tests))
    return code_unit


def _recurring(times: np.ndarray, config: AnalysisConfig) -> bool:
    """Failed together on `cofail_recurring_days` days or more (UTC), none holding half of the
    attempts: a fixture that keeps going down, not an outage or two."""
    days, count = np.unique(times // DAY_MS, return_counts=True)
    return days.size >= config.cofail_recurring_days and int(count.max()) * 2 <= times.size


def _with_group(frame: Frame, unit: np.ndarray, recurring: np.ndarray) -> np.ndarray:
    """Per row: it failed in an attempt where another test of its recurring group failed too."""
    failing = np.flatnonzero(frame.fail & (frame.cols["job"] >= 0) & recurring[frame.cols["test"]])
    found = np.zeros(frame.size, bool)
    if failing.size == 0:
        return found
    cell = combine(attempt_of(frame)[failing], unit[failing])
    _, first = np.unique(combine(cell, frame.cols["test"][failing]), return_index=True)
    cells, tests = np.unique(cell[first], return_counts=True)
    found[failing] = tests[np.searchsorted(cells, cell)] >= 2
    return found


def attempt_of(frame: Frame) -> np.ndarray:
    """Per row: a code of its attempt — its job on its runner (-1 where the job is not named)."""
    job, runner = frame.cols["job"], frame.cols["runner"]
    attempt: np.ndarray = np.where(job >= 0, combine(job, runner), -1)
    return attempt


JOB_REACH_MS = 6 * 3_600_000  # a job's tests all run within this of its failures


def one_place_only(place: np.ndarray, failed: np.ndarray) -> bool:
    """Per run, its place (pool or image) and whether it failed: it ran on several places but failed on
    one only, so that place's problem rather than what the tests share going down."""
    return bool(np.unique(place).size >= 2 and np.unique(place[failed]).size < 2)


def others_failing(
    frame: Frame, rows: np.ndarray, attempts: np.ndarray, tests: np.ndarray, span_ms: tuple[int, int]
) -> float:
    """Job by job over `attempts` (codes from attempt_of) that failed within `span_ms`, the middle
    share of the `rows` of tests not in `tests` that failed: a sick host, image or pool fails much of
    what it runs, while a service's outage fails the tests that call it. The middle job, so a few of
    them on a sick image beside an outage do not decide. 0 where no other test ran in them."""
    near = np.flatnonzero(
        rows & (frame.time_ms >= span_ms[0] - JOB_REACH_MS) & (frame.time_ms < span_ms[1] + JOB_REACH_MS)
    )
    attempt = attempt_of(frame)[near]
    other = np.isin(attempt, attempts) & ~np.isin(frame.cols["test"][near], tests)
    if not other.any():
        return 0.0
    others = near[other]
    _, job = np.unique(attempt[other], return_inverse=True)
    share = np.bincount(job, weights=frame.fail[others]) / np.bincount(job)
    return float(np.median(share))


def _failing_attempts(frame: Frame, rows: np.ndarray) -> np.ndarray:
    """The failing rows among `rows` in named jobs, one per test and attempt (a test retried within
    an attempt counts once)."""
    failed = np.flatnonzero(rows & frame.fail & (frame.cols["job"] >= 0))
    if failed.size == 0:
        return failed
    _, attempt = sorted_codes(attempt_of(frame)[failed])
    _, first = np.unique(combine(attempt, frame.cols["test"][failed]), return_index=True)
    return failed[np.sort(first)]


def host_of(frame: Frame) -> np.ndarray:
    """Per row: its host, or for a runner with none named, the runner (codes after the hosts')."""
    machine, runner = frame.cols["machine"], frame.cols["runner"]
    host: np.ndarray = np.where(machine >= 0, machine, int(machine.max()) + 1 + runner)
    return host


def _place_of_rows(frame: Frame, column: str) -> np.ndarray:
    place: np.ndarray = host_of(frame) if column == "machine" else frame.cols[column]
    return place


@dataclass
class _Pair:
    a: int  # test codes, a < b
    b: int
    together: np.ndarray  # a row of each attempt both failed in, outside the places left out
    left_out: list[tuple[str, int]]  # (column, place) where they failed together beyond their share


def _candidates(frame: Frame, rows: np.ndarray, failed: np.ndarray, config: AnalysisConfig) -> list[_Pair]:
    """The pairs of tests failing together in `cofail_min_jobs` attempts on `cofail_min_machines`
    hosts or more, once the places where their co-failures concentrate are left out."""
    occurrences = _pairs(frame, failed, config)
    if occurrences is None:
        return []
    a, b, at = occurrences
    n_tests = int(frame.cols["test"].max()) + 1
    keys, pair_of = np.unique(a.astype(np.int64) * n_tests + b, return_inverse=True)
    kept = np.ones(at.size, bool)
    left_out: dict[int, list[tuple[str, int]]] = {}
    for column in PLACES:
        row_place = _place_of_rows(frame, column)
        span = int(row_place.max()) + 2
        cell_of = pair_of.astype(np.int64) * span + (row_place[at] + 1)
        together = np.bincount(pair_of[kept], minlength=keys.size)
        cells, count = np.unique(cell_of[kept], return_counts=True)
        owner, where = cells // span, cells % span - 1
        share = _share_of_runs(frame, rows, row_place, keys[owner] // n_tests, where)
        concentrated = stats.binom.sf(count - 1, together[owner], share) < config.cofail_concentration_p
        for k, x in zip(owner[concentrated].tolist(), where[concentrated].tolist(), strict=True):
            left_out.setdefault(k, []).append((column, x))
        kept &= ~np.isin(cell_of, cells[concentrated])
    pair_kept, at_kept = pair_of[kept], at[kept]
    host = host_of(frame)
    span = int(host.max()) + 1
    hosts = np.bincount(
        np.unique(pair_kept.astype(np.int64) * span + host[at_kept]) // span, minlength=keys.size
    )
    together = np.bincount(pair_kept, minlength=keys.size)
    order = np.argsort(pair_kept, kind="stable")
    at_kept, bounds = at_kept[order], np.searchsorted(pair_kept[order], np.arange(keys.size + 1))
    wanted = (together >= config.cofail_min_jobs) & (hosts >= config.cofail_min_machines)
    return [
        _Pair(
            int(keys[k] // n_tests),
            int(keys[k] % n_tests),
            at_kept[bounds[k] : bounds[k + 1]],
            left_out.get(k, []),
        )
        for k in np.flatnonzero(wanted).tolist()
    ]


class _Runs:
    """Each test's runs among the rows judged, and where each row ran."""

    def __init__(self, frame: Frame, rows: np.ndarray, attempt: np.ndarray) -> None:
        test = frame.cols["test"]
        idx = np.flatnonzero(rows)
        # A stable sort of 16-bit codes is a radix sort.
        codes = test[idx].astype(np.int16) if int(test.max()) < 32_768 else test[idx]
        self.rows = idx[np.argsort(codes, kind="stable")]
        self.bounds = np.searchsorted(test[self.rows], np.arange(int(test.max()) + 2))
        self.fail, self.attempt = frame.fail, attempt
        self.place = {column: _place_of_rows(frame, column) for column in PLACES}

    def of(self, test: int, left_out: list[tuple[str, int]]) -> np.ndarray:
        runs = self.rows[self.bounds[test] : self.bounds[test + 1]]
        for column, place in left_out:
            runs = runs[self.place[column][runs] != place]
        return runs

    def failing_attempts(self, runs: np.ndarray) -> int:
        attempts = self.attempt[runs[self.fail[runs]]]
        return int(np.unique(attempts[attempts >= 0]).size)


def _linked(pair: _Pair, runs: _Runs, config: AnalysisConfig) -> bool:
    """Whether the pair failed together as tests sharing a cause do (see the module's docstring),
    judged on their runs outside the places left out for it."""
    together = int(pair.together.size)
    run_a, run_b = runs.of(pair.a, pair.left_out), runs.of(pair.b, pair.left_out)
    if run_a.size == 0 or run_b.size == 0:
        return False
    fails_a, fails_b = runs.failing_attempts(run_a), runs.failing_attempts(run_b)
    if together < 0.5 * min(fails_a, fails_b) or together < 0.25 * max(fails_a, fails_b):
        return False
    by_chance = fails_a / run_a.size * fails_b / run_b.size * min(run_a.size, run_b.size)
    if together < config.cofail_min_lift * by_chance:
        return False
    host = runs.place["machine"]
    reached = int(np.unique(host[pair.together]).size)
    hosts = min(int(np.unique(host[run_a]).size), int(np.unique(host[run_b]).size))
    return reached >= 0.5 * hosts * (1 - (1 - 1 / hosts) ** together)


def _share_of_runs(
    frame: Frame, rows: np.ndarray, row_place: np.ndarray, test: np.ndarray, place: np.ndarray
) -> np.ndarray:
    """Per (test, place) asked: the share of the test's runs among `rows` that ran at that place."""
    span = int(row_place.max()) + 2
    cells, inverse = sorted_codes(frame.cols["test"][rows].astype(np.int64) * span + (row_place[rows] + 1))
    runs = np.bincount(inverse, minlength=cells.size)
    asked = test.astype(np.int64) * span + (place + 1)
    found = np.minimum(np.searchsorted(cells, asked), max(cells.size - 1, 0))
    there = np.where(cells[found] == asked, runs[found], 0)
    total = np.bincount(cells // span, weights=runs, minlength=int(frame.cols["test"].max()) + 1)[test]
    share: np.ndarray = there / np.maximum(total, 1)
    return share


def _pairs(
    frame: Frame, failed: np.ndarray, config: AnalysisConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every pair of tests (a < b) failing in one attempt, and a row of that attempt. Attempts failing
    more than `cofail_max_attempt_failures` tests are a sick runner or an outage, not a shared fixture."""
    attempt = attempt_of(frame)[failed]
    order = np.argsort(attempt, kind="stable")
    failed, attempt = failed[order], attempt[order]
    starts = np.flatnonzero(np.concatenate([[True], attempt[1:] != attempt[:-1]]))
    sizes = np.diff(np.concatenate([starts, [attempt.size]]))
    test = frame.cols["test"]
    firsts, seconds, where = [], [], []
    for size in np.unique(sizes):
        if size < 2 or size > config.cofail_max_attempt_failures:
            continue
        begin = starts[sizes == size]
        block = failed[begin[:, None] + np.arange(size)]
        i, j = np.triu_indices(int(size), 1)
        first, second = test[block[:, i]].ravel(), test[block[:, j]].ravel()
        firsts.append(np.minimum(first, second))
        seconds.append(np.maximum(first, second))
        where.append(np.repeat(block[:, 0], i.size))
    if not firsts:
        return None
    return np.concatenate(firsts), np.concatenate(seconds), np.concatenate(where)
