"""Independent CI-fleet history generator: gen.py SEED OUTDIR [END].

Writes OUTDIR/history.ndjson (result records and agent reports with "kind": "report") and
OUTDIR/truth.json. Deterministic per (SEED, END); END (RFC 3339, default 2026-12-05T00:00:00Z) is the
end of the history, every time is relative to it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

DAY = 86400.0
HOUR = 3600.0
MIN = 60.0
GIB = 1024**3

POOL_NAMES = ["linux", "mac", "windows", "arm"]


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def h8(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16]


class Fleet:
    def __init__(self, seed: int, end: float) -> None:
        self.seed = seed
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        r = self.r
        self.days = r.randint(8, 14)
        self.end = end
        self.start = end - self.days * DAY
        self.truth: dict = {
            "seed": seed,
            "start": iso(self.start),
            "end": iso(end),
            "sick": [],
            "warning_only": [],
            "noisy_healthy": [],
            "outages": [],
            "tests": {},
            "notes": [],
        }
        self.build_pools()
        self.build_tests()
        self.build_conditions()
        self.build_outages()

    # ------------------------------------------------------------------ fleet shape
    def build_pools(self) -> None:
        r = self.r
        n_pools = r.randint(2, 4)
        names = ["linux", *r.sample(POOL_NAMES[1:], n_pools - 1)]
        total = r.randint(15, 60)
        weights = [r.uniform(1.0, 3.0) if n == "linux" else r.uniform(0.5, 1.5) for n in names]
        counts = [max(3, round(total * w / sum(weights))) for w in weights]
        self.pools: dict[str, dict] = {}
        self.runners: dict[str, dict] = {}
        for name, count in zip(names, counts, strict=True):
            images = self.image_plan(name, count)
            pool = {
                "name": name,
                "ephemeral": False,
                "runners": [],
                "shards": r.randint(4, 8),
                "participation": 1.0 if name == "linux" else r.uniform(0.5, 1.0),
                "images": images,
            }
            for i in range(1, count + 1):
                rid = f"{name}-{i:02d}"
                # A few runners share a host (two runner services on one big VM).
                machine = f"{name}-vm-{i:02d}"
                if i > 2 and r.random() < 0.1:
                    machine = f"{name}-vm-{i - 1:02d}"
                runner = {
                    "id": rid,
                    "pool": name,
                    "machine": machine,
                    "large": False,
                    "agent": r.random() < 0.85,
                    "interval": r.uniform(5, 15) * MIN,
                    "gaps": [],
                    "noisy": False,
                    "disk_total": r.choice([100, 200, 250, 500]) * GIB,
                    "disk_base": r.uniform(0.25, 0.7),
                    "mem_total": r.choice([8, 16, 32, 64]) * GIB,
                    "mem_base": r.uniform(0.35, 0.8),
                    "clock_base": r.gauss(0, 0.004),
                    "switch": {},
                }
                pool["runners"].append(rid)
                self.runners[rid] = runner
            large = r.sample(pool["runners"], k=min(len(pool["runners"]) // 4 + 1, 3))
            for rid in large:
                self.runners[rid]["large"] = True
            pool["large"] = large
            # image switch time per runner for each later image version
            for img in images[1:]:
                share = img["share"]
                chosen = [rid for rid in pool["runners"] if r.random() < share]
                for rid in chosen:
                    self.runners[rid]["switch"][img["name"]] = img["rollout"] + r.uniform(0, img["spread"])
            self.pools[name] = pool
        # silent agents
        for runner in self.runners.values():
            if runner["agent"] and r.random() < 0.3:
                for _ in range(r.randint(1, 3)):
                    g0 = r.uniform(self.start, self.end - 3 * HOUR)
                    runner["gaps"].append((g0, g0 + r.uniform(2, 12) * HOUR))
        self.ephemeral = None
        if r.random() < 0.5:
            n_hosts = r.randint(3, 6)
            hosts = {}
            for i in range(1, n_hosts + 1):
                hid = f"k8s-node-{i:02d}"
                hosts[hid] = {
                    "id": hid,
                    "pool": "k8s",
                    "machine": hid,
                    "agent": r.random() < 0.75,
                    "interval": r.uniform(5, 15) * MIN,
                    "gaps": [],
                    "noisy": False,
                    "disk_total": 500 * GIB,
                    "disk_base": r.uniform(0.3, 0.7),
                    "mem_total": 128 * GIB,
                    "mem_base": r.uniform(0.3, 0.7),
                    "clock_base": r.gauss(0, 0.004),
                    "large": False,
                    "switch": {},
                }
            images = self.image_plan("k8s", 0)
            self.ephemeral = {
                "name": "k8s",
                "ephemeral": True,
                "hosts": list(hosts),
                "runners": [],
                "shards": r.randint(4, 8),
                "participation": r.uniform(0.6, 1.0),
                "images": images,
                "large": [],
            }
            self.pools["k8s"] = self.ephemeral
            self.hosts = hosts
        else:
            self.hosts = {}
        self.truth["pools"] = {
            n: {
                "ephemeral": p["ephemeral"],
                "runners": p["runners"] if not p["ephemeral"] else [],
                "hosts": p.get("hosts", []),
                "images": [i["name"] for i in p["images"]],
                "large_runners": p["large"],
            }
            for n, p in self.pools.items()
        }

    def image_plan(self, pool: str, count: int) -> list[dict]:
        r = self.r
        n_img = r.choice([1, 2, 2, 3])
        images = [{"name": f"{pool}-img-v1", "rollout": self.start - 30 * DAY, "share": 1.0, "spread": 0.0}]
        t = self.start + r.uniform(0.15, 0.5) * self.days * DAY
        for v in range(2, n_img + 1):
            images.append(
                {
                    "name": f"{pool}-img-v{v}",
                    "rollout": t,
                    "share": r.uniform(0.3, 1.0),
                    "spread": r.uniform(2, 48) * HOUR,
                }
            )
            t += r.uniform(0.2, 0.4) * self.days * DAY
        return images

    def image_of(self, rid: str, t: float) -> str:
        runner = self.runners[rid]
        pool = self.pools[runner["pool"]]
        name = pool["images"][0]["name"]
        for img in pool["images"][1:]:
            sw = runner["switch"].get(img["name"])
            if sw is not None and sw <= t:
                name = img["name"]
        for rb in runner.get("rollback", []):
            if rb[0] <= t and name == rb[1]:
                name = rb[2]
        return name

    def ephemeral_image(self, t: float) -> str:
        pool = self.ephemeral
        name = pool["images"][0]["name"]
        for img in pool["images"][1:]:
            if t >= img["rollout"]:
                frac = min(1.0, (t - img["rollout"]) / max(img["spread"], 1.0)) * img["share"]
                if self.r.random() < frac:
                    name = img["name"]
        if pool.get("retired") and name == pool["retired"][1] and t >= pool["retired"][0]:
            name = pool["images"][0]["name"]
        return name

    # ------------------------------------------------------------------ tests
    def build_tests(self) -> None:
        r = self.r
        n = r.randint(150, 500)
        n_mod = max(10, n // r.randint(5, 12))
        mods = [
            f"tests/{r.choice(['core', 'api', 'io', 'net', 'ui', 'db', 'cli'])}/test_m{m:03d}.py"
            for m in range(n_mod)
        ]
        self.tests: list[dict] = []
        for i in range(n):
            mod = mods[min(n_mod - 1, int(i * n_mod / n))]
            self.tests.append(
                {
                    "id": f"{mod}::test_case_{i:04d}",
                    "module": mod,
                    "cat": "healthy",
                    "base": r.choice([0.0, 0.0, r.uniform(0, 0.003)]),
                    "dur": float(self.np.lognormal(-0.5, 1.2)),
                }
            )
        # sharding by module; shard 0 is the heavy shard in every pool
        self.heavy_mods = set(r.sample(mods, k=max(1, n_mod // 10)))
        idx = list(range(n))
        r.shuffle(idx)
        pick = iter(idx)

        def take(k: int, cat: str) -> list[dict]:
            out = []
            while len(out) < k:
                t = self.tests[next(pick)]
                if t["cat"] == "healthy" and t["module"] not in self.heavy_mods:
                    t["cat"] = cat
                    out.append(t)
            return out

        for t in self.tests:
            if t["module"] in self.heavy_mods:
                t["dur"] = r.uniform(10, 60)
                if r.random() < 0.5:
                    t["cat"] = "flaky"
                    t["heavy"] = True
                    t["flaky"] = r.uniform(0.02, 0.06)
        for t in take(max(3, int(n * r.uniform(0.03, 0.08))), "flaky"):
            t["flaky"] = math.exp(r.uniform(math.log(0.015), math.log(0.2)))
        pools = list(self.pools)
        for t in take(r.randint(0, 3), "broken"):
            t["broken_from"] = self.start + r.uniform(0.3, 0.9) * self.days * DAY
        for t in take(r.randint(0, 3), "platform"):
            t["platform"] = r.choice(pools)
            t["platform_p"] = r.uniform(0.6, 1.0)
        for t in take(max(2, int(n * r.uniform(0.01, 0.04))), "resource-sensitive"):
            t["resource"] = r.choice(["disk", "memory"])
        self.fixtures = []
        for g in range(r.randint(0, 2)):
            members = take(r.randint(3, 6), "fixture")
            p = r.uniform(0.01, 0.04)
            for t in members:
                t["fixture"] = g
            self.fixtures.append({"group": g, "p": p, "tests": [t["id"] for t in members]})
        self.external = take(r.randint(0, 8), "external") if r.random() < 0.6 else []
        # heavier module first in shard 0; the rest round robin by module
        self.test_by_id = {t["id"]: t for t in self.tests}
        self.truth["fixtures"] = self.fixtures
        for t in self.tests:
            info = {"category": t["cat"]}
            for k in ("flaky", "broken_from", "platform", "platform_p", "resource", "fixture", "heavy"):
                if k in t:
                    info[k] = iso(t[k]) if k == "broken_from" else t[k]
            self.truth["tests"][t["id"]] = info

    def shard_plan(self, pool: dict) -> list[list[dict]]:
        s = pool["shards"]
        shards: list[list[dict]] = [[] for _ in range(s)]
        mods = sorted({t["module"] for t in self.tests})
        normal = [m for m in mods if m not in self.heavy_mods]
        where = {m: 0 for m in self.heavy_mods}
        for k, m in enumerate(normal):
            where[m] = 1 + k % (s - 1)
        for t in self.tests:
            shards[where[t["module"]]].append(t)
        return shards

    # ------------------------------------------------------------------ conditions
    def build_conditions(self) -> None:
        """Sick entities and warning-only runners: per key (runner id or host) a list of conditions."""
        r = self.r
        self.cond: dict[str, list[dict]] = {}
        self.image_sick: dict[str, dict] = {}
        self.pool_sick: dict[str, dict] = {}
        n_sick = r.choices([0, 1, 2, 3, 4], weights=[2, 3, 3, 2, 1])[0]
        persistent = [p for p in self.pools.values() if not p["ephemeral"]]
        cluster_pool = r.choice(persistent)["name"] if r.random() < 0.4 else None
        used: set[str] = set()
        for _ in range(n_sick):
            kinds = ["runner"] * 6 + ["image"] * 2 + ["pool"]
            if self.ephemeral:
                kinds += ["machine"] * 3
            kind = r.choice(kinds)
            onset = self.start + r.uniform(0.25, 0.85) * self.days * DAY
            end = onset + r.uniform(6 * HOUR, 3 * DAY) if r.random() < 0.35 else None
            if end is not None and end > self.end - 2 * HOUR:
                end = None
            p_sick = r.uniform(0.1, 0.8)
            share = r.uniform(0.3, 0.8)
            susceptible = set(r.sample([t["id"] for t in self.tests], k=int(len(self.tests) * share)))
            if kind == "runner":
                pool = cluster_pool or r.choice(persistent)["name"]
                cands = [x for x in self.pools[pool]["runners"] if x not in used]
                if not cands:
                    continue
                rid = r.choice(cands)
                used.add(rid)
                dim = r.choice(["disk", "disk", "memory", "clock", "cache"])
                c = self.add_cond(rid, dim, onset, end, p_sick, susceptible, warn=False)
                truth_dim = dim if self.runners[rid]["agent"] else "unknown"
                self.truth["sick"].append(
                    {
                        "kind": "runner",
                        "entity": rid,
                        "pool": pool,
                        "dimension": truth_dim,
                        "reading_dimension": dim,
                        "onset": iso(onset),
                        "end": iso(end) if end else None,
                        "fail_p": round(p_sick, 3),
                        "tests_share": round(share, 3),
                        "mode": c.get("mode"),
                    }
                )
            elif kind == "machine":
                cands = [h for h in self.hosts if h not in used]
                if not cands:
                    continue
                hid = r.choice(cands)
                used.add(hid)
                dim = r.choice(["disk", "memory", "clock"])
                self.add_cond(hid, dim, onset, end, p_sick, susceptible, warn=False)
                self.truth["sick"].append(
                    {
                        "kind": "machine",
                        "entity": hid,
                        "pool": "k8s",
                        "dimension": dim if self.hosts[hid]["agent"] else "unknown",
                        "reading_dimension": dim,
                        "onset": iso(onset),
                        "end": iso(end) if end else None,
                        "fail_p": round(p_sick, 3),
                        "tests_share": round(share, 3),
                    }
                )
            elif kind == "image":
                pools = [p for p in self.pools.values() if len(p["images"]) > 1 and p["name"] not in used]
                if not pools:
                    continue
                pool = r.choice(pools)
                used.add(pool["name"])
                img = r.choice(pool["images"][1:])
                onset = img["rollout"]
                dim = r.choice(["cache", "unknown"])
                if img["share"] >= 0.5:
                    dim = (
                        "unknown"  # on most of the pool its cache digest is the majority: nothing to compare
                    )
                retire = None
                if r.random() < 0.4:
                    retire = onset + img["spread"] + r.uniform(6 * HOUR, 2 * DAY)
                    if retire > self.end - 2 * HOUR:
                        retire = None
                    else:
                        if pool["ephemeral"]:
                            pool["retired"] = (retire, img["name"])
                        else:
                            for rid in pool["runners"]:
                                prev = self.runners[rid]
                                prev.setdefault("rollback", []).append(
                                    (retire, img["name"], pool["images"][0]["name"])
                                )
                self.image_sick[img["name"]] = {
                    "p": p_sick,
                    "tests": susceptible,
                    "dim": dim,
                    "end": retire,
                    "digest": h8("badimage", img["name"]),
                }
                self.truth["sick"].append(
                    {
                        "kind": "image",
                        "entity": img["name"],
                        "pool": pool["name"],
                        "dimension": dim,
                        "reading_dimension": dim,
                        "onset": iso(onset),
                        "end": iso(retire) if retire else None,
                        "fail_p": round(p_sick, 3),
                        "tests_share": round(share, 3),
                        "rollout_share": round(img["share"], 3),
                    }
                )
            else:  # pool: a pool-wide dependency (artifact mirror, shared NFS) broken for hours to days
                pool = r.choice(persistent)
                if pool["name"] in used:
                    continue
                used.add(pool["name"])
                end = onset + r.uniform(4 * HOUR, 1.5 * DAY)
                end = min(end, self.end - HOUR)
                self.pool_sick[pool["name"]] = {
                    "p": r.uniform(0.1, 0.4),
                    "tests": susceptible,
                    "start": onset,
                    "end": end,
                }
                self.truth["sick"].append(
                    {
                        "kind": "pool",
                        "entity": pool["name"],
                        "pool": pool["name"],
                        "dimension": "unknown",
                        "reading_dimension": "unknown",
                        "onset": iso(onset),
                        "end": iso(end),
                        "fail_p": round(self.pool_sick[pool["name"]]["p"], 3),
                        "tests_share": round(share, 3),
                    }
                )
        # warning-only runners: bad readings, no extra failures
        pers_ids = [x for x in self.runners if x not in used and self.runners[x]["agent"]]
        for rid in r.sample(pers_ids, k=min(len(pers_ids), r.randint(0, 3))):
            used.add(rid)
            dim = r.choice(["disk", "memory", "clock", "cache"])
            onset = self.start + r.uniform(0.1, 0.8) * self.days * DAY
            end = onset + r.uniform(3 * HOUR, 3 * DAY) if r.random() < 0.5 else None
            if end is not None and end > self.end:
                end = None
            self.add_cond(rid, dim, onset, end, 0.0, set(), warn=True)
            self.truth["warning_only"].append(
                {"runner": rid, "dimension": dim, "onset": iso(onset), "end": iso(end) if end else None}
            )
        # noisy but healthy runners
        for rid in r.sample([x for x in self.runners if x not in used], k=r.randint(0, 3)):
            self.runners[rid]["noisy"] = True
            self.truth["noisy_healthy"].append(rid)

    def add_cond(
        self, key: str, dim: str, onset: float, end: float | None, p: float, tests: set, warn: bool
    ) -> dict:
        r = self.r
        c = {"dim": dim, "onset": onset, "end": end, "p": p, "tests": tests, "warn": warn}
        if dim == "disk":
            c["mode"] = "slow" if r.random() < 0.5 else "sudden"
            c["fill_from"] = (
                onset - r.uniform(1, 3) * DAY if c["mode"] == "slow" else onset - r.uniform(0, 15) * MIN
            )
            c["floor"] = r.uniform(0.035, 0.049) if warn else r.uniform(0.002, 0.02)
        elif dim == "memory":
            c["avail"] = r.uniform(0.03, 0.06) if warn else r.uniform(0.005, 0.03)
        elif dim == "clock":
            c["offset"] = r.choice([-1, 1]) * (r.uniform(1.3, 4) if warn else r.uniform(2, 300))
        elif dim == "cache":
            c["digest"] = h8("poison", key, onset)
        host = self.hosts.get(key) or self.runners[key]
        if host.get("gaps"):
            host["gaps"] = [g for g in host["gaps"] if g[1] < onset - 4 * HOUR or g[0] > onset + 4 * HOUR]
        self.cond.setdefault(key, []).append(c)
        return c

    def active(self, key: str, t: float) -> list[dict]:
        out = []
        for c in self.cond.get(key, ()):
            if c["onset"] <= t and (c["end"] is None or t < c["end"]):
                out.append(c)
        return out

    # ------------------------------------------------------------------ state per key
    def disk_free(self, key: str, t: float) -> float:
        h = self.hosts.get(key) or self.runners[key]
        base = h["disk_base"]
        # usage creeps up by ~1 %/day and is cleaned up weekly
        week = (t - self.start) % (7 * DAY)
        free = base - 0.01 * week / DAY
        if h["noisy"]:
            free += 0.08 * math.sin(t / (5 * HOUR) + len(key))
        for c in self.cond.get(key, ()):
            if c["dim"] != "disk":
                continue
            if c["end"] is not None and t >= c["end"]:
                continue
            if t >= c["onset"]:
                free = c["floor"]
            elif t >= c["fill_from"]:
                frac = (t - c["fill_from"]) / max(c["onset"] - c["fill_from"], 1.0)
                free = free + (c["floor"] * 1.2 - free) * frac
        return max(0.0005, min(0.95, free))

    def mem_avail(self, key: str, t: float) -> tuple[float, float, int]:
        h = self.hosts.get(key) or self.runners[key]
        avail = h["mem_base"] + 0.05 * math.sin(t / (3 * HOUR) + len(key))
        psi = 0.0
        if h["noisy"]:
            avail -= 0.15 * max(0.0, math.sin(t / (2 * HOUR) + 1))
            psi = 4.0 * max(0.0, math.sin(t / (2 * HOUR) + 1))
        ooms = 0
        for c in self.active(key, t):
            if c["dim"] == "memory":
                avail = c["avail"]
                psi = 15.0 if c["warn"] else 35.0
                ooms = 0 if c["warn"] else 1
        return max(0.001, min(0.95, avail)), psi, ooms

    def clock(self, key: str, t: float) -> float:
        h = self.hosts.get(key) or self.runners[key]
        off = h["clock_base"]
        for c in self.active(key, t):
            if c["dim"] == "clock":
                off = c["offset"]
        return off

    def pressure(self, key: str, t: float) -> set[str]:
        out = set()
        if self.disk_free(key, t) < 0.05:
            out.add("disk")
        if self.mem_avail(key, t)[0] < 0.07:
            out.add("memory")
        return out

    # ------------------------------------------------------------------ outages
    def build_outages(self) -> None:
        r = self.r
        self.outages = []
        for _ in range(r.choices([0, 1, 2, 3], weights=[2, 3, 2, 1])[0]):
            s = self.busy_time(self.start + DAY, self.end - 4 * HOUR)
            d = math.exp(r.uniform(math.log(10 * MIN), math.log(3 * HOUR)))
            o = {
                "scope": "fleet",
                "start": s,
                "end": s + d,
                "p": r.uniform(0.3, 0.9),
                "runner_share": r.uniform(0.8, 1.0),
                "tests_share": r.uniform(0.3, 0.9),
                "cause": r.choice(["network", "registry", "artifact-store"]),
            }
            o["tests"] = set(
                r.sample([t["id"] for t in self.tests], k=int(len(self.tests) * o["tests_share"]))
            )
            self.outages.append(o)
        if self.external:
            for _ in range(r.randint(1, 2)):
                s = self.busy_time(self.start + DAY, self.end - 7 * HOUR)
                d = r.uniform(30 * MIN, 6 * HOUR)
                self.outages.append(
                    {
                        "scope": "tests",
                        "start": s,
                        "end": s + d,
                        "p": r.uniform(0.6, 0.95),
                        "tests": {t["id"] for t in self.external},
                        "cause": "external-service",
                    }
                )
        for o in self.outages:
            self.truth["outages"].append(
                {
                    "scope": o["scope"],
                    "start": iso(o["start"]),
                    "end": iso(o["end"]),
                    "cause": o["cause"],
                    "fail_p": round(o["p"], 3),
                    "tests": sorted(o["tests"]) if o["scope"] == "tests" else None,
                    "n_tests": len(o["tests"]),
                }
            )

    # ------------------------------------------------------------------ schedule
    def busy_time(self, lo: float, hi: float) -> float:
        """A time in [lo, hi), mostly in working hours (an outage at 3 am on a Sunday shows in no result)."""
        r = self.r
        if r.random() < 0.2:
            return r.uniform(lo, hi)
        while True:
            t = r.uniform(lo, hi)
            dt = datetime.fromtimestamp(t, UTC)
            if 8 <= dt.hour < 18 and dt.weekday() < 5:
                return t

    def pipeline_times(self, n: int) -> list[float]:
        r = self.r
        out = []
        while len(out) < n:
            t = r.uniform(self.start, self.end - 2 * HOUR)
            dt = datetime.fromtimestamp(t, UTC)
            w = 1.0 if 7 <= dt.hour < 20 else 0.2
            if dt.weekday() >= 5:
                w *= 0.3
            if r.random() < w:
                out.append(t)
        return sorted(out)

    def fail_p(self, test: dict, key: str, pool: str, image: str, t: float) -> tuple[float, str]:
        probs: list[tuple[float, str]] = []
        base = test["base"] + test.get("flaky", 0.0)
        if base:
            probs.append((base, "flaky"))
        if "broken_from" in test and t >= test["broken_from"]:
            probs.append((0.97, "broken"))
        if test.get("platform") == pool:
            probs.append((test["platform_p"], "platform"))
        if "resource" in test and test["resource"] in self.pressure(key, t):
            probs.append((0.5, "resource"))
        for o in self.outages:
            if (
                o["start"] <= t < o["end"]
                and test["id"] in o["tests"]
                and (
                    o["scope"] == "tests" or (int(h8(o["start"], key), 16) % 1000) / 1000 < o["runner_share"]
                )
            ):
                probs.append((o["p"], "outage-" + o["cause"]))
        for c in self.active(key, t):
            if not c["warn"] and test["id"] in c["tests"]:
                probs.append((c["p"], "sick-" + c["dim"]))
        img = self.image_sick.get(image)
        if img and test["id"] in img["tests"]:
            probs.append((img["p"], "image"))
        ps = self.pool_sick.get(pool)
        if ps and ps["start"] <= t < ps["end"] and test["id"] in ps["tests"]:
            probs.append((ps["p"], "pool"))
        if not probs:
            return 0.0, ""
        q = 1.0
        for p, _ in probs:
            q *= 1 - p
        return 1 - q, max(probs)[1]

    MESSAGES = {
        "flaky": ["AssertionError: expected 3, got 2", "TimeoutError: operation timed out after 30s"],
        "broken": ["AssertionError: regression: unexpected value"],
        "platform": ["OSError: unsupported on this platform"],
        "resource": ["MemoryError", "OSError: [Errno 28] No space left on device"],
        "sick-disk": [
            "OSError: [Errno 28] No space left on device",
            "sqlite3.OperationalError: database or disk is full",
        ],
        "sick-memory": ["Killed (signal 9)", "MemoryError: cannot allocate"],
        "sick-clock": [
            "ssl.SSLCertVerificationError: certificate is not yet valid",
            "AssertionError: token expired",
        ],
        "sick-cache": [
            "ImportError: cannot import name 'x' from partially initialized module",
            "zipfile.BadZipFile",
        ],
        "image": [
            "FileNotFoundError: /usr/bin/tool",
            "ImportError: libssl.so.3: cannot open shared object file",
        ],
        "pool": ["ConnectionError: artifact mirror 503", "OSError: Stale file handle"],
        "fixture": ["fixture 'db_server' failed: ConnectionRefusedError"],
        "outage-network": ["ConnectionError: Name or service not known"],
        "outage-registry": ["docker: error pulling image: 502 Bad Gateway"],
        "outage-artifact-store": ["HTTPError: 503 Service Unavailable"],
        "outage-external-service": ["HTTPError: 504 Gateway Timeout from api.payments.example"],
    }

    def generate(self, out: Path) -> None:
        r = self.r
        target = r.uniform(60_000, 200_000)
        per_pipeline = sum(len(self.tests) * p["participation"] for p in self.pools.values())
        # a third of the pipelines run the whole suite, the rest only some shards (changed modules)
        n_pipes = max(50, int(target / per_pipeline / 1.03 / 0.58))
        times = self.pipeline_times(n_pipes)
        shards = {name: self.shard_plan(p) for name, p in self.pools.items()}
        lines: list[tuple[float, str]] = []
        commit_i = 0
        job_n = 0
        n_results = 0
        pod_n = 0
        for pi, t0 in enumerate(times):
            if r.random() < 0.3:
                commit_i += 1
            commit = h8("commit", self.seed, commit_i)[:12]
            run_id = f"run-{pi + 1}"
            q = 1.0 if r.random() < 0.35 else r.uniform(0.2, 0.5)
            for pname, pool in self.pools.items():
                if r.random() > pool["participation"]:
                    continue
                for si, shard in enumerate(shards[pname]):
                    if r.random() > q:
                        continue
                    job_n += 1
                    job_id = f"job-{job_n}"
                    attempt = 1
                    start = t0 + r.uniform(0, 10 * MIN)
                    avoid = None
                    while True:
                        if pool["ephemeral"]:
                            pod_n += 1
                            host = r.choice(pool["hosts"])
                            rid = f"k8s-pod-{h8('pod', self.seed, pod_n)[:10]}"
                            key = host
                            image = self.ephemeral_image(start)
                            ident = {
                                "id": rid,
                                "name": rid,
                                "machine": host,
                                "pool": pname,
                                "image": image,
                                "shard": str(si),
                                "labels": ["k8s", "ephemeral"],
                                "provider": "github",
                                "ephemeral": True,
                            }
                        else:
                            cands = [x for x in pool["runners"] if x != avoid]
                            if si == 0 and pool["large"] and r.random() < 0.7:
                                cands = [x for x in pool["large"] if x != avoid] or cands
                            rid = r.choice(cands)
                            key = rid
                            runner = self.runners[rid]
                            image = self.image_of(rid, start)
                            labels = ["self-hosted", pname] + (["large"] if runner["large"] else [])
                            ident = {
                                "id": rid,
                                "name": rid,
                                "machine": runner["machine"],
                                "pool": pname,
                                "image": image,
                                "shard": str(si),
                                "labels": labels,
                                "provider": "github",
                                "ephemeral": False,
                            }
                        fixture_fail = {f["group"] for f in self.fixtures if r.random() < f["p"]}
                        tt = start
                        failed = 0
                        for test in shard:
                            d = test["dur"] * r.uniform(0.8, 1.3)
                            if pname == "windows" and test["id"].endswith("7") and r.random() < 0.5:
                                outcome, msg = "skipped", "skipped on windows"
                            else:
                                p, why = self.fail_p(test, key, pname, image, tt)
                                if test.get("fixture") in fixture_fail:
                                    p, why = 1.0, "fixture"
                                if p and r.random() < p:
                                    outcome = "error" if why in ("sick-memory", "fixture") else "failed"
                                    msg = r.choice(self.MESSAGES.get(why, ["AssertionError"]))
                                    failed += 1
                                else:
                                    outcome, msg = "passed", None
                            rec = {
                                "test_id": test["id"],
                                "outcome": outcome,
                                "time": iso(tt),
                                "duration_s": round(d, 3),
                                "job_id": job_id,
                                "run_id": run_id,
                                "attempt": attempt,
                                "commit": commit,
                                "runner": ident,
                            }
                            if msg:
                                rec["message"] = msg
                            lines.append((tt, json.dumps(rec, separators=(",", ":"))))
                            n_results += 1
                            tt += d
                        if failed and attempt == 1 and r.random() < 0.3 and tt < self.end - 30 * MIN:
                            attempt = 2
                            avoid = rid
                            start = tt + r.uniform(2, 20) * MIN
                            continue
                        break
        n_reports = self.reports(lines)
        lines.sort(key=lambda x: x[0])
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "history.ndjson", "w") as f:
            for _, line in lines:
                f.write(line + "\n")
        self.truth["counts"] = {
            "results": n_results,
            "reports": n_reports,
            "pipelines": len(times),
            "jobs": job_n,
            "tests": len(self.tests),
            "runners": len(self.runners),
            "hosts": len(self.hosts),
        }
        (out / "truth.json").write_text(json.dumps(self.truth, indent=1, sort_keys=True))

    # ------------------------------------------------------------------ agent reports
    def reports(self, lines: list[tuple[float, str]]) -> int:
        r = self.r
        n = 0
        agents = [(k, h, True) for k, h in self.hosts.items()] + [
            (k, h, False) for k, h in self.runners.items()
        ]
        for key, h, is_host in agents:
            if not h["agent"]:
                continue
            pool = h["pool"]
            boot = h8("boot", key, 0)
            seq = 0
            t = self.start + r.uniform(0, h["interval"])
            # the lock file changes pool-wide every few days; each runner picks it up at its next job
            pr = random.Random(f"{self.seed}-cache-{pool}")
            cache_epoch_times = [self.start + k * pr.uniform(1.5, 3) * DAY for k in range(8)]
            while t < self.end:
                if any(g0 <= t < g1 for g0, g1 in h["gaps"]):
                    t += h["interval"]
                    continue
                for c in self.cond.get(key, ()):
                    if c["end"] is not None and c["end"] <= t < c["end"] + h["interval"] + 1:
                        boot = h8("boot", key, t)  # fixed by a reboot
                        seq = 0
                seq += 1
                if is_host:
                    ident = {"id": key, "name": key, "machine": key, "pool": pool, "ephemeral": True}
                    ident["image"] = self.pools[pool]["images"][0]["name"]
                else:
                    ident = {
                        "id": key,
                        "name": key,
                        "machine": h["machine"],
                        "pool": pool,
                        "image": self.image_of(key, t),
                        "provider": "github",
                        "ephemeral": False,
                    }
                readings = []
                free = self.disk_free(key, t) * r.uniform(0.98, 1.02)
                total = h["disk_total"]
                fb = int(total * free)
                dstat = "problem" if free < 0.05 or fb < GIB else "ok"
                readings.append(
                    {
                        "check": "disk",
                        "status": dstat,
                        "reason": "DiskFull" if dstat == "problem" else None,
                        "paths": [
                            {
                                "path": "/",
                                "mount_point": "/",
                                "total_bytes": total,
                                "free_bytes": fb,
                                "free_ratio": round(min(1.0, free), 5),
                                "inodes_total": 6_000_000,
                                "inodes_free": int(6_000_000 * min(0.9, free + 0.2)),
                                "inodes_free_ratio": round(min(0.9, free + 0.2), 4),
                                "read_only": False,
                                "write_probe_ok": free > 0.001,
                            },
                            {
                                "path": "/tmp",
                                "mount_point": "/",
                                "total_bytes": total,
                                "free_bytes": fb,
                                "free_ratio": round(min(1.0, free), 5),
                            },
                        ],
                    }
                )
                avail, psi, ooms = self.mem_avail(key, t)
                avail *= r.uniform(0.95, 1.05)
                reason = None
                if ooms:
                    ooms = r.randint(0, 3)
                if ooms:
                    reason = "OomKills"
                elif avail < 0.05:
                    reason = "MemoryLow"
                elif psi > 10:
                    reason = "MemoryPressure"
                mt = h["mem_total"]
                readings.append(
                    {
                        "check": "memory",
                        "status": "problem" if reason else "ok",
                        "reason": reason,
                        "total_bytes": mt,
                        "available_bytes": int(mt * avail),
                        "available_ratio": round(min(1.0, avail), 4),
                        "swap_used_bytes": int(mt * 0.3) if psi > 10 else 0,
                        "psi_some_avg10": round(psi * 1.5 + r.uniform(0, 1), 2),
                        "psi_some_avg60": round(psi * 1.3, 2),
                        "psi_full_avg10": round(psi, 2),
                        "psi_full_avg60": round(psi * 0.9, 2),
                        "oom_kills": ooms,
                    }
                )
                if r.random() < 0.03:
                    readings.append({"check": "clock", "status": "unknown", "reason": "NtpUnreachable"})
                else:
                    off = self.clock(key, t) + r.gauss(0, 0.002)
                    readings.append(
                        {
                            "check": "clock",
                            "status": "problem" if abs(off) > 1 else "ok",
                            "reason": "ClockSkew" if abs(off) > 1 else None,
                            "offset_s": round(off, 4),
                            "servers": [
                                {
                                    "server": "ntp.example.net",
                                    "offset_s": round(off, 4),
                                    "delay_s": 0.02,
                                    "stratum": 2,
                                }
                            ],
                        }
                    )
                if not is_host:
                    epoch = sum(1 for e in cache_epoch_times if e <= t - r.uniform(0, 30 * MIN))
                    digest = h8("cache", pool, epoch)
                    for c in self.active(key, t):
                        if c["dim"] == "cache":
                            digest = c["digest"]
                    img = self.image_sick.get(ident["image"])
                    if img and img["dim"] == "cache":
                        digest = img["digest"]
                    readings.append(
                        {
                            "check": "cache",
                            "status": "ok",
                            "caches": [
                                {
                                    "key": "pip",
                                    "path": "/home/runner/.cache/pip",
                                    "digest": digest,
                                    "files": 4200,
                                    "bytes": 812_000_000,
                                },
                            ],
                        }
                    )
                for rd in readings:
                    if rd.get("reason") is None:
                        rd.pop("reason", None)
                rep = {
                    "kind": "report",
                    "agent_id": key,
                    "boot_id": boot,
                    "seq": seq,
                    "observed_at": iso(t),
                    "runner": ident,
                    "readings": readings,
                    "dropped": 0,
                    "agent_version": "0.9.0",
                }
                lines.append((t, json.dumps(rep, separators=(",", ":"))))
                n += 1
                t += h["interval"] * r.uniform(0.9, 1.1)
        return n


def main() -> None:
    seed = int(sys.argv[1])
    out = Path(sys.argv[2])
    end_s = sys.argv[3] if len(sys.argv) > 3 else "2026-12-05T00:00:00Z"
    end = datetime.fromisoformat(end_s.replace("Z", "+00:00")).timestamp()
    fleet = Fleet(seed, end)
    fleet.generate(out)
    c = fleet.truth["counts"]
    print(
        f"seed {seed}: {fleet.days} days, pools {list(fleet.pools)}, {c['runners']} runners, {c['hosts']} hosts, "
        f"{c['tests']} tests, {c['results']} results, {c['reports']} reports, "
        f"{len(fleet.truth['sick'])} sick, {len(fleet.truth['warning_only'])} warning, {len(fleet.outages)} outages"
    )


if __name__ == "__main__":
    main()
