"""Between full passes: what a batch of new rows says, judged against what the last full pass learned.

A full pass (engine.py) reads the whole window, so its cost grows with the window. Between passes the
controller screens each new batch against a small model the last pass left behind: every test's
failure rate where nothing held its runs (in each pool, and fleet-wide), and the p-value at which the
pass's Benjamini–Hochberg procedure stopped. Screening costs a few dictionary lookups per new row,
however long the history.

A screen never makes a verdict. What it raises is *provisional*: an entity whose new rows fail beyond
that bar, on enough distinct tests and far enough above their rates, or a spell of minutes in which
most of the fleet failed at once. The controller then runs the full pass at once (service.py), and
only that pass's incidents — with their evidence, attribution and resolution — are acted on. A batch
that raises nothing waits for the next scheduled full pass.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from common.timeutil import iso
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import Analysis
from controller.analysis.frame import Frame
from controller.analysis.outages import flagged_runs

# How far back from the full pass's as_of the model reads a test's rate: recent enough to be what the
# test does now, long enough that a test running a few times a day has a rate.
MODEL_SPAN_MS = 7 * 86_400_000
# A runner (an ephemeral runner's host) is the finest place screened; its host, its image or its pool is
# named instead where most of the places under it, two at least, fail beyond chance in the batch.
COARSER = ("machine", "image", "pool")
MOST = 0.75
# Spells of minutes count as the fleet's (an outage, which no entity is screened for) when this share
# of the places active in them failed, on more than one pool, beyond how often each failed in the
# batch's other spells.
OUTAGE_SHARE = 2 / 3
OUTAGE_MIN_PLACES = 4
# A place's usual rate in the quiet spells leans on its tests' rates by this many runs' worth.
OUTAGE_PRIOR_RUNS = 20.0
# Clean jobs on a runner or host with an open incident, after its last failure in the new rows, that
# make a full pass worth running for its resolution (verdict.py asks for three).
RECOVERY_CLEAN_JOBS = 3


@dataclass(frozen=True)
class Model:
    """What a screen needs of the last full pass; its size is tests × pools, not rows."""

    rates: dict[tuple[str, str], float]  # (pool, test) → failure probability of one run
    fleet_rates: dict[str, float]  # test → the same fleet-wide, for a pool where it has not run
    overall: float  # for a test the pass never saw
    cutoff: float  # a screen raises what reaches this p or lower
    known: dict[tuple[str, str], str]  # (kind, entity) of an open incident → its dimension

    def rate(self, pool: str, test: str) -> float:
        found = self.rates.get((pool, test))
        if found is None:
            found = self.fleet_rates.get(test, self.overall)
        return found


def build_model(analysis: Analysis, config: AnalysisConfig) -> Model:
    """The model of a full pass: each test's rate over the runs that nothing (incident, outage, burst)
    held in the last week of its window, leaning on the fleet-wide rate where a pool ran it little."""
    frame = analysis.frame
    free = (analysis.discount < 0) & (frame.time_ms <= analysis.as_of_ms)
    free &= frame.time_ms >= analysis.as_of_ms - MODEL_SPAN_MS
    test, pool, fail = frame.cols["test"][free], frame.cols["pool"][free], frame.fail[free]
    overall = (float(fail.sum()) + 1.0) / (float(fail.size) + 2.0)
    n_tests = len(frame.codes["test"].values)
    test_runs = np.bincount(test, minlength=n_tests)
    test_fails = np.bincount(test, weights=fail, minlength=n_tests)
    history = config.history_prior_strength
    fleet = (test_fails + history * overall) / (test_runs + history)
    pair = pool.astype(np.int64) * n_tests + test
    keys, inverse = np.unique(pair, return_inverse=True)
    pair_runs = np.bincount(inverse, minlength=keys.size)
    pair_fails = np.bincount(inverse, weights=fail, minlength=keys.size)
    pair_test = keys % n_tests
    peer = config.peer_prior_strength
    pair_rate = (pair_fails + peer * fleet[pair_test]) / (pair_runs + peer)
    test_name, pool_name = frame.codes["test"].values, frame.codes["pool"].values
    rates = {
        (pool_name[int(k // n_tests)], test_name[int(k % n_tests)]): float(r)
        for k, r in zip(keys.tolist(), pair_rate.tolist(), strict=True)
        if k // n_tests >= 0
    }
    seen = np.flatnonzero(test_runs)
    fleet_rates = {test_name[int(t)]: float(fleet[t]) for t in seen}
    # Where the pass discovered nothing its cutoff is 0: the bar is then what Bonferroni would ask of
    # as many hypotheses as it tested, stricter than any cutoff it could have reached.
    cutoff = analysis.bh_cutoff or config.fdr_q / max(analysis.hypotheses, 1)
    known = {(i["kind"], i["entity"]): i["dimension"] for i in analysis.incidents if i["state"] != "resolved"}
    return Model(rates, fleet_rates, overall, cutoff, known)


@dataclass
class Batch:
    """New rows as plain values: a screen reads only these."""

    time_ms: list[int]
    fail: list[bool]
    ephemeral: list[bool]
    test: list[str]
    runner: list[str]
    machine: list[str | None]
    pool: list[str]
    image: list[str | None]
    job: list[str | None]

    @classmethod
    def of(cls, frame: Frame, start: int, stop: int | None = None) -> Batch:
        """The frame's rows from index `start` (to `stop`): the frame grows by appending, in id order."""
        rows = slice(start, stop)

        def names(column: str) -> list[Any]:
            return _names(frame, column, frame.cols[column][rows])

        return cls(
            time_ms=frame.time_ms[rows].tolist(),
            fail=frame.fail[rows].tolist(),
            ephemeral=frame.ephemeral[rows].tolist(),
            test=names("test"),
            runner=names("runner"),
            machine=names("machine"),
            pool=names("pool"),
            image=names("image"),
            job=names("job"),
        )

    def __len__(self) -> int:
        return len(self.time_ms)


@dataclass
class NewReadings:
    """Readings stored since the last full pass, as plain values: what a recovery shows first."""

    time_ms: list[int]
    runner: list[str]
    machine: list[str | None]
    check: list[str]
    problem: list[bool]

    @classmethod
    def of(cls, frame: Frame, start: int, stop: int | None = None) -> NewReadings:
        rows = slice(start, stop)
        return cls(
            time_ms=frame.r_time_ms[rows].tolist(),
            runner=_names(frame, "runner", frame.r_runner[rows]),
            machine=_names(frame, "machine", frame.r_machine[rows]),
            check=_names(frame, "check", frame.r_check[rows]),
            problem=(frame.r_values["problem"][rows] > 0).tolist(),
        )


def _names(frame: Frame, column: str, codes: np.ndarray) -> list[Any]:
    """The strings behind a column's codes (None for -1)."""
    values = frame.codes[column].values
    return [values[c] if c >= 0 else None for c in codes.tolist()]


@dataclass
class _Tally:
    rows: list[int] = field(default_factory=list)
    failures: int = 0
    expected: float = 0.0
    by_test: dict[str, list[float]] = field(default_factory=dict)  # test → [failures, expected]

    @property
    def failed_tests(self) -> list[str]:
        return [test for test, (failures, _) in self.by_test.items() if failures]


@dataclass(frozen=True)
class Screen:
    """What one screen found: provisional entities and outages, and how many rows it read."""

    rows: int
    first_ms: int | None
    last_ms: int | None
    suspects: list[dict[str, Any]]
    outages: list[dict[str, Any]]
    recovering: list[dict[str, Any]] = field(default_factory=list)

    @property
    def raised(self) -> bool:
        return bool(self.suspects or self.outages or self.recovering)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "from": iso(self.first_ms) if self.first_ms is not None else None,
            "to": iso(self.last_ms) if self.last_ms is not None else None,
            "suspects": self.suspects,
            "outages": self.outages,
            "recovering": self.recovering,
        }


def screen(model: Model, batch: Batch, config: AnalysisConfig, readings: NewReadings | None = None) -> Screen:
    """Screen new rows: spells of minutes in which most of the fleet failed first (their rows are left
    out, as the full pass leaves an outage's out), then every place the rows ran on; and the open
    incidents of runners and hosts for signs of recovery, in their rows and new readings."""
    probability = [model.rate(pool, test) for pool, test in zip(batch.pool, batch.test, strict=True)]
    # An open incident's places fail on: their rows say nothing new, and would look like an outage.
    fresh = [row for row in range(len(batch)) if not _known(batch, row, model)]
    outages, in_outage = _outages(batch, probability, fresh, model, config)
    rows = [row for row in fresh if row not in in_outage]
    places: dict[str, _Tally] = defaultdict(_Tally)
    for row in rows:
        _count(places[_place(batch, row)], batch, probability, row)
    flagged: dict[str, float] = {}
    for place, tally in places.items():
        p = _beyond(tally, config)
        if p is not None and p <= model.cutoff:
            flagged[place] = p
    named: list[tuple[str, str, list[str]]] = []  # (kind, entity, the flagged places it holds)
    taken: set[str] = set()
    for kind in COARSER:
        under: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            entity = _entity(batch, row, kind)
            if entity is not None:
                under[entity].add(_place(batch, row))
        for entity, held in sorted(under.items()):
            sick = held & flagged.keys()
            if kind == "machine" and len(held) < 2:
                continue  # a static runner's own machine: the runner is the finer name
            if len(sick) >= 2 and len(sick) >= MOST * len(held):
                named = [n for n in named if not set(n[2]) <= held]
                named.append((kind, entity, sorted(sick)))
                taken |= sick
    kind_of_place = {_place(batch, row): "machine" if batch.ephemeral[row] else "runner" for row in rows}
    named += [(kind_of_place[place], place, [place]) for place in sorted(flagged.keys() - taken)]
    suspects = []
    for kind, entity, _sick in named:
        tally = _Tally()
        for row in rows:
            if _entity(batch, row, kind) == entity:
                _count(tally, batch, probability, row)
        p = _beyond(tally, config)
        suspects.append(_suspect(kind, entity, tally, p if p is not None else 1.0, batch))
    first = min(batch.time_ms) if batch.time_ms else None
    last = max(batch.time_ms) if batch.time_ms else None
    recovering = _recovering(model, batch, readings or NewReadings([], [], [], [], []))
    return Screen(len(batch), first, last, suspects, outages, recovering)


def _recovering(model: Model, batch: Batch, readings: NewReadings) -> list[dict[str, Any]]:
    """Open incidents of a runner or host that may have healed: a reading of its dimension its agent
    calls healthy, or `RECOVERY_CLEAN_JOBS` jobs on it with no failure since its last one. Resolution
    is the full pass's to judge (verdict.py); these only say it is worth judging now."""
    watched = {key for key in model.known if key[0] in ("runner", "machine")}
    if not watched:
        return []
    signs: dict[tuple[str, str], str] = {}
    for row, at in enumerate(readings.time_ms):
        check = readings.check[row]
        if readings.problem[row] or check not in ("disk", "memory", "clock"):
            continue  # a cache digest is healthy only beside its pool's: the full pass judges that
        for key in (("runner", readings.runner[row]), ("machine", readings.machine[row] or "")):
            if key in watched and key not in signs and model.known[key] == check:
                signs[key] = f"a healthy {check} reading at {iso(at)}"
    ran: dict[tuple[str, str], list[tuple[int, str, bool]]] = defaultdict(list)  # key → (time, job, failed)
    for row, at in enumerate(batch.time_ms):
        job = batch.job[row] or str(at // 3_600_000)
        for key in (("runner", batch.runner[row]), ("machine", batch.machine[row] or "")):
            if key in watched:
                ran[key].append((at, job, batch.fail[row]))
    for key, runs in ran.items():
        last_failure = max((at for at, _, failed in runs if failed), default=None)
        failed_jobs = {job for _, job, failed in runs if failed}
        clean = {
            job
            for at, job, _ in runs
            if job not in failed_jobs and (last_failure is None or at > last_failure)
        }
        if len(clean) >= RECOVERY_CLEAN_JOBS and key not in signs:
            signs[key] = f"{len(clean)} jobs with no failure since its last one"
    return [{"kind": kind, "entity": entity, "sign": sign} for (kind, entity), sign in sorted(signs.items())]


def _known(batch: Batch, row: int, model: Model) -> bool:
    """Whether the place a row ran on, or its host, image or pool, has an open incident."""
    kind = "machine" if batch.ephemeral[row] else "runner"
    around = [(kind, _place(batch, row)), ("pool", batch.pool[row])]
    around += [(k, v) for k in ("machine", "image") if (v := _entity(batch, row, k)) is not None]
    return any(key in model.known for key in around)


def _place(batch: Batch, row: int) -> str:
    """The finest place a row is judged by: its runner, or an ephemeral runner's host."""
    machine = batch.machine[row]
    return machine if batch.ephemeral[row] and machine is not None else batch.runner[row]


def _entity(batch: Batch, row: int, kind: str) -> str | None:
    if kind == "runner":
        return None if batch.ephemeral[row] else batch.runner[row]
    value: str | None = getattr(batch, kind)[row]
    return value


def _count(tally: _Tally, batch: Batch, probability: list[float], row: int) -> None:
    tally.rows.append(row)
    tally.expected += probability[row]
    of_test = tally.by_test.setdefault(batch.test[row], [0.0, 0.0])
    of_test[1] += probability[row]
    if batch.fail[row]:
        tally.failures += 1
        of_test[0] += 1


def _beyond(tally: _Tally, config: AnalysisConfig) -> float | None:
    """The Poisson p of the tally's failures given its tests' rates, where its excess is broad and
    large enough to be a sick place at all; None where it is not."""
    failures, expected, runs = tally.failures, tally.expected, len(tally.rows)
    if failures < config.min_failures or len(tally.failed_tests) < config.min_distinct_tests:
        return None
    if failures < config.min_ratio * expected or (failures - expected) / runs < config.min_excess_rate:
        return None
    # One test failing over and over is that test's trouble (broken, or at odds with this place), not
    # a sick place: the rest must still stand without it.
    top_failures, top_expected = max(tally.by_test.values())
    rest = failures - top_failures
    if rest < 1 or stats.poisson.sf(rest - 1, expected - top_expected) > config.without_top_test_p:
        return None
    return float(stats.poisson.sf(failures - 1, expected))


def _suspect(kind: str, entity: str, tally: _Tally, p: float, batch: Batch) -> dict[str, Any]:
    failing = [row for row in tally.rows if batch.fail[row]]
    return {
        "kind": kind,
        "entity": entity,
        "state": "provisional",
        "first_failure": iso(min(batch.time_ms[row] for row in failing)) if failing else None,
        "failures": tally.failures,
        "executions": len(tally.rows),
        "expected": round(tally.expected, 2),
        "p_value": p,
        "distinct_tests": len(tally.failed_tests),
    }


def _outages(
    batch: Batch, probability: list[float], fresh: list[int], model: Model, config: AnalysisConfig
) -> tuple[list[dict[str, Any]], set[int]]:
    """Spells of `outage_bin_s` in which most places active failed (two at least), a spell or two
    apart, make a candidate; it is an outage where it holds the breadth and the excess of one
    (`_fleet_failed`). The two spells either side of an outage are left out of the screen with it."""
    width = config.outage_bin_s * 1000
    spells: dict[int, list[int]] = defaultdict(list)
    for row in fresh:
        spells[batch.time_ms[row] // width].append(row)
    candidates = set()
    for number, rows in spells.items():
        here = {_place(batch, row) for row in rows}
        failed = {_place(batch, row) for row in rows if batch.fail[row]}
        if len(failed) >= 2 and len(failed) >= OUTAGE_SHARE * len(here):
            candidates.add(number)
    quiet = [row for number, rows in spells.items() if number not in candidates for row in rows]
    found: list[dict[str, Any]] = []
    in_outage: set[int] = set()
    flagged = np.array(sorted(candidates), np.int64)
    for first, stop in flagged_runs(flagged, np.ones(flagged.size, bool), join=2):
        start, end = int(flagged[first]), int(flagged[stop - 1])
        rows = [row for number in range(start, end + 1) for row in spells.get(number, [])]
        if not _fleet_failed(batch, probability, rows, quiet, model):
            continue
        in_outage.update(row for number in range(start - 2, end + 3) for row in spells.get(number, []))
        found.append(
            {
                "start": iso(start * width),
                "end": iso((end + 1) * width),
                "failures": sum(batch.fail[row] for row in rows),
                "executions": len(rows),
                "places_failing": len({_place(batch, row) for row in rows if batch.fail[row]}),
                "places_active": len({_place(batch, row) for row in rows}),
            }
        )
    return found, in_outage


def _fleet_failed(
    batch: Batch, probability: list[float], rows: list[int], quiet: list[int], model: Model
) -> bool:
    """Whether the places that ran `rows` failed there as in an outage: most of them, four at least,
    on more than one pool where more than one ran, and far beyond each one's own rate in the batch's
    quiet spells (leaning, by `OUTAGE_PRIOR_RUNS`, on its tests' rates): a sick runner fails in every
    spell, an outage fails the healthy ones too."""
    runs: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # place → [runs, failures, expected]
    for row in rows:
        tally = runs[_place(batch, row)]
        tally[0] += 1
        tally[1] += batch.fail[row]
        tally[2] += probability[row]
    failed = [place for place, (_, failures, _) in runs.items() if failures]
    if len(failed) < OUTAGE_MIN_PLACES or len(failed) < OUTAGE_SHARE * len(runs):
        return False
    pools = {batch.pool[row] for row in rows}
    if len(pools) > 1 and len({batch.pool[row] for row in rows if batch.fail[row]}) < 2:
        return False
    usual: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # place → [runs, failures] when quiet
    for row in quiet:
        place = _place(batch, row)
        if place in runs:
            usual[place][0] += 1
            usual[place][1] += batch.fail[row]
    expected = 0.0
    for place, (ran, _, of_tests) in runs.items():
        quiet_runs, quiet_failures = usual[place]
        rate = (quiet_failures + OUTAGE_PRIOR_RUNS * of_tests / ran) / (quiet_runs + OUTAGE_PRIOR_RUNS)
        expected += rate * ran
    observed = int(sum(failures for _, failures, _ in runs.values()))
    return bool(stats.poisson.sf(observed - 1, expected) <= model.cutoff)
