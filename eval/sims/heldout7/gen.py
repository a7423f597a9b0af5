"""Generate one small held-out fleet: gen.py SEED OUTDIR [END_TIME].

Small, short fleets (6-30 runners, 1-5 days, 5k-60k results) of varied traffic, with faults of varied
strength and timing. Writes history.ndjson (event order: results and `"kind": "report"` lines),
feed.tsv (arrival order: `at_ms \\t channel \\t sender \\t record`, channel result|report),
failures.tsv (every failed or errored result with its true cause) and truth.json.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

H = 3600.0
DAY = 86400.0
SHAPES = ["single", "pools", "ephemeral", "mixed"]
RESOURCE = {"fulldisk", "slowdisk", "memhog", "readonly", "hostdisk", "hostmem"}

FORCED = {
    701: ["twosick", "badimage"],
    705: ["fulldisk", "cachepoison"],
    709: ["readonly", "clockskew"],
    713: ["slowdisk", "twosick"],
    702: ["hostdisk", "badimage"],
    706: ["hostmem", "clockskew"],
    710: ["cachepoison", "hostmem"],
    714: ["hostdisk", "badimage"],
    703: ["hostmem", "fulldisk"],
    707: ["cachepoison", "readonly"],
    711: ["twosick", "hostdisk"],
    715: ["slowdisk", "badimage"],
    704: ["fulldisk", "clockskew"],
    708: ["slowdisk", "memhog"],
    712: ["badimage", "cachepoison"],
    716: ["twosick", "badnic"],
}
SYL = [
    "al",
    "ba",
    "cor",
    "den",
    "el",
    "fa",
    "gi",
    "ho",
    "in",
    "ju",
    "ka",
    "lo",
    "mi",
    "no",
    "pa",
    "qu",
    "ri",
    "so",
    "tu",
    "va",
    "we",
    "xi",
    "yo",
    "za",
]
AREAS = [
    "api",
    "auth",
    "billing",
    "cache",
    "cli",
    "db",
    "export",
    "ingest",
    "jobs",
    "mail",
    "search",
    "store",
    "sync",
    "ui",
    "upload",
    "users",
    "webhooks",
    "report",
    "parser",
    "queue",
]


def word(rng: random.Random, n: int = 2) -> str:
    return "".join(rng.choice(SYL) for _ in range(n))


def iso(t: float, off_h: float = 0.0) -> str:
    tz = timezone(timedelta(hours=off_h))
    s = datetime.fromtimestamp(t, tz).isoformat(timespec="milliseconds")
    return s.replace("+00:00", "Z") if off_h == 0 else s


def hexid(*parts) -> str:
    return hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).hexdigest()


class Fleet:
    def __init__(self, seed: int, end: float):
        self.seed = seed
        self.rng = rng = random.Random(seed * 7919 + 17)
        self.shape = SHAPES[seed % 4]
        self.days = rng.choice([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0])
        self.end = end
        self.start = end - self.days * DAY
        self.tz = rng.choice([-8, -7, -5, -3, 0, 1, 2, 5.5, 8, 9])
        self.time_fmt = rng.choice(["z", "local", "epoch"])
        self.provider = rng.choice(["github", "gitlab", "buildkite"])
        self.busy = rng.random() < 0.5
        self.pools: dict[str, dict] = {}
        self.units: dict[str, dict] = {}  # static runner id or ephemeral host -> meta
        self.tests: dict[str, dict] = {}
        self.suites: list[dict] = []
        self.faults: list[dict] = []
        self.herrings: list[dict] = []
        self.outages: list[dict] = []
        self.build_fleet()
        self.build_tests()
        self.build_faults()

    # ------------------------------------------------------------------ fleet
    def add_pool(self, name, kind, platform, n, shards=0, agent_frac=1.0):
        rng = self.rng
        base_img = {
            "linux-x64": "ubuntu-22.04-ci",
            "linux-arm64": "ubuntu-22.04-arm-ci",
            "macos": "macos-14-xcode15",
        }[platform]
        img0 = f"{base_img}-2026.{rng.randint(9, 11)}.{rng.randint(1, 9)}"
        pool = {
            "name": name,
            "kind": kind,
            "platform": platform,
            "units": [],
            "shards": shards,
            "image0": img0,
            "base_img": base_img,
            "rollouts": [],
        }
        self.pools[name] = pool
        for i in range(n):
            if kind == "static":
                rid = f"{name}-{i + 1:02d}"
                mach = f"{name}-vm-{rng.randint(100, 999)}{i}"
                shard = str(i % shards + 1) if shards else None
            else:
                rid = f"{name}-node-{word(rng, 1)}{i + 1}"
                mach = rid
                shard = None
            agent = kind == "ephemeral" or rng.random() < agent_frac
            u = {
                "id": rid,
                "machine": mach,
                "pool": name,
                "kind": kind,
                "shard": shard,
                "agent": agent,
                "images": [(self.start - 30 * DAY, img0)],
                "free_at": self.start,
                "work_free": rng.uniform(0.3, 0.8),
                "root_free": rng.uniform(0.35, 0.7),
                "mem_avail": rng.uniform(0.45, 0.8),
                "mem_gb": rng.choice([8, 16, 32, 64]),
                "reboots": [],
            }
            pool["units"].append(rid)
            self.units[rid] = u

    def build_fleet(self):
        rng = self.rng
        s = self.shape
        if s == "single":
            self.add_pool(
                "ci", "static", "linux-x64", rng.randint(6, 14), shards=rng.choice([2, 3]), agent_frac=0.9
            )
        elif s == "pools":
            self.add_pool(
                "linux",
                "static",
                "linux-x64",
                rng.randint(8, 18),
                shards=rng.choice([2, 3, 4]),
                agent_frac=0.9,
            )
            self.add_pool("arm", "static", "linux-arm64", rng.randint(3, 5), agent_frac=1.0)
            if rng.random() < 0.5:
                self.add_pool("mac", "static", "macos", rng.randint(2, 4), agent_frac=0.5)
        elif s == "ephemeral":
            self.add_pool("k8s", "ephemeral", "linux-x64", rng.randint(2, 4))
            if rng.random() < 0.5:
                self.add_pool("k8s-arm", "ephemeral", "linux-arm64", rng.randint(1, 2))
        else:
            self.add_pool(
                "build", "static", "linux-x64", rng.randint(5, 12), shards=rng.choice([2, 3]), agent_frac=0.85
            )
            self.add_pool("pods", "ephemeral", "linux-x64", rng.randint(2, 3))
        # every static runner with an agent in a pool where most lack one is unusual: fine as drawn
        self.interval = None

    # ------------------------------------------------------------------ tests
    def new_test(self, tid, suite, rng, tags_p):
        t = {
            "id": tid,
            "suite": suite,
            "tags": set(),
            "dur": math.exp(rng.gauss(0.3, 1.2)),
            "label": "healthy",
            "base": 0.0 if rng.random() < 0.6 else rng.uniform(0.0002, 0.002),
            "cache": None,
            "tol": None,
            "skip": rng.random() < 0.02,
        }
        for tag, p in tags_p.items():
            if rng.random() < p:
                t["tags"].add(tag)
        if "https" in t["tags"]:
            t["tags"].add("net")
        if "time" in t["tags"]:
            t["tol"] = rng.choice([5, 30, 60, 300])
        if rng.random() < 0.09:
            t["cache"] = "testdata"
        self.tests[tid] = t
        return t

    def build_tests(self):
        rng = self.rng
        tags = {"fs": 0.55, "bigfs": 0.15, "net": 0.12, "https": 0.06, "time": 0.1, "bigmem": 0.1}
        n_unit = rng.randint(40, 160)
        mods = [word(rng) for _ in range(max(4, n_unit // 8))]
        self.unit = []
        for i in range(n_unit):
            tid = f"tests/unit/test_{rng.choice(mods)}.py::test_{word(rng, 3)}_{i}"
            self.unit.append(self.new_test(tid, "unit", rng, {**tags, "fs": 0.35, "bigfs": 0.05})["id"])
        # integration: shards for static pools, parallel groups for pods
        static = [p for p in self.pools.values() if p["kind"] == "static" and p["shards"]]
        n_groups = static[0]["shards"] if static else rng.choice([2, 3])
        self.integ: list[list[str]] = []
        for g in range(n_groups):
            grp = []
            area = AREAS[(g * 7 + self.seed) % len(AREAS)]
            # the last shard holds the slow, heavy tests
            heavy = g == n_groups - 1
            for i in range(rng.randint(15, 45)):
                tid = f"tests/integration/{area}/test_{word(rng)}.py::test_{word(rng, 3)}_{i}"
                t = self.new_test(
                    tid,
                    f"integration-{g + 1}",
                    rng,
                    {**tags, "fs": 0.75, "bigfs": 0.3, "bigmem": 0.25 if heavy else 0.08},
                )
                if heavy:
                    t["dur"] *= 4
                    if rng.random() < 0.25:  # slow e2e-ish tests fail now and then on any runner
                        t["base"] = rng.uniform(0.003, 0.012)
                grp.append(tid)
            self.integ.append(grp)
        ids = list(self.tests)
        cand = [t for t in ids if not self.tests[t]["skip"]]
        # genuinely flaky, spread over every runner that runs it
        for tid in rng.sample(cand, rng.randint(1, 3)):
            t = self.tests[tid]
            t["label"], t["kind"], t["rate"] = "flaky", "spread", rng.uniform(0.04, 0.18)
        # a flaky test on one static shard only
        if static:
            grp = rng.choice(self.integ)
            tid = rng.choice([x for x in grp if self.tests[x]["label"] == "healthy"])
            t = self.tests[tid]
            t["label"], t["kind"], t["rate"] = "flaky", "one-shard", rng.uniform(0.06, 0.2)
        # broken from some time on (sometimes fixed later by a commit)
        if rng.random() < 0.85:
            tid = rng.choice([x for x in cand if self.tests[x]["label"] == "healthy"])
            t = self.tests[tid]
            t["label"], t["kind"] = "broken", "broken"
            t["broken_from"] = self.start + self.days * DAY * rng.uniform(0.15, 0.8)
            t["broken_to"] = (t["broken_from"] + rng.uniform(4, 20) * H) if rng.random() < 0.35 else None
        # platform-only failure: a cross-platform unit test failing on one platform only
        plats = {p["platform"] for p in self.pools.values()}
        if len(plats) > 1:
            other = sorted(plats - {"linux-x64"})
            tid = rng.choice(
                [x for x in self.unit if self.tests[x]["label"] == "healthy" and not self.tests[x]["skip"]]
            )
            t = self.tests[tid]
            t["label"], t["kind"], t["platform"] = "platform", "platform", rng.choice(other)
            t["rate"] = rng.uniform(0.85, 1.0)

    # ------------------------------------------------------------------ faults
    def static_units(self, pool=None, agent=None):
        return [
            u
            for u in self.units.values()
            if u["kind"] == "static"
            and (pool is None or u["pool"] == pool)
            and (agent is None or u["agent"] == agent)
        ]

    def when(self, pos, dur):
        """onset/end for a fault: pos start|mid|late, dur short|long."""
        rng = self.rng
        span = self.end - self.start
        if pos == "start":
            onset = self.start - rng.uniform(1, 30) * H
        elif pos == "late":
            onset = self.end - rng.uniform(3, 9) * H
        else:
            onset = self.start + span * rng.uniform(0.25, 0.7)
        if pos == "late":
            return onset, None
        if pos == "start" and dur == "short":
            return onset, self.start + rng.uniform(3, 8) * H
        e = onset + (rng.uniform(3, 8) * H if dur == "short" else rng.uniform(1, 3) * DAY)
        return onset, (e if e < self.end - 1 * H else None)

    def build_faults(self):
        rng = self.rng
        catalogue = [
            "fulldisk",
            "clockskew",
            "cachepoison",
            "slowdisk",
            "badimage",
            "memhog",
            "readonly",
            "twosick",
            "badnic",
            "hostdisk",
            "hostmem",
        ]
        eph_hosts = [u for u in self.units.values() if u["kind"] == "ephemeral"]
        statics = self.static_units()
        # seeds 701-716 cover every case between them; other seeds rotate through the catalogue
        want = list(
            FORCED.get(
                self.seed,
                [catalogue[self.seed % len(catalogue)], catalogue[(self.seed * 5 + 3) % len(catalogue)]],
            )
        )
        n = rng.randint(2, 4)
        while len(want) < n + 1:
            want.append(rng.choice(catalogue))
        used: set[str] = set()
        for sort in want:
            if len(self.faults) >= n:
                break
            self.place(sort, statics, eph_hosts, used)
        # fleet-wide outage in most fleets
        if rng.random() < 0.7:
            st = self.start + (self.end - self.start) * rng.uniform(0.1, 0.9)
            # at a busy hour, usually
            lt = (st / H + self.tz) % 24
            if lt < 8 or lt > 19:
                st += ((13 - lt) % 24) * H
                if st > self.end - 2 * H:
                    st -= DAY
            st = max(st, self.start + 2 * H)
            self.outages.append(
                {
                    "id": "O1",
                    "sort": rng.choice(["package-mirror", "artifact-store", "dns"]),
                    "region": None,
                    "start": st,
                    "end": st + rng.uniform(25, 100) * 60,
                    "p": rng.uniform(0.7, 0.95),
                }
            )
        # red herrings: readings that look bad, no failures
        pool_units = [
            u
            for u in self.units.values()
            if u["agent"] and not any(u["id"] in f["units"] for f in self.faults)
        ]
        for j, u in enumerate(rng.sample(pool_units, min(len(pool_units), rng.randint(1, 3)))):
            sort = rng.choice(["rootfull", "clockwarn", "mempressure", "cachestale"])
            on = self.start + (self.end - self.start) * rng.uniform(0, 0.7)
            h = {
                "id": f"R{j + 1}",
                "sort": sort,
                "unit": u["id"],
                "onset": on,
                "end": None if rng.random() < 0.6 else on + rng.uniform(6, 36) * H,
                "offset": rng.choice([-1, 1]) * rng.uniform(1.3, 4.0),
            }
            self.herrings.append(h)
            u.setdefault("herrings", []).append(h)
        # a benign image rollout to a whole pool (red herring) in some fleets
        if rng.random() < 0.5:
            p = rng.choice(list(self.pools.values()))
            if not p["rollouts"]:
                at = self.start + (self.end - self.start) * rng.uniform(0.2, 0.8)
                img = f"{p['base_img']}-2026.12.{rng.randint(1, 3)}"
                self.rollout(p, p["units"], at, img, spread=rng.uniform(0.5, 3) * H)

    def rollout(self, pool, units, at, img, spread):
        rng = self.rng
        pool["rollouts"].append((at, img, list(units)))
        for uid in units:
            u = self.units[uid]
            t = at + rng.uniform(0, spread)
            if u["kind"] == "static":
                u["images"].append((t, img))
                u["reboots"].append(t)
            else:
                u.setdefault("pod_images", []).append((t, img))

    def image_of(self, u, t):
        img = u["images"][0][1]
        for at, i in u["images"]:
            if at <= t:
                img = i
        return img

    def place(self, sort, statics, eph, used):
        rng = self.rng
        pos = rng.choice(["start", "mid", "mid", "late"])
        dur = rng.choice(["short", "long"])
        strength = rng.choice(["strong", "moderate"])
        if not statics and sort != "badimage":  # only ephemeral hosts: a host's fault of the same kind
            sort = {
                "fulldisk": "hostdisk",
                "slowdisk": "hostdisk",
                "readonly": "hostdisk",
                "memhog": "hostmem",
                "badnic": "clockskew",
                "twosick": "hostmem",
            }.get(sort, sort)
        free = [u for u in statics if u["id"] not in used]
        # a third of the static runners sick at once at most (two in any fleet)
        room = max(2, len(statics) // 3) - sum(1 for u in statics if u["id"] in used)
        if room < (2 if sort == "twosick" else 1):
            free = []
        # at most half of the ephemeral hosts sick at once
        free_eph = (
            [u for u in eph if u["id"] not in used]
            if sum(1 for u in eph if u["id"] in used) + 1 <= len(eph) // 2
            else []
        )

        def add(sortname, units, kind, entity, dims, states, **kw):
            onset, end = kw.pop("when", None) or self.when(pos, dur)
            f = {
                "id": f"E{len(self.faults) + 1}",
                "sort": sortname,
                "units": units,
                "kind": kind,
                "entity": entity,
                "dims": dims,
                "states": states,
                "onset": onset,
                "end": end,
                "strength": kw.pop("strength", strength),
                "gradual": False,
                "note": "",
                "pos": pos,
                **kw,
            }
            self.faults.append(f)
            used.update(units)
            for uid in units:
                if uid in self.units:
                    self.units[uid].setdefault("faults", []).append(f)
            return f

        if sort in ("hostdisk", "hostmem") or (sort in ("clockskew", "cachepoison") and not free):
            if not free_eph:
                if not free:
                    return
                sort = rng.choice(["fulldisk", "memhog"])
            else:
                u = rng.choice(free_eph)
                if sort == "hostmem":
                    add(
                        "hostmem",
                        [u["id"]],
                        "machine",
                        u["machine"],
                        ["memory"],
                        ["sick"],
                        note="ephemeral host: memory exhausted by a leaking daemonset; pods OOM-killed",
                    )
                elif sort == "hostdisk":
                    add(
                        "hostdisk",
                        [u["id"]],
                        "machine",
                        u["machine"],
                        ["disk"],
                        ["sick"],
                        note="ephemeral host: container storage full",
                    )
                elif sort == "clockskew":
                    add(
                        "clockskew",
                        [u["id"]],
                        "machine",
                        u["machine"],
                        ["clock"],
                        ["sick"],
                        skew=rng.choice([-1, 1]) * rng.uniform(40, 400),
                        note="ephemeral host clock skew",
                    )
                else:
                    add(
                        "cachepoison",
                        [u["id"]],
                        "machine",
                        u["machine"],
                        ["cache"],
                        ["sick"],
                        note="host-mounted cache poisoned",
                    )
                return
        if sort == "badimage":
            pools = [p for p in self.pools.values() if len(p["units"]) >= 2 and not p["rollouts"]]
            if not pools:
                return
            p = rng.choice(pools)
            onset, end = self.when(pos if pos != "start" else "mid", dur)
            bad = f"{p['base_img']}-2026.12.{rng.randint(4, 9)}"
            if p["kind"] == "static":
                cands = [uid for uid in p["units"] if uid not in used]
                m = max(1, min(len(cands) - 1, round(len(p["units"]) * rng.uniform(0.3, 0.6))))
                if m < 1 or not cands:
                    return
                units = rng.sample(cands, m)
                self.rollout(p, units, onset, bad, spread=rng.uniform(0.2, 1.5) * H)
                if end is not None:
                    for uid in units:  # rolled back
                        u = self.units[uid]
                        u["images"].append((end + rng.uniform(0, 0.5) * H, p["image0"]))
                        u["reboots"].append(u["images"][-1][0])
                    end = max(self.units[uid]["images"][-1][0] for uid in units)
            else:
                units = list(p["units"])  # a canary share of new pods, on every host
                p["canary"] = (onset, end, bad, rng.uniform(0.3, 0.6))
            before = set(used)
            f = add(
                "badimage",
                units,
                "image",
                bad,
                ["unknown"],
                ["sick", "suspect"],
                when=(onset, end),
                pool=p["name"],
                note=f"bad image rolled to part of pool {p['name']} (CA bundle missing)",
            )
            if p["kind"] == "ephemeral":  # a canary share of pods: the hosts stay free for their own faults
                used.intersection_update(before)
            f["static_units"] = p["kind"] == "static"
            return
        if sort == "twosick":
            pools = sorted({u["pool"] for u in free}, key=lambda pn: len(self.pools[pn]["units"]))
            pools = [
                pn
                for pn in pools
                if len(self.pools[pn]["units"]) <= 6
                and sum(1 for u in free if u["pool"] == pn and u["agent"]) >= 2
            ]
            if not pools:
                pools = [
                    pn
                    for pn in {u["pool"] for u in free}
                    if sum(1 for u in free if u["pool"] == pn and u["agent"]) >= 2
                ]
                if not pools:
                    return
            pn = pools[0]
            a, b = rng.sample([u for u in free if u["pool"] == pn and u["agent"]], 2)
            onset, end = self.when(pos if pos != "late" else "mid", dur)
            s1, s2 = rng.sample(["fulldisk", "clockskew", "memhog"], 2)
            for u, s, d in ((a, s1, 0.0), (b, s2, rng.uniform(-1, 2.5) * H)):
                dims = {"fulldisk": ["disk"], "clockskew": ["clock"], "memhog": ["memory"]}[s]
                e2 = None if end is None else max(end, onset + d + rng.uniform(3, 6) * H)
                add(
                    s,
                    [u["id"]],
                    "runner",
                    u["id"],
                    dims,
                    ["sick"],
                    when=(onset + d, e2 if e2 is None or e2 < self.end - H else None),
                    skew=rng.choice([-1, 1]) * rng.uniform(40, 400),
                    note=f"two sick at once in pool {pn}",
                )
            return
        if not free:
            return
        if sort == "readonly":
            cands = [u for u in free if not u["agent"]] or free
            u = rng.choice(cands)
            u["agent"] = False
            add(
                "readonly",
                [u["id"]],
                "runner",
                u["id"],
                ["unknown", "disk"],
                ["suspect"],
                strength="strong",
                note="no agent: work filesystem remounted read-only after I/O errors",
            )
            return
        cands = [u for u in free if u["agent"]]
        if not cands:
            return
        if sort == "fulldisk":
            # the story: a runner of one shard with a full work disk
            sh = [u for u in cands if u["shard"]]
            u = rng.choice(sh or cands)
            add("fulldisk", [u["id"]], "runner", u["id"], ["disk"], ["sick"], note="work disk full")
        elif sort == "clockskew":
            u = rng.choice(cands)
            add(
                "clockskew",
                [u["id"]],
                "runner",
                u["id"],
                ["clock"],
                ["sick"],
                skew=rng.choice([-1, 1]) * rng.uniform(40, 400),
                note="clock stepped (VM resume, ntpd stopped)",
            )
        elif sort == "cachepoison":
            u = rng.choice(cands)
            add(
                "cachepoison",
                [u["id"]],
                "runner",
                u["id"],
                ["cache"],
                ["sick"],
                note="truncated testdata download",
            )
        elif sort == "slowdisk":
            u = rng.choice(cands)
            fill = rng.uniform(0.8, 2.5) * DAY
            full = self.start + (self.end - self.start) * rng.uniform(0.55, 0.95)
            fill = min(fill, full - self.start + 12 * H)
            onset = full - fill * 0.12  # failures begin in the last ~12 % of the fill
            end = None
            if rng.random() < 0.4 and full + 6 * H < self.end - 2 * H:
                end = full + rng.uniform(2, 10) * H
            f = add(
                "slowdisk",
                [u["id"]],
                "runner",
                u["id"],
                ["disk"],
                ["sick"],
                when=(onset, end),
                fill_start=full - fill,
                full=full,
                note="work disk filling over days (leaked workspaces)",
            )
            f["gradual"] = True
        elif sort == "memhog":
            u = rng.choice(cands)
            add(
                "memhog",
                [u["id"]],
                "runner",
                u["id"],
                ["memory"],
                ["sick"],
                note="leaked processes hold memory",
            )
        elif sort == "badnic":
            u = rng.choice(cands)
            add(
                "badnic",
                [u["id"]],
                "runner",
                u["id"],
                ["unknown"],
                ["sick", "suspect"],
                note="NIC dropping packets (readings fine)",
            )

    # ------------------------------------------------------------------ failure model
    def fault_p(self, f, t, test, u, img):
        """Probability that fault f fails this execution, and its message; None if it does not apply."""
        if t < f["onset"] or (f["end"] is not None and t >= f["end"]):
            return None
        s, tags, strong = f["sort"], test["tags"], f["strength"] == "strong"
        if s in ("fulldisk", "hostdisk"):
            if strong:
                p = 0.9 if "fs" in tags else (0.15 if "bigfs" in tags else 0.0)
                p = max(p, 0.9 if "bigfs" in tags else 0.0)
            else:
                p = 0.75 if "bigfs" in tags else 0.0
            return p, "OSError: [Errno 28] No space left on device"
        if s == "slowdisk":
            free = self.slow_free(f, t)
            if free >= 0.02:
                return None
            sev = min(1.0, (0.02 - free) / 0.02)
            p = (0.9 * sev if "bigfs" in tags else 0.0) + (0.7 * sev * sev if "fs" in tags else 0.0)
            return min(p, 0.92), "OSError: [Errno 28] No space left on device"
        if s == "readonly":
            return (
                0.95 if ("fs" in tags or "bigfs" in tags) else 0.0
            ), "OSError: [Errno 30] Read-only file system"
        if s == "clockskew":
            tol = test["tol"]
            if tol is not None and abs(f["skew"]) > tol:
                return 0.9, f"AssertionError: token not yet valid (iat {int(abs(f['skew']))} s in the future)"
            if "https" in tags and abs(f["skew"]) > 300 and strong:
                return 0.5, "ssl.SSLCertVerificationError: certificate is not yet valid"
            return None
        if s == "cachepoison":
            return (
                0.95 if test["cache"] == "testdata" else 0.0
            ), "zlib.error: Error -3 while decompressing data"
        if s in ("memhog", "hostmem"):
            p = 0.75 if "bigmem" in tags else (0.06 if strong else 0.01)
            return p, "Killed (OOM): exit code 137"
        if s == "badnic":
            return (0.55 if "net" in tags else 0.0) * (
                1.0 if strong else 0.5
            ), "ConnectionResetError: [Errno 104]"
        if s == "badimage":
            if img != f["entity"]:
                return None
            return (
                0.95 if "https" in tags else (0.3 if "net" in tags else 0.0)
            ), "ssl.SSLCertVerificationError: unable to get local issuer certificate"
        return None

    def slow_free(self, f, t):
        u = self.units[f["units"][0]]
        if t < f["fill_start"]:
            return u["work_free"]
        if f["end"] is not None and t >= f["end"]:
            return u["work_free"]
        return max(0.0005, u["work_free"] * (1 - (t - f["fill_start"]) / (f["full"] - f["fill_start"])))

    # ------------------------------------------------------------------ traffic
    def run(self, out: Path):
        rng = self.rng
        results = []  # (t, record, job_end, cause)
        jobs_by_cause: dict[str, set] = defaultdict(set)
        pools = self.pools
        static_sharded = [p for p in pools.values() if p["kind"] == "static" and p["shards"]]
        eph_pools = [p for p in pools.values() if p["kind"] == "ephemeral"]
        other_static = [p for p in pools.values() if p["kind"] == "static" and not p["shards"]]
        # results one pipeline produces, roughly, to pick a rate for the target size
        per_pipe = len(self.unit) * 0.75 + sum(len(g) for g in self.integ)
        per_pipe += sum(len(self.unit) * 0.5 for _ in other_static)
        if self.shape == "mixed":
            per_pipe += len(self.unit) * 0.3
        target = math.exp(rng.uniform(math.log(5000), math.log(60000)))
        if not self.busy:
            target = min(target, rng.uniform(5000, 20000))
        # diurnal weight integral
        wsum = 0.0
        t = self.start
        while t < self.end:
            wsum += self.diurnal(t) * 0.25
            t += 0.25 * H
        nightly = self.days  # about one nightly per day
        lam = max(0.15, (target / per_pipe - nightly) / max(wsum, 1.0))
        self.lam = lam
        counter = [0]
        job_n = [0]

        def pick_static(pool, shard=None, t=0.0):
            us = [self.units[x] for x in pool["units"] if shard is None or self.units[x]["shard"] == shard]
            u = min(us, key=lambda u: (max(u["free_at"], t), rng.random()))
            return u

        def run_job(u, tests, t0, run_id, attempt, commit, pod=None):
            job_n[0] += 1
            job = f"{rng.randint(100000, 999999)}{job_n[0]}"
            t = t0 + rng.uniform(20, 300)  # checkout, setup
            pool = pools[u["pool"]]
            if pod is None:
                img = self.image_of(u, t0)
                rid, mach, eph = u["id"], u["machine"], False
            else:
                img = pod["image"]
                rid, mach, eph = pod["id"], u["machine"], True
            ident = {
                "id": rid,
                "name": rid,
                "machine": mach,
                "pool": u["pool"],
                "image": img,
                "labels": ["self-hosted", pool["platform"], u["pool"]],
                "provider": self.provider,
                "ephemeral": eph,
            }
            if u["shard"]:
                ident["shard"] = u["shard"]
            failed_any = False
            recs = []
            order = list(tests)
            rng.shuffle(order)
            for tid in order:
                test = self.tests[tid]
                dur = max(0.01, test["dur"] * rng.uniform(0.6, 1.6))
                outcome, cause, msg = "passed", None, None
                if test["skip"]:
                    outcome = "skipped"
                else:
                    for o in self.outages:
                        if o["start"] <= t < o["end"] and "net" in test["tags"] and rng.random() < o["p"]:
                            outcome, cause = "error", o["id"]
                            msg = {
                                "package-mirror": "pip: HTTP 503 from mirror",
                                "dns": "socket.gaierror: [Errno -3] Temporary failure in name resolution",
                                "artifact-store": "HTTP 502 Bad Gateway from artifacts",
                            }[o["sort"]]
                            break
                    if cause is None:
                        for f in u.get("faults", []):
                            r = self.fault_p(f, t, test, u, img)
                            if r and r[0] > 0 and rng.random() < r[0]:
                                outcome, cause, msg = (
                                    ("error" if "Killed" in r[1] else "failed"),
                                    f["id"],
                                    r[1],
                                )
                                break
                    if cause is None:
                        lab = test["label"]
                        if (
                            lab == "broken"
                            and t >= test["broken_from"]
                            and (test["broken_to"] is None or t < test["broken_to"])
                            and rng.random() < 0.97
                        ):
                            outcome, cause, msg = "failed", "broken", "AssertionError: expected 200, got 500"
                        elif (
                            lab == "platform"
                            and pool["platform"] == test["platform"]
                            and rng.random() < test["rate"]
                        ):
                            outcome, cause, msg = (
                                "failed",
                                "platform",
                                "AssertionError: path separator / line ending",
                            )
                        elif lab == "flaky" and rng.random() < test["rate"]:
                            outcome, cause, msg = (
                                "failed",
                                "flaky",
                                rng.choice(
                                    [
                                        "TimeoutError: waited 5 s for event",
                                        "AssertionError: race: got 2 items, want 3",
                                        "ConnectionRefusedError: port not ready",
                                    ]
                                ),
                            )
                        elif test["base"] and rng.random() < test["base"]:
                            outcome, cause, msg = "failed", "base", "AssertionError"
                rec = {
                    "test_id": tid,
                    "outcome": outcome,
                    "time": t,
                    "duration_s": round(dur, 3),
                    "job_id": job,
                    "run_id": run_id,
                    "attempt": attempt,
                    "commit": commit,
                    "runner": ident,
                }
                if msg:
                    rec["message"] = msg
                recs.append((rec, cause))
                if cause:
                    failed_any = True
                    jobs_by_cause[cause].add(job)
                t += dur
            job_end = t + rng.uniform(5, 60)
            for rec, cause in recs:
                results.append((rec, job_end, cause))
            if pod is None:
                u["free_at"] = job_end
            return failed_any, job_end

        def pipeline(t, full, run_id, commit):
            jobs = []
            unit_sel = self.unit if full else [x for x in self.unit if rng.random() < rng.uniform(0.5, 0.95)]
            if static_sharded:
                p = static_sharded[0]
                for g in range(p["shards"]):
                    jobs.append((p, str(g + 1), self.integ[g]))
                jobs.append((p, None, unit_sel))
                for q in other_static:
                    if full or rng.random() < 0.6:
                        jobs.append(
                            (
                                q,
                                None,
                                unit_sel if q["platform"] != "macos" else unit_sel[: len(unit_sel) // 2],
                            )
                        )
                for q in eph_pools:
                    jobs.append((q, None, [x for x in unit_sel if rng.random() < 0.35]))
            else:
                for q in eph_pools:
                    if q["platform"] != "linux-x64":
                        if full or rng.random() < 0.5:
                            jobs.append((q, None, unit_sel))
                        continue
                    half = len(unit_sel) // 2
                    jobs.append((q, None, unit_sel[:half]))
                    jobs.append((q, None, unit_sel[half:]))
                    for g in self.integ:
                        jobs.append((q, None, g))
            for q, shard, tests in jobs:
                if not tests:
                    continue
                attempt = 1
                t0 = t + rng.uniform(0, 120)
                while True:
                    if q["kind"] == "static":
                        u = pick_static(q, shard, t0)
                        start = max(t0, u["free_at"]) + rng.uniform(1, 20)
                        failed, jend = run_job(u, tests, start, run_id, attempt, commit)
                    else:
                        u = self.units[rng.choice(q["units"])]
                        counter[0] += 1
                        pid = f"{u['id']}-pod-{hexid(self.seed, counter[0])[:6]}"
                        pod = {"id": pid, "image": self.pod_image(q, u, t0)}
                        failed, jend = run_job(
                            u, tests, t0 + rng.uniform(5, 60), run_id, attempt, commit, pod
                        )
                    if failed and attempt < 3 and rng.random() < 0.3 and jend < self.end:
                        attempt += 1
                        t0 = jend + rng.uniform(60, 900)
                        continue
                    break

        # triggers
        t = self.start - 2 * H
        n_pipes = 0
        main_commit = hexid(self.seed, "main", 0)[:12]
        next_nightly = self.next_local(self.start - 2 * H, 2.0)
        while t < self.end:
            step = rng.expovariate(1.0)
            # thinning on the diurnal curve
            t += step / lam * H
            if t >= self.end:
                break
            while next_nightly <= t:
                if next_nightly >= self.start - 2 * H:
                    n_pipes += 1
                    pipeline(next_nightly, True, f"nightly-{hexid(self.seed, next_nightly)[:8]}", main_commit)
                next_nightly += DAY
            if rng.random() > self.diurnal(t):
                continue
            n_pipes += 1
            if rng.random() < 0.25:
                main_commit = hexid(self.seed, "main", t)[:12]
                commit, full = main_commit, True
            else:
                commit, full = hexid(self.seed, "pr", t)[:12], False
            pipeline(t, full, f"run-{hexid(self.seed, 'run', n_pipes)[:10]}", commit)
        # keep only what happened inside the window
        results = [r for r in results if self.start <= r[0]["time"] < self.end]
        self.n_pipes = n_pipes
        return results

    def pod_image(self, pool, host, t):
        img = pool["image0"]
        for at, i in host.get("pod_images", []):
            if at <= t:
                img = i
        c = pool.get("canary")
        if c and c[0] <= t and (c[1] is None or t < c[1]) and self.rng.random() < c[3]:
            img = c[2]
        return img

    def diurnal(self, t):
        lt = (t / H + self.tz) % 24
        wd = datetime.fromtimestamp(t + self.tz * H, UTC).weekday()
        base = 0.12 if lt < 7 else (0.6 if lt < 9 else (1.0 if lt < 18 else (0.45 if lt < 22 else 0.2)))
        if wd >= 5:
            base *= 0.25
        return base

    def next_local(self, t, hour):
        lt = (t / H + self.tz) % 24
        return t + ((hour - lt) % 24) * H

    # ------------------------------------------------------------------ agent readings
    def readings(self, u, t, boot):
        rng = self.rng
        faults = [f for f in u.get("faults", []) if f["onset"] <= t and (f["end"] is None or t < f["end"])]
        sorts = {f["sort"]: f for f in faults}
        herr = {
            h["sort"]: h
            for h in u.get("herrings", [])
            if h["onset"] <= t and (h["end"] is None or t < h["end"])
        }
        day = math.sin((t / DAY) * 2 * math.pi + int(hexid(u["id"]), 16) % 7)
        gib = 1024**3
        # disk
        work_total = 200 * gib
        wf = min(0.95, max(0.05, u["work_free"] + 0.04 * day + rng.gauss(0, 0.01)))
        for f in u.get("faults", []):
            if f["sort"] == "slowdisk":
                wf = min(wf, self.slow_free(f, t)) if t >= f["fill_start"] else wf
        if "fulldisk" in sorts or "hostdisk" in sorts:
            f = sorts.get("fulldisk") or sorts["hostdisk"]
            wf = 0.0004 if f["strength"] == "strong" else 0.006
        rf = min(0.9, max(0.06, u["root_free"] + rng.gauss(0, 0.003)))
        if "rootfull" in herr:
            rf = 0.035 + rng.uniform(-0.01, 0.01)
        work_path = (
            "/var/lib/containerd"
            if u["kind"] == "ephemeral"
            else ("/Users/ci/work" if self.pools[u["pool"]]["platform"] == "macos" else "/home/runner/work")
        )
        paths = []
        status, reason = "ok", None
        for path, fr, tot in (("/", rf, 60 * gib), (work_path, wf, work_total), ("/tmp", rf, 60 * gib)):
            fb = int(tot * fr)
            paths.append(
                {
                    "path": path,
                    "mount_point": "/" if path != work_path else path,
                    "device": "/dev/sda1" if path != work_path else "/dev/nvme1n1",
                    "total_bytes": tot,
                    "free_bytes": fb,
                    "free_ratio": round(fr, 5),
                    "inodes_total": 12_000_000,
                    "inodes_free": int(12_000_000 * min(0.99, fr + 0.3)),
                    "inodes_free_ratio": round(min(0.99, fr + 0.3), 4),
                    "read_only": False,
                    "write_probe_ok": path != work_path or fr > 0.0005,
                }
            )
            if fr < 0.05 or fb < gib:
                status, reason = "problem", "DiskFull"
        disk = {"check": "disk", "status": status, "reason": reason, "paths": paths}
        # memory
        tot = u["mem_gb"] * gib
        av = min(0.95, max(0.05, u["mem_avail"] + 0.08 * day + rng.gauss(0, 0.03)))
        psi_s, psi_f, oom = max(0.0, rng.gauss(0.5, 0.5)), max(0.0, rng.gauss(0.05, 0.05)), 0
        mstatus, mreason = "ok", None
        if "mempressure" in herr:
            psi_s, psi_f, av = rng.uniform(15, 35), rng.uniform(2, 8), rng.uniform(0.08, 0.15)
        if "memhog" in sorts or "hostmem" in sorts:
            f = sorts.get("memhog") or sorts["hostmem"]
            av = rng.uniform(0.01, 0.04)
            psi_s, psi_f = rng.uniform(30, 70), rng.uniform(12, 40)
            oom = int(rng.random() < (0.7 if f["strength"] == "strong" else 0.4)) * rng.randint(1, 4)
        if oom:
            mstatus, mreason = "problem", "OomKills"
        elif av < 0.05:
            mstatus, mreason = "problem", "MemoryLow"
        elif psi_f > 10:
            mstatus, mreason = "problem", "MemoryPressure"
        mem = {
            "check": "memory",
            "status": mstatus,
            "reason": mreason,
            "total_bytes": tot,
            "available_bytes": int(tot * av),
            "available_ratio": round(av, 4),
            "swap_used_bytes": 0,
            "psi_some_avg10": round(psi_s, 2),
            "psi_some_avg60": round(psi_s * 0.8, 2),
            "psi_full_avg10": round(psi_f, 2),
            "psi_full_avg60": round(psi_f * 0.8, 2),
            "oom_kills": oom,
        }
        # clock
        off = rng.gauss(0, 0.004)
        if "clockwarn" in herr:
            off = herr["clockwarn"]["offset"] + rng.gauss(0, 0.05)
        if "clockskew" in sorts:
            off = sorts["clockskew"]["skew"] + rng.gauss(0, 0.2)
        servers = []
        for s in ("0.pool.ntp.org", "1.pool.ntp.org", "time.cloudflare.com"):
            if rng.random() < 0.02:
                servers.append({"server": s, "error": "timeout"})
            else:
                servers.append(
                    {
                        "server": s,
                        "offset_s": round(off + rng.gauss(0, 0.003), 4),
                        "delay_s": round(rng.uniform(0.005, 0.06), 4),
                        "stratum": rng.choice([1, 2, 2, 3]),
                    }
                )
        clock = {
            "check": "clock",
            "status": "problem" if abs(off) > 1 else "ok",
            "reason": "ClockSkew" if abs(off) > 1 else None,
            "offset_s": round(off, 4),
            "servers": servers,
        }
        # cache: testdata refreshed daily at 04:00 local (each runner within 90 min), toolchain stable
        refresh = self.next_local(t, 4.0) - DAY  # last 04:00 at or before t
        jitter = int(hexid(u["id"], "j"), 16) % 5400
        if t < refresh + jitter:
            refresh -= DAY
        version = int(refresh // DAY)
        # cachestale: an old toolchain copy, which no test depends on
        version_tc = "stale" if "cachestale" in herr else "v3"
        # the same downloaded test data on every platform: one digest fleet-wide per daily version
        td = "b2:" + hexid("testdata", version)
        if "cachepoison" in sorts:
            td = "b2:" + hexid("poison", u["id"], sorts["cachepoison"]["onset"])
        caches = [
            {
                "key": "testdata",
                "path": "/var/cache/ci/testdata",
                "digest": td,
                "files": 1843,
                "bytes": 734_003_200,
                "full_rehash": False,
            },
            {
                "key": "toolchain",
                "path": "/opt/toolchain",
                "digest": "b2:" + hexid("tc", u["pool"], version_tc),
                "files": 20411,
                "bytes": 2_100_000_000,
                "full_rehash": False,
            },
        ]
        cache = {"check": "cache", "status": "ok", "caches": caches}
        return [disk, mem, clock, cache]

    def reports(self):
        rng = self.rng
        agents = [u for u in self.units.values() if u["agent"]]
        n_target = rng.uniform(6000, 25000)
        interval = max(60.0, len(agents) * (self.end - self.start) / n_target)
        self.interval = interval
        out = []
        for u in agents:
            boot = hexid(u["id"], "boot", 0)
            seq = 0
            reboots = sorted(u["reboots"])
            bi = 0
            t = self.start - rng.uniform(0, interval)
            img_pool = self.pools[u["pool"]]
            while t < self.end:
                t += interval * rng.uniform(0.9, 1.1)
                if t >= self.end:
                    break
                while bi < len(reboots) and reboots[bi] <= t:
                    boot = hexid(u["id"], "boot", reboots[bi])
                    seq = 0
                    bi += 1
                if t < self.start:
                    continue
                img = self.image_of(u, t) if u["kind"] == "static" else img_pool["image0"]
                ident = {
                    "id": u["id"],
                    "name": u["id"],
                    "machine": u["machine"],
                    "pool": u["pool"],
                    "image": img,
                    "provider": self.provider,
                    "ephemeral": u["kind"] == "ephemeral",
                }
                if u["shard"]:
                    ident["shard"] = u["shard"]
                rep = {
                    "agent_id": u["id"],
                    "boot_id": boot,
                    "seq": seq,
                    "observed_at": t,
                    "runner": ident,
                    "readings": self.readings(u, t, boot),
                    "dropped": 0,
                    "agent_version": "0.9.2",
                }
                seq += 1
                out.append(rep)
        return out


def main() -> None:
    seed = int(sys.argv[1])
    out = Path(sys.argv[2])
    end_s = sys.argv[3] if len(sys.argv) > 3 else "2026-12-05T08:00:00Z"
    end = datetime.fromisoformat(end_s.replace("Z", "+00:00")).timestamp()
    out.mkdir(parents=True, exist_ok=True)
    fl = Fleet(seed, end)
    results = fl.run(out)
    reports = fl.reports()
    rng = random.Random(seed * 31 + 5)

    def fmt_time(t):
        if fl.time_fmt == "epoch":
            return round(t, 3)
        return iso(t, fl.tz if fl.time_fmt == "local" else 0)

    # ------------------------------------------------ history + feed
    events = []  # (event_t, arrive_t, channel, sender, json)
    for rec, job_end, _cause in results:
        r = dict(rec)
        r["time"] = fmt_time(rec["time"])
        events.append((rec["time"], job_end, "result", "ci", r))
    # one job in a hundred uploaded late (the uploader retried for a while)
    late_jobs = {r[0]["job_id"] for r in results if rng.random() < 0.0005}
    drop = None
    agent_units = [u for u in fl.units.values() if u["agent"]]
    if agent_units and rng.random() < 0.6:
        du = rng.choice(agent_units)
        ds = fl.start + (fl.end - fl.start) * rng.uniform(0.2, 0.8)
        drop = (du["id"], ds, ds + rng.uniform(1, 4) * H)
    for rep in reports:
        t = rep["observed_at"]
        arrive = t + rng.uniform(1, 40)
        if drop and rep["runner"]["id"] == drop[0] and drop[1] <= t < drop[2]:
            arrive = drop[2] + rng.uniform(5, 120)
        r = dict(rep)
        r["observed_at"] = iso(t, fl.tz if fl.time_fmt == "local" else 0)
        sender = rep["runner"]["id"]
        events.append((t, arrive, "report", sender, r))
    job_delay: dict[str, float] = {}
    with open(out / "history.ndjson", "w") as hist:
        for ev in sorted(events, key=lambda e: e[0]):
            rec = ev[4] if ev[2] == "result" else {"kind": "report", **ev[4]}
            hist.write(json.dumps(rec, separators=(",", ":")) + "\n")
    feed = []
    for ev in events:
        arrive = ev[1]
        if ev[2] == "result":
            jid = ev[4]["job_id"]
            if jid not in job_delay:
                job_delay[jid] = rng.uniform(5, 180) + (rng.uniform(2, 6) * H if jid in late_jobs else 0)
            arrive += job_delay[jid]
        feed.append((int(arrive * 1000), ev[2], ev[3], json.dumps(ev[4], separators=(",", ":"))))
    feed.sort(key=lambda x: x[0])
    with open(out / "feed.tsv", "w") as fh:
        for at, ch, sender, js in feed:
            fh.write(f"{at}\t{ch}\t{sender}\t{js}\n")

    # ------------------------------------------------ truth
    unit_of = {}
    for rec, _, _ in results:
        r = rec["runner"]
        unit_of[r["id"]] = r["machine"] if r["ephemeral"] else r["id"]
    fails = [(rec, cause) for rec, _, cause in results if rec["outcome"] in ("failed", "error")]
    with open(out / "failures.tsv", "w") as fh:
        fh.write("time\ttest_id\trunner\tmachine\tpool\timage\tcause\n")
        for rec, cause in sorted(fails, key=lambda x: x[0]["time"]):
            r = rec["runner"]
            fh.write(
                f"{iso(rec['time'])}\t{rec['test_id']}\t{r['id']}\t{r['machine']}\t{r['pool']}\t{r['image']}\t"
                f"{cause or 'unknown'}\n"
            )
    by_cause: dict[str, list] = defaultdict(list)
    for rec, cause in fails:
        by_cause[cause].append(rec)
    entities = []
    for f in fl.faults:
        fr = by_cause.get(f["id"], [])
        times = sorted(r["time"] for r in fr)
        n_tests = len({r["test_id"] for r in fr})
        n_jobs = len({r["job_id"] for r in fr})
        accept = [[f["kind"], f["entity"]]]
        dims = list(f["dims"])
        if f["sort"] == "cachepoison":
            pool = fl.units[f["units"][0]]["pool"]
            if sum(1 for x in fl.pools[pool]["units"] if fl.units[x]["agent"]) < 3:
                dims.append(
                    "unknown"
                )  # a pool of one or two reporting hosts holds no majority to differ from
        if f["kind"] == "runner":
            accept.append(["machine", fl.units[f["units"][0]]["machine"]])
        states = f["states"]
        onset = max(f["onset"], fl.start)
        runners = list(f["units"])
        if f["sort"] == "badimage":
            runners = sorted({unit_of[r["runner"]["id"]] for r in fr}) or runners
        entities.append(
            {
                "id": f["id"],
                "sort": f["sort"],
                "kind": f["kind"],
                "entity": f["entity"],
                "sick": True,
                "accept": accept,
                "accept_states": states,
                "expected_state": states[0],
                "dimensions": dims,
                "onset": iso(onset),
                "end": iso(f["end"]) if f["end"] is not None else None,
                "first_failure": iso(times[0]) if times else None,
                "last_failure": iso(times[-1]) if times else None,
                "failures": len(fr),
                "distinct_tests": n_tests,
                "jobs": n_jobs,
                "weak": len(fr) < 8 or n_tests < 4 or n_jobs < 3,
                "gradual": f["gradual"],
                "note": f["note"] + f" [{f['strength']}, {f['pos']}]",
                "runners": runners,
                "strength": f["strength"],
                "position": f["pos"],
            }
        )
    for h in fl.herrings:
        u = fl.units[h["unit"]]
        kind = "machine" if u["kind"] == "ephemeral" else "runner"
        entities.append(
            {
                "id": h["id"],
                "sort": h["sort"],
                "kind": kind,
                "entity": u["id"] if kind == "runner" else u["machine"],
                "sick": False,
                "accept": [],
                "accept_states": [],
                "expected_state": "healthy",
                "dimensions": [],
                "onset": iso(h["onset"]),
                "end": iso(h["end"]) if h["end"] else None,
                "first_failure": None,
                "last_failure": None,
                "failures": 0,
                "distinct_tests": 0,
                "jobs": 0,
                "weak": False,
                "gradual": False,
                "note": "bad-looking readings, no failures",
                "runners": [u["id"]],
            }
        )
    outages = []
    for o in fl.outages:
        fr = by_cause.get(o["id"], [])
        hosts = {r["runner"]["machine"] for r in fr}
        outages.append(
            {
                "id": o["id"],
                "sort": o["sort"],
                "region": o["region"],
                "start": iso(o["start"]),
                "end": iso(o["end"]),
                "failures": len(fr),
                "hosts": len(hosts),
                "weak": len(fr) < 10 or len(hosts) < 2,
                "allowed": False,
            }
        )
    # tests
    tstat: dict[str, dict] = {}
    for rec, _, cause in results:
        tid = rec["test_id"]
        s = tstat.setdefault(
            tid, {"runs": 0, "failures": 0, "own": 0, "causes": Counter(), "units": set(), "pools": set()}
        )
        if rec["outcome"] == "skipped":
            continue
        s["runs"] += 1
        s["units"].add(unit_of[rec["runner"]["id"]])
        s["pools"].add(rec["runner"]["pool"])
        if rec["outcome"] in ("failed", "error"):
            s["failures"] += 1
            s["causes"][cause] += 1
            if cause in ("flaky", "broken", "platform", "base"):
                s["own"] += 1
    tests = {}
    for tid, t in fl.tests.items():
        s = tstat.get(tid)
        if not s:
            continue
        lab = t["label"]
        accept = {"healthy": ["healthy"], "flaky": ["flaky"], "broken": ["broken"], "platform": ["platform"]}[
            lab
        ]
        own = s["causes"].get(lab, 0) if lab != "healthy" else s["causes"].get("base", 0)
        weak = lab != "healthy" and own < 5
        kind = t.get("kind", t["suite"])
        if lab == "healthy" and t["base"] > 0.0025:
            # a slow test failing 0.3-1.2 % at random on any runner: flaky, if rarely enough to pass for healthy
            lab, kind, accept, weak = "flaky", "lowrate", ["flaky", "healthy"], own < 5
        tests[tid] = {
            "label": lab,
            "kind": kind,
            "accept": accept,
            "runs": s["runs"],
            "failures": s["failures"],
            "own_failures": own,
            "base_rate": t.get("rate", t["base"]),
            "causes": dict(s["causes"]),
            "weak": weak,
            "n_runners": len(s["units"]),
            "pools": sorted(s["pools"]),
            "tags": sorted(t["tags"]),
        }
    meta = {}
    hosts = {}
    images_of = defaultdict(set)
    for rec, _, _ in results:
        images_of[unit_of[rec["runner"]["id"]]].add(rec["runner"]["image"])
    for u in fl.units.values():
        meta[u["id"]] = {
            "machine": u["machine"],
            "pool": u["pool"],
            "kind": u["kind"],
            "shard": u["shard"],
            "agent": u["agent"],
            "images": sorted(images_of.get(u["id"], {u["images"][0][1]})),
        }
        hosts.setdefault(u["machine"], []).append(u["id"])
    pools = {
        n: {"runners": p["units"], "kind": p["kind"], "platform": p["platform"], "shards": p["shards"]}
        for n, p in fl.pools.items()
    }
    agent_units = [u["id"] for u in fl.units.values() if u["agent"] and u["kind"] == "static"]
    token_runners = sorted(rng.sample(agent_units, min(3, len(agent_units))))
    span = fl.end - fl.start
    cut = fl.start + span * rng.uniform(0.3, 0.6)
    uniq_rep = len(reports)
    truth = {
        "seed": seed,
        "shape": fl.shape,
        "days": fl.days,
        "start": iso(fl.start),
        "end": iso(fl.end),
        "tz_offset_h": fl.tz,
        "time_format": fl.time_fmt,
        "busy": fl.busy,
        "pipelines_per_hour": round(fl.lam, 2),
        "pipelines": fl.n_pipes,
        "report_interval_s": round(fl.interval, 1),
        "pools": pools,
        "hosts": hosts,
        "runners_meta": meta,
        "ephemeral_machines": [u["machine"] for u in fl.units.values() if u["kind"] == "ephemeral"],
        "entities": entities,
        "outages": outages,
        "tests": tests,
        "agent_token_runners": token_runners,
        "agent_drop": [drop[0], iso(drop[1]), iso(drop[2])] if drop else None,
        "feed": {
            "backfill_until_ms": int(cut * 1000),
            "unique_results": len(results),
            "unique_reports": uniq_rep,
        },
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    n_f = len(fails)
    print(
        f"seed {seed}: {fl.shape}, {fl.days} d, {len(fl.pools)} pools, {len(fl.units)} units "
        f"({sum(1 for u in fl.units.values() if u['kind'] == 'ephemeral')} ephemeral hosts), "
        f"{len(results)} results ({n_f} failing), {len(reports)} reports, {fl.n_pipes} pipelines "
        f"({fl.lam:.1f}/h peak); faults: "
        + ", ".join(
            f"{e['id']}:{e['sort']}/{e['kind']} {e['entity']} {e['failures']}f/{e['distinct_tests']}t"
            f"{' weak' if e['weak'] else ''}"
            for e in entities
            if e["sick"]
        )
        + "; outages: "
        + ", ".join(f"{o['sort']} {o['failures']}f" for o in outages)
        + "; herrings: "
        + ", ".join(f"{h['sort']}@{h['unit']}" for h in fl.herrings),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
