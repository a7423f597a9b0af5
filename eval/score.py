"""The one scorer: a run directory's verdicts (incidents.json, tests.json, runners.json, outages.json,
analysis.json, feed.json, as the feed saved them through the public API) against its eval.truth.Truth.

Matching (time is lenient, names are strict): an incident names a sick entity when its (kind, entity)
is one the truth accepts and its [onset, end] overlaps one of the entity's sick spans padded by 12 h; an
overlapping incident on a parent or child of it (a runner of a sick image, the pool of a sick runner) is
a wrong (coarser or finer) entity. Weak entities and tests (each simulator's own rule) are not counted.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.adapters import ts
from eval.failures import Failure, Failures, describe
from eval.truth import SickEntity, Truth

H = 3600.0
SLACK = 12 * H  # an incident counts for a sick span it overlaps within 12 h
ONSET_TOL = 6 * H
ONSET_TOL_GRADUAL = 24 * H
OUTAGE_SLACK = 45 * 60.0
FLAKY_MIN_OWN = 3  # flaky recall counts flaky tests with at least this many failures of their own
WRONG_FLAKY = ("healthy", "broken", "platform", "code", "resource", "other")

Json = dict[str, Any]


def hstr(t: float | None) -> str:
    return "-" if t is None else datetime.fromtimestamp(t, UTC).strftime("%m-%dT%H:%M")


def _items(path: Path) -> list[Json]:
    if not path.exists() or not path.stat().st_size:
        return []
    data = json.loads(path.read_text())
    return list(data["items"] if isinstance(data, dict) and "items" in data else data)


@dataclass
class Score:
    """One run's figures. Counts of errors, plus the flaky and delay figures."""

    sim: str
    seed: str
    errors: Counter[str] = field(default_factory=Counter)
    sick: int = 0  # non-weak sick entities
    found: int = 0
    flaky_called: int = 0
    flaky_right: int = 0
    flaky_due: int = 0  # flaky tests with >= FLAKY_MIN_OWN failures of their own
    flaky_due_found: int = 0
    delays: list[float] = field(default_factory=list)  # hours, per found sick entity
    lines: list[str] = field(default_factory=list)

    def say(self, kind: str, text: str) -> None:
        self.errors[kind] += 1
        self.lines.append(f"  {kind}: {text}")

    @property
    def precision(self) -> float | None:
        return self.flaky_right / self.flaky_called if self.flaky_called else None

    @property
    def recall(self) -> float | None:
        return self.flaky_due_found / self.flaky_due if self.flaky_due else None


def _span(inc: Json, data_end: float) -> tuple[float, float]:
    lo = ts(inc.get("onset")) or ts(inc.get("decided_at")) or data_end
    return lo, ts(inc.get("end")) or data_end


def _overlaps(inc: Json, e: SickEntity, data_end: float) -> bool:
    lo, hi = _span(inc, data_end)
    return any(lo <= (b or data_end) + SLACK and hi >= a - SLACK for a, b in e.spans)


def _begins_in(inc: Json, e: SickEntity, data_end: float) -> bool:
    lo = _span(inc, data_end)[0]
    return any(a - SLACK <= lo <= (b or data_end) + SLACK for a, b in e.spans)


def _related(truth: Truth, e: SickEntity, inc: Json) -> bool:
    key = (inc["kind"], inc["entity"])
    if key in e.accept:
        return False
    return key in e.related or bool(truth.covers(*key) & (e.runners | truth.covers(e.kind, e.entity)))


def _desc(inc: Json) -> str:
    return f"{inc['kind']} {inc['entity']} ({inc.get('state')}, {inc.get('dimension')}, onset {hstr(ts(inc.get('onset')))})"


def _owners(truth: Truth, incidents: list[Json]) -> tuple[set[str], dict[str, str]]:
    """Incidents that name a sick entity exactly, and for each other incident on a parent or child of
    sick entities the most specific of them (the fewest runners): it counts against that one only."""
    end = truth.end
    exact = {
        i["id"]
        for e in truth.sick
        for i in incidents
        if (i["kind"], i["entity"]) in e.accept and _overlaps(i, e, end)
    }
    owner: dict[str, str] = {}
    for i in incidents:
        if i["id"] in exact:
            continue
        # a parent or child named for it: its stretch must begin within a sick span (padded)
        cands = [e for e in truth.sick if _begins_in(i, e, end) and _related(truth, e, i)]
        if cands:
            owner[i["id"]] = min(cands, key=lambda e: len(e.runners | truth.covers(e.kind, e.entity))).id
    return exact, owner


def _grade_sick(truth: Truth, incidents: list[Json], s: Score) -> set[str]:
    """Each sick entity found, missed or named wrongly; returns the incident ids accounted for."""
    end = truth.end
    exact, owner = _owners(truth, incidents)
    for e in truth.sick:
        tag = f"{e.kind} {e.entity} [{e.label}, {e.failures} failures, {hstr(e.onset)}..{hstr(e.end)}]"
        matched = [i for i in incidents if (i["kind"], i["entity"]) in e.accept and _overlaps(i, e, end)]
        others = [i for i in incidents if owner.get(i["id"]) == e.id]
        if not e.weak:
            s.sick += 1
        if not matched and not others:
            # an incident charged to a more specific sick entity may stand for this one too (a pool
            # incident that took a bad image and a sick host together)
            others = [
                i for i in incidents if i["id"] in owner and _begins_in(i, e, end) and _related(truth, e, i)
            ]
        if not matched:
            if e.weak:
                s.lines.append(
                    f"  (weak, not counted) {tag}: "
                    + ("named " + "; ".join(map(_desc, others)) if others else "missed")
                )
            elif others:
                s.say("WRONG-ENTITY", f"{tag}: named only " + "; ".join(map(_desc, others[:4])))
            else:
                s.say("MISSED-SICK", f"{tag}: no incident (truth {'/'.join(sorted(e.dimensions))})")
            continue
        if e.weak:
            continue
        s.found += 1
        if others:
            s.say("EXTRA-ENTITY", f"{tag}: also named " + "; ".join(map(_desc, others[:4])))
        _grade_found(e, matched, tag, (truth.start, end), s)
    return exact | set(owner)


def _grade_found(e: SickEntity, matched: list[Json], tag: str, window: tuple[float, float], s: Score) -> None:
    start, end = window
    dims = {str(i.get("dimension")) for i in matched}
    if not dims & e.dimensions:
        s.say(
            "WRONG-DIMENSION",
            f"{tag}: product {'/'.join(sorted(dims))}, truth {'/'.join(sorted(e.dimensions))}",
        )
    states = {str(i.get("state")) for i in matched}
    last = max(matched, key=lambda i: _span(i, end)[0])
    if "sick" in states and "sick" not in e.accept_states:
        s.say("WRONG-STATE", f"{tag}: product sick, truth suspect (nothing reads it)")
    elif "sick" not in states and "suspect" not in e.accept_states and last.get("state") == "suspect":
        s.say("WRONG-STATE", f"{tag}: product suspect, truth sick (its readings show it)")
    first = e.first_failure
    on = min(_span(i, end)[0] for i in matched)
    tol = ONSET_TOL_GRADUAL if e.gradual else ONSET_TOL
    refs = [a for a, _ in e.spans] + ([first] if first is not None else [])
    # a fault sick since before the data began has no onset to find: an early one will do
    if min(abs(on - r) for r in refs) > tol and not (e.onset < start and on - start < 2 * SLACK):
        s.say("ONSET-OFF", f"{tag}: product onset {hstr(on)}, first failure {hstr(first)}")
    decided = [t for t in (ts(i.get("decided_at")) for i in matched) if t is not None]
    if decided:
        since = first if first is not None else e.onset
        s.delays.append(max(0.0, min(decided) - since) / H)
        s.lines.append(
            f"  (found) {tag}: decided {hstr(min(decided))}, {s.delays[-1]:.1f} h after {hstr(since)}"
        )
    truth_end = e.end
    open_now = last.get("state") != "resolved"
    if truth_end is not None and end - truth_end > SLACK and open_now:
        s.say("NOT-RESOLVED", f"{tag}: fixed {hstr(truth_end)}, product still {last.get('state')}")
    if truth_end is None and not open_now and e.last_failure and end - e.last_failure < 24 * H:
        s.say("FALSE-RESOLVED", f"{tag}: still failing at {hstr(e.last_failure)}, product resolved it")


def _on(truth: Truth, kind: str, entity: str) -> Callable[[Failure], bool]:
    covered = truth.covers(kind, entity)
    column = {"machine": "machine", "pool": "pool", "image": "image"}.get(kind, "runner")
    return lambda f: f.runner in covered or getattr(f, column) == entity


def _grade_false(
    truth: Truth, incidents: list[Json], runners: list[Json], used: set[str], fails: Failures, s: Score
) -> None:
    names = {e.id: f"{e.id}:{e.label}" for e in truth.sick}
    for i in incidents:
        if i["id"] in used:
            continue
        key = (i["kind"], i["entity"])
        why = f"red herring ({truth.herrings[key]})" if key in truth.herrings else "healthy"
        lo, hi = _span(i, truth.end)
        if fails.rows:
            why += "; " + describe(fails.causes(lo - H, max(hi, lo + H), _on(truth, *key)), names)
        s.say("FALSE-INCIDENT", f"{_desc(i)}: {why}")
    sick_runners: set[str] = set()
    for e in truth.sick:
        sick_runners |= e.runners | truth.covers(e.kind, e.entity)
        sick_runners |= {x for k, x in e.accept | e.related if k == "runner"}
    for r in runners:
        ident = r.get("identity") or {}
        rid = str(ident.get("id"))
        if rid in sick_runners or truth.covers("runner", rid) & sick_runners:
            continue
        health = (r.get("health") or {}).get("health")
        if r.get("cordon"):
            s.say("HEALTHY-DRAINED", f"runner {rid} cordoned: {r['cordon']}")
        elif health in ("sick", "suspect"):
            s.say("HEALTHY-CALLED-SICK", f"runner {rid} health {health}")


def _grade_tests(truth: Truth, tests: list[Json], s: Score) -> None:
    verdict = {t["test_id"]: str(t.get("verdict", "healthy")) for t in tests}
    for tid, t in sorted(truth.tests.items()):
        if not t.runs:
            continue
        v = verdict.get(tid, "healthy")
        desc = f"{tid} [{t.label}: {t.failures} failures, {t.own_failures} its own, in {t.runs} runs]"
        if t.label == "flaky" and t.own_failures >= FLAKY_MIN_OWN:
            s.flaky_due += 1
            s.flaky_due_found += v == "flaky"
            if v != "flaky" and t.weak:
                s.lines.append(f"  (weak, not counted) missed flaky: {desc}: product {v}")
        if t.label == "flaky" and not t.weak and v not in t.accept:
            s.say("MISSED-FLAKY", f"{desc}: product {v}")
        if v == "flaky":
            s.flaky_called += 1
            if "flaky" in t.accept:
                s.flaky_right += 1
            else:
                s.say(f"{t.label.upper()}-CALLED-FLAKY", desc)
            continue
        if v not in t.accept and not t.weak and t.label != "flaky":
            s.say("TEST-VERDICT", f"{desc}: product {v}")
    for tid in verdict.keys() - truth.tests.keys():
        if tid.startswith("job:") and verdict[tid] != "flaky":
            continue  # the product's record of a provider job's own outcome, not a test; never flaky
        s.say("TEST-VERDICT", f"{tid}: a test id the fleet never ran (mangled on ingest?)")


def _in_tests(tests: set[str]) -> Callable[[Failure], bool]:
    """Failures of these tests (a test-scoped outage), or any failure when it names none."""
    return lambda f: not tests or f.test in tests


def _grade_outages(truth: Truth, outages: list[Json], fails: Failures, s: Score) -> None:
    found: set[str] = set()
    for o in truth.outages:
        lo, hi = o.start - OUTAGE_SLACK, o.end + OUTAGE_SLACK
        hits = [p for p in outages if (ts(p["start"]) or 0) <= hi and (ts(p["end"]) or truth.end) >= lo]
        found.update(str(p.get("id")) for p in hits)
        if not hits and not o.weak and not o.allowed:
            s.say("MISSED-OUTAGE", f"{hstr(o.start)}..{hstr(o.end)}")
    names = {e.id: f"{e.id}:{e.label}" for e in truth.sick}
    for p in outages:
        if str(p.get("id")) not in found:
            lo, hi = ts(p["start"]) or truth.end, ts(p["end"]) or truth.end
            tests = {t if isinstance(t, str) else t.get("test_id") for t in p.get("tests") or []}
            c = fails.causes(lo, hi, _in_tests(tests))
            why = f": {describe(c, names)}" if fails.rows else ""
            s.say("FALSE-OUTAGE", f"{p.get('scope')} {hstr(lo)}..{hstr(hi)}{why}")


def score_run(run: Path, truth: Truth) -> Score:
    s = Score(truth.sim, truth.seed)
    incidents = _items(run / "incidents.json")
    used = _grade_sick(truth, incidents, s)
    fails = Failures(run)
    _grade_false(truth, incidents, _items(run / "runners.json"), used, fails, s)
    _grade_tests(truth, _items(run / "tests.json"), s)
    _grade_outages(truth, _items(run / "outages.json"), fails, s)
    analysis = run / "analysis.json"
    if analysis.exists() and analysis.stat().st_size:
        a = json.loads(analysis.read_text())
        if a.get("last_error") or a.get("pending"):
            s.say("STALE-ANALYSIS", f"pending={a.get('pending')} last_error={a.get('last_error')}")
    feed = run / "feed.json"
    if feed.exists():
        for problem in json.loads(feed.read_text()).get("problems", [])[:5]:
            s.say("FEED-PROBLEM", str(problem)[:300])
    return s


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None
