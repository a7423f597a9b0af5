"""Generate one heldout8 fleet: gen.py SEED OUTDIR END_TIME.

Medium fleets (25-80 runners, 3-8 days, 30k-120k results) full of red herrings and of true faults that
overlap them in time. Writes OUTDIR/feed.tsv (arrival ms, channel, sender, record: what the feeder sends
in arrival order), OUTDIR/history.ndjson (every result and report, for a reader), OUTDIR/failures.tsv
(every failure with its true cause) and OUTDIR/truth.json. See README.md.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import random
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

H = 3600.0
DAY = 86400.0
GiB = 1 << 30


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def h8(*parts) -> str:
    return hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=16).hexdigest()


class Fleet:
    def __init__(self, seed: int, end: float):
        self.seed = seed
        self.rng = rng = random.Random(seed)
        self.end = end
        self.days = rng.choice([3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8])
        self.start = end - self.days * DAY
        self.tz = rng.choice([-8, -7, -5, -3, 0, 1, 2, 3, 5.5, 8, 9])
        self.tfmt = rng.choice(["Z", "local", "epoch"])
        self.target = rng.randint(30_000, 110_000)
        self.entities: list[dict] = []
        self.outages: list[dict] = []
        self.build_pools()
        self.build_tests()

    # ------------------------------------------------------------------ fleet layout
    def build_pools(self):
        rng = self.rng
        total = rng.randint(25, 80)
        n_k8s = rng.randint(3, 5)
        has_mac = rng.random() < 0.6
        n_mac = rng.randint(3, 5) if has_mac else 0
        n_arm = max(5, int((total - n_k8s - n_mac) * rng.uniform(0.12, 0.2)))
        n_lin = total - n_k8s - n_mac - n_arm
        self.meta: dict[str, dict] = {}
        self.hosts: dict[str, list[str]] = {}
        self.pools: dict[str, dict] = {}
        self.img = {
            "linux": f"ubuntu-22.04-ci-2026.{rng.randint(10, 11)}.{rng.randint(1, 9)}",
            "arm": f"ubuntu-arm64-ci-2026.{rng.randint(10, 11)}.{rng.randint(1, 9)}",
            "mac": "macos-14-xcode15.4",
            "k8s": f"ghcr.io/acme/ci-runner:2026.11.{rng.randint(1, 20)}",
        }
        # linux: one runner per VM, and two bare-metal hosts running two runners each
        lin = []
        n_bm = 2
        for i in range(n_lin - 2 * n_bm):
            r = f"linux-{i + 1:02d}"
            self.add_runner(r, f"linux-vm-{i + 1:02d}", "linux")
            lin.append(r)
        for b in range(n_bm):
            m = f"bm-{b + 1:02d}"
            for s in "ab":
                r = f"linux-bm{b + 1:02d}{s}"
                self.add_runner(r, m, "linux")
                lin.append(r)
        for i in range(n_arm):
            self.add_runner(f"arm-{i + 1:02d}", f"arm-vm-{i + 1:02d}", "arm")
        for i in range(n_mac):
            self.add_runner(f"mac-{i + 1:02d}", f"mac-mini-{i + 1:02d}", "mac")
        self.k8s_hosts = [f"k8s-node-{c}" for c in "abcdefgh"[:n_k8s]]
        for h in self.k8s_hosts:
            self.hosts[h] = [h]
            self.meta[h] = {
                "machine": h,
                "pool": "k8s",
                "images": [self.img["k8s"]],
                "agent": True,
                "ephemeral": True,
                "from": self.start,
                "offline": [],
            }
        self.pools["k8s"] = {"runners": list(self.k8s_hosts), "ephemeral": True}
        # agents: about 10 % of linux VMs without one, half the macs
        for r, d in self.meta.items():
            if d["pool"] == "linux" and "bm" not in r and rng.random() < 0.1:
                d["agent"] = False
            if d["pool"] == "mac" and rng.random() < 0.5:
                d["agent"] = False
        self.lin = lin
        self.shards = rng.randint(3, 5)
        vms = [r for r in lin if "bm" not in r]
        self.hard = vms[-1]  # the runner pinned to the slow integration shard
        self.meta[self.hard]["agent"] = True
        self.busy = vms[0]  # a bigger VM the scheduler prefers
        self.meta[self.busy]["agent"] = True
        self.meta[self.busy]["weight"] = 6.0
        self.meta[self.busy]["speed"] = 0.6

    def add_runner(self, r, m, pool):
        self.meta[r] = {
            "machine": m,
            "pool": pool,
            "images": [self.img[pool]],
            "agent": True,
            "ephemeral": False,
            "from": self.start,
            "offline": [],
            "weight": 1.0,
            "speed": 1.0,
        }
        self.hosts.setdefault(m, []).append(r)
        self.pools.setdefault(pool, {"runners": []})["runners"].append(r)

    # ------------------------------------------------------------------ tests
    def build_tests(self):
        rng = self.rng
        self.tests: dict[str, dict] = {}
        mods_u = [
            "api",
            "models",
            "parser",
            "cli",
            "storage",
            "auth",
            "render",
            "sched",
            "cache",
            "util",
            "http",
        ]
        mods_i = ["db", "upload", "sync", "e2e_login", "billing", "search", "export", "webhooks", "ingest"]
        n_unit = rng.randint(150, 300)
        n_int = rng.randint(80, 160)

        def mk(tid, suite, shard=None):
            x = rng.random
            tags = set()
            if x() < (0.25 if suite == "unit" else 0.45):
                tags.add("fs")
            if "fs" in tags and x() < (0.15 if suite == "unit" else 0.35):
                tags.add("bigfs")
            if x() < (0.07 if suite == "unit" else 0.3):
                tags.add("net")
                if x() < 0.4:
                    tags.add("https")
            tol = None
            if x() < (0.08 if suite == "unit" else 0.15):
                tags.add("time")
                tol = rng.choice([5, 30, 60, 120, 300])
            if x() < (0.03 if suite == "unit" else 0.12):
                tags.add("bigmem")
            if x() < (0.1 if suite == "unit" else 0.15):
                tags.add("testdata")
            dur = rng.lognormvariate(-2.5, 1.2) if suite == "unit" else rng.lognormvariate(1.2, 0.9)
            base = 0.0 if x() < 0.6 else rng.uniform(0.0002, 0.002)
            self.tests[tid] = {
                "suite": suite,
                "shard": shard,
                "tags": tags,
                "tol": tol,
                "dur": dur,
                "base": base,
                "label": "healthy",
                "kind": "healthy",
                "flaky": 0.0,
                "skip": x() < 0.02,
                "portable": x() < 0.75,
                "mac": x() < 0.5,
                "k8s": x() < 0.4,
            }

        for i in range(n_unit):
            m = rng.choice(mods_u)
            mk(f"tests/unit/test_{m}.py::test_{m}_{i:03d}", "unit")
        per = n_int // self.shards
        for i in range(n_int):
            m = rng.choice(mods_i)
            sh = min(self.shards, i // per + 1)
            mk(f"tests/integration/test_{m}.py::test_{m}_{i:03d}", "int", sh)
        ids = list(self.tests)
        unit = [t for t in ids if self.tests[t]["suite"] == "unit"]
        slow = [t for t in ids if self.tests[t]["shard"] == self.shards]
        # the slow shard: heavier tests, several flaky ones (run only by the hard-shard runner)
        for t in slow:
            self.tests[t]["dur"] *= 3
            if rng.random() < 0.3:
                self.tests[t]["tags"].add("bigfs")
                self.tests[t]["tags"].add("fs")
        for t in rng.sample(slow, min(len(slow), rng.randint(3, 5))):
            self.set_flaky(t, rng.uniform(0.04, 0.12), "hardshard")
        # flaky tests spread everywhere
        for t in rng.sample(unit, rng.randint(1, 3)):
            self.set_flaky(t, rng.uniform(0.04, 0.15), "spread")
        # a flaky test that fails more under load
        lt = rng.choice(
            [t for t in ids if self.tests[t]["suite"] == "int" and self.tests[t]["shard"] < self.shards]
        )
        self.set_flaky(lt, 0.0, "load")
        # low-rate flakes
        for t in rng.sample(ids, rng.randint(2, 5)):
            if self.tests[t]["label"] == "healthy":
                self.set_flaky(t, rng.uniform(0.003, 0.01), "lowrate")
        # external service: 3-6 integration tests calling it
        cands = [
            t
            for t in ids
            if (self.tests[t]["shard"] or 0) < self.shards and self.tests[t]["label"] == "healthy"
        ]
        self.ext = rng.sample(cands, rng.randint(3, 6))
        for t in self.ext:
            self.tests[t]["tags"].update({"net", "https", "ext"})
        # broken from a commit on, sometimes fixed
        healthy_unit = [t for t in unit if self.tests[t]["label"] == "healthy" and not self.tests[t]["skip"]]
        self.broken = rng.choice(healthy_unit)
        self.tests[self.broken]["portable"] = True
        self.tests[self.broken]["label"] = "broken"
        self.tests[self.broken]["kind"] = "broken"
        self.broken_at = self.start + self.days * DAY * rng.uniform(0.3, 0.7)
        self.broken_fix = self.broken_at + rng.uniform(10, 30) * H if rng.random() < 0.33 else None
        if self.broken_fix and self.broken_fix > self.end - 2 * H:
            self.broken_fix = None
        # platform test: fails on mac (or arm without macs)
        self.plat_pool = "mac" if "mac" in self.pools else "arm"
        pt = rng.choice([t for t in healthy_unit if t != self.broken])
        self.tests[pt].update(label="platform", kind="platform", portable=True, mac=True)
        self.plat = pt
        self.plat_rate = rng.uniform(0.85, 1.0)
        for t in ids:  # tests that must not be turned into anything by accident
            if self.tests[t]["label"] != "healthy":
                self.tests[t]["base"] = 0.0

    def set_flaky(self, t, p, kind):
        self.tests[t].update(label="flaky", kind=kind, flaky=p, base=0.0, skip=False)

    # ------------------------------------------------------------------ time
    def local_hour(self, t):
        lt = t + self.tz * H
        return (lt % DAY) / H, int(lt // DAY + 3) % 7  # weekday: 1970-01-01 was Thursday -> 0=Mon

    def intensity(self, t):
        hr, wd = self.local_hour(t)
        if 8 <= hr < 18:
            v = 1.0 - 0.25 * abs(hr - 13) / 5
        elif 6 <= hr < 8 or 18 <= hr < 21:
            v = 0.4
        else:
            v = 0.12
        if wd >= 5:
            v *= 0.25
        return v

    # ------------------------------------------------------------------ scenario
    def plan(self):
        rng = self.rng
        s, e = self.start, self.end
        span = e - s

        # fleet outage at a busy hour
        def busy_time(lo, hi):
            for _ in range(500):
                t = rng.uniform(lo, hi)
                if self.intensity(t) > 0.7:
                    return t
            return rng.uniform(lo, hi)

        t0 = busy_time(s + 0.25 * span, e - 0.15 * span)
        self.outages.append(
            {
                "id": "O1",
                "sort": rng.choice(["package-mirror", "artifact-store", "dns"]),
                "region": None,
                "start": t0,
                "end": t0 + rng.uniform(20, 60) * 60,
                "tags": {"net"},
                "p": rng.uniform(0.75, 0.95),
                "outcome": "error",
                "allowed": False,
            }
        )
        t1 = busy_time(s + 0.1 * span, e - 0.1 * span)
        self.outages.append(
            {
                "id": "O2",
                "sort": "external-service",
                "region": None,
                "start": t1,
                "end": t1 + rng.uniform(50, 70) * 60,
                "tags": {"ext"},
                "p": 0.92,
                "outcome": "failed",
                "allowed": False,
            }
        )
        # red herrings on runners (readings only, or traffic shapes)
        vms = [r for r in self.lin if "bm" not in r and r not in (self.hard, self.busy)]
        rng.shuffle(vms)
        self.rh = {}
        k = 0
        for sort in ("diskwarn", "clockwarn", "mempressure", "newrunner", "idle"):
            if rng.random() < 0.85:
                r = vms[k]
                k += 1
                self.rh[r] = sort
                self.meta[r]["agent"] = True
        for r, sort in self.rh.items():
            if sort == "newrunner":
                self.meta[r]["from"] = s + span * rng.uniform(0.35, 0.7)
            if sort == "idle":
                a = s + span * rng.uniform(0.15, 0.4)
                self.meta[r]["offline"] = [(a, a + rng.uniform(1.5, min(3.0, self.days * 0.45)) * DAY)]
        self.rh[self.hard] = "hardshard"
        self.rh[self.busy] = "busy"
        pool_h = {r: s for r, s in self.rh.items()}
        for r, sort in pool_h.items():
            self.entities.append(self.entity(f"R{len(self.entities) + 1}", "runner", r, sort, sick=False))
        free = vms[k:]
        # sick entities
        kinds = ["fulldisk", "clockhost", "imagecache", "slowdisk", "ephhost", "noagent"]
        chosen = [x for x in kinds if rng.random() < 0.8]
        if len(chosen) < 4:
            chosen = rng.sample(kinds, 4)
        self.faults = []  # dicts with id, sort, runners, machines, images, onset, end, ...
        n = 0

        def nid():
            nonlocal n
            n += 1
            return f"S{n}"

        if "fulldisk" in chosen and free:
            r = free.pop()
            o = self.outages[0]
            on = o["start"] + rng.uniform(-40, 30) * 60
            end = on + rng.uniform(4, 14) * H if rng.random() < 0.6 else None
            self.meta[r]["agent"] = True
            self.add_fault(
                nid(),
                "fulldisk",
                "runner",
                r,
                on,
                end,
                runners=[r],
                note="work disk full during the fleet outage",
            )
        if "clockhost" in chosen:
            m = rng.choice(["bm-01", "bm-02"])
            on = self.broken_at + rng.uniform(-4, 4) * H
            end = on + rng.uniform(12, 36) * H if rng.random() < 0.5 else None
            self.add_fault(
                nid(),
                "clockskew",
                "machine",
                m,
                on,
                end,
                runners=list(self.hosts[m]),
                offset=rng.choice([-1, 1]) * rng.uniform(45, 400),
                note="host clock stepped, two runners on it",
            )
        if "imagecache" in chosen:
            pool = "arm" if len(self.pools["arm"]["runners"]) >= 6 else "linux"
            used = {x for f in self.faults for x in f["runners"]}
            cand = [r for r in self.pools[pool]["runners"] if r not in self.rh and r not in used]
            rng.shuffle(cand)
            nb = min(len(cand) - 1, max(2, int(len(cand) * rng.uniform(0.3, 0.5))))
            bad = cand[:nb]
            poisoned = cand[nb]
            for r in [*bad, poisoned]:
                if r in free:
                    free.remove(r)
            self.meta[poisoned]["agent"] = True
            new_img = self.img[pool].rsplit(".", 1)[0] + f".{int(self.img[pool].rsplit('.', 1)[1]) + 1}"
            on = s + span * rng.uniform(0.3, 0.65)
            end = on + rng.uniform(10, 36) * H if rng.random() < 0.4 else None
            if end and end > e - 3 * H:
                end = None
            ri = []
            for r in bad:
                at = on + rng.uniform(0, 40) * 60
                ri.append((r, at))
                self.meta[r]["images"].append(new_img)
            self.add_fault(
                nid(),
                "badimage",
                "image",
                new_img,
                on,
                end,
                runners=bad,
                reimage=ri,
                old_img=self.img[pool],
                note=f"new image on {len(bad)} of {len(self.pools[pool]['runners'])} {pool} runners (CA bundle missing)",
            )
            pon = on + rng.uniform(-6, 6) * H
            pend = pon + rng.uniform(8, 30) * H if rng.random() < 0.5 else None
            self.add_fault(
                nid(),
                "cachepoison",
                "runner",
                poisoned,
                pon,
                pend,
                runners=[poisoned],
                note="truncated testdata download, same pool as the bad image",
            )
        if "slowdisk" in chosen and free:
            r = free.pop()
            self.meta[r]["agent"] = True
            fill = rng.uniform(2, 4) * DAY
            crit = s + span * rng.uniform(0.55, 0.85)  # when free space reaches 1.5 %
            fs0 = crit - fill
            end = crit + rng.uniform(10, 24) * H if rng.random() < 0.3 else None
            if end and end > e - 3 * H:
                end = None
            self.add_fault(
                nid(),
                "slowdisk",
                "runner",
                r,
                crit,
                end,
                runners=[r],
                fill_start=fs0,
                fill=fill,
                gradual=True,
                note=f"work disk filling over {fill / DAY:.1f} days",
            )
        if "ephhost" in chosen:
            h = rng.choice(self.k8s_hosts)
            on = s + span * rng.uniform(0.2, 0.8)
            end = on + rng.uniform(5, 20) * H if rng.random() < 0.5 else None
            srt = rng.choice(["hostmem", "hostdisk"])
            self.add_fault(
                nid(),
                srt,
                "machine",
                h,
                on,
                end,
                runners=[h],
                note="k8s node: "
                + ("leaked processes hold memory" if srt == "hostmem" else "container storage full"),
            )
        if "noagent" in chosen and free:  # a small linux pool may have no runner left for it
            cand = [r for r in free if not self.meta[r]["agent"]]
            if not cand:
                r = free.pop()
                self.meta[r]["agent"] = False
            else:
                r = cand[0]
                free.remove(r)
            on = s + span * rng.uniform(0.2, 0.75)
            end = on + rng.uniform(6, 20) * H if rng.random() < 0.4 else None
            srt = rng.choice(["readonly", "badnic"])
            self.add_fault(
                nid(),
                srt,
                "runner",
                r,
                on,
                end,
                runners=[r],
                noagent=True,
                note="no agent: "
                + ("work filesystem remounted read-only" if srt == "readonly" else "NIC dropping packets"),
            )
        # test red herrings for truth listing
        self.entities.append(self.entity("T1", "test", self.broken, "broken-commit", sick=False))
        self.entities.append(self.entity("T2", "test", self.plat, "platform-test", sick=False))

    def add_fault(self, fid, sort, kind, entity, on, end, runners, note="", **kw):
        f = {
            "id": fid,
            "sort": sort,
            "kind": kind,
            "entity": entity,
            "onset": on,
            "end": end,
            "runners": runners,
            "note": note,
            **kw,
        }
        # a moderate fault fails only some of what it touches (a disk with a few MB left, a clock that
        # is stepped back part of the time, a flaky NIC)
        moderate = self.rng.random() < 0.35
        f["strength"] = "moderate" if moderate else "strong"
        f["k"] = self.rng.uniform(0.35, 0.6) if moderate else 1.0
        self.faults.append(f)
        self.entities.append(self.entity(fid, kind, entity, sort, sick=True, fault=f))

    def entity(self, eid, kind, entity, sort, sick, fault=None):
        d = {
            "id": eid,
            "kind": kind,
            "entity": entity,
            "sort": sort,
            "sick": sick,
            "note": (fault or {}).get("note", ""),
        }
        if fault:
            d["_fault"] = fault
        return d

    def active(self, f, t):
        return f["onset"] <= t and (f["end"] is None or t < f["end"])

    def image_of(self, r, t):
        img = self.meta[r]["images"][0]
        for f in self.faults:
            if f["sort"] == "badimage":
                for rr, at in f["reimage"]:
                    if rr == r and at <= t and (f["end"] is None or t < f["end"]):
                        img = f["entity"]
        return img

    def slow_free2(self, f, t):
        fs0, crit = f["fill_start"], f["onset"]
        if t < fs0:
            return 0.3
        if f["end"] is not None and t >= f["end"]:
            return 0.45
        if t < crit:
            return 0.3 - 0.285 * (t - fs0) / (crit - fs0)
        # past 1.5 %: failing jobs write less, leaked workspaces keep coming
        return max(0.0003, 0.015 - 0.285 * (t - crit) / (crit - fs0) / 4)

    # ------------------------------------------------------------------ failures
    def outcome(self, tid, r, m, pool, img, t, pl):
        """None (passed) or (outcome, cause, message) for one execution."""
        T = self.tests[tid]
        tags = T["tags"]
        rng = self.rng
        for f in self.faults:
            if not self.active(f, t) and f["sort"] not in ("slowdisk",):
                continue
            s = f["sort"]
            if f["k"] < 1 and rng.random() > f["k"]:
                continue
            if s == "badimage":
                if img != f["entity"]:
                    continue
                if "https" in tags and rng.random() < 0.95:
                    return (
                        "failed",
                        f["id"],
                        "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate",
                    )
                if "net" in tags and rng.random() < 0.2:
                    return (
                        "error",
                        f["id"],
                        "pip._vendor.urllib3.exceptions.SSLError: certificate verify failed",
                    )
                continue
            if r not in f["runners"] and m not in f["runners"]:
                continue
            if s == "fulldisk":
                if ("bigfs" in tags and rng.random() < 0.97) or ("fs" in tags and rng.random() < 0.85):
                    return (
                        rng.choice(["failed", "failed", "error"]),
                        f["id"],
                        "OSError: [Errno 28] No space left on device",
                    )
            elif s == "slowdisk":
                free = self.slow_free2(f, t)
                if free < 0.015 and (f["end"] is None or t < f["end"]):
                    sev = min(1.0, (0.015 - free) / 0.012)
                    p = 0.95 * sev if "bigfs" in tags else (0.7 * sev * sev if "fs" in tags else 0)
                    if p and rng.random() < p:
                        return (
                            "failed",
                            f["id"],
                            "OSError: [Errno 28] No space left on device: '/home/runner/work/_temp'",
                        )
            elif s == "clockskew":
                if "time" in tags and T["tol"] < abs(f["offset"]) and rng.random() < 0.93:
                    return (
                        "failed",
                        f["id"],
                        f"AssertionError: token issued {f['offset']:+.0f}s from now, outside the {T['tol']}s leeway",
                    )
            elif s == "cachepoison":
                if "testdata" in tags and rng.random() < 0.9:
                    return (
                        "failed",
                        f["id"],
                        "FileNotFoundError: [Errno 2] No such file or directory: '/var/cache/ci/testdata/fixtures/"
                        + tid.split("::")[-1]
                        + ".json'",
                    )
            elif s == "hostmem":
                if "bigmem" in tags and rng.random() < 0.9:
                    return ("error", f["id"], "worker 'gw0' crashed while running test: Killed (signal 9)")
                if rng.random() < 0.03:
                    return ("failed", f["id"], "MemoryError")
            elif s == "hostdisk":
                if ("bigfs" in tags and rng.random() < 0.95) or ("fs" in tags and rng.random() < 0.75):
                    return ("failed", f["id"], "OSError: [Errno 28] No space left on device")
            elif s == "readonly":
                if "fs" in tags and rng.random() < 0.92:
                    return (
                        "error",
                        f["id"],
                        "OSError: [Errno 30] Read-only file system: '/home/runner/work/_temp'",
                    )
            elif s == "badnic" and "net" in tags and rng.random() < 0.7:
                return (
                    "failed",
                    f["id"],
                    "requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))",
                )
        for o in self.outages:
            if o["start"] <= t < o["end"] and tags & o["tags"] and rng.random() < o["p"]:
                msg = {
                    "package-mirror": "ERROR: Could not install packages: HTTP 503 from mirror.internal",
                    "artifact-store": "requests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: https://artifacts.internal/",
                    "dns": "socket.gaierror: [Errno -3] Temporary failure in name resolution",
                    "external-service": "stripe.error.APIConnectionError: Could not connect to Stripe (HTTP 503)",
                }[o["sort"]]
                return (o["outcome"], o["id"], msg)
        if tid == self.broken and pl["has_break"] and rng.random() < 0.97:
            return ("failed", "broken", "AssertionError: assert response.status_code == 200 (got 422)")
        if tid == self.plat and pool == self.plat_pool and rng.random() < self.plat_rate:
            return (
                "failed",
                "platform",
                "AssertionError: paths differ: 'Fixtures/A.json' != 'fixtures/a.json' (case-insensitive filesystem)",
            )
        if T["label"] == "flaky":
            p = T["flaky"]
            if T["kind"] == "load":
                p = 0.005 + 0.12 * self.intensity(t) ** 2
            if rng.random() < p:
                return (
                    "failed",
                    "flaky",
                    rng.choice(
                        [
                            "TimeoutError: condition not met within 10.0s",
                            "AssertionError: expected 3 events, got 2",
                            "ConnectionRefusedError: [Errno 111] Connection refused (service not ready)",
                        ]
                    ),
                )
        if T["base"] and rng.random() < T["base"]:
            return ("failed", "base", "AssertionError")
        return None

    # ------------------------------------------------------------------ traffic
    def available(self, r, t):
        d = self.meta[r]
        if t < d["from"]:
            return False
        return not any(a <= t < b for a, b in d["offline"])

    def compose(self, kind, rng, has_break=False):
        """The jobs of one pipeline: (name, pool, tests)."""
        full = kind != "pr"
        groups = sorted(self.groups)
        pick = [g for g in groups if full or rng.random() < 0.45] or [rng.choice(groups)]
        jobs = []
        for g in pick:
            unit = list(self.groups[g])
            jobs.append((f"unit-{g}", "linux", unit))
            if full or rng.random() < 0.4:
                jobs.append((f"unit-{g}-arm64", "arm", [x for x in unit if self.tests[x]["portable"]]))
            if "mac" in self.pools and (full or rng.random() < 0.25):
                jobs.append((f"unit-{g}-macos", "mac", [x for x in unit if self.tests[x]["mac"]]))
            k = [x for x in unit if self.tests[x]["k8s"]]
            if k:
                jobs.append((f"check-{g}", "k8s", k))
        if full or rng.random() < 0.6:
            for sh in range(1, self.shards):
                jobs.append(
                    (f"integration-{sh}", "linux", [x for x in self.int_ids if self.tests[x]["shard"] == sh])
                )
        if full or rng.random() < 0.3:
            jobs.append(
                (
                    f"integration-{self.shards}",
                    "linux",
                    [x for x in self.int_ids if self.tests[x]["shard"] == self.shards],
                )
            )
        return jobs

    def pipelines(self):
        rng = self.rng
        unit = [t for t, d in self.tests.items() if d["suite"] == "unit"]
        ints = [t for t, d in self.tests.items() if d["suite"] == "int"]
        self.unit_ids, self.int_ids = unit, ints
        self.groups = defaultdict(list)
        for t in unit:
            self.groups[t.split("/test_")[1].split(".py")[0]].append(t)
        # merge small modules into groups of 25-60 tests
        gs, cur, name = {}, [], None
        for mod in sorted(self.groups):
            cur += self.groups[mod]
            name = name or mod
            if len(cur) >= 25:
                gs[name], cur, name = cur, [], None
        if cur:
            if gs:
                gs[sorted(gs)[-1]] += cur
            else:
                gs[name] = cur
        self.groups = gs
        cr = random.Random(self.seed * 7 + 1)
        mean = (
            sum(sum(len(tl) for _, _, tl in self.compose(k, cr)) for k in ["pr"] * 170 + ["main"] * 30) / 200
        )
        mean_rate = sum(self.intensity(self.start + i * 600) for i in range(int(self.days * 144))) / (
            self.days * 144
        )
        n_pipes = self.target / (mean * 1.15)
        lam_peak = n_pipes / (self.days * DAY * mean_rate)
        out = []
        t = self.start
        while True:
            t += rng.expovariate(lam_peak)
            if t >= self.end:
                break
            if rng.random() < self.intensity(t):
                out.append((t, "main" if rng.random() < 0.15 else "pr"))
        d = math.floor((self.start + self.tz * H) / DAY)
        while True:
            nt = (d * DAY + 2 * H) - self.tz * H
            d += 1
            if nt < self.start:
                continue
            if nt >= self.end:
                break
            out.append((nt, "nightly"))
        out.sort()
        return out

    def simulate(self):
        rng = self.rng
        self.plan()
        pipes = self.pipelines()
        heap = []
        seq = 0
        main_sha = h8(self.seed, "main", 0)[:12]
        for n, (t, kind) in enumerate(pipes):
            if kind != "pr":
                main_sha = h8(self.seed, "main", n)[:12]
            sha = main_sha if kind != "pr" else h8(self.seed, "pr", n)[:12]
            # a PR branch contains the breaking commit when it was based on main after it
            base_t = t - (rng.expovariate(1 / (8 * H)) if kind == "pr" else 0)
            has_break = base_t >= self.broken_at and (self.broken_fix is None or t < self.broken_fix)
            pl = {"run": f"{40000 + n}", "sha": sha, "kind": kind, "has_break": has_break, "t": t}
            for name, pool, tl in self.compose(kind, rng):
                seq += 1
                heapq.heappush(heap, (t + rng.uniform(5, 90), seq, pl, name, pool, tl, 1))
        busy = defaultdict(float)
        pods = {h: [] for h in self.k8s_hosts}
        self.results = []  # (arrival, record, failure row or None)
        self.fail_rows = []
        self.jobs_of = defaultdict(set)
        jid = 0
        while heap:
            ready, _, pl, name, pool, tl, attempt = heapq.heappop(heap)
            if ready >= self.end:
                continue
            jid += 1
            if pool == "k8s":
                # the node with the fewest pods running; a new pod id per job
                cand = [h for h in self.k8s_hosts]
                load = {h: sum(1 for e in pods[h] if e > ready) for h in cand}
                h = min(cand, key=lambda x: (load[x], rng.random()))
                r = f"{h}-pod-{h8(self.seed, jid)[:6]}"
                m, start = h, ready + rng.uniform(10, 40)
                speed = 1.0
            else:
                if name.startswith("integration-") and int(name.split("-")[1]) == self.shards:
                    cand = [self.hard]
                else:
                    cand = [x for x in self.pools[pool]["runners"] if x != self.hard]
                cand = [x for x in cand if self.available(x, ready)]
                if not cand:
                    # nothing online: wait an hour
                    heapq.heappush(heap, (ready + H, jid, pl, name, pool, tl, attempt))
                    continue
                freec = [x for x in cand if busy[x] <= ready]
                if freec:
                    ws = [self.meta[x].get("weight", 1.0) for x in freec]
                    r = rng.choices(freec, ws)[0]
                    start = ready + rng.uniform(2, 20)
                else:
                    r = min(cand, key=lambda x: busy[x])
                    start = busy[r] + rng.uniform(2, 20)
                m = self.meta[r]["machine"]
                speed = self.meta[r].get("speed", 1.0)
            img = self.image_of(m if pool == "k8s" else r, start)
            order = list(tl)
            rng.shuffle(order)
            t = start + rng.uniform(20, 90)  # checkout, setup
            job_id = f"{pl['run']}-{name}-{attempt}"
            recs = []
            failed = False
            for tid in order:
                T = self.tests[tid]
                dur = T["dur"] * speed * rng.uniform(0.7, 1.5)
                if T["skip"]:
                    recs.append((t, tid, "skipped", 0.0, None, None))
                    continue
                o = self.outcome(tid, r, m, pool, img, t, pl)
                if o:
                    if o[0] == "error" and o[1] != "flaky":
                        dur = min(dur, rng.uniform(0.05, 2))
                    t += dur
                    recs.append((t, tid, o[0], dur, o[2], o[1]))
                    failed = True
                else:
                    t += dur
                    recs.append((t, tid, "passed", dur, None, None))
            jend = t + rng.uniform(5, 30)
            if pool == "k8s":
                pods[m].append(jend)
            else:
                busy[r] = jend
            delay = rng.uniform(5, 180) if rng.random() > 0.01 else rng.uniform(1, 6) * H
            arr = jend + delay
            ident = {"id": r, "machine": m, "pool": pool, "image": img}
            if pool == "k8s":
                ident["ephemeral"] = True
                ident["provider"] = "kubernetes"
            if name.startswith("integration-"):
                ident["shard"] = name.split("-")[1]
            skew = 0.0
            for f in self.faults:
                if (
                    f["sort"] == "clockskew"
                    and (r in f["runners"] or m in f["runners"])
                    and self.active(f, start)
                ):
                    skew = f["offset"]
            for tt, tid, oc, dur, msg, cause in recs:
                if tt > self.end:
                    continue
                rec = {
                    "test_id": tid,
                    "outcome": oc,
                    "time": self.fmt_time(tt + skew),
                    "duration_s": round(dur, 3),
                    "job_id": job_id,
                    "run_id": pl["run"],
                    "attempt": attempt,
                    "commit": pl["sha"],
                    "runner": ident,
                }
                if msg:
                    rec["message"] = msg
                self.results.append(
                    (
                        min(arr, self.end + 0.0) if arr < self.end else None,
                        tt,
                        rec,
                        cause,
                        (r, m, pool, img),
                        job_id,
                    )
                )
            if failed and attempt < 3 and rng.random() < 0.3:
                seq += 1
                heapq.heappush(
                    heap, (jend + rng.uniform(120, 1800), 10**9 + seq, pl, name, pool, tl, attempt + 1)
                )
        # results arriving after the end are not sent (the data ends there)
        self.results = [x for x in self.results if x[0] is not None]

    def fmt_time(self, t):
        if self.tfmt == "epoch":
            return round(t, 3)
        if self.tfmt == "Z":
            return iso(t)
        tz = timezone(timedelta(hours=self.tz))
        return datetime.fromtimestamp(t, tz).isoformat(timespec="milliseconds")

    # ------------------------------------------------------------------ agent reports
    def testdata_digest(self, agent, t):
        """Daily refresh at 04:00 local, each agent within 90 min: one digest fleet-wide per day."""
        off = (int(h8(agent, "refresh")[:4], 16) % 90) * 60
        lt = t + self.tz * H - 4 * H - off
        day = math.floor(lt / DAY)
        return h8(self.seed, "testdata", day), day

    def reports(self):
        rng = self.rng
        agents = [r for r, d in self.meta.items() if d["agent"]]
        n_ag = len(agents)
        # report interval chosen to keep 15k-40k reports
        interval = max(300.0, n_ag * self.days * DAY / rng.uniform(15_000, 40_000))
        drop_agent = rng.choice(agents) if rng.random() < 0.7 else None
        drop_at = self.start + (self.end - self.start) * rng.uniform(0.3, 0.8)
        drop_len = rng.uniform(1, 4) * H
        self.reps = []
        for a in agents:
            d = self.meta[a]
            ar = random.Random(h8(self.seed, a))
            total_work = ar.choice([256, 512, 1024]) * GiB
            total_root = ar.choice([64, 100, 128]) * GiB
            mem_total = ar.choice([16, 32, 64]) * GiB
            work_used = ar.uniform(0.25, 0.6)
            avail = ar.uniform(0.4, 0.75)
            root_free = ar.uniform(0.35, 0.7)
            sort = self.rh.get(a)
            if sort == "diskwarn":
                total_work = 2048 * GiB
                work_used = ar.uniform(0.965, 0.975)
            base_used, base_avail = work_used, avail  # jobs come and go around a steady level
            boot = h8(a, "boot", 0)[:12]
            last_img = None
            seqn = 0
            t = max(d["from"], self.start) + ar.uniform(0, interval)
            while t < self.end:
                if any(x <= t < y for x, y in d["offline"]):
                    t = next(y for x, y in d["offline"] if x <= t < y) + ar.uniform(30, 300)
                    boot = h8(a, "boot", t)[:12]
                    seqn = 0
                    continue
                img = self.image_of(a, t)
                if last_img is not None and img != last_img:
                    boot = h8(a, "boot", t)[:12]  # re-imaged: a new boot
                    seqn = 0
                last_img = img
                seqn += 1
                readings = []
                # disk
                work_used = min(0.99, max(0.1, work_used + 0.1 * (base_used - work_used) + ar.gauss(0, 0.01)))
                if sort == "diskwarn":
                    work_used = min(0.978, max(0.962, work_used))
                wf = 1 - work_used
                st, reason = "ok", None
                for f in self.faults:
                    if a in f["runners"] or d["machine"] in f["runners"]:
                        if f["sort"] in ("fulldisk", "hostdisk") and self.active(f, t):
                            wf = ar.uniform(0.0, 0.003)
                        if f["sort"] == "slowdisk":
                            wf = self.slow_free2(f, t) * ar.uniform(0.95, 1.05)
                work_free = int(total_work * wf)
                if work_free < GiB or wf < 0.05:
                    st, reason = "problem", "LowDiskSpace"
                work_path = "/var/lib/containerd" if d.get("ephemeral") else "/home/runner/work"
                readings.append(
                    {
                        "check": "disk",
                        "status": st,
                        "reason": reason,
                        "paths": [
                            {
                                "path": "/",
                                "mount_point": "/",
                                "device": "/dev/sda1",
                                "total_bytes": total_root,
                                "free_bytes": int(total_root * root_free),
                                "free_ratio": round(root_free, 4),
                                "read_only": False,
                                "write_probe_ok": None,
                            },
                            {
                                "path": work_path,
                                "mount_point": work_path,
                                "device": "/dev/sdb1",
                                "total_bytes": total_work,
                                "free_bytes": work_free,
                                "free_ratio": round(work_free / total_work, 5),
                                "inodes_free_ratio": round(min(0.99, wf * 1.5 + 0.01), 4),
                                "read_only": False,
                                "write_probe_ok": work_free > 64 * 1024 * 1024,
                            },
                        ],
                    }
                )
                # memory
                avail = min(0.85, max(0.2, avail + 0.2 * (base_avail - avail) + ar.gauss(0, 0.03)))
                av, psi10, psi60, full10, oom = avail, ar.uniform(0, 0.5), ar.uniform(0, 0.3), 0.0, 0
                mst, mreason = "ok", None
                if sort == "mempressure" and (int((t - self.start) / (6 * H)) % 3 != 2):
                    av = ar.uniform(0.06, 0.11)
                    psi10, psi60, full10 = ar.uniform(15, 45), ar.uniform(10, 30), ar.uniform(1, 6)
                    mst, mreason = "problem", "MemoryPressure"
                for f in self.faults:
                    if f["sort"] == "hostmem" and d["machine"] in f["runners"] and self.active(f, t):
                        av = ar.uniform(0.01, 0.04)
                        psi10, psi60, full10 = ar.uniform(40, 80), ar.uniform(30, 70), ar.uniform(10, 40)
                        oom = ar.choice([0, 1, 1, 2, 3, 5])
                        mst, mreason = "problem", "OomKills" if oom else "MemoryLow"
                readings.append(
                    {
                        "check": "memory",
                        "status": mst,
                        "reason": mreason,
                        "total_bytes": mem_total,
                        "available_bytes": int(mem_total * av),
                        "available_ratio": round(av, 4),
                        "swap_used_bytes": 0,
                        "psi_some_avg10": round(psi10, 2),
                        "psi_some_avg60": round(psi60, 2),
                        "psi_full_avg10": round(full10, 2),
                        "psi_full_avg60": round(full10 * 0.7, 2),
                        "oom_kills": oom,
                    }
                )
                # clock
                off = ar.gauss(0, 0.004)
                if sort == "clockwarn":
                    off = 3.0 + ar.gauss(0, 0.15)
                for f in self.faults:
                    if (
                        f["sort"] == "clockskew"
                        and (a in f["runners"] or d["machine"] in f["runners"])
                        and self.active(f, t)
                    ):
                        off = f["offset"] + ar.gauss(0, 0.05)
                cst = "problem" if abs(off) > 1 else "ok"
                readings.append(
                    {
                        "check": "clock",
                        "status": cst,
                        "reason": "ClockOffset" if cst == "problem" else None,
                        "offset_s": round(off, 4),
                        "servers": [
                            {
                                "server": s_,
                                "offset_s": round(off + ar.gauss(0, 0.002), 4),
                                "delay_s": round(ar.uniform(0.002, 0.03), 4),
                                "stratum": 2,
                            }
                            for s_ in ("0.pool.ntp.org", "1.pool.ntp.org", "time.cloudflare.com")
                        ],
                    }
                )
                # cache
                dg, day = self.testdata_digest(a, t)
                files = 1840 + day % 7
                for f in self.faults:
                    if f["sort"] == "cachepoison" and a in f["runners"] and self.active(f, t):
                        dg, files = h8(self.seed, "poison", a, f["onset"]), 1203
                tool = h8(
                    self.seed, "toolchain", d["pool"]
                )  # a shared toolchain volume, not baked into the image
                readings.append(
                    {
                        "check": "cache",
                        "status": "ok",
                        "caches": [
                            {
                                "key": "testdata",
                                "path": "/var/cache/ci/testdata",
                                "digest": dg,
                                "files": files,
                                "bytes": files * 612_000,
                                "full_rehash": False,
                            },
                            {
                                "key": "toolchain",
                                "path": "/opt/toolchain",
                                "digest": tool,
                                "files": 9120,
                                "bytes": 4_100_000_000,
                                "full_rehash": False,
                            },
                        ],
                    }
                )
                ident = {"id": a, "machine": d["machine"], "pool": d["pool"], "image": img}
                skew = off if abs(off) > 30 else 0.0
                rep = {
                    "agent_id": f"agent-{a}",
                    "boot_id": boot,
                    "seq": seqn,
                    "observed_at": iso(t + skew),
                    "runner": ident,
                    "readings": readings,
                    "dropped": 0,
                    "agent_version": "0.9.3",
                }
                arr = t + ar.uniform(1, 40)
                if a == drop_agent and drop_at <= t < drop_at + drop_len:
                    arr = drop_at + drop_len + ar.uniform(5, 60)
                    rep["spool_depth"] = int((drop_at + drop_len - t) / interval)
                if arr < self.end:
                    self.reps.append((arr, a, rep))
                t += interval * ar.uniform(0.9, 1.1)
        self.report_interval = interval

    # ------------------------------------------------------------------ output
    def write(self, out: Path):
        rng = self.rng
        out.mkdir(parents=True, exist_ok=True)
        feed = []
        for arr, _tt, rec, _cause, _who, _job in self.results:
            feed.append((int(arr * 1000), "result", "ci", json.dumps(rec, separators=(",", ":"))))
        for arr, a, rep in self.reps:
            feed.append((int(arr * 1000), "report", a, json.dumps(rep, separators=(",", ":"))))
        feed.sort(key=lambda x: x[0])
        with open(out / "feed.tsv", "w") as fh:
            for at, ch, snd, rec in feed:
                fh.write(f"{at}\t{ch}\t{snd}\t{rec}\n")
        with open(out / "history.ndjson", "w") as fh:
            for _at, ch, _snd, rec in feed:
                fh.write(rec + "\n" if ch == "result" else '{"kind":"report",' + rec[1:] + "\n")
        cut_frac = rng.uniform(0.3, 0.6)
        cut = feed[int(len(feed) * cut_frac)][0]
        # failures and their causes
        ent_stats = defaultdict(
            lambda: {
                "n": 0,
                "tests": set(),
                "jobs": set(),
                "first": None,
                "last": None,
                "runners": set(),
                "hosts": set(),
            }
        )
        tstats = defaultdict(
            lambda: {
                "runs": 0,
                "failures": 0,
                "own": 0,
                "causes": Counter(),
                "runners": set(),
                "pools": set(),
            }
        )
        rows = []
        for _arr, tt, rec, cause, (r, m, pool, img), job in self.results:
            ts_ = tstats[rec["test_id"]]
            if rec["outcome"] == "skipped":
                continue
            ts_["runs"] += 1
            ts_["runners"].add(m if pool == "k8s" else r)
            ts_["pools"].add(pool)
            if cause is None:
                continue
            ts_["failures"] += 1
            ts_["causes"][cause] += 1
            if cause in ("flaky", "broken", "platform", "base"):
                ts_["own"] += 1
            es = ent_stats[cause]
            es["n"] += 1
            es["tests"].add(rec["test_id"])
            es["jobs"].add(job)
            es["first"] = tt if es["first"] is None else min(es["first"], tt)
            es["last"] = tt if es["last"] is None else max(es["last"], tt)
            es["runners"].add(m if pool == "k8s" else r)
            es["hosts"].add(m)
            rows.append((tt, rec["test_id"], r, m, pool, img, cause))
        rows.sort()
        with open(out / "failures.tsv", "w") as fh:
            fh.write("time\ttest_id\trunner\tmachine\tpool\timage\tcause\n")
            for row in rows:
                fh.write(iso(row[0]) + "\t" + "\t".join(row[1:]) + "\n")
        entities = []
        for e in self.entities:
            f = e.pop("_fault", None)
            if not f:
                entities.append(
                    {
                        **e,
                        "accept": [],
                        "accept_states": [],
                        "expected_state": "healthy",
                        "dimensions": [],
                        "onset": None,
                        "end": None,
                        "first_failure": None,
                        "last_failure": None,
                        "failures": 0,
                        "distinct_tests": 0,
                        "jobs": 0,
                        "runners": [],
                        "weak": True,
                        "gradual": False,
                        "strength": None,
                        "position": None,
                    }
                )
                continue
            es = ent_stats.get(f["id"]) or {
                "n": 0,
                "tests": set(),
                "jobs": set(),
                "first": None,
                "last": None,
                "runners": set(),
            }
            s = f["sort"]
            kind, ent = f["kind"], f["entity"]
            if kind == "runner":
                m = self.meta[ent]["machine"]
                acc = [["runner", ent]] + ([["machine", m]] if len(self.hosts[m]) == 1 else [])
            else:
                acc = [[kind, ent]]
            dims = {
                "fulldisk": ["disk"],
                "slowdisk": ["disk"],
                "hostdisk": ["disk"],
                "clockskew": ["clock"],
                "cachepoison": ["cache"],
                "hostmem": ["memory"],
                "badimage": ["unknown"],
                "readonly": ["disk", "unknown"],
                "badnic": ["unknown"],
            }[s]
            if s == "cachepoison":
                pool = self.meta[ent]["pool"]
                if sum(1 for x in self.pools[pool]["runners"] if self.meta[x]["agent"]) < 3:
                    dims = ["cache", "unknown"]
            if f.get("noagent"):
                states = ["suspect"]
            elif s == "badimage":
                states = ["sick", "suspect"]
            else:
                states = ["sick"]
            weak = es["n"] < 8 or len(es["tests"]) < 4 or len(es["jobs"]) < 3
            span = self.end - self.start
            pos = "middle" if f["onset"] > self.start + 0.1 * span else "early"
            if f["onset"] > self.end - 9 * H:
                pos = "late"
            entities.append(
                {
                    **e,
                    "accept": acc,
                    "accept_states": states,
                    "expected_state": states[0],
                    "dimensions": dims,
                    "onset": iso(max(f["onset"], self.start)),
                    "end": iso(f["end"]) if f["end"] else None,
                    "first_failure": iso(es["first"]) if es["first"] else None,
                    "last_failure": iso(es["last"]) if es["last"] else None,
                    "failures": es["n"],
                    "distinct_tests": len(es["tests"]),
                    "jobs": len(es["jobs"]),
                    "runners": sorted(set(f["runners"]) | es["runners"]),
                    "weak": weak,
                    "gradual": bool(f.get("gradual")),
                    "strength": f["strength"],
                    "position": pos,
                    "offset_s": f.get("offset"),
                }
            )
        outs = []
        for o in self.outages:
            es = ent_stats.get(o["id"]) or {"n": 0, "hosts": set()}
            outs.append(
                {
                    "id": o["id"],
                    "sort": o["sort"],
                    "region": o["region"],
                    "start": iso(o["start"]),
                    "end": iso(o["end"]),
                    "failures": es["n"],
                    "hosts": len(es["hosts"]),
                    "weak": es["n"] < 10 or len(es["hosts"]) < 2,
                    "allowed": o["allowed"],
                    "tests": sorted({r[1] for r in rows if r[6] == o["id"]}),
                }
            )
        tests = {}
        for tid, T in self.tests.items():
            st = tstats.get(tid) or {
                "runs": 0,
                "failures": 0,
                "own": 0,
                "causes": Counter(),
                "runners": set(),
                "pools": set(),
            }
            label = T["label"]
            if label == "healthy":
                acc = ["healthy"]
            elif label == "flaky":
                acc = ["flaky", "healthy"] if T["kind"] == "lowrate" else ["flaky"]
            elif label == "broken":
                acc = ["broken"] if self.broken_fix is None else ["broken", "flaky"]
            else:
                acc = ["platform"]
            weak = label != "healthy" and st["own"] < 5
            tests[tid] = {
                "label": label,
                "kind": T["kind"],
                "accept": acc,
                "runs": st["runs"],
                "failures": st["failures"],
                "own_failures": st["own"],
                "base_rate": T["flaky"]
                or T["base"]
                or (self.plat_rate if label == "platform" else (0.97 if label == "broken" else 0)),
                "causes": dict(st["causes"]),
                "weak": weak,
                "n_runners": len(st["runners"]),
                "pools": sorted(st["pools"]),
                "tags": sorted(T["tags"]),
                "time_tolerance_s": T["tol"],
            }
        hosts = {m: list(rs) for m, rs in self.hosts.items()}
        meta = {
            r: {
                "machine": d["machine"],
                "pool": d["pool"],
                "images": d["images"],
                "agent": d["agent"],
                "ephemeral": d["ephemeral"],
                "from": iso(d["from"]),
                "offline": [[iso(a), iso(b)] for a, b in d["offline"]],
            }
            for r, d in self.meta.items()
        }
        agents = [r for r, d in self.meta.items() if d["agent"]]
        tok = rng.sample([a for a in agents if not self.meta[a]["ephemeral"]], 3)
        n_res = len(self.results)
        truth = {
            "seed": self.seed,
            "shape": "medium",
            "days": self.days,
            "start": iso(self.start),
            "end": iso(self.end),
            "tz_hours": self.tz,
            "time_format": self.tfmt,
            "pools": self.pools,
            "hosts": hosts,
            "runners_meta": meta,
            "ephemeral_machines": list(self.k8s_hosts),
            "entities": entities,
            "outages": outs,
            "tests": tests,
            "broken": {
                "test": self.broken,
                "from": iso(self.broken_at),
                "fixed": iso(self.broken_fix) if self.broken_fix else None,
            },
            "platform": {"test": self.plat, "pool": self.plat_pool},
            "agent_token_runners": tok,
            "feed": {
                "backfill_until_ms": cut,
                "unique_results": n_res,
                "unique_reports": len(self.reps),
                "report_interval_s": round(self.report_interval),
            },
        }
        # agent ids: reports are sent by agent-<runner>; the token is bound to the runner
        (out / "truth.json").write_text(json.dumps(truth, indent=1, default=sorted))
        n_sick = sum(1 for e in entities if e["sick"])
        print(
            f"seed {self.seed}: {self.days} d, {len(self.meta)} runners/hosts, {n_res} results, {len(self.reps)} reports, "
            f"{n_sick} sick ({', '.join(e['sort'] + ('*' if e['weak'] else '') for e in entities if e['sick'])}), "
            f"{len(rows)} failures",
            file=sys.stderr,
        )


def main():
    seed, out, end = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    end_t = datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp()
    f = Fleet(seed, end_t)
    f.simulate()
    f.reports()
    f.write(out)


if __name__ == "__main__":
    main()
