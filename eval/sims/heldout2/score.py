#!/usr/bin/env python3
"""Score runnerctl's verdicts against the held-out truth.

usage: score.py OUTDIR...      (each OUTDIR holds truth.json, incidents.json, tests.json, runners.json,
                                outages.json and history.ndjson or history.ndjson.gz, as written by run.sh)
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections import Counter, defaultdict
from datetime import datetime

SLACK_BEFORE = 12 * 3600
SLACK_AFTER = 6 * 3600
ACTIVE = ("suspect", "sick")


def ts(s):
    if s is None:
        return None
    if isinstance(s, (int, float)):
        return float(s)
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def hm(t):
    return datetime.utcfromtimestamp(t).strftime("%m-%d %H:%M") if t is not None else "-"


def cause_of(msg):
    if msg is None:
        return "?"
    m = msg
    if "No space left" in m or "Read-only file system" in m:
        return "sick-disk"
    if "signal 9" in m or m in ("MemoryError", "Killed") or "OOM-killed" in m:
        return "sick-memory"
    if "not yet valid" in m or "token expired" in m or "timestamp out of tolerance" in m:
        return "sick-clock"
    if "undefined symbol" in m or "file format not recognized" in m or "checksum mismatch" in m:
        return "sick-cache"
    if "libfoo" in m or "protoc" in m or "toolchain version" in m:
        return "bad-image"
    if "registry.internal" in m or "artifact store" in m or "db-proxy" in m:
        return "outage"
    if "ConnectionResetError" in m or "BrokenPipeError" in m:
        return "job-burst"
    if "expected 3, got 2" in m or "condition not met" in m or "resource busy" in m:
        return "flaky-test"
    if "regression" in m or "NoneType" in m:
        return "broken-test"
    if "path separator" in m:
        return "platform-test"
    if "port 5432" in m:
        return "interaction"
    if m in ("AssertionError", "TimeoutError"):
        return "base-0.2%"
    return "?"


def open_history(d):
    """The run's history, as run.sh leaves it (history.ndjson.gz) or as gen.py writes it."""
    path = os.path.join(d, "history.ndjson")
    if os.path.exists(path):
        return open(path)
    return gzip.open(path + ".gz", "rt")


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return default


def items(x):
    if isinstance(x, dict):
        return x.get("items", [])
    return x or []


def score_fleet(d):
    T = load(os.path.join(d, "truth.json"))
    inc = items(load(os.path.join(d, "incidents.json"), []))
    tests = items(load(os.path.join(d, "tests.json"), []))
    runs = items(load(os.path.join(d, "runners.json"), []))
    outs = items(load(os.path.join(d, "outages.json"), {}))
    END = ts(T["end_time"])
    errs = defaultdict(list)  # kind -> lines
    info = defaultdict(list)

    runners = T["runners"]
    machines = T["machines"]
    eph = T["eph_runners"]

    def machine_of(rid):
        if rid in runners:
            return runners[rid]["machine"]
        return eph.get(rid)

    def pool_of_machine(m):
        return machines.get(m, {}).get("pool")

    # truth sick entities with periods
    sick = []
    for s in T["sick"]:
        s = dict(s)
        s["t0"] = ts(s["onset"])
        s["t1"] = ts(s["end"]) if s["end"] else END
        sick.append(s)

    def overlaps(s, a, b):
        return a <= s["t1"] + SLACK_AFTER and b >= s["t0"] - SLACK_BEFORE

    def relation(s, kind, ent, inc_runners, inc_machines, a, b):
        """How incident (kind, ent) relates to truth entity s: exact|alias|finer|coarser|None."""
        if not overlaps(s, a, b):
            return None
        if s["kind"] == kind and s["id"] == ent:
            return "exact"
        if s["kind"] == "runner":
            m = machine_of(s["id"])
            if kind == "machine" and ent == m:
                others = [r for r in machines[m]["runners"] if r != s["id"]]
                sick_runners = {r for x in sick if overlaps(x, a, b) for r in x["runners"]}
                if not others or all(r in sick_runners for r in others):
                    return "alias"
                return "coarser"
            if kind == "pool" and ent == s["pool"]:
                return "coarser"
            if kind == "image" and s["id"] in set(inc_runners):
                return "coarser"
            return None
        if s["kind"] == "machine":
            if kind == "runner" and machine_of(ent) == s["id"]:
                return "finer"
            if kind == "pool" and ent == s["pool"]:
                return "coarser"
            if kind == "image" and s["id"] in set(inc_machines):
                return "coarser"
            return None
        if s["kind"] == "image":
            if kind == "runner":
                m = machine_of(ent)
                if m in s.get("machines", []) or (ent in eph and pool_of_machine(m) == s["pool"]):
                    return "finer"
            if kind == "machine" and (
                ent in s.get("machines", [])
                or (machines.get(ent, {}).get("ephemeral") and pool_of_machine(ent) == s["pool"])
            ):
                return "finer"
            if kind == "pool" and ent == s["pool"]:
                return "coarser"
            if kind == "image" and ent != s["id"]:
                return None
        return None

    matched = defaultdict(list)  # truth index -> [(rel, incident)]
    false_inc = []
    for ic in inc:
        kind, ent = ic.get("kind"), ic.get("entity")
        a = ts(ic.get("onset")) or END
        b = ts(ic.get("end")) or END
        rels = []
        for j, s in enumerate(sick):
            r = relation(s, kind, ent, ic.get("runners") or [], ic.get("machines") or [], a, b)
            if r:
                rels.append((j, r))
        for j, r in rels:
            matched[j].append((r, ic))
        if not rels:
            false_inc.append(ic)
        elif all(r == "coarser" for _, r in rels) and kind in ("machine", "pool", "image"):
            # names a coarser entity than the truth: other, healthy members are blamed too
            pass

    # ---------------------------------------------------------------- sick entities
    n_detected = 0
    for j, s in enumerate(sick):
        ms = matched.get(j, [])
        good = [(r, ic) for r, ic in ms if r in ("exact", "alias")]
        st = s.get("stats", {})
        desc = (
            f"{s['kind']} {s['id']} ({s['case']}, pool {s['pool']}, dim {s['dimension']}, onset {hm(s['t0'])}, "
            f"end {hm(ts(s['end'])) if s['end'] else 'ongoing'}, evidence={'yes' if s.get('has_evidence') else 'no'}; "
            f"in window: {st.get('failures')} fails/{st.get('executions')} execs, {st.get('caused_failures')} caused, "
            f"{st.get('distinct_tests_caused')} distinct tests; p_fail {s.get('p_fail') and round(s['p_fail'], 2)})"
        )
        if not good:
            if ms:
                lv = "; ".join(
                    f"{r}: {ic['kind']} {ic['entity']} [{ic['state']}, {ic.get('dimension')}]" for r, ic in ms
                )
                errs["LEVEL"].append(f"{desc} -- only named at another level: {lv}")
                n_detected += 0
            else:
                # near misses: any incident naming a member outside the time slack
                near = [ic for ic in inc if ic.get("entity") in (set(s["runners"]) | {s["id"]})]
                extra = ""
                if near:
                    extra = " -- incidents on it outside the window: " + "; ".join(
                        f"{ic['state']} onset {hm(ts(ic.get('onset')))}" for ic in near
                    )
                errs["MISSED"].append(desc + extra)
            continue
        n_detected += 1
        # prefer an active one, else resolved
        good.sort(key=lambda x: (x[1]["state"] not in ACTIVE, abs((ts(x[1].get("onset")) or END) - s["t0"])))
        r, ic = good[0]
        dims = sorted({g[1].get("dimension") for g in good})
        exp = s.get("expected_dimension")
        if exp not in dims:
            errs["WRONG-DIM"].append(
                f"{desc} -- product dimension {dims}, expected {exp}; incident {ic['id']} "
                f"[{ic['state']}] evidence coverage {ic.get('evidence', {}).get('coverage')}"
            )
        on = ts(ic.get("onset"))
        delta = (on - s["t0"]) / 3600 if on else None
        states = sorted({g[1]["state"] for g in good})
        lvl = "" if r == "exact" else f" (as {ic['kind']} {ic['entity']})"
        info["DETECTED"].append(
            f"{s['kind']} {s['id']} {s['case']}{lvl}: states {states}, dim {dims}, onset delta "
            f"{delta:+.1f} h, decided {hm(ts(ic.get('decided_at')))}; stats "
            f"{ic.get('statistics', {}).get('failures')}/{ic.get('statistics', {}).get('executions')} "
            f"exp {ic.get('statistics', {}).get('expected')}"
        )
        if s["end"] and all(g[1]["state"] in ACTIVE for g in good):
            line = f"{s['kind']} {s['id']} fixed at {hm(s['t1'])} but incident still {states} at the end"
            if END - s["t1"] > 12 * 3600:
                lf = max((ts(g[1].get("last_failure")) or 0) for g in good)
                errs["STALE"].append(
                    line + f" ({(END - s['t1']) / 86400:.1f} d after the fix; product last_failure "
                    f"{hm(lf)}; {ic.get('statistics', {}).get('failures')} fails/"
                    f"{ic.get('statistics', {}).get('executions')} execs over the whole stretch)"
                )
            else:
                info["NOT-RESOLVED"].append(line)
        if not s["end"] and all(g[1]["state"] == "resolved" for g in good):
            info["RESOLVED-EARLY"].append(
                f"{s['kind']} {s['id']} still sick at the end but its incidents are all resolved "
                f"(last end {hm(max(ts(g[1].get('end')) or 0 for g in good))})"
            )
        if not s.get("has_evidence") and any(g[1]["state"] == "sick" for g in good):
            info["SICK-WITHOUT-EVIDENCE"].append(
                f"{s['kind']} {s['id']}: no agent evidence in truth but product says sick"
            )
        for rr, I2 in ms:
            if rr == "coarser":
                errs["COARSE"].append(
                    f"{I2['kind']} {I2['entity']} [{I2['state']}] blamed for {s['kind']} {s['id']} "
                    f"(its other members are healthy)"
                )

    # ---------------------------------------------------------------- false incidents (with causes from history)
    need = []
    for ic in false_inc:
        need.append(ic)
    window_stats = {}
    if need:
        keys = []
        for ic in need:
            a = ts(ic.get("onset")) or END
            b = ts(ic.get("end")) or END
            keys.append((ic["id"], ic["kind"], ic["entity"], a - 60, b + 60))
        acc = {k[0]: [0, 0, Counter()] for k in keys}
        with open_history(d) as f:
            for line in f:
                if '"kind":"report"' in line[:20]:
                    continue
                rec = json.loads(line)
                rid = rec["runner"]["id"]
                m = rec["runner"].get("machine")
                img = rec["runner"].get("image")
                pool = rec["runner"].get("pool")
                t = ts(rec["time"])
                for iid, kind, ent, a, b in keys:
                    if not (a <= t <= b):
                        continue
                    who = {"runner": rid, "machine": m, "image": img, "pool": pool}.get(kind)
                    if who != ent or rec["outcome"] == "skipped":
                        continue
                    x = acc[iid]
                    x[0] += 1
                    if rec["outcome"] in ("failed", "error"):
                        x[1] += 1
                        x[2][cause_of(rec.get("message"))] += 1
        window_stats = acc
    outage_spans = [(ts(o["start"]), ts(o["end"])) for o in T["outages"]]
    rh = {x["runner"]: x["reason"] for x in T["red_herrings"]}
    inter = {v["runner"]: k for k, v in T["tests"]["interaction"].items()}
    for ic in false_inc:
        a = ts(ic.get("onset")) or END
        b = ts(ic.get("end")) or END
        stt = ic.get("statistics", {}) or {}
        ws = window_stats.get(ic["id"], [0, 0, Counter()])
        notes = []
        for oa, ob in outage_spans:
            if a <= ob + 3600 and b >= oa - 3600:
                notes.append(f"overlaps outage {hm(oa)}-{hm(ob)}")
        if ic["entity"] in rh:
            notes.append(f"red herring: {rh[ic['entity']]}")
        if ic["entity"] in inter:
            notes.append(f"test x runner interaction runner ({inter[ic['entity']]})")
        line = (
            f"{ic['kind']} {ic['entity']} [{ic['state']}, dim {ic.get('dimension')}] onset {hm(a)} end {hm(ts(ic.get('end')))}: "
            f"product {stt.get('failures')} fails/{stt.get('executions')} execs, expected {stt.get('expected')}, "
            f"q {stt.get('q_value') if stt.get('q_value') is None else format(stt.get('q_value'), '.2g')}, "
            f"distinct {stt.get('distinct_tests')}, jobs {stt.get('failed_jobs')}; truth in window: {ws[1]} fails/{ws[0]} execs "
            f"by cause {dict(ws[2].most_common())}" + (f"; {'; '.join(notes)}" if notes else "")
        )
        if ic["state"] in ACTIVE:
            errs["FALSE"].append(line)
        else:
            info["FALSE-RESOLVED"].append(line)

    # ---------------------------------------------------------------- runner health
    sick_runner_now = set()
    for s in sick:
        if s["end"] is None:
            sick_runner_now.update(s["runners"])
    false_ents = {ic["entity"] for ic in false_inc if ic["state"] in ACTIVE}
    for R in runs:
        ident = R.get("identity", {})
        rid = ident.get("id")
        h = R.get("health") or {}
        hv = h.get("health")
        if hv in ("suspect", "sick"):
            if rid in rh:
                errs["RED-HERRING"].append(
                    f"runner {rid} health {hv} ({h.get('dimension')}); {rh[rid]}; "
                    f"incident {h.get('incident_id')}; runner totals {R.get('failures')}/{R.get('executions')}"
                )
            elif (
                rid not in sick_runner_now
                and rid not in false_ents
                and ident.get("machine") not in false_ents
            ):
                # is it on a bad image / sick machine now?
                covered = False
                for s in sick:
                    if s["end"] is None and (
                        (s["kind"] == "image" and machine_of(rid) in s.get("machines", []))
                        or (s["kind"] == "machine" and machine_of(rid) == s["id"])
                    ):
                        covered = True
                if not covered:
                    errs["FALSE-HEALTH"].append(
                        f"runner {rid} health {hv} ({h.get('dimension')}) incident "
                        f"{h.get('incident_id')}; truth healthy now; runner totals "
                        f"{R.get('failures')}/{R.get('executions')}"
                    )
    for ic in inc:
        if ic["entity"] in rh and ic["state"] in ACTIVE:
            line = f"incident {ic['kind']} {ic['entity']} [{ic['state']}]; {rh[ic['entity']]}"
            if not any(ic["entity"] in x for x in errs["RED-HERRING"]):
                errs["RED-HERRING"].append(line)
    health_counts = Counter((R.get("health") or {}).get("health") for R in runs)

    # ---------------------------------------------------------------- outages
    for oa, ob in outage_spans:
        hit = [
            o
            for o in outs
            if ts(o.get("start")) is not None
            and ts(o.get("start")) <= ob + 1800
            and (ts(o.get("end")) or END) >= oa - 1800
        ]
        if hit:
            info["OUTAGE-FOUND"].append(
                f"{hm(oa)}-{hm(ob)} -> "
                + "; ".join(f"{o.get('scope')} {hm(ts(o.get('start')))}-{hm(ts(o.get('end')))}" for o in hit)
            )
        else:
            errs["MISSED-OUTAGE"].append(
                f"outage {hm(oa)}-{hm(ob)} not in /v1/outages ({len(outs)} spans listed)"
            )
    for o in outs:
        oa, ob = ts(o.get("start")), ts(o.get("end")) or END
        if oa is None:
            continue
        if not any(oa <= b + 1800 and ob >= a - 1800 for a, b in outage_spans):
            cz = Counter()
            ex = 0
            with open_history(d) as f:
                for line in f:
                    if '"kind":"report"' in line[:20]:
                        continue
                    rec = json.loads(line)
                    t = ts(rec["time"])
                    if oa <= t <= ob and rec["outcome"] != "skipped":
                        ex += 1
                        if rec["outcome"] in ("failed", "error"):
                            cz[cause_of(rec.get("message"))] += 1
            errs["FALSE-OUTAGE"].append(
                f"{o.get('scope')} outage {hm(oa)}-{hm(ob)}: product {o.get('failures')} fails/{o.get('executions')} execs, "
                f"expected {o.get('expected')}, runners failing {o.get('runners_failing')} of {o.get('runners_active')} active"
                f"{', tests ' + str(len(o.get('tests'))) if o.get('tests') else ''}; truth in window: {sum(cz.values())} "
                f"fails/{ex} execs by cause {dict(cz.most_common())}; no outage in truth"
            )

    # ---------------------------------------------------------------- tests
    tt = T["tests"]
    verdict = {x["test_id"]: x for x in tests}
    flaky_t = tt["flaky"]
    broken_t = tt["broken"]
    plat_t = tt["platform"]
    inter_t = tt["interaction"]
    hstats = tt["healthy_stats"]

    def pstat(x):
        if not x:
            return "not listed"
        return (
            f"product {x.get('verdict')} score {x.get('score', 0):.3f} fails {x.get('failures')}/{x.get('executions')} "
            f"counted {x.get('counted_failures')}/{x.get('counted_executions')} discounted {x.get('discounted_failures')}"
            + (f" reason '{x.get('reason')}'" if x.get("reason") else "")
        )

    def tstat(s):
        return (
            f"truth fails {s['failures']}/{s['executions']} (sick {s['fail_sick']}, outage {s['fail_outage']}, "
            f"other {s['fail_other']})"
        )

    for tid, x in verdict.items():
        v = x.get("verdict")
        if v == "flaky" and tid not in flaky_t and tid not in inter_t:
            kind = "broken" if tid in broken_t else "platform" if tid in plat_t else "healthy"
            s = (
                broken_t.get(tid)
                or plat_t.get(tid)
                or hstats.get(tid)
                or {
                    "failures": 0,
                    "executions": x.get("executions"),
                    "fail_sick": 0,
                    "fail_outage": 0,
                    "fail_other": 0,
                }
            )
            errs["FALSE-FLAKY"].append(f"{tid} (truth {kind}): {pstat(x)}; {tstat(s)}")
        elif v in ("broken", "platform") and tid not in broken_t and tid not in plat_t and tid not in inter_t:
            kind = "flaky" if tid in flaky_t else "healthy"
            s = (
                flaky_t.get(tid)
                or hstats.get(tid)
                or {"failures": 0, "executions": 0, "fail_sick": 0, "fail_outage": 0, "fail_other": 0}
            )
            errs["FALSE-" + v.upper()].append(f"{tid} (truth {kind}): {pstat(x)}; {tstat(s)}")
        elif v == "resource-sensitive" and tid not in inter_t:
            kind = (
                "flaky"
                if tid in flaky_t
                else "broken"
                if tid in broken_t
                else "platform"
                if tid in plat_t
                else "healthy"
            )
            s = (
                flaky_t.get(tid)
                or broken_t.get(tid)
                or plat_t.get(tid)
                or hstats.get(tid)
                or {"failures": 0, "executions": 0, "fail_sick": 0, "fail_outage": 0, "fail_other": 0}
            )
            info["RESOURCE-SENSITIVE"].append(f"{tid} (truth {kind}): {pstat(x)}; {tstat(s)}")
    for tid, s in flaky_t.items():
        if s["executions"] == 0:
            continue
        x = verdict.get(tid)
        if not x or x.get("verdict") != "flaky":
            errs["MISSED-FLAKY"].append(
                f"{tid} (p {s['p']}{', hard shard' if s.get('hard') else ''}): {pstat(x)}; {tstat(s)}"
            )
    for tid, s in broken_t.items():
        x = verdict.get(tid)
        if not x or x.get("verdict") != "broken":
            errs["MISSED-BROKEN"].append(f"{tid} (from {s['from']}): {pstat(x)}; {tstat(s)}")
    for tid, s in plat_t.items():
        x = verdict.get(tid)
        if not x or x.get("verdict") != "platform":
            errs["MISSED-PLATFORM"].append(f"{tid} (pool {s['pool']}, p {s['p']}): {pstat(x)}; {tstat(s)}")
    for tid, s in inter_t.items():
        x = verdict.get(tid)
        info["INTERACTION-TEST"].append(f"{tid} (runner {s['runner']}, p {s['p']}): {pstat(x)}; {tstat(s)}")
    vc = Counter(x.get("verdict") for x in tests)

    summary = {
        "seed": T["seed"],
        "size": T["size"],
        "days": T["days"],
        "runners": len(runners) + len(eph),
        "results": T["n_results"],
        "reports": T["n_reports"],
        "cases": T["cases"],
        "sick": len(sick),
        "detected": n_detected,
        "incidents": Counter(ic["state"] for ic in inc),
        "health": health_counts,
        "verdicts": vc,
        "flaky_truth": sum(1 for s in flaky_t.values() if s["executions"] > 0),
    }
    return summary, errs, info


COLS = [
    "MISSED",
    "LEVEL",
    "WRONG-DIM",
    "FALSE",
    "COARSE",
    "STALE",
    "FALSE-HEALTH",
    "RED-HERRING",
    "FALSE-FLAKY",
    "MISSED-FLAKY",
    "MISSED-BROKEN",
    "MISSED-PLATFORM",
    "FALSE-BROKEN",
    "FALSE-PLATFORM",
    "MISSED-OUTAGE",
    "FALSE-OUTAGE",
]
SHORT = {
    "MISSED": "miss",
    "LEVEL": "lvl",
    "WRONG-DIM": "dim",
    "FALSE": "false",
    "COARSE": "coarse",
    "FALSE-HEALTH": "fhealth",
    "RED-HERRING": "rherr",
    "FALSE-FLAKY": "fflaky",
    "MISSED-FLAKY": "mflaky",
    "MISSED-BROKEN": "mbrok",
    "MISSED-PLATFORM": "mplat",
    "FALSE-BROKEN": "fbrok",
    "FALSE-PLATFORM": "fplat",
    "MISSED-OUTAGE": "mout",
    "STALE": "stale",
    "FALSE-OUTAGE": "fout",
}


def main():
    dirs = sys.argv[1:]
    rows = []
    verbose = os.environ.get("SCORE_INFO", "1") != "0"
    for d in dirs:
        if not os.path.exists(os.path.join(d, "incidents.json")):
            print(f"== {d}: no product output")
            continue
        summ, errs, info = score_fleet(d)
        rows.append((summ, errs, info))
        print(
            f"== fleet {summ['seed']} ({summ['size']}, {summ['days']} d, {summ['runners']} runner ids, "
            f"{summ['results']} results, {summ['reports']} reports) cases {summ['cases']}"
        )
        print(
            f"   truth sick entities {summ['sick']}, detected {summ['detected']}; incidents {dict(summ['incidents'])}; "
            f"runner health {dict(summ['health'])}; test verdicts {dict(summ['verdicts'])} (truth flaky {summ['flaky_truth']})"
        )
        for k in COLS:
            for line in errs.get(k, []):
                print(f"   {k}: {line}")
        if verbose:
            for k, lines in info.items():
                for line in lines:
                    print(f"   ({k}) {line}")
    print()
    hdr = (
        f"{'seed':>5} {'size':>6} {'sick':>4} {'det':>4} "
        + " ".join(f"{SHORT[c]:>7}" for c in COLS)
        + f" {'f-resolved':>10}"
    )
    print(hdr)
    tot = Counter()
    for summ, errs, info in rows:
        vals = [len(errs.get(c, [])) for c in COLS]
        fr = len(info.get("FALSE-RESOLVED", []))
        tot["sick"] += summ["sick"]
        tot["det"] += summ["detected"]
        tot["fr"] += fr
        for c, v in zip(COLS, vals, strict=True):
            tot[c] += v
        print(
            f"{summ['seed']:>5} {summ['size']:>6} {summ['sick']:>4} {summ['detected']:>4} "
            + " ".join(f"{v:>7}" for v in vals)
            + f" {fr:>10}"
        )
    print(
        f"{'total':>5} {'':>6} {tot['sick']:>4} {tot['det']:>4} "
        + " ".join(f"{tot[c]:>7}" for c in COLS)
        + f" {tot['fr']:>10}"
    )


if __name__ == "__main__":
    main()
