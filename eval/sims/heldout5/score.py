"""Grade run directories against their truth: score.py [-v] RUNDIR...

Each RUNDIR holds truth.json, incidents.json, tests.json, outages.json and (optionally) runners.json,
failures.tsv.gz, analysis.json, feed.json — what run.sh saved, or what `python -m eval.sims.heldout.rescore`
wrote. Prints the errors per fleet with a short explanation each, then a totals table.
"""

from __future__ import annotations

import gzip
import json
import sys
from bisect import bisect_left, bisect_right
from collections import Counter
from datetime import datetime
from pathlib import Path

H = 3600.0
SLACK = 12 * H  # an incident counts for a sick span it overlaps within 12 h
ONSET_TOL = 6 * H  # abrupt faults
ONSET_TOL_GRADUAL = 24 * H  # a memory leak / a disk filling over days
OUTAGE_SLACK = 45 * 60

COLUMNS = [
    ("MISSED-SICK", "missed"),
    ("WRONG-GRANULARITY", "gran"),
    ("EXTRA-GRANULARITY", "xgran"),
    ("WRONG-DIMENSION", "dim"),
    ("WRONG-STATE", "state"),
    ("ONSET-OFF", "onset"),
    ("NOT-RESOLVED", "notres"),
    ("FALSE-RESOLVED", "falseres"),
    ("FALSE-INCIDENT", "false-inc"),
    ("FALSE-HEALTH", "false-hlth"),
    ("MISSED-FLAKY", "miss-flk"),
    ("MISSED-FLAKY-1R", "flk-1run"),
    ("FALSE-FLAKY", "false-flk"),
    ("TEST-VERDICT", "test-oth"),
    ("MISSED-OUTAGE", "miss-out"),
    ("FALSE-OUTAGE", "false-out"),
    ("STALE-ANALYSIS", "stale"),
    ("FEED-PROBLEM", "feed"),
]


def ts(s) -> float | None:
    if s is None:
        return None
    if isinstance(s, (int, float)):
        return float(s)
    return datetime.fromisoformat(str(s).replace("Z", "+00:00")).timestamp()


def hstr(t: float | None) -> str:
    if t is None:
        return "-"
    return datetime.utcfromtimestamp(t).strftime("%m-%dT%H:%M")


def items(path: Path):
    if not path.exists():
        return None
    d = json.loads(path.read_text())
    if isinstance(d, dict) and "items" in d:
        return d["items"]
    return d


class Failures:
    """failures.tsv: every failure with its true cause, to explain errors."""

    def __init__(self, run: Path):
        self.rows: list[tuple[float, str, str, str, str, str, str]] = []
        if not (run / "failures.tsv.gz").exists() and (run / "truth.json").is_symlink():
            run = (run / "truth.json").resolve().parent  # a rescored run: the original beside its truth
        p = run / "failures.tsv.gz"
        opener = gzip.open if p.exists() else open
        if not p.exists():
            p = run / "failures.tsv"
        if p.exists():
            with opener(p, "rt") as fh:
                next(fh, None)
                for line in fh:
                    parts = line.rstrip("\n").split("\t")
                    if len(parts) < 7:
                        continue
                    self.rows.append((ts(parts[0]), *parts[1:7]))
        self.rows.sort()
        self.times = [r[0] for r in self.rows]

    def causes(self, lo, hi, pred=lambda r: True) -> Counter:
        c: Counter = Counter()
        for r in self.rows[bisect_left(self.times, lo) : bisect_right(self.times, hi)]:
            if pred(r):
                c[r[6]] += 1
        return c


def fmt_causes(c: Counter, names: dict) -> str:
    if not c:
        return "no failures there"
    tot = sum(c.values())
    return ", ".join(f"{names.get(k, k)} {v}" for k, v in c.most_common(5)) + f" (of {tot})"


def grade(run: Path, verbose: bool) -> tuple[Counter, list[str], Counter]:
    truth = json.loads((run / "truth.json").read_text())
    incidents = items(run / "incidents.json") or []
    tests = items(run / "tests.json") or []
    outages = items(run / "outages.json") or []
    runners = items(run / "runners.json") or []
    fails = Failures(run)
    err: Counter = Counter()
    weak: Counter = Counter()
    lines: list[str] = []
    data_end = ts(truth["end"])
    meta = truth["runners_meta"]
    hosts = truth["hosts"]
    pools = truth["pools"]
    eph = set(truth.get("ephemeral_machines", []))
    names = {e["id"]: f"{e['id']}:{e['sort']}({e['kind']} {e['entity']})" for e in truth["entities"]}
    names.update({o["id"]: f"{o['id']}:{o['sort']}-outage" for o in truth["outages"]})

    def say(kind, text):
        err[kind] += 1
        lines.append(f"  {kind}: {text}")

    def machine_of(entity_kind, entity):
        if entity_kind == "runner":
            if entity in meta:
                return meta[entity]["machine"]
            for m in eph:
                if entity.startswith(m + "-pod-"):
                    return m
        if entity_kind == "machine":
            return entity
        return None

    def runners_of(kind, entity) -> set[str]:
        """Runner ids (persistent, or the node id for ephemeral pods) an entity covers."""
        if kind == "runner":
            m = machine_of("runner", entity)
            return {m} if m in eph else {entity}
        if kind == "machine":
            return set(hosts.get(entity, [entity]))
        if kind == "pool":
            return set(pools.get(entity, {}).get("runners", []))
        if kind == "image":
            return {r for r, d in meta.items() if entity in d["images"]}
        return set()

    def related(e, inc) -> bool:
        """inc names a parent or a child of truth entity e (not an accepted name for it)."""
        a = runners_of(inc["kind"], inc["entity"])
        b = set(e["runners"]) | runners_of(e["kind"], e["entity"])
        return bool(a & b)

    def span(inc):
        lo = ts(inc.get("onset")) or ts(inc.get("decided_at"))
        hi = ts(inc.get("end")) or data_end
        return lo, hi

    sick = [e for e in truth["entities"] if e["sick"]]

    def window(e):
        return ts(e["onset"]) - SLACK, (ts(e["end"]) or data_end) + SLACK

    # first pass: incidents that name a sick entity correctly are its, and no other entity's
    owned: set[str] = set()
    for e in sick:
        acc = {tuple(a) for a in e["accept"]}
        lo_t, hi_t = window(e)
        for i in incidents:
            lo, hi = span(i)
            if (i["kind"], i["entity"]) in acc and lo <= hi_t and hi >= lo_t:
                owned.add(i["id"])
    used: set[str] = set(owned)  # incident ids accounted for
    err_of: dict[str, str] = {}  # truth entity -> the error it got, to explain what follows from it
    # an incident naming a parent or child of sick entities counts against the most specific of them
    gran_owner: dict[str, str] = {}
    for i in incidents:
        if i["id"] in owned:
            continue
        lo, hi = span(i)
        cands = [
            e for e in sick if related(e, i) and lo <= window(e)[1] and hi >= window(e)[0] and e["failures"]
        ]
        if cands:
            gran_owner[i["id"]] = min(
                cands, key=lambda e: len(runners_of(e["kind"], e["entity"]) | set(e["runners"]))
            )["id"]
    for e in sick:
        acc = {tuple(a) for a in e["accept"]}
        lo_t, hi_t = window(e)
        first = ts(e["first_failure"])
        tag = (
            f"{e['kind']} {e['entity']} [{e['sort']}, {e['failures']} failures / {e['distinct_tests']} tests / "
            f"{e['jobs']} jobs, {hstr(ts(e['onset']))}..{hstr(ts(e['end']))}]"
        )
        if first is None or e["failures"] == 0:
            if verbose:
                lines.append(f"  (weak, no failures) {tag}")
            continue

        def overl(inc, lo_t=lo_t, hi_t=hi_t):
            lo, hi = span(inc)
            return lo <= hi_t and hi >= lo_t

        matched = [i for i in incidents if (i["kind"], i["entity"]) in acc and overl(i)]
        others = [
            i
            for i in incidents
            if (i["kind"], i["entity"]) not in acc
            and overl(i)
            and related(e, i)
            and gran_owner.get(i["id"]) == e["id"]
        ]
        if not matched and not others:
            # an incident charged to a more specific sick entity may stand for this one too (a pool
            # incident that took a bad image and a sick host together)
            others = [
                i
                for i in incidents
                if i["id"] in gran_owner
                and (i["kind"], i["entity"]) not in acc
                and overl(i)
                and related(e, i)
            ]
            if others:
                err_of[e["id"]] = "WRONG-GRANULARITY"
                say(
                    "WRONG-GRANULARITY",
                    f"{tag}: product named only "
                    + ", ".join(f"{i['kind']} {i['entity']} ({i['state']}, {i['dimension']})" for i in others)
                    + " (also charged to another sick entity)",
                )
                continue
        if not matched:
            if others:
                err_of[e["id"]] = "WRONG-GRANULARITY"
                for i in others:
                    used.add(i["id"])
                say(
                    "WRONG-GRANULARITY",
                    f"{tag}: product named only "
                    + ", ".join(
                        f"{i['kind']} {i['entity']} ({i['state']}, {i['dimension']})" for i in others
                    ),
                )
                continue
            if e["kind"] == "pool":
                cover = [
                    o
                    for o in outages
                    if ts(o["start"]) <= ts(e["end"] or truth["end"]) and ts(o["end"]) >= ts(e["onset"])
                ]
                if cover:
                    lines.append(
                        f"  note: {tag} not named, but {len(cover)} outage(s) overlap it "
                        f"(judgement call, not counted)"
                    )
                    weak["pool-as-outage"] += 1
                    continue
            if e["weak"]:
                weak["missed-sick"] += 1
                if verbose:
                    lines.append(f"  (weak miss) {tag}")
                continue
            err_of[e["id"]] = "MISSED-SICK"
            say("MISSED-SICK", f"{tag}: no incident (truth: {e['dimensions'][0]}; {e['note'] or e['sort']})")
            continue
        for i in matched:
            used.add(i["id"])
        for i in others:
            used.add(i["id"])
            say(
                "EXTRA-GRANULARITY",
                f"{tag}: also named {i['kind']} {i['entity']} ({i['state']}, onset "
                f"{hstr(ts(i.get('onset')))})",
            )
        # the incident that best stands for it: the earliest onset among those overlapping
        best = min(matched, key=lambda i: span(i)[0])
        last = max(matched, key=lambda i: span(i)[0])
        dims = {i["dimension"] for i in matched}
        if not dims & set(e["dimensions"]):
            say(
                "WRONG-DIMENSION",
                f"{tag}: product {'/'.join(sorted(dims))}, truth {' or '.join(e['dimensions'])}",
            )
        states = {i["state"] for i in matched}
        exp = e["expected_state"]
        # a resolved incident does not say whether it was sick or suspect: judge the open one
        if exp == "sick" and "sick" not in states and last["state"] == "suspect":
            say(
                "WRONG-STATE",
                f"{tag}: product {'/'.join(sorted(states))}, truth sick (agent readings "
                f"show the {e['dimensions'][0]} cause)",
            )
        if exp == "suspect" and "sick" in states:
            say("WRONG-STATE", f"{tag}: product sick, truth suspect (no agent on it)")
        tol = ONSET_TOL_GRADUAL if e["gradual"] else ONSET_TOL
        on = span(best)[0]
        d = min(abs(on - ts(e["onset"])), abs(on - first))
        if d > tol:
            say(
                "ONSET-OFF",
                f"{tag}: product onset {hstr(on)}, truth {hstr(ts(e['onset']))} (first failure "
                f"{hstr(first)}), off by {d / H:.0f} h",
            )
        end_t = ts(e["end"])
        last_fail = ts(e["last_failure"])
        if end_t is None:
            if last["state"] == "resolved" and last_fail and data_end - last_fail < 24 * H:
                say(
                    "FALSE-RESOLVED",
                    f"{tag}: still sick at the end (last failure {hstr(last_fail)}), product "
                    f"resolved it at {hstr(ts(last.get('end')))}",
                )
        elif data_end - end_t > 12 * H and last["state"] != "resolved":
            say(
                "NOT-RESOLVED",
                f"{tag}: fixed at {hstr(end_t)} ({(data_end - end_t) / H:.0f} h before the end), "
                f"product still {last['state']}",
            )
        if verbose:
            lines.append(
                f"  ok: {tag} -> "
                + "; ".join(
                    f"{i['kind']} {i['entity']} {i['state']} {i['dimension']} onset {hstr(span(i)[0])}"
                    for i in matched
                )
            )

    # false incidents
    herr = {(e["kind"], e["entity"]): e for e in truth["entities"] if not e["sick"]}
    for i in incidents:
        if i["id"] in used:
            continue
        lo, hi = span(i)
        hi = max(hi, lo + H, ts(i.get("last_failure")) or 0)
        rs = runners_of(i["kind"], i["entity"])
        c = fails.causes(
            lo - H,
            hi,
            lambda r, rs=rs, i=i: (
                r[2] in rs
                or r[3] in rs
                or (i["kind"] == "pool" and r[4] == i["entity"])
                or (i["kind"] == "image" and r[5] == i["entity"])
                or r[3] == i["entity"]
            ),
        )
        h = herr.get((i["kind"], i["entity"]))
        why = f"red herring ({h['sort']}); " if h else ""
        say(
            "FALSE-INCIDENT",
            f"{i['kind']} {i['entity']} {i['state']} {i['dimension']} "
            f"{hstr(lo)}..{hstr(ts(i.get('end')))}: {why}true causes of its failures: {fmt_causes(c, names)}",
        )
    # runners judged sick/suspect without an incident we graded
    inc_ids = {i["id"] for i in incidents}
    for r in runners:
        hl = r.get("health") or {}
        if hl.get("health") in ("sick", "suspect") and hl.get("incident_id") not in inc_ids:
            say(
                "FALSE-HEALTH",
                f"runner {r['identity']['id']} health {hl.get('health')} with no listed incident",
            )
    if verbose:
        for r in runners:
            hl = r.get("health") or {}
            if (("runner", r["identity"]["id"]) in herr) and hl.get("health") != "healthy":
                lines.append(
                    f"  herring {r['identity']['id']} ({herr[('runner', r['identity']['id'])]['sort']}): "
                    f"health {hl.get('health')} {hl.get('warnings')}"
                )

    # tests
    resource_sorts = {"memleak", "memhost", "inode", "readonly", "nodedisk", "slowdisk", "noagent"}
    resource = {e["id"] for e in truth["entities"] if e["sort"] in resource_sorts}
    verdict = {t["test_id"]: t.get("verdict", "healthy") for t in tests}
    for tid in verdict:
        if tid not in truth["tests"]:
            say("TEST-VERDICT", f"{tid}: a test id the fleet never ran (id mangled on ingest?)")
    for tid, t in sorted(truth["tests"].items()):
        v = verdict.get(tid, "healthy")
        if not t["runs"]:
            continue
        if v in t["accept"]:
            continue
        res = sum(n for k, n in t["causes"].items() if k in resource)
        if v == "resource-sensitive" and t["label"] == "healthy" and res >= 3 and res * 2 >= t["failures"]:
            continue
        desc = (
            f"{t['runs']} runs, {t['failures']} failures ({t['own_failures']} its own, base "
            f"{t['base_rate'] * 100:.1f} %; causes {fmt_causes(Counter(t['causes']), names)})"
        )
        obs = t["own_failures"] / t["runs"]
        if t["label"] == "flaky" and t["suite"] == "perf" and obs < 0.05 and v == "healthy":
            # run by one runner only (and its retries): a test x runner interaction is as likely
            continue
        if t["weak"] or (t["label"] == "flaky" and obs < 0.02):
            weak["test"] += 1
            if verbose:
                lines.append(f"  (weak) {tid}: truth {t['label']}, product {v}: {desc}")
            continue
        if t["label"] == "flaky" and v == "healthy":
            extra = (
                " only ever on one runner"
                if t["n_runners"] <= 1
                else " run by one runner (retries elsewhere)"
                if t["suite"] == "perf"
                else (f" on one pool ({t['pools'][0]})" if len(t["pools"]) == 1 else "")
            )
            # a test only one runner runs (plus retries elsewhere): listed apart, a judgement call
            say("MISSED-FLAKY-1R" if t["suite"] == "perf" else "MISSED-FLAKY", f"{tid}{extra}: {desc}")
        elif v == "flaky" and t["label"] in ("healthy",):
            c = Counter(t["causes"])
            top = c.most_common(1)[0][0] if c else ""
            after = (
                f" (follows {err_of.get(top)} {top})" if top in err_of and c[top] * 2 >= t["failures"] else ""
            )
            say("FALSE-FLAKY", f"{tid}: truth healthy; {desc}{after}")
        else:
            say("TEST-VERDICT", f"{tid}: truth {t['label']}, product {v}: {desc}")

    # outages
    found = set()
    for o in truth["outages"]:
        lo, hi = ts(o["start"]) - OUTAGE_SLACK, ts(o["end"]) + OUTAGE_SLACK
        m = [p for p in outages if ts(p["start"]) <= hi and ts(p["end"]) >= lo]
        for p in m:
            found.add(p["id"])
        tag = (
            f"{o['id']} {o['sort']} ({o['region'] or 'fleet'}) {hstr(ts(o['start']))}..{hstr(ts(o['end']))}, "
            f"{o['failures']} failures on {o['hosts']} hosts"
        )
        if not m:
            if o["weak"]:
                weak["outage"] += 1
                if verbose:
                    lines.append(f"  (weak) missed outage {tag}")
                continue
            say("MISSED-OUTAGE", tag)
        elif verbose:
            lines.append(
                f"  ok: outage {tag} -> "
                + ", ".join(f"{p['scope']} {hstr(ts(p['start']))}..{hstr(ts(p['end']))}" for p in m)
            )
    # false outages, one error per true cause: several test-scoped spans inside one fault are one mistake
    false_out: dict[str, list[str]] = {}
    for p in outages:
        if p["id"] in found:
            continue
        lo, hi = ts(p["start"]), ts(p["end"])
        c = fails.causes(lo, hi)
        scope = p.get("scope")
        if scope == "tests":
            tl = {t if isinstance(t, str) else t.get("test_id") for t in p.get("tests", [])}
            c = fails.causes(lo, hi, lambda r, tl=tl: r[1] in tl)
            scope = f"tests ({len(tl)})"
        key = c.most_common(1)[0][0] if c else f"nothing {p['id']}"
        false_out.setdefault(key, []).append(
            f"{scope} {hstr(lo)}..{hstr(hi)} ({p.get('failures')} failures): true causes {fmt_causes(c, names)}"
        )
    for key, spans in false_out.items():
        head = f"{len(spans)} spans mostly {names.get(key, key)}: " if len(spans) > 1 else ""
        say("FALSE-OUTAGE", head + spans[0] + (f" (and {len(spans) - 1} more)" if len(spans) > 1 else ""))
        for extra in spans[1:] if verbose else []:
            lines.append(f"    also {extra}")

    # stale analysis, feed problems
    a = run / "analysis.json"
    if a.exists() and a.stat().st_size:
        ad = json.loads(a.read_text())
        if ad.get("last_error") or ad.get("pending"):
            say("STALE-ANALYSIS", f"analysis pending={ad.get('pending')} last_error={ad.get('last_error')}")
    f = run / "feed.json"
    if f.exists():
        fd = json.loads(f.read_text())
        for p in fd.get("problems", [])[:5]:
            say("FEED-PROBLEM", p[:300])
    return err, lines, weak


def main() -> None:
    args = sys.argv[1:]
    verbose = "-v" in args
    runs = [Path(a) for a in args if a != "-v"]
    total: Counter = Counter()
    wtotal: Counter = Counter()
    rows = []
    for run in sorted(runs, key=lambda p: p.name):
        if not (run / "truth.json").exists() or not (run / "incidents.json").exists():
            print(f"== {run}: incomplete run, skipped")
            continue
        truth = json.loads((run / "truth.json").read_text())
        err, lines, weak = grade(run, verbose)
        n_sick = sum(1 for e in truth["entities"] if e["sick"] and not e["weak"])
        print(
            f"== {run.name} ({truth['shape']}, {len(truth['pools'])} pools, {len(truth['runners_meta'])} runners, "
            f"{n_sick} sick entities + {sum(1 for e in truth['entities'] if e['sick'] and e['weak'])} weak, "
            f"{len(truth['outages'])} outages): {sum(err.values())} errors"
        )
        for line in lines:
            print(line)
        total.update(err)
        wtotal.update(weak)
        rows.append((run.name, err, n_sick))
    print()
    hdr = ["fleet", "sick"] + [c for _, c in COLUMNS] + ["total"]
    print(" ".join(f"{h:>9}" for h in hdr))
    for name, err, n in rows:
        print(
            " ".join(f"{x:>9}" for x in [name, n] + [err.get(k, 0) for k, _ in COLUMNS] + [sum(err.values())])
        )
    print(
        " ".join(
            f"{x:>9}"
            for x in ["TOTAL", sum(r[2] for r in rows)]
            + [total.get(k, 0) for k, _ in COLUMNS]
            + [sum(total.values())]
        )
    )
    if wtotal:
        print("weak / not counted:", dict(wtotal))


if __name__ == "__main__":
    main()
