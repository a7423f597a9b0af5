"""Grade a controller's verdicts on heldout4 fleets: score.py [-v] RUNDIR...

Each RUNDIR holds truth.json and what run.sh saved (incidents.json, tests.json, outages.json,
runners.json, failures.tsv.gz). Prints one line per error (grouped per fleet), then a table with totals.
-v also prints what was found and the weak misses (not counted).

Matching: an incident matches a sick entity when its (kind, entity) is one the truth accepts (the
entity itself; a lone runner's VM and the runner are the same thing; a bad image rolled to a whole
pool may be named by its pool) and its [onset, end] overlaps one of the entity's sick spans padded by
12 h. Time is lenient; entity and kind are strict.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

PAD = 12 * 3600.0
OUT_PAD = 30 * 60.0


def ts(text: str | None) -> float | None:
    if not text:
        return None
    text = text.replace("Z", "+00:00")
    return datetime.fromisoformat(text).timestamp()


def hm(t: float | None) -> str:
    if t is None or t == math.inf:
        return "-"
    return datetime.utcfromtimestamp(t).strftime("%m-%dT%H:%M")


def items(x):
    if isinstance(x, dict):
        return x.get("items", [])
    return x or []


def load(run: Path) -> dict:
    d = {"truth": json.loads((run / "truth.json").read_text())}
    for name in ("incidents", "tests", "outages", "runners"):
        p = run / f"{name}.json"
        try:
            d[name] = items(json.loads(p.read_text())) if p.exists() else []
        except json.JSONDecodeError:
            d[name] = []
    fails = []
    # a rescored directory (eval.sims.heldout.rescore) links truth.json back to the run that holds failures.tsv.gz
    home = (run / "truth.json").resolve().parent
    paths = [base / name for base in (run, home) for name in ("failures.tsv.gz", "failures.tsv")]
    for p in paths:
        if p.exists():
            opener = gzip.open if p.name.endswith(".gz") else open
            with opener(p, "rt") as fh:
                next(fh)
                for line in fh:
                    f = line.rstrip("\n").split("\t")
                    fails.append((ts(f[0]), f[1], f[2], f[3], f[4], f[5], f[6], f[7]))
            break
    d["fails"] = fails
    return d


def inc_span(inc: dict, data_end: float) -> tuple[float, float]:
    a = ts(inc.get("onset")) or ts(inc.get("decided_at")) or 0.0
    b = ts(inc.get("end")) if inc.get("end") else math.inf
    return a, b if b is not None else math.inf


def spans_of(e: dict) -> list[tuple[float, float]]:
    out = []
    for a, b in e["spans"]:
        out.append((ts(a), ts(b) if b else math.inf))
    return out


def overlaps(a: float, b: float, spans: list[tuple[float, float]], pad: float) -> bool:
    return any(a <= s2 + pad and b >= s1 - pad for s1, s2 in spans)


def stats_line(inc: dict) -> str:
    s = inc.get("statistics") or {}
    return (
        f"{inc['kind']} {inc['entity']} {inc.get('state')}/{inc.get('dimension')} onset {hm(ts(inc.get('onset')))} "
        f"end {hm(ts(inc.get('end')))} fail {s.get('failures')}/{s.get('executions')} exp {s.get('expected')} "
        f"tests {s.get('distinct_tests')}"
    )


ENTITY_COL = {"runner": 4, "machine": 5, "pool": 6, "image": 7}


def causes_on(fails: list, kind: str, entity: str, a: float, b: float) -> str:
    col = ENTITY_COL.get(kind)
    if col is None:
        return ""
    c = Counter(f[3] for f in fails if f[col] == entity and a <= f[0] <= b)
    if not c:
        return "no failures there in truth"
    return ", ".join(f"{k} {v}" for k, v in c.most_common(4))


def score(run: Path, verbose: bool) -> tuple[dict, list[str], list[str]]:
    d = load(run)
    truth = d["truth"]
    data_end = ts(truth["end"])
    fails = d["fails"]
    errs: list[str] = []
    info: list[str] = []
    row = Counter()
    incs = d["incidents"]
    explained = set()
    sick = [e for e in truth["entities"] if e["sick"]]
    dims_of = {e["id"]: e["dimensions"] for e in truth["entities"]}
    # ---------------------------------------------------------------- sick entities
    for e in sick:
        sp = spans_of(e)
        acc = {tuple(x) for x in e["accept"]}
        strong = not e["weak"]
        matched = []
        related = []
        for k, inc in enumerate(incs):
            a, b = inc_span(inc, data_end)
            if not overlaps(a, b, sp, PAD):
                continue
            if (inc["kind"], inc["entity"]) in acc:
                matched.append(k)
            elif inc["entity"] in e["covers"].get(inc["kind"], []) and any(
                s1 - PAD <= a <= s2 + PAD for s1, s2 in sp
            ):
                # a child or parent named for it: its stretch must begin within the sick span
                related.append(k)
        explained.update(matched)
        explained.update(related)
        tag = (
            f"{e['kind']} {e['entity']} [{e['id']}] ({e['failures']} failures, {e['distinct_tests']} tests, "
            f"{e['runs']} runs, onset {hm(ts(e['onset']))}, end {hm(ts(e['end']) if e['end'] else None)})"
        )
        if strong:
            row["sick"] += 1
        else:
            row["weak"] += 1
        if not matched:
            if related:
                if strong:
                    row["kind"] += 1
                errs.append(
                    f"WRONG-GRANULARITY {tag}{'' if strong else ' (weak)'}: named instead "
                    + "; ".join(stats_line(incs[k]) for k in related[:4])
                    + (f" (+{len(related) - 4} more)" if len(related) > 4 else "")
                )
            elif strong:
                row["missed"] += 1
                errs.append(f"MISSED-SICK {tag}: {e['note']}")
            else:
                info.append(f"weak miss: {tag}: {e['note']}")
            continue
        row["found" if strong else "weak_found"] += 1
        best = min(matched, key=lambda k: min(abs((ts(incs[k].get("onset")) or 0) - s1) for s1, _ in sp))
        mi = [incs[k] for k in matched]
        info.append(f"found {tag}: " + "; ".join(stats_line(i) for i in mi[:3]))
        accepted_dims = set(e["dimensions"])
        if e["expected_state"] == "suspect":
            accepted_dims.add("unknown")
        got_dims = [i.get("dimension") for i in mi]
        if not any(x in accepted_dims for x in got_dims):
            row["dim"] += 1
            errs.append(
                f"WRONG-DIMENSION {tag}: truth {'/'.join(e['dimensions'])}, product "
                f"{','.join(str(x) for x in got_dims)}: {e['note']}"
            )
        states = [i.get("state") for i in mi]
        if e["expected_state"] == "suspect" and "sick" in states and "suspect" not in states:
            row["state"] += 1
            errs.append(
                f"WRONG-STATE {tag}: no agent reads it, product says sick/"
                f"{','.join(str(x) for x in got_dims)}"
            )
        elif (
            e["expected_state"] == "sick"
            and "unknown" not in e["dimensions"]
            and "suspect" in states
            and "sick" not in states
            and "resolved" not in states
        ):
            row["state"] += 1
            errs.append(
                f"WRONG-STATE {tag}: its agent read {'/'.join(e['dimensions'])} bad, product says suspect"
            )
        if not strong:
            continue
        on = ts(incs[best].get("onset")) or 0
        ref = [s1 for s1, _ in sp if s1 >= ts(truth["start"]) - 1] + (
            [ts(e["first_failure"])] if e["first_failure"] else []
        )
        if (
            ref
            and min(abs(on - r) for r in ref) > PAD
            and not (sp[0][0] < ts(truth["start"]) and on - ts(truth["start"]) < PAD * 2)
        ):
            row["onset"] += 1
            errs.append(
                f"ONSET-OFF {tag}: product onset {hm(on)}, truth onset {hm(sp[0][0])}, first failure "
                f"{hm(ts(e['first_failure']))}"
            )
        # resolution
        truth_end = ts(e["end"]) if e["end"] else None
        open_incs = [i for i in mi if i.get("state") != "resolved"]
        if truth_end is not None and truth_end < data_end - PAD and open_incs:
            last_open = max(inc_span(i, data_end)[0] for i in open_incs)
            if last_open < truth_end:
                row["res"] += 1
                errs.append(
                    f"NOT-RESOLVED {tag}: fixed {hm(truth_end)}, still {open_incs[0].get('state')} at the end"
                )
        if (
            truth_end is None
            and e["last_failure"]
            and ts(e["last_failure"]) > data_end - 24 * 3600
            and not open_incs
        ):
            row["res"] += 1
            errs.append(
                f"FALSE-RESOLVED {tag}: still failing ({hm(ts(e['last_failure']))}), product resolved "
                f"{','.join(hm(ts(i.get('end'))) for i in mi)}"
            )
        if related:
            row["kind"] += 1
            errs.append(
                f"EXTRA-GRANULARITY {tag}: also named "
                + "; ".join(stats_line(incs[k]) for k in related[:4])
                + (f" (+{len(related) - 4} more)" if len(related) > 4 else "")
            )
    # ---------------------------------------------------------------- false incidents
    warn = {(e["kind"], e["entity"]): e for e in truth["entities"] if e["role"] == "warning"}
    sick_ent = {}
    for e in sick:
        for k, ent in e["accept"]:
            sick_ent[(k, ent)] = e
    for k, inc in enumerate(incs):
        if k in explained:
            continue
        a, b = inc_span(inc, data_end)
        key = (inc["kind"], inc["entity"])
        why = ""
        if key in warn:
            why = f"red herring ({warn[key]['note']})"
            row["false_rh"] += 1
        elif key in sick_ent:
            why = f"off-time for {sick_ent[key]['id']} (spans {sick_ent[key]['spans']})"
        row["false"] += 1
        errs.append(
            f"FALSE-INCIDENT {stats_line(inc)}{': ' + why if why else ''}; truth causes there: "
            f"{causes_on(fails, inc['kind'], inc['entity'], a, min(b, data_end))}"
        )
    # ---------------------------------------------------------------- tests
    prod = {t["test_id"]: t for t in d["tests"]}

    def pdesc(p: dict | None) -> str:
        if not p:
            return "not listed"
        return (
            f"{p.get('verdict')} (fail {p.get('failures')}/{p.get('executions')}, counted "
            f"{p.get('counted_failures')}/{p.get('counted_executions')}, score {p.get('score', 0):.3f}, "
            f"lower {p.get('lower', 0):.3f}{', ' + p['reason'] if p.get('reason') else ''})"
        )

    for t in truth["tests"]:
        p = prod.get(t["test_id"])
        v = p.get("verdict") if p else None
        lab = t["label"]
        desc = (
            f"{t['test_id']} [{t['behaviour']}{', rate ' + str(t['rate']) if t['rate'] else ''}; "
            f"{t['failures']} failures ({t['own_failures']} own) in {t['runs']} runs]"
        )
        if lab == "flaky":
            if t["weak"]:
                if v != "flaky":
                    info.append(f"weak flaky miss: {desc}: {pdesc(p)}")
                else:
                    row["flaky_weak_found"] += 1
                continue
            row["flaky"] += 1
            if v == "flaky":
                row["flaky_found"] += 1
            else:
                row["flaky_missed"] += 1
                errs.append(
                    f"MISSED-FLAKY {desc}{' ' + t['note'] if t.get('note') else ''}: product {pdesc(p)}"
                )
            continue
        if v == "flaky":
            row["false_flaky"] += 1
            errs.append(
                f"FALSE-FLAKY {lab} {desc}{' ' + t['note'] if t.get('note') else ''}: causes "
                f"{t['causes']}; product {pdesc(p)}"
            )
            continue
        if lab in ("broken", "broken-fixed", "platform"):
            if t["weak"]:
                if v not in t["accept"]:
                    info.append(f"weak {lab} test called {v}: {desc}")
                continue
            row["brk_n"] += 1
            if v not in t["accept"]:
                row["brk"] += 1
                errs.append(
                    f"{lab.upper()}-CALLED-{str(v).upper()} {desc}{' ' + t['note'] if t.get('note') else ''}: "
                    f"product {pdesc(p)}"
                )
            continue
        if lab == "healthy" and v not in (None, "healthy"):
            fault_fails = sum(
                n for c, n in t["causes"].items() if any(x in ("disk", "memory") for x in dims_of.get(c, []))
            )
            if v == "resource-sensitive" and fault_fails * 2 >= t["failures"] and t["failures"]:
                info.append(
                    f"healthy called resource-sensitive (its failures were disk/memory faults): {desc}"
                )
                continue
            row["hlth"] += 1
            errs.append(f"HEALTHY-CALLED-{v.upper()} {desc}: causes {t['causes']}; product {pdesc(p)}")
    # ---------------------------------------------------------------- outages
    touts = truth["outages"]
    pouts = d["outages"]
    used = set()
    for o in touts:
        if o["role"] != "outage":
            continue
        a, b = ts(o["start"]), ts(o["end"])
        hit = [
            k
            for k, po in enumerate(pouts)
            if ts(po["start"]) <= b + OUT_PAD and (ts(po.get("end")) or math.inf) >= a - OUT_PAD
        ]
        used.update(hit)
        tag = f"{o['id']} {hm(a)}..{hm(b)} ({o['failures']} failures, {o['tests']} tests, {o['hosts']} hosts)"
        if o["weak"]:
            if hit:
                row["out_weak_found"] += 1
            else:
                info.append(f"weak outage miss: {tag}")
            continue
        row["out"] += 1
        if hit:
            row["out_found"] += 1
            info.append(
                f"outage found {tag}: "
                + "; ".join(
                    f"{pouts[k].get('scope')} {pouts[k]['start']}..{pouts[k].get('end')}" for k in hit
                )
            )
        else:
            row["out_missed"] += 1
            errs.append(f"MISSED-OUTAGE {tag}: {o['note']}")
    allowed = [(ts(o["start"]), ts(o["end"])) for o in touts if o["role"] == "allowed"]
    for k, po in enumerate(pouts):
        if k in used:
            continue
        a, b = ts(po["start"]), ts(po.get("end")) or data_end
        if any(a <= y + OUT_PAD and b >= x - OUT_PAD for x, y in allowed):
            info.append(f"outage over the CI slow-down (allowed): {po['start']}..{po.get('end')}")
            continue
        row["out_false"] += 1
        tests = set(po.get("tests") or [])
        c = Counter(f[3] for f in fails if a <= f[0] <= b and (not tests or f[1] in tests))
        errs.append(
            f"FALSE-OUTAGE {po.get('scope')} {po['start']}..{po.get('end')} fail {po.get('failures')}/"
            f"{po.get('executions')} exp {po.get('expected')}"
            f"{' tests ' + ','.join(sorted(tests)[:3]) if tests else ''}: truth causes "
            f"{', '.join(f'{x} {n}' for x, n in c.most_common(4)) or 'none'}"
        )
    # red herrings' runner health (informational)
    health = {r["identity"]["id"]: r.get("health", {}) for r in d["runners"]}
    for (_kind, ent), e in warn.items():
        h = health.get(ent, {}).get("health")
        info.append(f"red herring {ent} [{e['id']}]: runner health {h}")
    an = run / "analysis.json"
    try:
        analysis = json.loads(an.read_text()) if an.exists() else {}
    except json.JSONDecodeError:
        analysis = {}
    as_of = ts(analysis.get("as_of"))
    if an.exists() and (as_of is None or as_of < data_end - 24 * 3600):
        row["stale"] += 1
        errs.insert(
            0,
            f"STALE-ANALYSIS the verdicts are as of {analysis.get('as_of')} while the data runs to {truth['end']} "
            f"(pending {analysis.get('pending')}): see feed.json problems and controller.log",
        )
    row["results"] = truth["results"]
    return row, errs, info


COLS = [
    ("stale", "stale"),
    ("sick", "sick"),
    ("found", "found"),
    ("missed", "miss"),
    ("dim", "dim"),
    ("kind", "kind"),
    ("state", "state"),
    ("onset", "onset"),
    ("res", "res"),
    ("false", "false"),
    ("false_rh", "f.rh"),
    ("flaky", "flaky"),
    ("flaky_found", "f.fnd"),
    ("flaky_missed", "f.miss"),
    ("false_flaky", "f.false"),
    ("brk", "brk"),
    ("hlth", "hlth"),
    ("out", "out"),
    ("out_found", "o.fnd"),
    ("out_missed", "o.miss"),
    ("out_false", "o.false"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args()
    rows = []
    for r in args.runs:
        run = Path(r)
        if not (run / "truth.json").exists() or not (run / "incidents.json").exists():
            print(f"== {run}: incomplete run, skipped", file=sys.stderr)
            continue
        row, errs, info = score(run, args.v)
        t = json.loads((run / "truth.json").read_text())
        row["_name"] = f"{t['seed']} {t['shape'][:5]} {t['days']}d"
        rows.append(row)
        print(
            f"== {run.name} ({t['shape']}, {t['days']} days, {t['results']} results, {t['reports']} reports)"
        )
        for e in errs:
            print("  " + e)
        if args.v:
            for i in info:
                print("  . " + i)
    head = f"{'fleet':<18}{'results':>8}" + "".join(f"{h:>7}" for _, h in COLS)
    print()
    print(head)
    tot = Counter()
    for row in rows:
        print(f"{row['_name']:<18}{row['results']:>8}" + "".join(f"{row[k]:>7}" for k, _ in COLS))
        for k, _ in COLS:
            tot[k] += row[k]
        tot["results"] += row["results"]
        tot["weak"] += row["weak"]
        tot["weak_found"] += row["weak_found"]
    print(f"{'TOTAL':<18}{tot['results']:>8}" + "".join(f"{tot[k]:>7}" for k, _ in COLS))
    print(
        f"(weak sick entities, not counted: {tot['weak']}, of which found {tot['weak_found']}; "
        "kind = wrong granularity instead of or besides the entity; f.rh = false incidents on red herrings, "
        "included in false)"
    )


if __name__ == "__main__":
    main()
