#!/usr/bin/env python3
"""Held-out CI fleet simulator for grading runnerctl.

usage: gen.py SEED OUTDIR END_TIME

Writes OUTDIR/history.ndjson (result records + agent reports with "kind": "report") and
OUTDIR/truth.json.  Deterministic for a seed (only random.Random(seed) and hashlib are used).

Modelling choices (deliberately not the "obvious" ones):
  * results are written per job at job completion (file order = upload order, not event order);
  * several CI runner processes may share one host: disk/memory/clock faults on such a host hit every
    runner on it, so the truth entity is the machine;
  * a clock-skewed runner may stamp its own results and reports with its skewed clock;
  * OOM kills cascade: the rest of the job errors out after the worker is killed;
  * rare one-off bad jobs on healthy runners (a job-local burst), retries on other runners;
  * per-fleet report style (one bundled report vs one report per check), agents that reboot, go silent,
    lack checks; ephemeral pools with per-VM agents, a host agent, or none;
  * per-fleet time format (Z, +00:00, a non-UTC offset, epoch seconds) and test-id style.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import os
import random
import sys
from datetime import UTC, datetime, timedelta, timezone

DAY = 86400.0
HOUR = 3600.0
MIN = 60.0
GIB = 1024**3


def parse_time(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def hexd(*parts, n=12) -> str:
    h = hashlib.sha1("|".join(str(p) for p in parts).encode()).hexdigest()
    return h[:n]


WORDS = (  # noqa: SIM905 -- as a list literal this would be 70 lines
    "alpha bravo cache codec config crypto cursor daemon delta encode engine export fetch filter format "
    "gateway graph hash index ingest jobs kernel lease ledger loader lookup mapper merge mirror model "
    "notify parser patch pivot planner pool proxy queue quota reader render replay report resolve "
    "router schema scope search session shard signer sink socket sorter spool stream sync tenant "
    "ticket timer token tracer upload vault writer yaml zipper"
).split()


def main():
    seed = int(sys.argv[1])
    outdir = sys.argv[2]
    END = parse_time(sys.argv[3])
    os.makedirs(outdir, exist_ok=True)
    rng = random.Random(seed * 7919 + 17)

    # ------------------------------------------------------------------ size, duration, style
    # sizes rotate with the seed so that any 3 consecutive seeds hold each size once
    size = ["tiny", "medium", "large"][seed % 3]
    days = rng.uniform(2.0, 9.0) if size == "large" else rng.uniform(2.0, 20.0)
    START = END - days * DAY
    n_tests = rng.randint(60, 800)
    id_style = rng.choice(["pytest", "junit", "go", "jest"])
    time_style = rng.choices(["Z", "+00:00", "offset", "epoch"], weights=[4, 2, 2, 1])[0]
    tz_offset_h = rng.choice([-7, -5, 1, 2, 5.5, 9]) if time_style == "offset" else 0
    runner_style = rng.choice(["seq", "hex", "fqdn"])
    report_style = rng.choice(["bundled", "split"])
    retry_policy = rng.choices(["none", "failed-tests", "job"], weights=[3, 4, 2])[0]

    def fmt_time(t: float):
        if time_style == "Z":
            return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if time_style == "+00:00":
            return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds")
        if time_style == "offset":
            tz = timezone(timedelta(hours=tz_offset_h))
            return datetime.fromtimestamp(t, tz).isoformat(timespec="milliseconds")
        return round(t, 3)

    # ------------------------------------------------------------------ cases
    all_cases = [
        "disk_full",
        "clock",
        "cache",
        "memory",
        "slow_disk",
        "eph_host",
        "bad_image",
        "outage",
        "red_herring",
        "hard_shard",
        "platform_test",
        "flaky_tests",
        "broken_tests",
        "interaction",
    ]
    weights = {
        "disk_full": 4,
        "clock": 3,
        "cache": 3,
        "memory": 3,
        "slow_disk": 2,
        "eph_host": 2,
        "bad_image": 2,
        "outage": 3,
        "red_herring": 3,
        "hard_shard": 2,
        "platform_test": 2,
        "flaky_tests": 3,
        "broken_tests": 2,
        "interaction": 2,
    }
    if days < 4:
        weights["slow_disk"] = 0
    if size == "tiny":
        weights["platform_test"] = 0
        weights["bad_image"] = 1
    k = rng.randint(1, 5)
    cases = []
    # two cases rotate with the seed (so a dozen seeds cover every case), the rest are drawn
    for forced in (all_cases[seed % 14], all_cases[(seed * 5 + 3) % 14]):
        if weights[forced] > 0 and forced not in cases and len(cases) < max(k, 2):
            cases.append(forced)
    k = max(k, len(cases))
    pool_cases = [c for c in all_cases if weights[c] > 0]
    while len(cases) < k:
        c = rng.choices(pool_cases, weights=[weights[x] for x in pool_cases])[0]
        if c in cases and c not in ("disk_full", "memory", "red_herring", "clock", "cache"):
            continue
        if cases.count(c) >= 2:
            continue
        cases.append(c)
    need_eph = "eph_host" in cases
    need_label = "hard_shard" in cases

    # ------------------------------------------------------------------ pools
    platforms = ["linux-x64", "linux-arm64", "windows", "macos", "linux-gpu"]
    os_img = {
        "linux-x64": "ubuntu-24.04",
        "linux-arm64": "ubuntu-24.04-arm",
        "windows": "win2022",
        "macos": "macos-14",
        "linux-gpu": "ubuntu-22.04-cuda",
    }
    pool_prefix = rng.choice(["", "ci-", "build-", "gha-"])
    pools = []

    def mkpool(platform, n_runners, ephemeral=False, label_routed=False, per_host=1):
        p = {
            "name": f"{pool_prefix}{platform}" + ("-eph" if ephemeral else ""),
            "platform": platform,
            "ephemeral": ephemeral,
            "label_routed": label_routed,
            "per_host": per_host,
            "n_runners": n_runners,
        }
        return p

    if size == "tiny":
        n = rng.randint(4, 8)
        if need_eph or (rng.random() < 0.15 and not need_label):
            pools.append(mkpool("linux-x64", n, ephemeral=True))
            need_eph = False
            pools[0]["hosts"] = rng.randint(2, 3)
            pools[0]["slots"] = max(2, n // pools[0]["hosts"])
        else:
            pools.append(mkpool("linux-x64", n, label_routed=need_label or rng.random() < 0.25))
    else:
        if size == "medium":
            total = rng.randint(15, 60)
            npools = rng.randint(2, 3)
        else:
            total = rng.randint(120, 250)
            npools = rng.randint(3, 5)
        plats = ["linux-x64", *rng.sample(platforms[1:], npools - 1)]
        shares = [rng.uniform(0.5, 1.0) if i == 0 else rng.uniform(0.08, 0.35) for i in range(npools)]
        s = sum(shares)
        counts = [max(3, round(total * x / s)) for x in shares]
        for pl, c in zip(plats, counts, strict=True):
            per_host = 1
            if pl.startswith("linux") and rng.random() < 0.4:
                per_host = rng.randint(2, 4)
            pools.append(mkpool(pl, c, per_host=per_host))
        if need_eph or rng.random() < 0.45:
            # one linux pool becomes (or an extra pool is) ephemeral
            p = mkpool("linux-x64", rng.randint(8, 30), ephemeral=True)
            p["hosts"] = rng.randint(3, 8)
            p["slots"] = rng.randint(2, 6)
            pools.append(p)
        if need_label:
            cand = [p for p in pools if not p["ephemeral"]]
            rng.choice(cand)["label_routed"] = True
        for p in pools:
            if not p["ephemeral"] and not p["label_routed"] and rng.random() < 0.15:
                p["label_routed"] = True

    for p in pools:
        p["sharding"] = "label" if p["label_routed"] else rng.choice(["dynamic", "static"])
        if p["ephemeral"]:
            p["sharding"] = rng.choice(["dynamic", "static"])
        p["skip_frac"] = (
            rng.uniform(0.03, 0.15) if p["platform"] in ("windows", "macos") else rng.uniform(0, 0.02)
        )
        p["image"] = (
            f"{os_img[p['platform']]}-{iso(START - rng.uniform(5, 40) * DAY)[:10].replace('-', '')}.{rng.randint(1, 9)}"
        )
        p["agent_cover"] = rng.choice([1.0, 1.0, rng.uniform(0.6, 0.95)])
        p["checks"] = {"disk", "memory", "clock", "cache"}
        if rng.random() < 0.2:
            p["checks"].discard("cache")
        if p["platform"] in ("windows", "macos") and rng.random() < 0.5:
            p["checks"].discard("clock")
        p["psi"] = p["platform"].startswith("linux")
        p["trigger"] = 1.0 if p is pools[0] else rng.uniform(0.2, 1.0)
        p["eph_agent"] = rng.choice(["vm", "host", "none"]) if p["ephemeral"] else None
        p["cache_keys"] = rng.sample(
            ["pip", "gradle", "npm", "cargo", "ccache", "go-mod", "maven", "bazel"], rng.randint(1, 3)
        )
    # distinct pool names
    seen = {}
    for p in pools:
        if p["name"] in seen:
            seen[p["name"]] += 1
            p["name"] = f"{p['name']}-{seen[p['name']]}"
        else:
            seen[p["name"]] = 1

    # ------------------------------------------------------------------ runners and machines
    runners = {}  # persistent runner id -> dict
    machines = {}  # machine id -> dict
    mach_style = rng.choice(["host", "bm", "ip"])
    rcount = 0
    mcount = 0

    def machine_name(pool, j):
        nonlocal mcount
        mcount += 1
        if mach_style == "host":
            return f"{pool['name']}-host-{j:02d}"
        if mach_style == "bm":
            return f"bm{mcount:03d}.{rng.choice(['dc1', 'dc2', 'fra', 'iad'])}.internal"
        return f"ip-10-{rng.randint(0, 40)}-{rng.randint(0, 255)}-{rng.randint(1, 254)}"

    def runner_name(pool, i):
        nonlocal rcount
        rcount += 1
        if runner_style == "seq":
            return f"{pool['name']}-{i:03d}"
        if runner_style == "hex":
            return f"runner-{hexd(seed, pool['name'], i, n=8)}"
        return f"agent{i}.{pool['name']}.ci"

    for p in pools:
        p["runners"] = []
        p["machines"] = []
        if p["ephemeral"]:
            for j in range(p["hosts"]):
                m = machine_name(p, j + 1)
                machines[m] = {
                    "id": m,
                    "pool": p["name"],
                    "ephemeral": True,
                    "runners": [],
                    "image_hist": [(START - DAY, p["image"])],
                }
                p["machines"].append(m)
            continue
        nhosts = math.ceil(p["n_runners"] / p["per_host"])
        for j in range(nhosts):
            m = machine_name(p, j + 1)
            machines[m] = {
                "id": m,
                "pool": p["name"],
                "ephemeral": False,
                "runners": [],
                "image_hist": [(START - DAY, p["image"])],
            }
            p["machines"].append(m)
        for i in range(p["n_runners"]):
            rid = runner_name(p, i + 1)
            m = p["machines"][i // p["per_host"]]
            r = {
                "id": rid,
                "machine": m,
                "pool": p["name"],
                "has_agent": rng.random() < p["agent_cover"],
                "shard": None,
                "labels": ["self-hosted", p["platform"]],
            }
            runners[rid] = r
            machines[m]["runners"].append(rid)
            p["runners"].append(rid)

    pool_by = {p["name"]: p for p in pools}

    # ------------------------------------------------------------------ test suite
    n_mod = rng.randint(5, 24)
    modules = []
    used = set()
    while len(modules) < n_mod:
        w = rng.choice(WORDS)
        if w not in used:
            used.add(w)
            modules.append(w)
    tests = []
    tid_seen = set()
    for _ in range(n_tests):
        mod = modules[
            min(n_mod - 1, int(rng.paretovariate(1.2)) - 1) if rng.random() < 0.5 else rng.randrange(n_mod)
        ]
        while True:
            a, b = rng.choice(WORDS), rng.choice(WORDS)
            if id_style == "pytest":
                tid = f"tests/{mod}/test_{a}.py::test_{b}_{rng.choice(['ok', 'roundtrip', 'empty', 'large', 'retry', 'edge'])}"
                if rng.random() < 0.2:
                    tid += f"[case{rng.randint(0, 9)}]"
            elif id_style == "junit":
                tid = f"com.acme.{mod}.{a.capitalize()}{b.capitalize()}Test#test{rng.choice(['Basic', 'Null', 'Large', 'Concurrent', 'Timeout', 'Parse'])}{rng.randint(1, 40)}"
            elif id_style == "go":
                tid = f"github.com/acme/svc/{mod}/Test{a.capitalize()}{b.capitalize()}/{rng.choice(['ok', 'nil', 'big', 'parallel'])}_{rng.randint(1, 30)}"
            else:
                tid = f"src/{mod}/{a}.test.ts > {b} > {rng.choice(['renders', 'handles error', 'retries', 'parses', 'caches'])} #{rng.randint(1, 50)}"
            if tid not in tid_seen:
                tid_seen.add(tid)
                break
        dur = math.exp(rng.gauss(math.log(rng.choice([0.05, 0.3, 1.0, 2.0])), 0.9))
        tests.append(
            {
                "id": tid,
                "module": mod,
                "dur": min(dur, 120.0),
                "disk": rng.random() < 0.6,
                "mem": rng.random() < 0.3,
                "time": rng.random() < 0.3,
                "net": rng.random() < 0.6,
                "base": rng.choice([0.0, 0.0, 0.0, rng.uniform(0, 0.002)]),
                "kind": "healthy",
                "p_flaky": 0.0,
            }
        )
    # a few slow tests always exist
    for t in rng.sample(tests, max(2, n_tests // 30)):
        t["dur"] = rng.uniform(15, 90)
    NT = len(tests)
    modmap = {}
    for i, t in enumerate(tests):
        modmap.setdefault(t["module"], []).append(i)

    # ------------------------------------------------------------------ truth containers
    truth_sick = []
    truth_outages = []
    red_herrings = []
    effects = []  # failure mechanisms
    reading_mods = []  # reading modifiers

    def rand_onset(min_after_start=0.15, min_before_end_h=10):
        lo = START + min_after_start * days * DAY
        hi = END - max(min_before_end_h * HOUR, 0.12 * days * DAY)
        return rng.uniform(lo, max(lo + 1, hi))

    def maybe_end(onset):
        if rng.random() < 0.35:
            e = onset + rng.uniform(4 * HOUR, 40 * HOUR)
            if e < END - 6 * HOUR:
                return e
        return None

    persistent_pools = [p for p in pools if not p["ephemeral"]]
    taken = set()  # runners/machines already used by a case

    def pick_runner(require_agent=None, allow_multi=True):
        cands = []
        for p in persistent_pools:
            for rid in p["runners"]:
                r = runners[rid]
                if rid in taken or r["machine"] in taken:
                    continue
                if require_agent is not None and r["has_agent"] != require_agent:
                    continue
                cands.append(rid)
        if not cands:
            return None
        return rng.choice(cands)

    # flaky / broken / platform / interaction test picks must not collide
    test_taken = set()

    def pick_tests(n, pred=lambda t: True):
        cands = [i for i, t in enumerate(tests) if i not in test_taken and pred(t)]
        n = min(n, len(cands))
        out = rng.sample(cands, n)
        test_taken.update(out)
        return out

    # hard shard (needs label routed pool; tests placed in one shard)
    hard_tests = []
    for p in pools:
        p["n_shards"] = 1
    for p in pools:
        if p["ephemeral"]:
            cap = p["hosts"] * p["slots"]
            p["n_shards"] = max(1, min(cap, rng.randint(1, 6)))
        elif p["label_routed"]:
            p["n_shards"] = max(
                2, min(len(p["runners"]) // 2 if len(p["runners"]) >= 4 else 2, rng.randint(2, 8))
            )
        else:
            p["n_shards"] = max(1, min(len(p["runners"]), rng.randint(1, 10)))
        if p["label_routed"]:
            for i, rid in enumerate(p["runners"]):
                runners[rid]["shard"] = str(i % p["n_shards"])

    # static test->shard map per pool (by module-ish hash)
    for p in pools:
        S = p["n_shards"]
        p["test_shard"] = [int(hexd(seed, p["name"], t["id"], n=6), 16) % S for t in tests]

    if "hard_shard" in cases and not any(p["label_routed"] for p in pools):
        cases.remove("hard_shard")
    if "hard_shard" in cases:
        lp = [p for p in pools if p["label_routed"]]
        p = lp[0]
        h = rng.randrange(p["n_shards"])
        nh = max(3, NT // rng.randint(12, 25))
        hard_tests = pick_tests(nh)
        for i in hard_tests:
            tests[i]["dur"] = rng.uniform(20, 120)
            tests[i]["kind"] = "flaky"
            tests[i]["p_flaky"] = rng.uniform(0.04, 0.2)
            tests[i]["hard"] = True
        # all pools with static/label sharding put the hard tests in shard h (if that pool has >h shards)
        for q in pools:
            if q["sharding"] in ("label", "static"):
                hh = h % q["n_shards"]
                for i in hard_tests:
                    q["test_shard"][i] = hh
        p["hard_shard"] = h
        for rid in p["runners"]:
            if runners[rid]["shard"] == str(h):
                taken.add(rid)
                red_herrings.append(
                    {"runner": rid, "reason": "hard-shard runner (slowest, flakiest tests routed to it)"}
                )

    # flaky tests (the case, plus background flaky tests most suites have)
    nfl = 0
    if "flaky_tests" in cases:
        nfl += rng.randint(3, 10)
    if rng.random() < 0.6:
        nfl += rng.randint(1, 3)
    for i in pick_tests(nfl):
        tests[i]["kind"] = "flaky"
        tests[i]["p_flaky"] = rng.uniform(0.03, 0.25)

    broken = {}
    if "broken_tests" in cases:
        for i in pick_tests(rng.randint(1, 3)):
            tests[i]["kind"] = "broken"
            broken[i] = rand_onset(0.2, 18)

    platform_only = {}
    if "platform_test" in cases and len(pools) >= 2:
        plats = [p for p in pools]
        for i in pick_tests(rng.randint(1, 2)):
            p = rng.choice(plats)
            tests[i]["kind"] = "platform"
            platform_only[i] = (p["name"], rng.uniform(0.6, 1.0))

    interactions = {}

    # ------------------------------------------------------------------ sick entity cases
    def subset_of(pred, frac_lo, frac_hi):
        c = [i for i, t in enumerate(tests) if pred(t) and t["kind"] == "healthy"]
        n = max(4, int(len(c) * rng.uniform(frac_lo, frac_hi)))
        return set(rng.sample(c, min(n, len(c))))

    def add_sick(case, dim, p_fail, affected, kind_hint=None, ramp=None):
        no_agent = rng.random() < 0.15
        rid = pick_runner(require_agent=(not no_agent))
        if rid is None:
            rid = pick_runner()
        if rid is None:
            return None
        r = runners[rid]
        m = machines[r["machine"]]
        hostlevel = dim in ("disk", "memory", "clock") and len(m["runners"]) > 1
        if hostlevel:
            kind, eid = "machine", m["id"]
            members = list(m["runners"])
            taken.add(m["id"])
            taken.update(members)
        else:
            kind, eid = "runner", rid
            members = [rid]
            taken.add(rid)
        if ramp:
            onset, end = ramp["onset"], ramp.get("end")
        else:
            onset = rand_onset()
            end = maybe_end(onset)
        ent = {
            "kind": kind,
            "id": eid,
            "dimension": dim,
            "case": case,
            "onset": onset,
            "end": end,
            "runners": members,
            "pool": r["pool"],
            "p_fail": p_fail,
            "n_affected_tests": len(affected),
        }
        truth_sick.append(ent)
        eff = {
            "scope": ("machine" if hostlevel else "runner"),
            "who": eid,
            "t0": onset,
            "t1": end or END + 1,
            "tests": affected,
            "p": p_fail,
            "cause": f"sick:{eid}",
            "dim": dim,
            "ramp": ramp,
        }
        effects.append(eff)
        return ent, eff

    for c in cases:
        if c == "disk_full":
            mode = rng.choice(["space", "space", "inodes", "readonly"])
            aff = subset_of(lambda t: t["disk"], 0.5, 1.0)
            res = add_sick("disk_full", "disk", rng.uniform(0.5, 0.95), aff)
            if res:
                res[0]["mode"] = mode
                res[1]["mode"] = mode
        elif c == "clock":
            aff = subset_of(lambda t: t["time"], 0.6, 1.0)
            res = add_sick("clock", "clock", rng.uniform(0.5, 0.95), aff)
            if res:
                off = rng.choice([-1, 1]) * rng.uniform(20, 900)
                res[0]["offset_s"] = off
                res[1]["offset"] = off
                res[1]["skew_stamps"] = rng.random() < 0.5
                res[0]["skewed_timestamps"] = res[1]["skew_stamps"]
                # the pool must run the clock check on the sick runner
                pool_by[res[0]["pool"]]["checks"].add("clock")
        elif c == "cache":
            mods = rng.sample(modules, max(1, min(len(modules), rng.randint(1, 3))))
            aff = set(i for mname in mods for i in modmap.get(mname, []) if tests[i]["kind"] == "healthy")
            if len(aff) < 5:
                aff |= subset_of(lambda t: True, 0.15, 0.3)
            res = add_sick("cache", "cache", rng.uniform(0.7, 0.98), aff)
            if res:
                p = pool_by[res[0]["pool"]]
                p["checks"].add("cache")
                key = rng.choice(p["cache_keys"])
                res[0]["cache_key"] = key
                res[1]["key"] = key
        elif c == "memory":
            aff = subset_of(lambda t: t["mem"], 0.5, 1.0)
            res = add_sick("memory", "memory", rng.uniform(0.3, 0.7), aff)
            if res:
                res[1]["cascade"] = rng.uniform(0.2, 0.6)
        elif c == "slow_disk":
            ramp_len = rng.uniform(2.0, min(6.0, days * 0.7)) * DAY
            rs = rng.uniform(START + 0.05 * days * DAY, END - ramp_len - 0.5 * DAY)
            rs = max(START, rs)
            f0 = rng.uniform(0.25, 0.45)
            # free(t) = f0 * (1 - (t - rs)/ramp_len), floor 0.004; failures when free < thr
            thr = rng.uniform(0.06, 0.10)
            onset = rs + ramp_len * (1 - thr / f0)
            end = None
            if rng.random() < 0.25 and rs + ramp_len + 6 * HOUR < END - 6 * HOUR:
                end = rng.uniform(rs + ramp_len, END - 6 * HOUR)
            ramp = {"start": rs, "len": ramp_len, "f0": f0, "thr": thr, "onset": onset, "end": end}
            aff = subset_of(lambda t: t["disk"], 0.5, 1.0)
            res = add_sick("slow_disk", "disk", rng.uniform(0.6, 0.9), aff, ramp=ramp)
            if res:
                res[0]["ramp_start"] = rs
                res[0]["ramp_days"] = ramp_len / DAY
        elif c == "eph_host":
            ep = [p for p in pools if p["ephemeral"]]
            if not ep:
                continue
            p = ep[0]
            m = rng.choice(p["machines"])
            if m in taken:
                continue
            taken.add(m)
            dim = rng.choice(["disk", "memory"])
            aff = subset_of(lambda t, dim=dim: t["disk"] if dim == "disk" else t["mem"], 0.5, 1.0)
            onset = rand_onset()
            end = maybe_end(onset)
            ent = {
                "kind": "machine",
                "id": m,
                "dimension": dim,
                "case": "eph_host",
                "onset": onset,
                "end": end,
                "runners": [],
                "pool": p["name"],
                "p_fail": None,
                "n_affected_tests": len(aff),
            }
            pf = rng.uniform(0.5, 0.9) if dim == "disk" else rng.uniform(0.3, 0.6)
            ent["p_fail"] = pf
            truth_sick.append(ent)
            effects.append(
                {
                    "scope": "machine",
                    "who": m,
                    "t0": onset,
                    "t1": end or END + 1,
                    "tests": aff,
                    "p": pf,
                    "cause": f"sick:{m}",
                    "dim": dim,
                    "mode": "readonly" if dim == "disk" else None,
                    "cascade": 0.3 if dim == "memory" else 0,
                }
            )
        elif c == "bad_image":
            cands = [p for p in pools if (p["ephemeral"] or len(p["machines"]) >= 3)]
            if not cands:
                continue
            p = rng.choice(cands)
            if p.get("bad_image"):
                continue
            bad = f"{os_img[p['platform']]}-{iso(END - rng.uniform(0, 3) * DAY)[:10].replace('-', '')}.{rng.randint(10, 30)}"
            t_roll = rand_onset(0.2, 14)
            end = None
            if rng.random() < 0.3:
                e = t_roll + rng.uniform(8 * HOUR, 48 * HOUR)
                if e < END - 6 * HOUR:
                    end = e
            frac = rng.uniform(0.3, 0.6)
            mods = rng.sample(modules, max(1, min(len(modules), rng.randint(1, 3))))
            aff = set(i for mname in mods for i in modmap.get(mname, []) if tests[i]["kind"] == "healthy")
            if len(aff) < 6:
                aff |= subset_of(lambda t: True, 0.2, 0.4)
            pf = rng.uniform(0.7, 1.0)
            rolled = []
            if p["ephemeral"]:
                p["bad_image"] = {"image": bad, "t0": t_roll, "t1": end, "frac": frac}
            else:
                ms = [m for m in p["machines"] if m not in taken]
                nroll = max(2, int(len(ms) * frac))
                rolled = rng.sample(ms, min(nroll, len(ms)))
                fixed_img = bad.rsplit(".", 1)[0] + f".{rng.randint(31, 40)}"
                for m in rolled:
                    tm = t_roll + rng.uniform(0, 3 * HOUR)
                    machines[m]["image_hist"].append((tm, bad))
                    if end:
                        machines[m]["image_hist"].append((end + rng.uniform(0, 1 * HOUR), fixed_img))
                p["bad_image"] = {"image": bad, "t0": t_roll, "t1": end, "machines": rolled}
            truth_sick.append(
                {
                    "kind": "image",
                    "id": bad,
                    "dimension": "unknown",
                    "case": "bad_image",
                    "onset": t_roll,
                    "end": end,
                    "runners": [r for m in rolled for r in machines[m]["runners"]],
                    "machines": rolled,
                    "pool": p["name"],
                    "p_fail": pf,
                    "n_affected_tests": len(aff),
                    "rollout_fraction": frac,
                }
            )
            effects.append(
                {
                    "scope": "image",
                    "who": bad,
                    "t0": t_roll,
                    "t1": (end or END) + 2 * HOUR,
                    "tests": aff,
                    "p": pf,
                    "cause": f"sick:{bad}",
                    "dim": "unknown",
                }
            )
        elif c == "outage":
            start = rand_onset(0.1, 12)
            dur = rng.uniform(0.5, 3.0) * HOUR
            spared = None
            if len(pools) >= 3 and rng.random() < 0.3:
                spared = rng.choice(pools[1:])["name"]
            truth_outages.append({"start": start, "end": start + dur, "spared_pool": spared})
            effects.append(
                {
                    "scope": "outage",
                    "who": spared,
                    "t0": start,
                    "t1": start + dur,
                    "tests": set(i for i, t in enumerate(tests) if t["net"]),
                    "p": rng.uniform(0.75, 0.97),
                    "cause": "outage",
                }
            )
        elif c == "red_herring":
            for _ in range(rng.randint(1, 3)):
                rid = pick_runner(require_agent=True)
                if rid is None:
                    break
                taken.add(rid)
                what = rng.choice(["disk", "memory", "clock", "cache"])
                t0 = rng.choice([START - HOUR, rand_onset()])
                t1 = rng.choice([None, None, t0 + rng.uniform(6, 48) * HOUR])
                r = runners[rid]
                if what == "cache":
                    pool_by[r["pool"]]["checks"].add("cache")
                if what == "clock":
                    pool_by[r["pool"]]["checks"].add("clock")
                reading_mods.append(
                    {
                        "runner": rid,
                        "what": what,
                        "t0": t0,
                        "t1": t1 or END + 1,
                        "offset": rng.choice([-1, 1]) * rng.uniform(1.5, 6.0),
                    }
                )
                red_herrings.append(
                    {"runner": rid, "reason": f"bad {what} readings, no extra failures", "t0": t0, "t1": t1}
                )
        elif c == "interaction":
            rid = pick_runner()
            if rid is None:
                continue
            r = runners[rid]
            p = pool_by[r["pool"]]
            cands = [i for i, t in enumerate(tests) if t["kind"] == "healthy" and i not in test_taken]
            if p["label_routed"]:
                cands = [i for i in cands if str(p["test_shard"][i]) == r["shard"]]
            if not cands:
                continue
            i = rng.choice(cands)
            test_taken.add(i)
            taken.add(rid)
            tests[i]["kind"] = "interaction"
            interactions[i] = (rid, rng.uniform(0.5, 0.95))

    # sickness that fixes itself: agent reboots at the fix
    # ------------------------------------------------------------------ helpers: identity at time
    def image_at(m, t):
        img = None
        for tt, im in machines[m]["image_hist"]:
            if tt <= t:
                img = im
        return img

    # ------------------------------------------------------------------ workload sizing
    target = rng.uniform(80_000, 360_000) if size != "tiny" else rng.uniform(40_000, 250_000)
    # keep every runner busy with J jobs a day, then choose how many tests a pipeline selects to meet the
    # results budget: a big fleet runs many small (test-impact-selected) pipelines, a tiny one full suites
    J = {"tiny": rng.uniform(10, 40), "medium": rng.uniform(8, 30), "large": rng.uniform(6, 18)}[size]

    def capacity(p):
        return (p["hosts"] * p["slots"]) if p["ephemeral"] else len(p["runners"])

    n_pipelines = capacity(pools[0]) * J * days / pools[0]["n_shards"]
    for p in pools[1:]:
        p["trigger"] = min(1.0, capacity(p) * J * days / (p["n_shards"] * n_pipelines)) * rng.uniform(
            0.6, 1.0
        )
    denom = n_pipelines * sum(p["trigger"] * NT * (1 - p["skip_frac"]) for p in pools) * 1.03
    mean_frac = target / denom
    if mean_frac > 1:
        n_pipelines *= mean_frac
        mean_frac = 1.0
    n_pipelines = max(40, int(n_pipelines))
    exp_frac = mean_frac
    print(
        f"sizing: J={J:.1f} pipelines={n_pipelines} mean_frac={mean_frac:.3f} target={target:.0f} "
        f"triggers={[round(p['trigger'], 2) for p in pools]} shards={[p['n_shards'] for p in pools]}",
        file=sys.stderr,
    )

    # diurnal/weekly profile
    def load(t):
        dt = datetime.fromtimestamp(t, UTC)
        h = dt.hour + dt.minute / 60
        w = dt.weekday()
        day = 0.35 + 0.65 * math.exp(-(((h - 14) / 4.5) ** 2))
        return day * (0.3 if w >= 5 else 1.0)

    # sample pipeline times by thinning
    pipe_times = []
    # mean load ~ integrate
    grid = [load(START + i * 600) for i in range(int(days * DAY / 600))]
    mean_load = sum(grid) / len(grid)
    rate = n_pipelines / (days * DAY) / mean_load  # at load 1
    t = START + rng.uniform(0, 600)
    while True:
        t += rng.expovariate(rate)
        if t > END - 45 * MIN:
            break
        if rng.random() < load(t):
            pipe_times.append(t)
    # capacity: scale durations
    for p in pools:
        s = sum(tt["dur"] for tt in tests) * exp_frac
        cap = (p["hosts"] * p["slots"]) if p["ephemeral"] else len(p["runners"])
        njobs = len(pipe_times) * p["trigger"] * p["n_shards"]
        need = len(pipe_times) * p["trigger"] * s + njobs * 90
        util = need / (cap * days * DAY)
        p["speed"] = max(1.0, util / 0.35)
    # commits
    commit_times = []
    t = START - 2 * HOUR
    while t < END:
        t += rng.expovariate(1 / (rng.uniform(10, 60) * MIN)) / max(0.2, load(t))
        commit_times.append(t)
    import bisect

    def commit_at(t):
        return bisect.bisect_right(commit_times, t)

    def commit_sha(ci):
        return hexd(seed, "commit", ci, n=12) if rng_fmt_long else hexd(seed, "commit", ci, n=40)

    rng_fmt_long = rng.random() < 0.5
    broken_commit = {i: commit_at(tb) + 1 for i, tb in broken.items()}
    for i in broken:
        broken[i] = (
            commit_times[broken_commit[i] - 1] if broken_commit[i] - 1 < len(commit_times) else broken[i]
        )

    # ------------------------------------------------------------------ job simulation
    results_out = []  # (sort_key, line)
    eph_runners = {}
    runner_busy = {rid: START - HOUR for rid in runners}
    slot_busy = {
        m: [START - HOUR] * pool_by[machines[m]["pool"]]["slots"]
        for p in pools
        if p["ephemeral"]
        for m in p["machines"]
    }
    eph_jobs = []  # (host, runner id, image, t0, t1) for per-VM agents
    job_seq = [0]
    heap = []
    hseq = [0]
    pipe_no = 0
    for pt in pipe_times:
        pipe_no += 1
        ci = commit_at(pt)
        g = min(1.0, mean_frac * rng.uniform(0.4, 1.6))
        if g >= 0.95:
            subset = list(range(NT))
        else:
            want = max(3, int(g * NT))
            mods = list(modules)
            rng.shuffle(mods)
            subset = []
            for mname in mods:
                subset.extend(modmap.get(mname, []))
                if len(subset) >= want:
                    break
            if len(subset) > 1.5 * want:
                subset = rng.sample(subset, want)
            subset.sort()
        for p in pools:
            if rng.random() > p["trigger"]:
                continue
            run_id = f"{hexd(seed, 'run', pipe_no, p['name'], n=6)}-{pipe_no}"
            S = p["n_shards"]
            if p["sharding"] == "dynamic":
                order = sorted(subset, key=lambda i: -tests[i]["dur"] * rng.uniform(0.8, 1.2))
                loads = [0.0] * S
                shards = [[] for _ in range(S)]
                for i in order:
                    j = min(range(S), key=lambda x: loads[x])
                    loads[j] += tests[i]["dur"]
                    shards[j].append(i)
                for sh in shards:
                    rng.shuffle(sh)
            else:
                shards = [[] for _ in range(S)]
                for i in subset:
                    shards[p["test_shard"][i]].append(i)
            for s, sh in enumerate(shards):
                if not sh:
                    continue
                hseq[0] += 1
                heapq.heappush(
                    heap,
                    (
                        pt + rng.uniform(0, 60),
                        hseq[0],
                        {
                            "pool": p["name"],
                            "run": run_id,
                            "shard": s,
                            "tests": sh,
                            "attempt": 1,
                            "commit": ci,
                            "avoid": None,
                        },
                    ),
                )

    def active_effects(rid, m, img, pool, t0, t1):
        out = []
        for e in effects:
            if e["t1"] < t0 or e["t0"] > t1:
                continue
            sc = e["scope"]
            if (
                (sc == "runner" and e["who"] == rid)
                or (sc == "machine" and e["who"] == m)
                or (sc == "image" and e["who"] == img)
                or (sc == "outage" and e["who"] != pool)
            ):
                out.append(e)
        return out

    def ramp_p(e, t):
        r = e["ramp"]
        if r.get("end") and t >= r["end"]:
            return 0.0
        free = max(0.004, r["f0"] * (1 - (t - r["start"]) / r["len"]))
        if free >= r["thr"]:
            return 0.0
        return e["p"] * min(1.0, (r["thr"] - free) / (r["thr"] * 0.7))

    MSG = {
        "disk": [
            "OSError: [Errno 28] No space left on device",
            "IOError: write failed: No space left on device",
        ],
        "inodes": ["OSError: [Errno 28] No space left on device (inodes)"],
        "readonly": ["OSError: [Errno 30] Read-only file system"],
        "memory": ["worker killed by signal 9 (SIGKILL)", "MemoryError", "Killed"],
        "clock": [
            "ssl.SSLCertVerificationError: certificate is not yet valid",
            "token expired (iat in the future)",
            "AssertionError: timestamp out of tolerance",
        ],
        "cache": [
            "ImportError: undefined symbol: _ZN4core3fmt",
            "linker error: file format not recognized",
            "checksum mismatch in cached artifact",
        ],
        "unknown": [
            "FileNotFoundError: libfoo.so.3",
            "command not found: protoc",
            "toolchain version mismatch",
        ],
        "outage": [
            "ConnectionError: Max retries exceeded (registry.internal:443)",
            "HTTP 503 from artifact store",
            "TimeoutError: connect to db-proxy timed out",
        ],
        "flaky": [
            "AssertionError: expected 3, got 2",
            "TimeoutError: condition not met in 5s",
            "race: resource busy",
        ],
        "broken": ["AssertionError: regression", "AttributeError: 'NoneType' object has no attribute 'id'"],
        "base": ["AssertionError", "TimeoutError"],
        "burst": ["ConnectionResetError: [Errno 104]", "BrokenPipeError"],
    }

    # stats
    tstat = [[0, 0, 0, 0, 0] for _ in range(NT)]  # execs, fails, fails_sick, fails_outage, fails_other
    rstat = {}  # runner/eph-host -> [execs, fails, sick, outage, other]
    estat = {}  # entity(cause) -> [execs_in_window, fails, caused, set(tests)]
    for ent in truth_sick:
        estat[ent["id"]] = [0, 0, 0, set()]
    n_results = 0
    skew = {}  # runner -> offset for skewed stamps
    for e in effects:
        if e.get("dim") == "clock" and e.get("skew_stamps"):
            skew[e["who"]] = (e["offset"], e["t0"], e["t1"])

    def stamp_offset(rid, m, t):
        for who in (rid, m):
            if who in skew:
                off, a, b = skew[who]
                if a - 30 * MIN <= t <= b:
                    return off
        return 0.0

    while heap:
        req, _, job = heapq.heappop(heap)
        p = pool_by[job["pool"]]
        job_seq[0] += 1
        job_id = f"job-{job_seq[0]}"
        setup = rng.uniform(30, 150) / p["speed"]
        tot = sum(tests[i]["dur"] for i in job["tests"]) / p["speed"]
        if p["ephemeral"]:
            best = None
            for m in p["machines"]:
                for si, b in enumerate(slot_busy[m]):
                    cand = (max(b, req) + rng.uniform(0, 1), m, si)
                    if best is None or cand < best:
                        best = cand
            start, m, si = best
            start += rng.uniform(20, 90)  # VM boot
            rid = f"eph-{m.split('.')[0]}-{hexd(seed, job_id, n=6)}"
            img = image_at(m, start)
            bi = p.get("bad_image")
            if (
                bi
                and bi["t0"] <= start
                and (bi["t1"] is None or start < bi["t1"])
                and rng.random() < bi["frac"]
            ):
                img = bi["image"]
            ident_shard = str(job["shard"])
        else:
            elig = p["runners"]
            if p["label_routed"]:
                elig = [x for x in elig if runners[x]["shard"] == str(job["shard"])]
            if job["avoid"] and len(elig) > 1:
                elig = [x for x in elig if x != job["avoid"]]
            free = [x for x in elig if runner_busy[x] <= req]
            if free:
                rid = rng.choice(free)
                start = req + rng.uniform(1, 20)
            else:
                rid = min(elig, key=lambda x: runner_busy[x])
                start = runner_busy[rid] + rng.uniform(1, 20)
            m = runners[rid]["machine"]
            img = image_at(m, start)
            ident_shard = runners[rid]["shard"] if p["label_routed"] else str(job["shard"])
        end_est = start + setup + tot * 1.2
        effs = active_effects(rid, m, img, p["name"], start, end_est)
        t = start + setup
        ident = {
            "id": rid,
            "name": rid,
            "machine": m,
            "pool": p["name"],
            "image": img,
            "shard": ident_shard,
            "labels": (["self-hosted", p["platform"]] + (["ephemeral"] if p["ephemeral"] else [])),
            "provider": "buildkite" if seed % 2 else "github",
            "ephemeral": p["ephemeral"],
        }
        if p["ephemeral"]:
            eph_runners[rid] = m
        job_lines = []
        failed_tests = []
        cascade_dead = False
        burst = rng.random() < 0.002
        burst_from = rng.uniform(0.2, 0.8)
        order = list(job["tests"])
        stat_key = rid if not p["ephemeral"] else m
        rs = rstat.setdefault(stat_key, [0, 0, 0, 0, 0])
        for k_i, i in enumerate(order):
            T = tests[i]
            d = T["dur"] / p["speed"] * math.exp(rng.gauss(0, 0.2))
            tt = t
            t += d
            if tt > END:
                break
            if hash_skip(seed, p["name"], T["id"], p["skip_frac"]):
                outcome, cause, msg = "skipped", None, None
            else:
                cause = None
                outcome_kind = "failed"
                for e in effs:
                    if not (e["t0"] <= tt < e["t1"]):
                        continue
                    if i not in e["tests"]:
                        continue
                    pe = ramp_p(e, tt) if e.get("ramp") else e["p"]
                    if pe > 0 and rng.random() < pe:
                        cause = e["cause"]
                        dim = e.get("dim", "outage")
                        if dim == "disk":
                            mode = e.get("mode") or "space"
                            msg = rng.choice(
                                MSG[
                                    "readonly"
                                    if mode == "readonly"
                                    else ("inodes" if mode == "inodes" else "disk")
                                ]
                            )
                        else:
                            msg = rng.choice(MSG.get(dim, MSG["outage"]))
                        if dim == "memory":
                            outcome_kind = "error"
                            if rng.random() < e.get("cascade", 0):
                                cascade_dead = True
                        if dim == "unknown":
                            outcome_kind = rng.choice(["failed", "error"])
                        break
                if cause is None and cascade_dead:
                    cause = next((e["cause"] for e in effs if e.get("dim") == "memory"), "sick")
                    msg = "worker crashed: previous test was OOM-killed"
                    outcome_kind = "error"
                if cause is None and burst and k_i >= burst_from * len(order) and rng.random() < 0.35:
                    cause, msg, outcome_kind = "burst", rng.choice(MSG["burst"]), "error"
                if (
                    cause is None
                    and i in broken
                    and job["commit"] >= broken_commit[i]
                    and rng.random() < 0.98
                ):
                    cause, msg = "broken", rng.choice(MSG["broken"])
                if (
                    cause is None
                    and i in platform_only
                    and platform_only[i][0] == p["name"]
                    and rng.random() < platform_only[i][1]
                ):
                    cause, msg = (
                        "platform",
                        f"AssertionError: unexpected path separator / locale on {p['platform']}",
                    )
                if (
                    cause is None
                    and i in interactions
                    and interactions[i][0] == rid
                    and rng.random() < interactions[i][1]
                ):
                    cause, msg = "interaction", "AssertionError: port 5432 already in use"
                if cause is None and T["p_flaky"] > 0 and rng.random() < T["p_flaky"]:
                    cause, msg = "flaky", rng.choice(MSG["flaky"])
                if cause is None and T["base"] > 0 and rng.random() < T["base"]:
                    cause, msg = "base", rng.choice(MSG["base"])
                outcome = "passed" if cause is None else outcome_kind
            off = stamp_offset(rid, m, tt)
            st = tt + off
            if st > END:
                continue
            rec = {
                "test_id": T["id"],
                "outcome": outcome,
                "time": fmt_time(st),
                "duration_s": round(d, 3),
                "job_id": job_id,
                "run_id": job["run"],
                "attempt": job["attempt"],
                "commit": commit_sha(job["commit"]),
                "runner": ident,
            }
            if outcome in ("failed", "error"):
                rec["message"] = msg
                failed_tests.append(i)
            job_lines.append(rec)
            if outcome != "skipped":
                tstat[i][0] += 1
                rs[0] += 1
                for ent in truth_sick:
                    if ent["id"] in (rid, m, img) and ent["onset"] <= tt < (ent["end"] or END + 1):
                        es = estat[ent["id"]]
                        es[0] += 1
                        if outcome != "passed":
                            es[1] += 1
                            if cause == f"sick:{ent['id']}":
                                es[2] += 1
                                es[3].add(i)
                if outcome != "passed":
                    tstat[i][1] += 1
                    rs[1] += 1
                    if cause.startswith("sick"):
                        tstat[i][2] += 1
                        rs[2] += 1
                    elif cause == "outage":
                        tstat[i][3] += 1
                        rs[3] += 1
                    else:
                        tstat[i][4] += 1
                        rs[4] += 1
        job_end = t + rng.uniform(5, 30)
        if p["ephemeral"]:
            slot_busy[m][si] = job_end
            eph_jobs.append((m, rid, img, start - 20, job_end, ident))
        else:
            runner_busy[rid] = job_end
        n_results += len(job_lines)
        upload = min(job_end, END)
        for rec in job_lines:
            results_out.append((upload, json.dumps(rec, separators=(",", ":"))))
        # retries
        if failed_tests and job["attempt"] < 3 and retry_policy != "none" and job_end < END - 20 * MIN:
            if retry_policy == "failed-tests" and rng.random() < 0.9:
                hseq[0] += 1
                heapq.heappush(
                    heap,
                    (
                        job_end + rng.uniform(60, 600),
                        hseq[0],
                        {**job, "tests": failed_tests, "attempt": job["attempt"] + 1, "avoid": rid},
                    ),
                )
            elif retry_policy == "job" and rng.random() < 0.6 and job["attempt"] < 2:
                hseq[0] += 1
                heapq.heappush(
                    heap,
                    (
                        job_end + rng.uniform(60, 900),
                        hseq[0],
                        {**job, "attempt": job["attempt"] + 1, "avoid": rid},
                    ),
                )

    # ------------------------------------------------------------------ agent reports
    reports_out = []
    interval = rng.choice([1, 2, 3, 5, 5, 10, 10, 15]) * MIN
    n_agents = sum(1 for r in runners.values() if r["has_agent"])
    n_agents += sum(p["hosts"] for p in pools if p["ephemeral"] and p["eph_agent"] == "host")
    per = 1 if report_style == "bundled" else 2.5
    est = n_agents * days * DAY / interval * per
    while est > 140_000 and interval < 15 * MIN:
        interval = min(15 * MIN, interval * 1.5)
        est = n_agents * days * DAY / interval * per
    if est > 140_000:
        report_style = "bundled"
    # silent agents
    silent = {}
    for rid, r in runners.items():
        if r["has_agent"] and rng.random() < 0.08:
            silent[rid] = rng.uniform(START + 0.2 * days * DAY, END - HOUR)

    # cache digests: per pool & key a version that changes about daily, runners adopt with a lag
    cache_versions = {}
    for p in pools:
        for key in p["cache_keys"]:
            vs = [(START - DAY, 0)]
            t = START
            v = 0
            while t < END:
                t += rng.uniform(0.5, 2.0) * DAY
                v += 1
                vs.append((t, v))
            cache_versions[(p["name"], key)] = vs
    lag = {rid: rng.uniform(0, 80) * MIN for rid in runners}

    def cache_digest(pool, key, rid, t):
        vs = cache_versions[(pool, key)]
        v = 0
        for tv, vv in vs:
            if tv + lag.get(rid, 0) <= t:
                v = vv
        return hexd(seed, pool, key, v, n=32)

    ent_by_runner = {}
    for e in effects:
        if e["scope"] == "runner":
            ent_by_runner.setdefault(e["who"], []).append(e)
        elif e["scope"] == "machine":
            for rid in machines[e["who"]]["runners"]:
                ent_by_runner.setdefault(rid, []).append(e)
            ent_by_runner.setdefault(e["who"], []).append(e)
    rh_by_runner = {}
    for rm in reading_mods:
        rh_by_runner.setdefault(rm["runner"], []).append(rm)

    disk_base = {}

    def disk_reading(key, m, t, effs, rhs, pool):
        # key: runner id (own work dir) ; m machine (shared /)
        if key not in disk_base:
            rr = random.Random(hexd(seed, "disk", key))
            disk_base[key] = (
                rr.uniform(0.3, 0.75),
                rr.uniform(0.01, 0.04),
                rr.uniform(0, 24),
                rr.choice([100, 250, 500, 1000]) * GIB,
                rr.uniform(0.5, 0.95),
            )
        f0, slope_per_h, cleanup_h, total, inode_r = disk_base[key]
        dt = datetime.fromtimestamp(t, UTC)
        h_since = (dt.hour + dt.minute / 60 - cleanup_h) % 24
        free = max(0.12, f0 - slope_per_h * h_since * 0.4 + rng.gauss(0, 0.01))
        inodes = inode_r + rng.gauss(0, 0.005)
        ro = False
        status, reason = "ok", None
        for e in effs:
            if e.get("dim") != "disk":
                continue
            if e.get("ramp"):
                r = e["ramp"]
                if t >= r["start"] and not (r.get("end") and t >= r["end"]):
                    free = max(0.004, r["f0"] * (1 - (t - r["start"]) / r["len"])) + abs(rng.gauss(0, 0.002))
            else:
                lead = 20 * MIN
                if e["t0"] - lead <= t < e["t1"]:
                    mode = e.get("mode") or "space"
                    if mode == "space":
                        if t < e["t0"]:
                            free = min(free, 0.02 + 0.08 * (e["t0"] - t) / lead)
                        else:
                            free = rng.uniform(0.0, 0.006)
                    elif mode == "inodes":
                        if t >= e["t0"] - 5 * MIN:
                            inodes = rng.uniform(0.0, 0.002)
                    else:
                        if t >= e["t0"] - 2 * MIN:
                            ro = True
        for rm in rhs:
            if rm["what"] == "disk" and rm["t0"] <= t < rm["t1"]:
                # a huge disk with a small ratio left: problem by ratio, plenty of bytes
                total = 4000 * GIB
                free = rng.uniform(0.02, 0.04)
        free = min(max(free, 0.0), 1.0)
        inodes = min(max(inodes, 0.0), 1.0)
        if ro:
            status, reason = "problem", "ReadonlyFilesystem"
        elif free < 0.05 or free * total < GIB:
            status, reason = "problem", "DiskFull"
        elif inodes < 0.05:
            status, reason = "problem", "InodesExhausted"
        itot = 50_000_000
        paths = []
        plist = [
            "/",
            "/builds"
            if pool["platform"].startswith("linux")
            else ("C:\\actions" if pool["platform"] == "windows" else "/Users/runner/work"),
            "/tmp",
        ]
        for j, path in enumerate(plist):
            if j == 1:
                fr, ino, rdo = free, inodes, ro
            else:
                fr, ino, rdo = (max(0.2, f0 + 0.1 * j) + rng.gauss(0, 0.005)), 0.9, False
                fr = min(fr, 0.99)
            dp = {
                "path": path,
                "mount_point": path if j != 2 else "/",
                "device": f"/dev/nvme0n1p{j + 1}",
                "total_bytes": int(total),
                "free_bytes": int(total * fr),
                "free_ratio": round(fr, 5),
                "inodes_total": itot,
                "inodes_free": int(itot * ino),
                "inodes_free_ratio": round(ino, 5),
                "read_only": rdo,
                "write_probe_ok": (not rdo) and fr > 0.0005 and ino > 0.0001,
            }
            paths.append(dp)
        rd = {"check": "disk", "status": status, "paths": paths}
        if reason:
            rd["reason"] = reason
        return rd

    def mem_reading(key, t, effs, rhs, pool):
        rr = random.Random(hexd(seed, "mem", key))
        total = rr.choice([8, 16, 32, 64]) * GIB
        base = rr.uniform(0.3, 0.7)
        av = min(0.95, max(0.06, base + rng.gauss(0, 0.08) - (0.2 if rng.random() < 0.05 else 0)))
        psi_s = max(0.0, rng.gauss(2, 3))
        psi_f = max(0.0, rng.gauss(0.3, 0.6))
        oom = 1 if rng.random() < 0.0005 else 0
        for e in effs:
            if e.get("dim") == "memory" and e["t0"] - 10 * MIN <= t < e["t1"]:
                av = rng.uniform(0.005, 0.04)
                psi_s = rng.uniform(35, 90)
                psi_f = rng.uniform(15, 60)
                oom = rng.choice([0, 1, 1, 2, 3, 5]) if t >= e["t0"] else 0
        for rm in rhs:
            if rm["what"] == "memory" and rm["t0"] <= t < rm["t1"]:
                av = rng.uniform(0.02, 0.045)
                psi_s = rng.uniform(20, 50)
                psi_f = rng.uniform(11, 25)
                oom = 0
        rd = {
            "check": "memory",
            "total_bytes": total,
            "available_bytes": int(total * av),
            "available_ratio": round(av, 4),
            "swap_used_bytes": int(rng.uniform(0, 0.1) * GIB),
            "oom_kills": oom,
        }
        if pool["psi"]:
            rd.update(
                {
                    "psi_some_avg10": round(psi_s, 2),
                    "psi_some_avg60": round(psi_s * 0.8, 2),
                    "psi_full_avg10": round(psi_f, 2),
                    "psi_full_avg60": round(psi_f * 0.8, 2),
                }
            )
        status, reason = "ok", None
        if oom:
            status, reason = "problem", "OomKills"
        elif av < 0.05:
            status, reason = "problem", "MemoryLow"
        elif pool["psi"] and psi_f * 0.8 > 10:
            status, reason = "problem", "MemoryPressure"
        rd["status"] = status
        if reason:
            rd["reason"] = reason
        return rd

    servers = rng.sample(
        [
            "ntp1.internal",
            "ntp2.internal",
            "time.cloudflare.com",
            "0.pool.ntp.org",
            "169.254.169.123",
            "time.google.com",
        ],
        3,
    )

    def clock_reading(t, effs, rhs):
        off = rng.gauss(0, 0.015)
        for e in effs:
            if e.get("dim") == "clock" and e["t0"] - 5 * MIN <= t < e["t1"]:
                off = e["offset"] + rng.gauss(0, 0.3)
        for rm in rhs:
            if rm["what"] == "clock" and rm["t0"] <= t < rm["t1"]:
                off = rm["offset"] + rng.gauss(0, 0.05)
        srv = []
        for s in servers:
            if rng.random() < 0.03:
                srv.append({"server": s, "error": "timed out"})
                continue
            o = off + rng.gauss(0, 0.004)
            if rng.random() < 0.01:
                o += rng.choice([-1, 1]) * 2.5  # a falseticker
            srv.append(
                {
                    "server": s,
                    "offset_s": round(o, 4),
                    "delay_s": round(abs(rng.gauss(0.01, 0.005)), 4),
                    "stratum": rng.choice([1, 2, 2, 3]),
                }
            )
        offs = sorted(x["offset_s"] for x in srv if "offset_s" in x)
        if not offs:
            return {"check": "clock", "status": "unknown", "reason": "NtpUnreachable", "servers": srv}
        med = offs[len(offs) // 2] if len(offs) % 2 else (offs[len(offs) // 2 - 1] + offs[len(offs) // 2]) / 2
        rd = {"check": "clock", "offset_s": round(med, 4), "servers": srv, "status": "ok"}
        if abs(med) > 1.0:
            rd["status"], rd["reason"] = "problem", "ClockSkew"
        return rd

    def cache_reading(pool, rid, t, effs, rhs):
        caches = []
        for key in pool["cache_keys"]:
            dg = cache_digest(pool["name"], key, rid, t)
            for e in effs:
                if e.get("dim") == "cache" and e.get("key") == key and e["t0"] - 5 * MIN <= t < e["t1"]:
                    dg = hexd(seed, "poison", rid, key, int((t - e["t0"]) // (6 * HOUR)), n=32)
            for rm in rhs:
                if rm["what"] == "cache" and rm["t0"] <= t < rm["t1"] and key == pool["cache_keys"][-1]:
                    dg = hexd(seed, "stale", rid, key, n=32)
            caches.append(
                {
                    "key": key,
                    "path": f"/var/cache/{key}",
                    "digest": dg,
                    "files": 1000 + int(hexd(dg, n=4), 16) % 5000,
                    "bytes": 10**8 + int(hexd(dg, "b", n=6), 16),
                    "full_rehash": rng.random() < 0.05,
                }
            )
        return {"check": "cache", "caches": caches, "status": "ok"}

    def readings_for(ident, pool, rid_key, m, t, which, effs, rhs):
        out = []
        for w in which:
            if w == "disk":
                out.append(disk_reading(rid_key, m, t, effs, rhs, pool))
            elif w == "memory":
                out.append(mem_reading(m if pool["per_host"] > 1 else rid_key, t, effs, rhs, pool))
            elif w == "clock":
                out.append(clock_reading(t, effs, rhs))
            elif w == "cache":
                out.append(cache_reading(pool, rid_key, t, effs, rhs))
            if rng.random() < 0.003:
                out[-1] = {"check": w, "status": "unknown", "reason": "CheckTimeout"}
        return out

    def emit_agent(agent_id, ident, pool, rid_key, m, t_from, t_to, effs, rhs, boots_at=()):
        checks = sorted(pool["checks"])
        boot = hexd(seed, agent_id, "boot", 0, n=36)
        nb = 0
        seq = 0
        t = t_from + rng.uniform(0, interval)
        boots = sorted(boots_at)
        cache_every = rng.choice([1, 2, 3])
        k = 0
        while t <= t_to:
            while boots and t >= boots[0]:
                boots.pop(0)
                nb += 1
                boot = hexd(seed, agent_id, "boot", nb, n=36)
                seq = 0
            k += 1
            cur_ident = dict(ident)
            if not pool["ephemeral"] or pool["eph_agent"] == "host":
                cur_ident["image"] = image_at(m, t)
            which = [c for c in checks if c != "cache" or k % cache_every == 0]
            off = stamp_offset(ident["id"], m, t)
            obs = t + off
            if obs <= END:
                rds = readings_for(cur_ident, pool, rid_key, m, t, which, effs, rhs)
                groups = [rds] if report_style == "bundled" else [[x] for x in rds]
                for g in groups:
                    rep = {
                        "kind": "report",
                        "agent_id": agent_id,
                        "boot_id": boot,
                        "seq": seq,
                        "observed_at": fmt_time(obs) if time_style != "epoch" else iso(obs),
                        "runner": cur_ident,
                        "readings": g,
                        "agent_version": "1.4.2",
                    }
                    if rng.random() < 0.002:
                        rep["dropped"] = rng.randint(1, 20)
                    seq += 1
                    reports_out.append((obs + rng.uniform(0, 5), json.dumps(rep, separators=(",", ":"))))
            t += interval * rng.uniform(0.9, 1.1)

    for p in pools:
        if p["ephemeral"]:
            continue
        for rid in p["runners"]:
            r = runners[rid]
            if not r["has_agent"]:
                continue
            ident = {
                "id": rid,
                "name": rid,
                "machine": r["machine"],
                "pool": p["name"],
                "image": p["image"],
                "labels": ["self-hosted", p["platform"]],
                "provider": "buildkite" if seed % 2 else "github",
                "ephemeral": False,
            }
            if r["shard"] is not None:
                ident["shard"] = r["shard"]
            effs = ent_by_runner.get(rid, [])
            boots = [START + rng.uniform(0, days) * DAY for _ in range(rng.randint(0, 2))]
            for e in effs:
                if e["t1"] < END:
                    boots.append(e["t1"] + rng.uniform(1, 10) * MIN)
            t_to = silent.get(rid, END)
            emit_agent(
                rid if rng.random() < 0.8 else f"agent-{hexd(seed, rid, n=8)}",
                ident,
                p,
                rid,
                r["machine"],
                START - rng.uniform(0, 2) * HOUR,
                t_to,
                effs,
                rh_by_runner.get(rid, []),
                boots,
            )
    for p in pools:
        if not p["ephemeral"] or p["eph_agent"] == "none":
            continue
        if p["eph_agent"] == "host":
            for m in p["machines"]:
                ident = {
                    "id": m,
                    "machine": m,
                    "pool": p["name"],
                    "image": p["image"],
                    "ephemeral": True,
                    "labels": ["host-agent"],
                }
                effs = [e for e in effects if e["scope"] == "machine" and e["who"] == m]
                emit_agent(f"host-{m}", ident, p, m, m, START - HOUR, END, effs, [], [])
        else:
            # per-VM agents: a report at VM start, then every interval until the job ends
            for m, rid, _img, t0, t1, ident in eph_jobs:
                effs = [e for e in effects if e["scope"] == "machine" and e["who"] == m]
                checks = sorted(p["checks"])
                t = t0 + rng.uniform(5, 20)
                seq = 0
                boot = hexd(seed, rid, "vm", n=36)
                while t <= min(t1, END):
                    rds = readings_for(ident, p, rid, m, t, checks, effs, [])
                    rep = {
                        "kind": "report",
                        "agent_id": rid,
                        "boot_id": boot,
                        "seq": seq,
                        "observed_at": iso(t),
                        "runner": ident,
                        "readings": rds,
                        "agent_version": "1.4.2",
                    }
                    seq += 1
                    reports_out.append((t, json.dumps(rep, separators=(",", ":"))))
                    t += interval

    # ------------------------------------------------------------------ write history
    allr = results_out + reports_out
    allr.sort(key=lambda x: x[0])
    with open(os.path.join(outdir, "history.ndjson"), "w") as f:
        for _, line in allr:
            f.write(line)
            f.write("\n")

    # ------------------------------------------------------------------ truth
    for ent in truth_sick:
        es = estat[ent["id"]]
        ent["stats"] = {
            "executions": es[0],
            "failures": es[1],
            "caused_failures": es[2],
            "distinct_tests_caused": len(es[3]),
        }
        # is there agent evidence around onset?
        ev = False
        if ent["case"] == "eph_host":
            ev = pool_by[ent["pool"]]["eph_agent"] in ("vm", "host")
        elif ent["kind"] in ("runner", "machine"):
            for rid in ent["runners"]:
                r = runners[rid]
                if r["has_agent"] and silent.get(rid, END + 1) > ent["onset"] + HOUR:
                    if ent["dimension"] == "cache" and "cache" not in pool_by[r["pool"]]["checks"]:
                        continue
                    if ent["dimension"] == "clock" and "clock" not in pool_by[r["pool"]]["checks"]:
                        continue
                    ev = True
        ent["has_evidence"] = ev
        ent["expected_dimension"] = ent["dimension"] if ev else "unknown"
        if ent["kind"] == "image":
            ent["expected_dimension"] = "unknown"
        ent["onset"] = iso(ent["onset"])
        ent["end"] = iso(ent["end"]) if ent["end"] else None
        for kk in ("ramp_start",):
            if kk in ent:
                ent[kk] = iso(ent[kk])
    for o in truth_outages:
        o["start"], o["end"] = iso(o["start"]), iso(o["end"])
    for rh in red_herrings:
        for kk in ("t0", "t1"):
            if kk in rh and rh[kk] is not None:
                rh[kk] = iso(rh[kk])

    def tstats(i):
        s = tstat[i]
        return {
            "executions": s[0],
            "failures": s[1],
            "fail_sick": s[2],
            "fail_outage": s[3],
            "fail_other": s[4],
        }

    tests_truth = {
        "flaky": {
            tests[i]["id"]: {
                "p": round(tests[i]["p_flaky"], 4),
                "hard": bool(tests[i].get("hard")),
                **tstats(i),
            }
            for i in range(NT)
            if tests[i]["kind"] == "flaky"
        },
        "broken": {
            tests[i]["id"]: {"from_commit": commit_sha(broken_commit[i]), "from": iso(broken[i]), **tstats(i)}
            for i in broken
        },
        "platform": {
            tests[i]["id"]: {"pool": platform_only[i][0], "p": round(platform_only[i][1], 3), **tstats(i)}
            for i in platform_only
        },
        "interaction": {
            tests[i]["id"]: {"runner": interactions[i][0], "p": round(interactions[i][1], 3), **tstats(i)}
            for i in interactions
        },
        "healthy_stats": {
            tests[i]["id"]: tstats(i) for i in range(NT) if tests[i]["kind"] == "healthy" and tstat[i][1] > 0
        },
        "n_tests": NT,
        "n_healthy": sum(1 for t in tests if t["kind"] == "healthy"),
    }
    truth = {
        "seed": seed,
        "size": size,
        "start": iso(START),
        "end_time": iso(END),
        "days": round(days, 2),
        "n_results": n_results,
        "n_reports": len(reports_out),
        "style": {
            "id_style": id_style,
            "time_style": time_style,
            "report_style": report_style,
            "retry": retry_policy,
            "interval_min": round(interval / MIN, 1),
            "runner_style": runner_style,
        },
        "cases": cases,
        "pools": [
            {
                k2: v
                for k2, v in p.items()
                if k2
                in (
                    "name",
                    "platform",
                    "ephemeral",
                    "label_routed",
                    "per_host",
                    "sharding",
                    "n_shards",
                    "image",
                    "agent_cover",
                    "eph_agent",
                    "hard_shard",
                    "hosts",
                    "slots",
                )
            }
            | {
                "checks": sorted(p["checks"]),
                "n_runners": len(p["runners"]),
                "bad_image": ({"image": p["bad_image"]["image"]} if p.get("bad_image") else None),
            }
            for p in pools
        ],
        "sick": truth_sick,
        "outages": truth_outages,
        "red_herrings": red_herrings,
        "tests": tests_truth,
        "runners": {
            rid: {
                "machine": r["machine"],
                "pool": r["pool"],
                "has_agent": r["has_agent"],
                "silent_from": iso(silent[rid]) if rid in silent else None,
                "shard": r["shard"],
                "images": [[iso(a), b] for a, b in machines[r["machine"]]["image_hist"]],
                "stats": rstat.get(rid),
            }
            for rid, r in runners.items()
        },
        "machines": {
            m: {
                "pool": d["pool"],
                "ephemeral": d["ephemeral"],
                "runners": d["runners"],
                "stats": rstat.get(m) if d["ephemeral"] else None,
            }
            for m, d in machines.items()
        },
        "eph_runners": eph_runners,
    }
    with open(os.path.join(outdir, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1, default=lambda o: sorted(o) if isinstance(o, set) else str(o))
    print(
        f"seed={seed} size={size} days={days:.1f} pools={len(pools)} runners={len(runners)} eph_hosts="
        f"{sum(len(p['machines']) for p in pools if p['ephemeral'])} tests={NT} results={n_results} "
        f"reports={len(reports_out)} cases={cases}",
        file=sys.stderr,
    )


def hash_skip(seed, pool, tid, frac):
    # a test is skipped on a platform deterministically (same tests every run), not at random
    return int(hexd(seed, "skip", pool, tid, n=6), 16) / 0xFFFFFF < frac


if __name__ == "__main__":
    main()
