"""score.py RUNDIR...: compare the product's verdicts in each run directory with its truth.json.

Prints, per fleet, one line per error with the numbers behind it, then a summary table. A truth
entity or outage with too few failures to be seen (fewer than 10 failures or 4 distinct tests, or a
flaky test with fewer than 5 failures of its own) is "weak": missing it is listed but not counted.
"""

from __future__ import annotations

import gzip
import json
import sys
from datetime import datetime
from pathlib import Path

HOUR = 3600.0


def ts(s):
    if s is None:
        return None
    if isinstance(s, int | float):
        return float(s)
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def hm(seconds):
    if seconds is None:
        return "-"
    sign = "-" if seconds < 0 else "+"
    s = abs(seconds)
    return f"{sign}{s / HOUR:.1f}h"


def load(d: Path, name):
    p = d / name
    if not p.exists():
        return None
    return json.loads(p.read_text() or "null")


def items(x):
    if x is None:
        return []
    if isinstance(x, dict):
        return x.get("items", [])
    return x


def load_failures(d: Path):
    p = d / "failures.tsv"
    packed = d / "failures.tsv.gz"
    rows = []
    text = (
        p.read_text()
        if p.exists()
        else gzip.decompress(packed.read_bytes()).decode()
        if packed.exists()
        else ""
    )
    if text:
        for line in text.splitlines():
            t, test, rid, machine, pool, image, cause, _attempt = line.split("\t")
            rows.append((float(t), test, rid, machine, pool, image, cause))
    return rows


def causes_in(fails, t0, t1, pred=lambda r: True):
    out = {}
    for r in fails:
        if t0 <= r[0] < t1 and pred(r):
            out[r[6]] = out.get(r[6], 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def runs_after(d: Path, e, t0):
    """Results on the truth entity after t0 (from the history file): can a clean run have been seen?"""
    p = d / "history.ndjson.gz"
    opener = gzip.open if p.exists() else open
    p = p if p.exists() else d / "history.ndjson"
    if not p.exists():
        return -1
    field = {"runner": "id", "machine": "machine", "pool": "pool", "image": "image"}[e["kind"]]
    n = 0
    with opener(p, "rt") as fh:
        for line in fh:
            if '"kind":"report"' in line or e["entity"] not in line:
                continue
            r = json.loads(line)
            if r["runner"].get(field) == e["entity"] and ts(r["time"]) > t0:
                n += 1
    return n


def score(d: Path):
    fails = load_failures(d)
    truth = load(d, "truth.json")
    incs = items(load(d, "incidents.json"))
    tests = items(load(d, "tests.json"))
    outs = items(load(d, "outages.json"))
    runners = items(load(d, "runners.json"))
    end = ts(truth["end"])
    errs: list[tuple[str, str]] = []
    notes: list[tuple[str, str]] = []
    c = {
        k: 0
        for k in (
            "sick",
            "weak",
            "found",
            "missed",
            "dim",
            "state",
            "susp_unk",
            "unres",
            "falseres",
            "gran",
            "false",
            "flaky",
            "mflaky",
            "mflaky_weak",
            "fflaky",
            "tverd",
            "outages",
            "mout",
            "fout",
        )
    }
    truth_tests = truth["tests"]
    rmap = truth["runners"]
    ents = [e for e in truth["entities"] if e["sick"]]
    warns = [e for e in truth["entities"] if not e["sick"]]
    used = set()

    def inc_str(i):
        st = i.get("statistics") or {}
        return (
            f"{i['kind']}:{i['entity']} state={i['state']} dim={i.get('dimension')} onset={i.get('onset')} "
            f"end={i.get('end')} fail/exec={st.get('failures')}/{st.get('executions')} "
            f"distinct={st.get('distinct_tests')}"
        )

    def ent_str(e):
        return (
            f"{e['id']} {e['type']} {e['kind']}:{e['entity']} pool={e['pool']} dim={e['dimension']} "
            f"state={e['state']} onset={e['onset']} end={e['end']} failures/runs={e['failures']}/{e['runs']} "
            f"distinct_tests={e['distinct_tests']}"
        )

    def same(i, e):
        if i["kind"] == e["kind"] and i["entity"] == e["entity"]:
            return True
        # a persistent runner alone on its VM: its machine is the same thing
        if e["kind"] == "runner" and i["kind"] == "machine" and i["entity"] == e.get("machine"):
            return sum(1 for r in rmap.values() if r["machine"] == e.get("machine")) == 1
        return False

    for e in ents:
        weak = e["failures"] < 10 or e["distinct_tests"] < 4
        c["weak" if weak else "sick"] += 1
        mine = [i for i in incs if same(i, e)]
        t_on, t_end = ts(e["onset"]), ts(e["end"])
        # incidents over before the fault began are not about it
        mine_ok = [i for i in mine if not (i.get("end") and ts(i["end"]) < t_on - 6 * HOUR)]
        for i in mine:
            used.add(id(i))
            if i not in mine_ok:
                errs.append(("FALSE-INCIDENT", f"before the fault: {inc_str(i)} | truth {ent_str(e)}"))
                c["false"] += 1
        if not mine_ok:
            if weak:
                notes.append(("missed-weak", ent_str(e)))
            else:
                c["missed"] += 1
                errs.append(("MISSED-SICK", ent_str(e)))
            continue
        c["found"] += 1
        # the incident covering most of the truth window
        i = min(mine_ok, key=lambda i: abs(ts(i["onset"]) - t_on))
        delta = ts(i["onset"]) - t_on
        notes.append(("found", f"{ent_str(e)} -> {inc_str(i)} onset {hm(delta)}"))
        ff = ts(e.get("first_failure")) or t_on
        delta_ff = ts(i["onset"]) - ff
        if abs(delta) > 12 * HOUR and abs(delta_ff) > 12 * HOUR:
            errs.append(
                (
                    "ONSET-OFF",
                    f"onset {hm(delta)} vs truth onset, {hm(delta_ff)} vs first failure {e.get('first_failure')}: {inc_str(i)} | truth {ent_str(e)}",
                )
            )
        if e["state"] == "suspect" and i["state"] == "sick":
            c["state"] += 1
            errs.append(
                ("WRONG-STATE", f"sick without agent readings (truth suspect): {inc_str(i)} | {ent_str(e)}")
            )
        if e["state"] == "sick" and i["state"] == "suspect" and e["dimension"] == "unknown":
            # readings there, all fine (a bad image): the issue reserves suspect for no readings at all
            c["susp_unk"] += 1
            errs.append(("SUSPECT-NOT-SICK(readings present, all fine)", f"{inc_str(i)} | {ent_str(e)}"))
        elif e["state"] == "sick" and i["state"] == "suspect":
            c["state"] += 1
            errs.append(("WRONG-STATE", f"suspect though readings show it: {inc_str(i)} | {ent_str(e)}"))
        if e["state"] == "sick" and i.get("dimension") != e["dimension"]:
            c["dim"] += 1
            errs.append(
                (
                    "WRONG-DIMENSION",
                    f"{i.get('dimension')} != truth {e['dimension']}: {inc_str(i)} | {ent_str(e)}",
                )
            )
        latest = max(mine_ok, key=lambda i: ts(i["onset"]))
        if t_end is not None and t_end < end - 6 * HOUR and latest["state"] != "resolved":
            after = runs_after(d, e, t_end)
            msg = f"fixed at {e['end']} ({hm(end - t_end)} before the end), {after} runs on it since: {inc_str(latest)}"
            if after >= 20:
                c["unres"] += 1
                errs.append(("NOT-RESOLVED", msg))
            else:
                notes.append(("not-resolved-few-runs", msg))
        if t_end is None and latest["state"] == "resolved":
            c["falseres"] += 1
            errs.append(("FALSE-RESOLVED", f"still sick at the end: {inc_str(latest)} | {ent_str(e)}"))

    # ---- incidents no truth entity explains -------------------------------------------------------
    def related(i):
        """A truth entity this incident names at another granularity (runner of a sick host/image...)."""
        rs = set(i.get("runners") or [])
        ms = set(i.get("machines") or [])
        if i["kind"] == "runner":
            rs.add(i["entity"])
        if i["kind"] == "machine":
            ms.add(i["entity"])
        for r in rs:
            if r in rmap:
                ms.add(rmap[r]["machine"])
        i_on = ts(i["onset"])
        out = []
        imgs = {img for r in rs if r in rmap for img in rmap[r]["images"]}
        ipools = set(i.get("pool") or [])
        for e in ents:
            if e["end"] and i_on > ts(e["end"]) + 6 * HOUR:
                continue
            k = e["kind"]
            hit = (
                (k == "machine" and e["entity"] in ms)
                or (k == "runner" and (e["entity"] in rs or e.get("machine") in ms))
                or (k == "pool" and (e["entity"] in ipools or i["entity"] == e["entity"]))
                or (k == "image" and (e["entity"] in imgs or i["entity"] == e["pool"]))
                or (k == "image" and i["kind"] == "machine" and e["pool"] in ipools)
            )
            if hit:
                out.append(e)
        return out

    def top_tests(i, n=5):
        out = []
        for t in (i.get("tests") or [])[:n]:
            tt = truth_tests.get(t["test_id"], {})
            out.append(
                f"{t['test_id'][-40:]}({tt.get('truth')},{t.get('failures')}f,causes={tt.get('causes')})"
            )
        return "; ".join(out)

    for i in incs:
        if id(i) in used:
            continue
        rel = related(i)
        if rel:
            c["gran"] += 1
            errs.append(
                (
                    "WRONG-GRANULARITY",
                    f"{inc_str(i)} | truth is {', '.join(e['kind'] + ':' + e['entity'] for e in rel)}",
                )
            )
            continue
        why = []
        for w in warns:
            if i["entity"] == w["entity"] or w["entity"] in (i.get("runners") or []):
                why.append(f"warning-only runner ({w['type']})")
        rs = i.get("runners") or []
        if any(rmap.get(r, {}).get("shard") for r in rs) or (
            i["kind"] == "runner" and rmap.get(i["entity"], {}).get("shard")
        ):
            why.append("heavy shard")
        i_on = ts(i["onset"])
        for o in truth["outages"]:
            if ts(o["start"]) - 2 * HOUR <= i_on <= ts(o["end"]) + 2 * HOUR:
                why.append(f"near outage {o['id']} {o['typ']} {o.get('pool', '')} {o['start']}..{o['end']}")
        c["false"] += 1
        errs.append(
            (
                "FALSE-INCIDENT",
                f"{inc_str(i)} [{'; '.join(why) or 'no truth fault'}] top tests: {top_tests(i)}",
            )
        )

    # ---- tests ------------------------------------------------------------------------------------
    pv = {t["test_id"]: t for t in tests}
    for tid, tt in truth_tests.items():
        p = pv.get(tid)
        v = p["verdict"] if p else "absent"
        nums = f"runs={tt['runs']} failures={tt['failures']} causes={tt['causes']} " + (
            f"product: score={p.get('score', 0):.4f} counted={p.get('counted_failures')}/{p.get('counted_executions')} reason={p.get('reason')!r}"
            if p
            else ""
        )
        tr = tt["truth"]
        if tr == "flaky":
            own = tt["causes"].get("flaky", 0)
            weak = own < 5
            c["flaky"] += 0 if weak else 1
            if v != "flaky":
                extra = f"rate={tt['rate']} busy_only={tt['busy_only']} heavy_shard={tt['heavy']} own_failures={own}"
                if weak:
                    c["mflaky_weak"] += 1
                    notes.append(("missed-flaky-weak", f"{tid} verdict={v} {extra} {nums}"))
                else:
                    c["mflaky"] += 1
                    errs.append(("MISSED-FLAKY", f"{tid} verdict={v} {extra} {nums}"))
            continue
        if v == "flaky":
            c["fflaky"] += 1
            errs.append(
                (
                    "FALSE-FLAKY",
                    f"truth {tr}{' (' + tt['platform'] + ')' if tt['platform'] else ''}{' ext-service' if tt['ext'] else ''}: {tid} {nums}",
                )
            )
            continue
        want = {
            "healthy": {"healthy"},
            "broken": {"broken"},
            "broken-fixed": {"broken", "healthy"},
            "platform": {"platform"},
        }[tr]
        if v not in want and v != "absent":
            c["tverd"] += 1
            errs.append((f"{tr.upper()}-CALLED-{v.upper()}", f"{tid} {nums}"))

    # ---- outages ----------------------------------------------------------------------------------
    def span(o):
        s = ts(o.get("start") or o.get("onset") or o.get("from"))
        e_ = ts(o.get("end") or o.get("until") or o.get("to")) or s
        return s, e_

    matched_p = set()
    for o in truth["outages"]:
        s, e_ = ts(o["start"]), ts(o["end"])
        hit = [j for j, p in enumerate(outs) if span(p)[0] <= e_ + 1800 and span(p)[1] >= s - 1800]
        matched_p.update(hit)
        desc = f"{o['id']} {o['typ']} {o.get('pool', '')} {o['start']}..{o['end']} failures={o['failures']} distinct_tests={o['distinct_tests']}"
        weak = o["failures"] < 20
        if not weak:
            c["outages"] += 1
        if hit:
            notes.append(("outage-found", f"{desc} -> {[outs[j] for j in hit]}"))
        elif weak:
            notes.append(("missed-outage-weak", desc))
        else:
            c["mout"] += 1
            errs.append(
                ("MISSED-OUTAGE" if o["typ"] != "network" else "MISSED-OUTAGE(one pool's network)", desc)
            )
    for j, p in enumerate(outs):
        if j in matched_p:
            continue
        s, e_ = span(p)
        why = [
            f"{e['id']} {e['type']} {e['kind']}:{e['entity']} onset {e['onset']}"
            for e in ents
            if abs(ts(e["onset"]) - s) < 3 * HOUR
        ]
        ptests = p.get("tests") or []
        lab = [
            f"{t[-40:]}({truth_tests.get(t, {}).get('truth')},{truth_tests.get(t, {}).get('causes')})"
            for t in ptests[:5]
        ]
        c["fout"] += 1
        pd = {k: v for k, v in p.items() if k not in ("tests",)}
        cz = causes_in(fails, s, e_ + 1)
        errs.append(
            (
                "FALSE-OUTAGE",
                f"{json.dumps(pd)[:400]} tests={lab} true causes of failures in the span: {cz} near: {why or 'nothing'}",
            )
        )

    # ---- warnings (information only) --------------------------------------------------------------
    health = {r["identity"]["id"]: r.get("health", {}) for r in runners if "identity" in r}
    for w in warns:
        h = health.get(w["entity"], {})
        notes.append(
            (
                "warning-runner",
                f"{w['entity']} {w['type']}: product health={h.get('health')} warnings={h.get('warnings')}",
            )
        )
    return truth, c, errs, notes


def main():
    verbose = "-v" in sys.argv
    dirs = [Path(a) for a in sys.argv[1:] if a != "-v"]
    rows = []
    tot = None
    for d in dirs:
        if not (d / "truth.json").exists() or not (d / "incidents.json").exists():
            continue
        truth, c, errs, notes = score(d)
        print(
            f"=== fleet {d.name}: {truth['days']} d, {truth['results']} results, {truth['reports']} reports, pools {sorted(truth['pools'])}"
        )
        for k, m in sorted(errs, key=lambda x: x[0]):
            print(f"  {k}: {m}")
        if verbose:
            for k, m in notes:
                print(f"  ({k}) {m}")
        rows.append((d.name, truth["results"], c))
        tot = dict(c) if tot is None else {k: tot[k] + c[k] for k in c}
    cols = [
        ("sick", "sick"),
        ("weak", "weak"),
        ("found", "found"),
        ("missed", "miss"),
        ("dim", "dim"),
        ("state", "state"),
        ("susp_unk", "susp-u"),
        ("unres", "unres"),
        ("falseres", "f-res"),
        ("gran", "gran"),
        ("false", "f-inc"),
        ("flaky", "flaky"),
        ("mflaky", "m-flk"),
        ("mflaky_weak", "m-flk-w"),
        ("fflaky", "f-flk"),
        ("tverd", "t-verd"),
        ("outages", "outg"),
        ("mout", "m-out"),
        ("fout", "f-out"),
    ]
    print()
    print(f"{'fleet':>6} {'results':>8} " + " ".join(f"{h:>7}" for _, h in cols))
    for name, n, c in rows:
        print(f"{name:>6} {n:>8} " + " ".join(f"{c[k]:>7}" for k, _ in cols))
    if tot:
        print(f"{'total':>6} {sum(n for _, n, _ in rows):>8} " + " ".join(f"{tot[k]:>7}" for k, _ in cols))
    print(
        "\nsick: truth sick entities with enough failures (weak: too few); found/miss: matched or not; dim: wrong dimension;"
        "\nstate: sick vs suspect wrong; unres counts only entities with 20+ runs after the fix; susp-u: suspect where readings exist but show nothing (a bad image); unres: fixed but not resolved; f-res: resolved though still sick; gran: an"
        "\nincident at the wrong granularity; f-inc: false incidents; flaky: flaky tests with >= 5 own failures;"
        "\nm-flk: those missed; m-flk-w: weak flaky tests missed (not errors); f-flk: non-flaky tests called flaky;"
        "\nt-verd: broken/platform/healthy tests given another wrong verdict; outg/m-out/f-out: outages."
    )


if __name__ == "__main__":
    main()
