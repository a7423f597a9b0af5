"""Generate one held-out fleet: gen.py SEED OUTDIR [END_TIME].

A monorepo's CI behind a merge queue, as a cloud-and-bare-metal fleet sees it. Writes
history.ndjson (event order: results and `"kind": "report"` lines), feed.tsv (arrival order:
`at_ms \\t channel \\t sender \\t record`, channel result|report|junit), failures.tsv (every failed
execution with its true cause; never fed) and truth.json. Deterministic for a seed.

Shapes (seed % 3):
  cloud  - an autoscaled spot/on-demand linux pool over two zones (VMs live hours, new runner ids),
           a small long-lived `docker` VM pool for the integration suite, tiny mac and gpu pools;
  farm   - 90-200 runner processes on bare-metal hosts carrying 1-8 runners each, in two rooms,
           tiny mac and gpu pools;
  hybrid - autoscaled linux for the unit suite, a bare-metal `heavy` pool for the rest, mac, gpu.
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
MIN = 60.0


def parse_end(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def iso_utc(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def hx(*parts) -> str:
    return hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).hexdigest()


class Fleet:
    def __init__(self, seed: int, end_s: str):
        self.seed = seed
        self.rng = random.Random(seed * 7919 + 6)
        rng = self.rng
        self.shape = ["cloud", "farm", "hybrid"][seed % 3]
        self.days = {"cloud": rng.randint(8, 12), "farm": rng.randint(12, 18), "hybrid": rng.randint(10, 15)}[
            self.shape
        ]
        self.end = parse_end(end_s)
        self.start = self.end - self.days * DAY
        self.tz = rng.choice([-8, -5, -3, 0, 1, 2, 5.5, 8, 9])
        self.timefmt = rng.choice(["Z", "Z", "local", "epoch"])
        # calendar: a 2-day holiday gap in the middle, a release freeze week in long windows
        self.holiday = None
        if rng.random() < 0.75:
            d0 = int(self.days * rng.uniform(0.4, 0.6))
            hs = self._local_midnight(self.start + d0 * DAY)
            self.holiday = (hs, hs + 2 * DAY)
        self.freeze = None
        if self.days >= 12 and rng.random() < 0.6:
            fs = self._local_midnight(self.start + rng.uniform(0.55, 0.7) * self.days * DAY)
            self.freeze = (fs, min(self.end, fs + rng.randint(4, 6) * DAY))
        self.results: list[dict] = []
        self.failrows: list[tuple] = []
        self.feed: list[tuple[int, str, str, str]] = []

    # ---------------------------------------------------------------- calendar
    def local(self, t: float) -> datetime:
        return datetime.fromtimestamp(t + self.tz * H, tz=UTC)

    def _local_midnight(self, t: float) -> float:
        d = self.local(t)
        return t - (d.hour * H + d.minute * 60 + d.second)

    def in_holiday(self, t):
        return self.holiday is not None and self.holiday[0] <= t < self.holiday[1]

    def in_freeze(self, t):
        return self.freeze is not None and self.freeze[0] <= t < self.freeze[1]

    def load(self, t: float) -> float:
        d = self.local(t)
        h = d.hour + d.minute / 60
        if 9.5 <= h < 12.5 or 13.5 <= h < 18:
            v = 1.0
        elif 12.5 <= h < 13.5:
            v = 0.7
        elif 8 <= h < 9.5 or 18 <= h < 21:
            v = 0.4
        elif 21 <= h < 23.5 or 7 <= h < 8:
            v = 0.12
        else:
            v = 0.03
        if d.weekday() >= 5:
            v *= 0.08
        if self.in_holiday(t):
            v *= 0.02
        return v


# ==================================================================== tests
SERVICES = [
    "billing",
    "auth",
    "search",
    "ingest",
    "geo",
    "notify",
    "ledger",
    "media",
    "catalog",
    "orders",
    "shipping",
    "users",
    "reports",
    "gateway",
    "scheduler",
    "inventory",
    "pricing",
    "chat",
]
VERBS = [
    "create",
    "update",
    "delete",
    "list",
    "parse",
    "render",
    "sync",
    "retry",
    "merge",
    "export",
    "import",
    "validate",
    "refund",
    "resolve",
    "expire",
    "rotate",
    "upload",
    "stream",
    "cancel",
    "lock",
]
NOUNS = [
    "order",
    "user",
    "token",
    "invoice",
    "batch",
    "schema",
    "record",
    "session",
    "image",
    "quota",
    "webhook",
    "report",
    "cursor",
    "index",
    "page",
    "lease",
    "shard",
    "blob",
    "config",
    "event",
]


class Test:
    __slots__ = (
        "added",
        "base",
        "broken_from",
        "cache",
        "dur",
        "fix_at",
        "fix_seq",
        "id",
        "kind",
        "label",
        "mac",
        "module",
        "partner",
        "pr_bad",
        "quarantined",
        "rate",
        "skip",
        "suite",
        "tags",
        "tol",
    )

    def __init__(self, tid, suite, module):
        self.id = tid
        self.suite = suite
        self.module = module
        self.dur = 1.0
        self.tags: set[str] = set()
        self.cache = None
        self.tol = None
        self.base = 0.0
        self.label = "healthy"
        self.kind = "healthy"
        self.rate = 0.0
        self.partner = None
        self.added = None
        self.quarantined = False
        self.broken_from = None
        self.fix_seq = None
        self.fix_at = None
        self.pr_bad = None
        self.mac = False
        self.skip = False


def make_tests(f: Fleet):
    rng = f.rng
    n_unit = rng.randint(220, 380)
    n_int = rng.randint(90, 170)
    n_e2e = rng.randint(18, 35)
    n_night = rng.randint(15, 30)
    n_week = rng.randint(10, 20)
    n_mac = rng.randint(20, 35)
    n_gpu = rng.randint(15, 30)
    tests: dict[str, Test] = {}
    used = set()

    def name(svc, kind):
        for _ in range(100):
            n = f"test_{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
            if rng.random() < 0.15:
                n += f"[{rng.choice(['py311', 'py312', 'sqlite', 'pg', 'utf8', 'large', 'empty'])}]"
            if (svc, kind, n) not in used:
                used.add((svc, kind, n))
                return n
        return f"test_{len(used)}"

    def add(suite, count, path_fmt, mods_per=6):
        out = []
        mods = [
            path_fmt.format(svc=rng.choice(SERVICES), m=rng.choice(NOUNS))
            for _ in range(max(1, count // mods_per))
        ]
        mods = sorted(set(mods))
        for _ in range(count):
            m = rng.choice(mods)
            tid = f"{m}::{name(m, suite)}"
            t = Test(tid, suite, m)
            t.base = rng.choice([0, 0, 0.0002, 0.0005, 0.001, 0.002])
            tests[tid] = t
            out.append(t)
        return out

    unit = add("unit", n_unit, "services/{svc}/tests/unit/test_{m}.py", 8)
    integ = add("integration", n_int, "services/{svc}/tests/integration/test_{m}_it.py", 5)
    e2e = add("e2e", n_e2e, "e2e/flows/test_{svc}_{m}.py", 4)
    night = add("nightly", n_night, "perf/nightly/test_{svc}_{m}_load.py", 4)
    week = add("weekly", n_week, "soak/test_{svc}_{m}_soak.py", 3)
    mac = add("mac", n_mac, "clients/macos/tests/test_{m}_ui.py", 6)
    gpu = add("gpu", n_gpu, "ml/{svc}/tests/test_{m}_cuda.py", 5)
    for t in unit:
        t.dur = rng.lognormvariate(-1.5, 1.0)
        if rng.random() < 0.12:
            t.tags.add("https")  # talks to a local TLS fixture through the system CA bundle
        if rng.random() < 0.08:
            t.tags.add("time")
        if rng.random() < 0.05:
            t.tags.add("fs")
    cache_keys = ["testdata-geo", "models-small", "fixtures-ledger", "wheels-cuda"]
    for t in integ:
        t.dur = rng.lognormvariate(1.8, 0.9)
        for tag, p in (
            ("docker", 0.6),
            ("nfs", 0.3),
            ("net", 0.35),
            ("fetch", 0.15),
            ("time", 0.1),
            ("bigmem", 0.06),
            ("timing", 0.12),
            ("fs", 0.5),
        ):
            if rng.random() < p:
                t.tags.add(tag)
    for t in e2e + night + week:
        t.dur = rng.lognormvariate(3.3, 0.7)
        for tag, p in (
            ("docker", 0.7),
            ("net", 0.6),
            ("fetch", 0.25),
            ("time", 0.15),
            ("bigmem", 0.15),
            ("timing", 0.2),
            ("fs", 0.6),
            ("nfs", 0.3),
        ):
            if rng.random() < p:
                t.tags.add(tag)
    for t in mac:
        t.dur = rng.lognormvariate(0.5, 0.8)
        t.tags.add("fs")
    for t in gpu:
        t.dur = rng.lognormvariate(2.0, 0.7)
        t.tags.add("gpu")
        t.tags.add("fs")
    # a cache key only a few tests use
    for t in integ + e2e + gpu:
        if rng.random() < 0.1:
            t.cache = rng.choice(cache_keys[:3] if t.suite != "gpu" else cache_keys)
    key = cache_keys[0]
    users = [t for t in integ if t.cache == key]
    for t in rng.sample([t for t in integ if t.cache is None], max(0, 6 - len(users))):
        t.cache = key
    for t in unit + integ + e2e + night:
        if "time" in t.tags:
            t.tol = rng.choice([5, 30, 60, 120])
    # cross-platform unit tests that the mac pool runs too
    for t in rng.sample(unit, rng.randint(25, 45)):
        t.mac = True
    # always-skipped tests (a skip marker nobody removed)
    for t in rng.sample(unit + integ, rng.randint(2, 6)):
        t.skip = True
        t.kind = "skip"

    healthy = lambda pool: [t for t in pool if t.kind == "healthy"]  # noqa: E731

    def flaky(t, lo, hi, kind="flaky"):
        t.label = "flaky"
        t.kind = kind
        t.rate = rng.uniform(lo, hi)

    for t in rng.sample(healthy(unit + integ + e2e), rng.randint(5, 10)):
        flaky(t, 0.02, 0.15)
    for t in rng.sample(healthy(integ + e2e), rng.randint(1, 3)):  # worse when the fleet is busy
        flaky(t, 0.01, 0.04, "load")
    for t in rng.sample(healthy(unit), rng.randint(1, 2)):  # order-dependent: after one test in the job
        flaky(t, 0.35, 0.6, "order")
        t.partner = rng.choice(
            [u for u in unit if u.module == t.module and u is not t] or [rng.choice(unit)]
        ).id
    for t in rng.sample(healthy(unit + integ), rng.randint(1, 2)):  # added mid-window, flaky from the start
        flaky(t, 0.05, 0.2, "new")
        t.added = f.start + rng.uniform(0.3, 0.7) * f.days * DAY
    for t in rng.sample(healthy(integ + e2e), rng.randint(1, 2)):  # quarantined: still run, failures ignored
        flaky(t, 0.15, 0.4, "quarantined")
        t.quarantined = True
    for t in rng.sample(healthy(gpu), rng.randint(1, 3)):
        flaky(t, 0.03, 0.08, "gpuflaky")
    if rng.random() < 0.6:  # quarantined and simply broken since before the window
        t = rng.choice(healthy(integ))
        t.label, t.kind, t.quarantined, t.broken_from = "broken", "qbroken", True, f.start - 3 * DAY
    for t in rng.sample(healthy(unit + integ), rng.randint(1, 3)):  # time bombs: an expired fixture cert
        t.kind = "timebomb"
        t.broken_from = f.start + rng.uniform(0.2, 0.8) * f.days * DAY
        if rng.random() < 0.55:
            t.label = "broken-fixed"
            t.fix_at = t.broken_from + rng.uniform(6, 40) * H
        else:
            t.label = "broken"
    for t in rng.sample(healthy([u for u in unit if u.mac]), rng.randint(1, 2)):
        t.label, t.kind, t.rate = "platform", "platform", rng.uniform(0.85, 1.0)
    for t in rng.sample(healthy(unit + integ), rng.randint(1, 2)):
        t.kind = "branch"  # broken by one PR's commits only; main never saw it
    return tests


# ==================================================================== fleet
class Runner:
    __slots__ = (
        "agent",
        "az",
        "boot",
        "busy",
        "cache_poison",
        "id",
        "images",
        "jobs",
        "labels",
        "machine",
        "pool",
        "preempt",
        "provider",
        "ram",
        "shard",
        "spot",
        "t0",
        "t1",
    )

    def __init__(self, rid, machine, pool, az, t0, t1, image):
        self.id = rid
        self.machine = machine
        self.pool = pool
        self.az = az
        self.t0 = t0
        self.t1 = t1
        self.busy = t0
        self.agent = True
        self.images = [(t0, image)]
        self.labels = ["self-hosted", "linux", "x64"]
        self.spot = False
        self.preempt = None
        self.ram = 32
        self.boot = [t0]
        self.jobs = 0
        self.provider = "github"
        self.shard = None

    def image(self, t):
        img = self.images[0][1]
        for t0, i in self.images:
            if t0 <= t:
                img = i
        return img


def build_fleet(f: Fleet):
    rng = f.rng
    f.runners: list[Runner] = []
    f.pools: dict[str, dict] = {}
    f.machines: dict[str, list[str]] = defaultdict(list)
    f.waves = []
    base_img = f"ubuntu-22.04-{rng.randint(2026, 2026)}{rng.randint(10, 11):02d}{rng.randint(1, 28):02d}"
    new_img = base_img + ".1"
    f.good_rollout = f.start + rng.uniform(0.15, 0.5) * f.days * DAY

    def pool(name, kind, suites, watch_docker, caches):
        f.pools[name] = {
            "kind": kind,
            "suites": suites,
            "watch_docker": watch_docker,
            "caches": caches,
            "runners": [],
        }

    def farm(name, n_hosts, suites, prefix):
        pool(name, "farm", suites, rng.random() < 0.5, ["pip", "npm", "testdata-geo", "fixtures-ledger"])
        for h in range(n_hosts):
            m = f"{prefix}{h + 1:02d}"
            k = rng.choice([1, 2, 2, 3, 4, 4, 6])
            az = "room-a" if h % 2 == 0 else "room-b"
            ram = {1: 32, 2: 64, 3: 96, 4: 128, 6: 192, 8: 256}[k]
            for j in range(k):
                r = Runner(f"{m}-r{j + 1}", m, name, az, f.start - 30 * DAY, f.end + DAY, base_img)
                r.images.append((f.good_rollout + rng.uniform(0, 6 * H), new_img))
                r.ram = ram
                r.provider = "github"
                r.labels = ["self-hosted", "linux", "x64", "baremetal"]
                f.runners.append(r)

    def persistent(name, n, suites, prefix, img, labels, ram, watch_docker, caches, az_split=True):
        pool(name, "vm", suites, watch_docker, caches)
        for h in range(n):
            m = f"{prefix}-{h + 1:02d}"
            r = Runner(
                m,
                m,
                name,
                ("az-a" if h % 2 == 0 or not az_split else "az-b"),
                f.start - 30 * DAY,
                f.end + DAY,
                img,
            )
            r.labels = labels
            r.ram = ram
            f.runners.append(r)

    def autoscale(name, slots, suites):
        pool(name, "auto", suites, rng.random() < 0.3, ["pip", "npm"])
        spot_share = rng.uniform(0.4, 0.8)
        n_waves = rng.randint(1, 3)
        for _ in range(n_waves):
            tw = f.start + rng.uniform(0.1, 0.95) * f.days * DAY
            while f.load(tw) < 0.5:
                tw += H
            f.waves.append((tw, rng.choice(["az-a", "az-b"]), name))
        f.auto_img = {
            "az-a": [(f.start - DAY, base_img), (f.good_rollout, new_img)],
            "az-b": [(f.start - DAY, base_img), (f.good_rollout + 2 * H, new_img)],
        }
        hazard = rng.uniform(0.04, 0.09)  # spot preemptions per VM-hour at the cloud's busy hours
        for s in range(slots):
            az = "az-a" if s % 2 == 0 else "az-b"
            t = f.start - 2 * H
            while t < f.end:
                if s >= max(3, math.ceil(slots * min(1.0, f.load(t) * 1.1 + 0.03))):
                    t = (t // H + 1) * H + rng.uniform(0, 300)
                    continue
                life = rng.uniform(2, 10) * H
                t1 = t + life
                # scale-in: the first hour the slot is no longer wanted
                u = (t // H + 1) * H
                while u < t1:
                    if s >= max(3, math.ceil(slots * min(1.0, f.load(u) * 1.1 + 0.03))):
                        t1 = u + rng.uniform(0, 600)
                        break
                    u += H
                vid = f"{name}-{az[-1]}-{hx(f.seed, name, s, t)[:6]}"
                r = Runner(vid, vid, name, az, t, t1, None)
                r.images = [(t, None)]
                r.labels = ["self-hosted", "linux", "x64", "autoscaled"]
                r.ram = 16
                r.spot = rng.random() < spot_share
                if r.spot:
                    r.labels.append("spot")
                    p = t + rng.expovariate(hazard * (0.2 + f.load(t))) * H
                    for tw, waz, wp in f.waves:
                        if waz == az and wp == name and t <= tw < t1 and rng.random() < 0.8:
                            p = min(p, tw + rng.uniform(0, 600))
                    if p < t1:
                        r.preempt = p
                        r.t1 = p
                f.runners.append(r)
                t = r.t1 + rng.uniform(30, 180)

    if f.shape == "cloud":
        autoscale("linux", rng.randint(14, 22), ["unit", "e2e", "nightly"])
        persistent(
            "docker",
            rng.randint(8, 14),
            ["integration", "weekly"],
            "dkr-vm",
            base_img,
            ["self-hosted", "linux", "x64", "privileged"],
            32,
            rng.random() < 0.5,
            ["pip", "npm", "testdata-geo", "fixtures-ledger"],
        )
        for r in f.runners:
            if r.pool == "docker":
                r.images.append((f.good_rollout + rng.uniform(0, 8 * H), new_img))
    elif f.shape == "farm":
        farm("linux", rng.randint(16, 26), ["unit", "integration", "e2e", "nightly", "weekly"], "bm")
    else:
        autoscale("linux", rng.randint(8, 14), ["unit"])
        farm("heavy", rng.randint(8, 14), ["integration", "e2e", "nightly", "weekly"], "hv")
    persistent(
        "mac",
        rng.randint(2, 4),
        ["mac"],
        "mac-mini",
        "macos-14.6-xcode16",
        ["self-hosted", "macOS", "arm64"],
        16,
        False,
        ["npm", "derived-data"],
        az_split=False,
    )
    persistent(
        "gpu",
        rng.randint(2, 3),
        ["gpu"],
        "gpu",
        "ubuntu-22.04-cuda12.4",
        ["self-hosted", "linux", "gpu"],
        128,
        False,
        ["wheels-cuda", "models-small"],
        az_split=False,
    )
    if rng.random() < 0.6:  # the gpu pool is one box with its runners on it
        for r in f.runners:
            if r.pool == "gpu":
                r.machine = "gpu-box-01"
    for r in f.runners:
        f.pools[r.pool]["runners"].append(r.id)
        f.machines[r.machine].append(r.id)
        if r.pool == "mac":
            r.provider = "jenkins"
    # a runner re-registered under a new name mid-window (its registration token expired)
    farm_runners = [r for r in f.runners if f.pools[r.pool]["kind"] == "farm"]
    f.renamed = []
    if farm_runners:
        for r in rng.sample(farm_runners, min(2, len(farm_runners))):
            tr = f.start + rng.uniform(0.3, 0.7) * f.days * DAY
            r2 = Runner(r.id + "-b", r.machine, r.pool, r.az, tr + 600, r.t1, None)
            r2.images = r.images
            r2.ram, r2.labels = r.ram, r.labels
            r.t1 = tr
            f.runners.append(r2)
            f.pools[r.pool]["runners"].append(r2.id)
            f.machines[r.machine].append(r2.id)
            f.renamed.append((r.id, r2.id, tr))
    f.by_id = {r.id: r for r in f.runners}
    f.by_pool = defaultdict(list)
    for r in f.runners:
        f.by_pool[r.pool].append(r)
    for p in f.by_pool:
        f.by_pool[p].sort(key=lambda r: r.t0)
    f.suite_pool = {}
    for p, d in f.pools.items():
        for s in d["suites"]:
            f.suite_pool[s] = p
    f.base_img, f.new_img = base_img, new_img


def auto_image(f, r, t):
    """An autoscaled VM boots with its zone's current image and keeps it."""
    img = None
    for t0, i in f.auto_img[r.az]:
        if t0 <= r.t0:
            img = i
    return img


# ==================================================================== faults
class Fault:
    def __init__(self, fid, sort, kind, entity, runners, dims, state, onset, end, tags, note, gradual=False):
        self.id = fid
        self.sort = sort
        self.kind = kind
        self.entity = entity
        self.runners = set(runners)
        self.dims = dims
        self.state = state
        self.onset = onset
        self.end = end
        self.tags = tags
        self.note = note
        self.gradual = gradual
        self.sick = True
        self.params: dict = {}
        self.accept: list = []

    def active(self, t):
        return self.onset <= t and (self.end is None or t < self.end)


def plan_faults(f: Fleet, tests):
    rng = f.rng
    faults: list[Fault] = []
    taken: set[str] = set()
    W = f.days * DAY

    def when(lo=0.1, hi=0.75):
        return f.start + rng.uniform(lo, hi) * W

    def free_machines(pools, min_k=1, max_k=99):
        out = []
        for m, rs in f.machines.items():
            r0 = f.by_id[rs[0]]
            if (
                r0.pool in pools
                and min_k <= len({x for x in rs if not x.endswith("-b")}) <= max_k
                and m not in taken
                and f.pools[r0.pool]["kind"] != "auto"
                and not any(x.endswith("-b") for x in rs)
            ):
                out.append(m)
        return sorted(out)

    def accept_for(kind, ent):
        if kind == "runner":
            m = f.by_id[ent].machine
            acc = [["runner", ent]]
            if len(f.machines[m]) == 1:
                acc.append(["machine", m])
            return acc
        if kind == "machine":
            acc = [["machine", ent]]
            if len(f.machines[ent]) == 1:
                acc.append(["runner", f.machines[ent][0]])
            return acc
        return [[kind, ent]]

    def add(fault):
        fault.accept = accept_for(fault.kind, fault.entity)
        faults.append(fault)
        for rid in fault.runners:
            taken.add(f.by_id[rid].machine)

    farm_pools = [p for p, d in f.pools.items() if d["kind"] == "farm"]
    vm_pools = [p for p, d in f.pools.items() if d["kind"] == "vm" and p not in ("mac", "gpu")]
    big = farm_pools + vm_pools
    menu = [
        "nfshang",
        "dockerdisk",
        "clockjump",
        "busyslow",
        "cgroupoom",
        "oomlarge",
        "cachepoison",
        "drained",
        "noagent",
        "lowtraffic",
        "gpuxid",
        "badimage",
    ]
    rng.shuffle(menu)
    want = rng.randint(4, 7)
    n = 0
    for sort in menu:
        if n >= want:
            break
        fid = f"F{n + 1}"
        if sort == "nfshang" and farm_pools:
            ms = free_machines(farm_pools, 2)
            if not ms:
                continue
            m = rng.choice(ms)
            on = when()
            end = on + rng.uniform(1.5, 5) * DAY if rng.random() < 0.5 else None
            fl = Fault(
                fid,
                sort,
                "machine",
                m,
                f.machines[m],
                ["unknown"],
                "sick|suspect",
                on,
                end,
                {"nfs"},
                "NFS mount hangs in episodes; tests touching it time out (readings fine)",
            )
            eps = []
            t = on
            while t < (end or f.end):
                d = rng.uniform(20, 90) * MIN
                eps.append((t, t + d))
                t += d + rng.uniform(1, 4) * H
            fl.params["episodes"] = eps
            add(fl)
        elif sort == "dockerdisk" and big:
            p = rng.choice(big)
            ms = free_machines([p], 1)
            if not ms:
                continue
            m = rng.choice(ms)
            on = when(0.15, 0.7)  # the day docker tests start failing
            fill = rng.uniform(1, 3) * DAY
            end = on + rng.uniform(0.5, 3) * DAY if rng.random() < 0.5 else None
            watched = f.pools[p]["watch_docker"]
            kind = "machine" if len(f.machines[m]) > 1 else "runner"
            ent = m if kind == "machine" else f.machines[m][0]
            fl = Fault(
                fid,
                sort,
                kind,
                ent,
                f.machines[m],
                ["disk"] if watched else ["disk", "unknown"],
                "sick" if watched else "sick|suspect",
                on,
                end,
                {"docker"},
                "docker's own volume fills (root disk fine); "
                + (
                    "the agent watches /var/lib/docker" if watched else "the agent does not watch that volume"
                ),
                gradual=True,
            )
            fl.params.update(fill_start=on - fill, watched=watched)
            add(fl)
        elif sort == "clockjump" and big:
            ms = free_machines(big, 1)
            if not ms:
                continue
            m = rng.choice(ms)
            on = when()
            jumps = [(on, rng.choice([-1, 1]) * rng.uniform(40, 240))]
            if rng.random() < 0.35:
                jumps.append((on + rng.uniform(0.5, 1.5) * DAY, rng.choice([-1, 1]) * rng.uniform(40, 200)))
            slew = 0.0005  # ntpd slews 0.5 ms/s and will not step
            # failures stop once the offset is under the smallest tolerance the tests use (5 s)
            last_t, last_j = jumps[-1]
            end = last_t + (abs(last_j) - 5) / slew
            end = end if end < f.end else None
            kind = "machine" if len(f.machines[m]) > 1 else "runner"
            ent = m if kind == "machine" else f.machines[m][0]
            fl = Fault(
                fid,
                sort,
                kind,
                ent,
                f.machines[m],
                ["clock"],
                "sick",
                on,
                end,
                {"time"},
                f"suspend/resume stepped the clock {', '.join(f'{j:+.0f} s' for _, j in jumps)}; ntpd slews it back",
            )
            fl.params.update(jumps=jumps, slew=slew)
            add(fl)
        elif sort == "busyslow" and farm_pools:
            ms = free_machines(farm_pools, 3)
            if not ms:
                continue
            m = rng.choice(ms)
            on = when()
            end = on + rng.uniform(2, 4) * DAY if rng.random() < 0.4 else None
            add(
                Fault(
                    fid,
                    sort,
                    "machine",
                    m,
                    f.machines[m],
                    ["unknown"],
                    "sick|suspect",
                    on,
                    end,
                    {"timing"},
                    "a throttling CPU (failed fan): timing tests time out when the host is busy",
                )
            )
        elif sort == "cgroupoom" and farm_pools:
            ms = free_machines(farm_pools, 2)
            if not ms:
                continue
            m = rng.choice(ms)
            rid = rng.choice(f.machines[m])
            on = when()
            end = on + rng.uniform(1, 3) * DAY if rng.random() < 0.5 else None
            add(
                Fault(
                    fid,
                    sort,
                    "runner",
                    rid,
                    [rid],
                    ["memory"],
                    "sick",
                    on,
                    end,
                    {"bigmem", "docker"},
                    "one runner's cgroup memory limit cut to 2 GiB by a config push; its OOM kills show in the host's counter, read by every agent on the host",
                )
            )
        elif sort == "oomlarge" and vm_pools:
            ms = free_machines(vm_pools, 1, 1)
            if not ms:
                continue
            m = rng.choice(ms)
            on = when()
            end = on + rng.uniform(1, 4) * DAY if rng.random() < 0.5 else None
            fl = Fault(
                fid,
                sort,
                "runner",
                f.machines[m][0],
                f.machines[m],
                ["memory"],
                "sick",
                on,
                end,
                {"bigmem"},
                "VM resized to a smaller instance type: only the largest tests OOM",
            )
            add(fl)
        elif sort == "cachepoison" and big:
            key = "testdata-geo"
            cands = [
                m for m in free_machines(big, 1) if key in f.pools[f.by_id[f.machines[m][0]].pool]["caches"]
            ]
            if not cands:
                continue
            m = rng.choice(cands)
            rid = rng.choice(f.machines[m])
            on = when()
            end = on + rng.uniform(1, 3) * DAY if rng.random() < 0.5 else None
            fl = Fault(
                fid,
                sort,
                "runner",
                rid,
                [rid],
                ["cache"],
                "sick",
                on,
                end,
                {"cache:" + key},
                f"a truncated download poisoned the local cache '{key}' (only the few tests using it)",
            )
            fl.params["key"] = key
            add(fl)
        elif sort == "drained" and big:
            ms = free_machines(big, 1, 1)
            if not ms:
                continue
            m = rng.choice(ms)
            on = when(0.1, 0.55)
            drain = on + rng.uniform(10, 36) * H
            back = drain + rng.uniform(4, 20) * H
            fl = Fault(
                fid,
                sort,
                "runner",
                f.machines[m][0],
                f.machines[m],
                ["disk"],
                "sick",
                on,
                drain,
                {"fs"},
                "work disk full of leaked workspaces; drained by an operator, cleaned, back healthy",
            )
            fl.params.update(drain=drain, back=back)
            add(fl)
        elif sort == "noagent" and big:
            ms = free_machines(big, 1, 1)
            if not ms:
                continue
            m = rng.choice(ms)
            on = when()
            end = on + rng.uniform(1, 2) * DAY if rng.random() < 0.4 else None
            r = f.by_id[f.machines[m][0]]
            r.agent = False
            add(
                Fault(
                    fid,
                    sort,
                    "runner",
                    r.id,
                    [r.id],
                    ["disk", "unknown"],
                    "suspect",
                    on,
                    end,
                    {"fs"},
                    "work filesystem remounted read-only after an I/O error; this runner has no agent",
                )
            )
        elif sort == "lowtraffic":
            rs = [r for r in f.runners if r.pool == "mac" and r.machine not in taken]
            if not rs:
                continue
            r = rng.choice(rs)
            on = f.end - rng.uniform(3, 6) * DAY
            add(
                Fault(
                    fid,
                    sort,
                    "runner",
                    r.id,
                    [r.id],
                    ["disk"],
                    "sick",
                    on,
                    None,
                    {"fs"},
                    "a mac mini's disk full of Xcode DerivedData; mac jobs are few",
                    gradual=True,
                )
            )
        elif sort == "gpuxid":
            rs = [r for r in f.runners if r.pool == "gpu" and r.machine not in taken]
            if not rs:
                continue
            r = rng.choice(rs)
            m = r.machine
            kind = "machine" if len(f.machines[m]) > 1 else "runner"
            ent = m if kind == "machine" else r.id
            on = when()
            end = on + rng.uniform(0.5, 2) * DAY if rng.random() < 0.6 else None
            add(
                Fault(
                    fid,
                    sort,
                    kind,
                    ent,
                    f.machines[m] if kind == "machine" else [r.id],
                    ["unknown"],
                    "sick|suspect",
                    on,
                    end,
                    {"gpu"},
                    "GPU fell off the bus (Xid 79); CUDA tests error",
                )
            )
        elif sort == "badimage" and any(d["kind"] == "auto" for d in f.pools.values()):
            az = rng.choice(["az-a", "az-b"])
            on = max(when(0.2, 0.7), f.good_rollout + 0.5 * DAY)  # a newer build than the good rollout
            bad = f.new_img + "-" + az[-1] + "2"
            end = on + rng.uniform(0.3, 2.0) * DAY
            f.auto_img[az].append((on, bad))
            if end:
                f.auto_img[az].append((end, f.auto_img[az][1][1]))
            f.auto_img[az].sort()
            fl = Fault(
                fid,
                sort,
                "image",
                bad,
                [],
                ["unknown"],
                "sick|suspect",
                on,
                end,
                {"https", "fetch", "net"},
                f"image {bad} rolled to {az} only (CA bundle missing): new VMs there fail TLS and fetching tests",
            )
            fl.params["image"] = bad
            # its failures show only once VMs booted with it run jobs, and stop with the last such VM
            add(fl)
        else:
            continue
        n += 1
    return faults


def plan_herrings(f: Fleet):
    rng = f.rng
    herr = []
    taken = set()
    persistent = [
        r for r in f.runners if f.pools[r.pool]["kind"] != "auto" and r.agent and not r.id.endswith("-b")
    ]
    for sort, dims in (
        ("warn-disk", ["disk"]),
        ("warn-mem", ["memory"]),
        ("warn-clock", ["clock"]),
        ("warn-docker", ["disk"]),
    ):
        cands = [r for r in persistent if r.machine not in taken and r.pool not in ("mac", "gpu")]
        if sort == "warn-docker":
            cands = [r for r in cands if f.pools[r.pool]["watch_docker"]]
        if not cands or rng.random() < 0.2:
            continue
        r = rng.choice(cands)
        taken.add(r.machine)
        on = f.start + rng.uniform(0.05, 0.6) * f.days * DAY
        end = on + rng.uniform(0.5, 4) * DAY
        fl = Fault(
            f"W{len(herr) + 1}",
            sort,
            "runner",
            r.id,
            [r.id],
            dims,
            "warning",
            on,
            end,
            set(),
            {
                "warn-disk": "root disk 93-96 % used, jobs fine",
                "warn-mem": "memory pressure without OOM kills",
                "warn-clock": "1.2-3 s clock offset; no test minds",
                "warn-docker": "docker volume 91-94 % used",
            }[sort],
        )
        fl.sick = False
        fl.accept = [["runner", r.id]]
        herr.append(fl)
    return herr, taken


def plan_outages(f: Fleet):
    rng = f.rng
    outs = []
    W = f.days * DAY

    def busy_time(lo, hi):
        for _ in range(200):
            t = f.start + rng.uniform(lo, hi) * W
            if f.load(t) >= 0.9:
                return t
        return f.start + lo * W

    if rng.random() < 0.85:
        t = busy_time(0.15, 0.9)
        outs.append(
            {
                "id": "O1",
                "sort": "mirror",
                "region": None,
                "start": t,
                "end": t + rng.uniform(30, 120) * MIN,
                "tags": {"fetch"},
                "p": 0.9,
                "msg": "pip: ERROR: Could not find a version that satisfies the requirement (HTTP 503 from mirror)",
            }
        )
    if rng.random() < 0.7:
        t = busy_time(0.15, 0.9)
        zones = sorted({r.az for r in f.runners if r.az})
        az = rng.choice([z for z in zones if z] or ["az-a"])
        outs.append(
            {
                "id": "O2",
                "sort": "dns",
                "region": az,
                "start": t,
                "end": t + rng.uniform(20, 60) * MIN,
                "tags": {"net", "fetch"},
                "p": 0.85,
                "msg": "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            }
        )
    for i, (tw, az, _pool) in enumerate(f.waves):
        outs.append(
            {
                "id": f"P{i + 1}",
                "sort": "preempt-wave",
                "region": az,
                "start": tw,
                "end": tw + 600,
                "tags": set(),
                "p": 0,
                "msg": "",
                "allowed": True,
            }
        )
    return outs


# ==================================================================== simulation
class Sim:
    def __init__(self, f: Fleet, tests, faults, outages):
        self.f = f
        self.tests = tests
        self.faults = faults
        self.outages = outages
        self.rng = random.Random(f.seed * 31 + 1)
        self.jobn = 0
        self.runn = 0
        self.main_seq = 0
        self.main_at: list[tuple[float, int]] = [(f.start - 30 * DAY, 0)]
        self.oom_events: dict[str, list[float]] = defaultdict(list)
        self.fault_stats = {
            x.id: {"failures": 0, "tests": set(), "jobs": set(), "first": None, "last": None} for x in faults
        }
        self.out_stats = {o["id"]: {"failures": 0, "hosts": set()} for o in outages}
        self.tstats = {
            tid: {"runs": 0, "failures": 0, "own": 0, "causes": Counter(), "runners": set(), "pools": set()}
            for tid in tests
        }
        self.by_fault_runner = defaultdict(list)
        for x in faults:
            for rid in x.runners:
                self.by_fault_runner[rid].append(x)
        self.image_faults = [x for x in faults if x.kind == "image"]
        self.junit_jobs: list[tuple[float, dict]] = []
        self.heap: list = []
        self.pr_n = 0
        self.mq_queue: list[int] = []
        self.bad_prs: dict[int, list[Test]] = {}
        self.by_suite = defaultdict(list)
        for t in tests.values():
            self.by_suite[t.suite].append(t)
        for s in self.by_suite:
            self.by_suite[s].sort(key=lambda t: t.id)
        self.modules = defaultdict(list)
        for t in tests.values():
            self.modules[(t.suite, t.module)].append(t)
        self.idx = 0
        self.hidx: dict = {}
        self.requeued: Counter = Counter()

    def push(self, t, kind, data):
        self.idx += 1
        heapq.heappush(self.heap, (t, self.idx, kind, data))

    # ------------------------------------------------------------ traffic
    def plan_traffic(self):
        f, rng = self.f, self.rng
        t = f.start
        pr_rate = {"cloud": 3.5, "farm": 4, "hybrid": 4}[f.shape] * rng.uniform(
            0.8, 1.2
        )  # PR pushes / busy hour
        while t < f.end:
            lam = pr_rate * f.load(t) * (0.5 if f.in_freeze(t) else 1.0) / 60
            if lam > 0 and rng.random() < lam * 5:
                self.new_pr(t + rng.uniform(0, 300))
            t += 300
        # the merge queue forms a batch every 20-40 min while it has PRs
        t = f.start
        while t < f.end:
            self.push(t, "mq_tick", None)
            t += rng.uniform(45, 90) * MIN
        d = f._local_midnight(f.start) + 2 * H
        while d < f.end:
            if d >= f.start:
                self.push(d + rng.uniform(0, 300), "nightly", None)
                if f.local(d).weekday() == 6:
                    self.push(d + H + rng.uniform(0, 300), "weekly", None)
            d += DAY

    def new_pr(self, t):
        rng = self.rng
        self.pr_n += 1
        pr = self.pr_n
        pushes = rng.choice([1, 1, 1, 2, 2, 3, 5])
        branch_tests = [x for x in self.tests.values() if x.kind == "branch" and x.pr_bad is None]
        if branch_tests and rng.random() < 0.03:
            x = branch_tests[0]
            x.pr_bad = pr
            pushes = self.branch_fixed_push(pr) + rng.randint(1, 3)
            self.bad_prs[pr] = [x]
        mods = {}
        for s in ("unit", "integration"):
            ms = sorted({x.module for x in self.by_suite[s]})
            frac = (
                rng.choice([0.05, 0.1, 0.2, 0.3, 0.6]) if s == "unit" else rng.choice([0, 0, 0.1, 0.2, 0.5])
            )
            mods[s] = set(rng.sample(ms, max(1 if s == "unit" else 0, int(len(ms) * frac))))
        for x in self.bad_prs.get(pr, []):
            mods[x.suite].add(x.module)  # the PR touches the code the test covers
        tp = t
        for k in range(pushes):
            self.push(
                tp,
                "pr",
                {"pr": pr, "push": k, "last": k == pushes - 1, "mods": mods, "mac": rng.random() < 0.12},
            )
            tp += rng.uniform(15, 240) * MIN
            if not self.f.load(tp) > 0.05:
                tp += 12 * H

    # ------------------------------------------------------------ pipelines
    def run_all(self):
        while self.heap:
            t, _, kind, data = heapq.heappop(self.heap)
            if t >= self.f.end:
                continue
            getattr(self, "ev_" + kind)(t, data)

    def ev_pr(self, t, d):
        pr = d["pr"]
        commit = f"pr{pr}-{d['push']}"
        base = self.main_seq
        self.runn += 1
        run = f"run-{self.runn}"
        suites = []
        unit = [x for x in self.by_suite["unit"] if x.module in d["mods"]["unit"]]
        integ = [x for x in self.by_suite["integration"] if x.module in d["mods"]["integration"]]
        suites.append(("unit", unit, max(1, math.ceil(len(unit) / 40))))
        if integ:
            suites.append(("integration", integ, max(1, math.ceil(len(integ) / 12))))
        if d["mac"]:
            suites.append(("mac", self.by_suite["mac"] + [x for x in self.by_suite["unit"] if x.mac], 1))
        ctx = {
            "commit": commit,
            "base": base,
            "pr": pr,
            "push": d["push"],
            "run": run,
            "retries": 0,
            "kind": "pr",
        }
        ends, _failed = self.run_pipeline(t, suites, ctx)
        end = max(ends) if ends else t
        if d["last"]:
            self.push(end + self.rng.uniform(5, 120) * MIN, "enqueue", {"pr": pr})

    def ev_enqueue(self, t, d):
        self.mq_queue.append(d["pr"])

    def ev_mq_tick(self, t, d):
        if not self.mq_queue:
            return
        if self.f.in_freeze(t) and self.rng.random() < 0.8:
            return  # release freeze: only hotfixes merge
        n = min(len(self.mq_queue), self.rng.randint(3, 8))
        batch = self.mq_queue[:n]
        del self.mq_queue[:n]
        self.push(t, "mq_batch", {"prs": batch, "depth": 0})

    def ev_mq_batch(self, t, d):
        prs = d["prs"]
        self.runn += 1
        run = f"run-{self.runn}"
        commit = f"mq-{self.runn}"
        suites = [
            ("unit", self.by_suite["unit"], 6),
            ("integration", self.by_suite["integration"], 9),
            ("e2e", self.by_suite["e2e"], 3),
        ]
        if self.rng.random() < 0.25:
            suites.append(("mac", self.by_suite["mac"] + [x for x in self.by_suite["unit"] if x.mac], 1))
        if self.rng.random() < 0.2:
            suites.append(("gpu", self.by_suite["gpu"], 1))
        ctx = {
            "commit": commit,
            "base": self.main_seq + 1,
            "pr": None,
            "run": run,
            "retries": 2,
            "kind": "mq",
        }
        ends, failed = self.run_pipeline(t, suites, ctx)
        end = max(ends) if ends else t
        if not failed:
            self.push(end, "merge", {"prs": prs})
        elif len(prs) > 1 and d["depth"] < 1:
            h = len(prs) // 2
            self.push(end + 60, "mq_batch", {"prs": prs[:h], "depth": d["depth"] + 1})
            self.push(end + 90, "mq_batch", {"prs": prs[h:], "depth": d["depth"] + 1})
        # a lone PR that failed is ejected; its author re-queues it if the failure was a flake
        else:
            for pr in prs:
                self.requeued[pr] += 1
                if self.requeued[pr] <= 1 and self.rng.random() < 0.7:
                    self.push(end + self.rng.uniform(10, 90) * MIN, "enqueue", {"pr": pr})

    def ev_merge(self, t, d):
        for _ in d["prs"]:
            self.main_seq += 1
        self.main_at.append((t, self.main_seq))

    def ev_nightly(self, t, d):
        self.runn += 1
        ctx = {
            "commit": f"main-{self.main_seq}",
            "base": self.main_seq,
            "pr": None,
            "run": f"run-{self.runn}",
            "retries": 1,
            "kind": "nightly",
        }
        self.run_pipeline(
            t,
            [
                ("unit", self.by_suite["unit"], 4),
                ("integration", self.by_suite["integration"], 5),
                ("e2e", self.by_suite["e2e"], 2),
                ("nightly", self.by_suite["nightly"], 3),
                ("mac", self.by_suite["mac"] + [x for x in self.by_suite["unit"] if x.mac], 1),
                ("gpu", self.by_suite["gpu"], 2),
            ],
            ctx,
        )

    def ev_weekly(self, t, d):
        self.runn += 1
        ctx = {
            "commit": f"main-{self.main_seq}",
            "base": self.main_seq,
            "pr": None,
            "run": f"run-{self.runn}",
            "retries": 0,
            "kind": "weekly",
        }
        self.run_pipeline(t, [("weekly", self.by_suite["weekly"], 2)], ctx)

    def ev_rerun(self, t, d):
        self.run_job(t, d["suite"], d["tests"], d["ctx"], d["attempt"])

    def run_pipeline(self, t, suites, ctx):
        ends = []
        failed = False
        for suite, tests, nj in suites:
            tests = [x for x in tests if x.added is None or x.added <= t]
            if not tests:
                continue
            nj = max(1, min(nj, len(tests)))
            parts = [[] for _ in range(nj)]
            for x in tests:
                parts[int(hx(x.id)[:6], 16) % nj].append(x)  # a fixed split by test id hash
            for i, part in enumerate(parts):
                if not part:
                    continue
                end, bad = self.run_job(
                    t + self.rng.uniform(0, 60), suite, part, ctx, 1, shard=f"{i + 1}/{nj}"
                )
                ends.append(end)
                failed = failed or bad
        return ends, failed

    # ------------------------------------------------------------ a job
    def pool_at(self, pool, tt):
        if self.f.pools[pool]["kind"] != "auto":
            return self.f.by_pool[pool]
        if pool not in self.hidx:
            idx = defaultdict(list)
            for r in self.f.by_pool[pool]:
                for h in range(int(r.t0 // H), int(r.t1 // H) + 1):
                    idx[h].append(r)
            self.hidx[pool] = idx
        return self.hidx[pool].get(int(tt // H), ())

    def pick_runner(self, pool, t):
        cands = []
        wait = 0
        while not cands and wait < 12 * H:
            tt = t + wait
            for r in self.pool_at(pool, tt):
                if r.t0 > tt:
                    continue
                if r.t1 <= tt + 300 or r.busy > tt:
                    continue
                if self.drained(r, tt):
                    continue
                cands.append(r)
            if not cands:
                wait += 120
        if not cands:
            return None, t
        return self.rng.choice(cands), t + wait

    def drained(self, r, t):
        for x in self.by_fault_runner.get(r.id, ()):
            if x.sort == "drained" and x.params["drain"] <= t < x.params["back"]:
                return True
        return False

    def run_job(self, t, suite, tests, ctx, attempt, shard=None):
        f, rng = self.f, self.rng
        pool = f.suite_pool[suite]
        r, t = self.pick_runner(pool, t)
        if r is None:
            return t, False
        self.jobn += 1
        job = f"job-{self.jobn}"
        r.jobs += 1
        img = auto_image(f, r, t) if f.pools[pool]["kind"] == "auto" else r.image(t)
        if f.pools[pool]["kind"] == "auto":
            r.images = [(r.t0, img)]
        ident = {
            "id": r.id,
            "name": r.id,
            "machine": r.machine,
            "pool": pool,
            "image": img,
            "labels": r.labels,
            "provider": r.provider,
            "ephemeral": False,
        }
        if r.shard:
            ident["shard"] = r.shard
        now = t + rng.uniform(120, 600)  # checkout, build, dependency restore, containers up
        order = list(tests)
        if suite == "unit":
            rng.shuffle(order)  # pytest-randomly
        ran = set()
        job_failed = False
        results = []
        slow = 1.0
        for x in self.by_fault_runner.get(r.id, ()):
            if x.sort == "busyslow" and x.active(now):
                slow = 2.5
        preempted = False
        nretry = 0 if pool == "mac" else ctx["retries"]
        for x in order:
            if x.skip or (pool == "mac" and "docker" in x.tags):
                rec = self.rec(x, "skipped", now, 0.0, job, ctx, attempt, ident, None)
                results.append(rec)
                f.results.append(rec)
                continue
            for a in range(1 + nretry):
                d = x.dur * rng.lognormvariate(0, 0.3) * slow / (2 if suite == "unit" else 1)
                if r.preempt is not None and now + d >= r.preempt:
                    dd = max(0.0, r.preempt - now)
                    now = r.preempt
                    cause = "preempt"
                    for o in self.outages:
                        if (
                            o["sort"] == "preempt-wave"
                            and o["region"] == r.az
                            and o["start"] <= now <= o["end"]
                        ):
                            cause = o["id"]
                    msg = "The runner has received a shutdown signal (spot instance reclaimed); the operation was canceled"
                    self.emit(
                        x, "error", now, dd, job, ctx, attempt + a, ident, msg, cause, r, pool, img, results
                    )
                    preempted = True
                    break
                out, cause, msg, dd = self.outcome(x, r, pool, img, now, ctx, ran, d)
                now += dd
                self.emit(x, out, now, dd, job, ctx, attempt + a, ident, msg, cause, r, pool, img, results)
                if out in ("passed", "skipped"):
                    break
                if a == nretry and not x.quarantined and x.kind not in ("timebomb", "qbroken"):
                    job_failed = True
            if preempted:
                break
            ran.add(x.id)
        end = now + rng.uniform(5, 30)
        r.busy = end
        if r.t1 < end and r.preempt is None:
            r.t1 = end + 60
        arrive = end + rng.uniform(3, 90)
        if pool == "mac":
            self.junit_jobs.append(
                (arrive, {"job": job, "run": ctx["run"], "ident": ident, "results": results})
            )
        else:
            dup = rng.random() < 0.01
            for rec in results:
                self.f.feed.append(
                    (int(arrive * 1000), "result", r.id, json.dumps(rec, separators=(",", ":")))
                )
                if dup:
                    self.f.feed.append(
                        (int((arrive + 40) * 1000), "result", r.id, json.dumps(rec, separators=(",", ":")))
                    )
        if preempted:
            self.push(
                now + rng.uniform(60, 240),
                "rerun",
                {"suite": suite, "tests": tests, "ctx": ctx, "attempt": attempt + 1},
            )
            return now, False
        if job_failed and ctx["kind"] == "pr" and rng.random() < 0.3 and attempt < 3:
            self.push(
                end + rng.uniform(3, 60) * MIN,
                "rerun",
                {"suite": suite, "tests": tests, "ctx": ctx, "attempt": attempt + 1},
            )
        return end, job_failed

    def ftime(self, t):
        f = self.f
        if f.timefmt == "epoch":
            return round(t, 3)
        if f.timefmt == "local":
            tzinfo = timezone(timedelta(hours=f.tz))
            return datetime.fromtimestamp(t, tz=tzinfo).isoformat(timespec="milliseconds")
        return iso_utc(t)

    def rec(self, x, out, now, d, job, ctx, attempt, ident, msg):
        rec = {
            "test_id": x.id,
            "outcome": out,
            "time": self.ftime(now),
            "duration_s": round(d, 3),
            "job_id": job,
            "run_id": ctx["run"],
            "attempt": attempt,
            "commit": ctx["commit"],
            "runner": ident,
        }
        if msg:
            rec["message"] = msg
        rec["_t"] = now
        return rec

    def emit(self, x, out, now, d, job, ctx, attempt, ident, msg, cause, r, pool, img, results=None):
        rec = self.rec(x, out, now, d, job, ctx, attempt, ident, msg)
        results.append(rec)
        self.f.results.append(rec)
        ts = self.tstats[x.id]
        ts["runs"] += 1
        ts["runners"].add(r.machine if f_is_auto(self.f, pool) else r.id)
        ts["pools"].add(pool)
        if out in ("failed", "error"):
            ts["failures"] += 1
            ts["causes"][cause] += 1
            if cause == "own":
                ts["own"] += 1
            self.f.failrows.append((now, x.id, r.id, r.machine, pool, img, cause))
            if cause in self.fault_stats:
                s = self.fault_stats[cause]
                s["failures"] += 1
                s["tests"].add(x.id)
                s["jobs"].add(job)
                s["first"] = now if s["first"] is None else min(s["first"], now)
                s["last"] = now if s["last"] is None else max(s["last"], now)
            if cause in self.out_stats:
                self.out_stats[cause]["failures"] += 1
                self.out_stats[cause]["hosts"].add(r.machine)

    # ------------------------------------------------------------ one execution
    def outcome(self, x, r, pool, img, now, ctx, ran, d):
        f, rng = self.f, self.rng
        # faults first: they are what breaks the resource the test needs
        for fl in self.by_fault_runner.get(r.id, ()):
            if not fl.active(now):
                continue
            hit = self.fault_hit(fl, x, r, now)
            if hit:
                p, out, msg, dur = hit
                if rng.random() < p:
                    return out, fl.id, msg, dur if dur is not None else d
        for fl in self.image_faults:
            if img == fl.params["image"] and (x.tags & fl.tags) and rng.random() < 0.92:
                return (
                    "failed",
                    fl.id,
                    "ssl.SSLCertVerificationError: certificate verify failed: unable to get local issuer certificate",
                    d * 0.3,
                )
        for o in self.outages:
            if (
                o["p"]
                and o["start"] <= now < o["end"]
                and (x.tags & o["tags"])
                and (o["region"] is None or o["region"] == r.az)
                and rng.random() < o["p"]
            ):
                return "error", o["id"], o["msg"], d + rng.uniform(5, 30)
        # the test itself
        p = x.base
        out = "failed"
        msg = "AssertionError"
        if x.kind in ("flaky", "new", "quarantined", "gpuflaky"):
            p = x.rate
            msg = rng.choice(
                [
                    "AssertionError: expected 200, got 503",
                    "TimeoutError: waited 5.0s",
                    "AssertionError: lists differ",
                    "ConnectionResetError",
                ]
            )
        elif x.kind == "load":
            p = x.rate * (0.3 + 3.5 * f.load(now))
            msg = "TimeoutError: request took longer than 10s"
        elif x.kind == "order":
            p = x.rate if x.partner in ran else x.base
            msg = "AssertionError: registry already contains 'default' (state leaked from an earlier test)"
        elif x.kind == "platform" and pool == "mac":
            p = x.rate
            msg = "AssertionError: 'Readme.md' != 'README.md' (case-insensitive filesystem)"
        elif x.kind in ("timebomb", "qbroken") and now >= x.broken_from:
            fixed = False
            if x.fix_at is not None and now >= x.fix_at:
                if x.fix_seq is None:
                    x.fix_seq = self.main_seq + 1  # the fix lands with the next merge
                fixed = ctx["base"] >= x.fix_seq
            if not fixed:
                p = 0.995
                msg = "ssl.SSLError: certificate has expired (tests/fixtures/server.pem)"
        elif x.kind == "branch" and ctx.get("pr") is not None and ctx["pr"] == x.pr_bad and ctx["push"] >= 1:
            p = 0.97 if ctx["push"] < self.branch_fixed_push(ctx["pr"]) else x.base
            msg = "AssertionError: KeyError 'currency' in serializer output"
        if rng.random() < p:
            if rng.random() < 0.12:
                out = "error"
            return out, "own", msg, d
        return "passed", None, None, d

    def branch_fixed_push(self, pr):
        return hash_int(pr) % 3 + 4

    def seq_at(self, t):
        s = 0
        for tt, q in self.main_at:
            if tt <= t:
                s = q
            else:
                break
        if t > self.main_at[-1][0]:
            # not merged yet when asked: the fix lands with the next merge after t
            return self.main_seq + 1
        return s

    def fault_hit(self, fl, x, r, now):
        f, rng = self.f, self.rng
        s = fl.sort
        if s == "nfshang":
            if "nfs" in x.tags and any(a <= now < b for a, b in fl.params["episodes"]):
                return 0.95, "error", "Failed: Timeout >300.0s (stuck in open('/mnt/datasets/...'))", 300.0
        elif s == "dockerdisk":
            if "docker" in x.tags:
                frac = min(1.0, (now - fl.onset) / (0.7 * DAY))
                return (
                    0.25 + 0.65 * frac,
                    "error",
                    "docker: failed to register layer: write /var/lib/docker/overlay2/...: no space left on device",
                    None,
                )
        elif s == "clockjump":
            off = clock_offset(fl, now)
            if x.tol is not None and abs(off) > x.tol:
                return (
                    0.9,
                    "failed",
                    f"AssertionError: token not yet valid / skew {off:+.0f}s exceeds {x.tol}s leeway",
                    None,
                )
        elif s == "busyslow":
            if "timing" in x.tags:
                p = 0.5 if f.load(now) >= 0.6 else 0.04
                return p, "error", "Failed: Timeout >60.0s", 60.0
        elif s == "cgroupoom":
            if "bigmem" in x.tags or ("docker" in x.tags and rng.random() < 0.5):
                self.oom_events[r.machine].append(now)
                return (
                    0.85,
                    "error",
                    "worker 'gw1' crashed while running the test (signal 9, OOM-killed in cgroup)",
                    None,
                )
        elif s == "oomlarge":
            if "bigmem" in x.tags:
                self.oom_events[r.machine].append(now)
                return 0.8, "error", "worker 'gw0' crashed while running the test (Killed)", None
        elif s == "cachepoison":
            if x.cache == fl.params["key"]:
                return (
                    0.9,
                    "failed",
                    "zlib.error: Error -3 while decompressing data: invalid stored block lengths",
                    None,
                )
        elif s == "drained":
            if "fs" in x.tags and now < fl.params["drain"]:
                frac = min(1.0, (now - fl.onset) / (6 * H))
                return 0.3 + 0.6 * frac, "error", "OSError: [Errno 28] No space left on device", None
        elif s == "noagent":
            if "fs" in x.tags:
                return (
                    0.9,
                    "error",
                    "OSError: [Errno 30] Read-only file system: '/home/runner/work/_temp'",
                    None,
                )
        elif s == "lowtraffic":
            frac = min(1.0, (now - fl.onset) / DAY)
            return (
                0.2 + 0.7 * frac,
                "failed",
                "error: couldn't write to DerivedData: No space left on device",
                None,
            )
        elif s == "gpuxid":
            return (
                0.95,
                "error",
                "RuntimeError: CUDA error: unknown error (Xid 79: GPU has fallen off the bus)",
                None,
            )
        return None


def hash_int(x):
    return int(hx(x)[:8], 16)


def f_is_auto(f, pool):
    return f.pools[pool]["kind"] == "auto"


def clock_offset(fl, t):
    """The offset left of every step so far, each slewed back at the same rate."""
    rem = 0.0
    prev = None
    slew = fl.params["slew"]
    for tj, j in fl.params["jumps"]:
        if tj > t:
            break
        if prev is not None:
            rem = math.copysign(max(0.0, abs(rem) - slew * (tj - prev)), rem)
        rem += j
        prev = tj
    if prev is None:
        return 0.0
    return math.copysign(max(0.0, abs(rem) - slew * (t - prev)), rem)


# ==================================================================== agent reports
def make_reports(f: Fleet, sim: Sim, faults, herrings, target):
    rng = random.Random(f.seed * 97 + 3)
    alive = sum(max(0.0, min(r.t1, f.end) - max(r.t0, f.start)) for r in f.runners if r.agent)
    interval = max(150.0, alive / target)
    by_r = defaultdict(list)
    for x in faults + herrings:
        for rid in x.runners:
            by_r[rid].append(x)
    late_agent = rng.choice([r.id for r in f.runners if r.agent and f.pools[r.pool]["kind"] != "auto"])
    late_span = f.start + rng.uniform(0.5, 0.9) * f.days * DAY
    late_span = (late_span, late_span + rng.uniform(2, 5) * H)
    reports = []
    base_free = {}
    for r in f.runners:
        if not r.agent:
            continue
        t = max(r.t0 + rng.uniform(20, 120), f.start + rng.uniform(0, interval))
        seq = 0
        boot = hx("boot", r.id, r.t0)[:12]
        pool = f.pools[r.pool]
        mem_total = r.ram * 2**30
        bf = base_free.setdefault(r.machine, rng.uniform(0.3, 0.75))
        dock_free = rng.uniform(0.3, 0.7)
        prev = t - interval
        ooms = sim.oom_events.get(r.machine, [])
        while t < min(r.t1, f.end):
            if sim.drained(r, t) and any(x.sort == "drained" for x in by_r[r.id]):
                # drained and cleaned: the operator rebooted it
                pass
            fs = {"/": bf + rng.gauss(0, 0.005), "/home/runner/work": bf + rng.gauss(0, 0.01), "/tmp": bf}
            dock = dock_free + rng.gauss(0, 0.01)
            ro = False
            avail = rng.uniform(0.35, 0.7) if f.load(t) > 0.3 else rng.uniform(0.6, 0.85)
            psi_some = rng.uniform(0, 0.5)
            psi_full = rng.uniform(0, 0.1)
            off = rng.gauss(0, 0.004)
            caches = {}
            day = int(
                (t + f.tz * H - 4 * H - (hash_int(r.id) % 5400)) // DAY
            )  # daily refresh at 04:00, spread 90 min
            for k in pool["caches"]:
                caches[k] = hx(
                    k, day if f.pools[r.pool]["kind"] != "auto" else int((r.t0 + f.tz * H - 4 * H) // DAY)
                )[:16]
            for x in by_r[r.id]:
                s = x.sort
                if s == "dockerdisk":
                    t0 = x.params["fill_start"]
                    if t >= t0 and (x.end is None or t < x.end):
                        frac = min(1.0, (t - t0) / (x.onset - t0))
                        dock = (
                            max(0.001, dock_free * (1 - frac) * 0.98 + 0.02 * (1 - frac))
                            if frac < 1
                            else rng.uniform(0.0, 0.004)
                        )
                    elif x.end is not None and t >= x.end:
                        dock = dock_free + 0.1
                elif s == "clockjump":
                    off += clock_offset(x, t)
                elif s == "cgroupoom":
                    pass
                elif s == "oomlarge" and x.active(t):
                    mem_total = r.ram * 2**29
                    avail = rng.uniform(0.02, 0.1) if f.load(t) > 0.2 else rng.uniform(0.3, 0.5)
                    psi_some, psi_full = rng.uniform(10, 40), rng.uniform(4, 20)
                elif s == "cachepoison" and x.active(t):
                    caches[x.params["key"]] = hx("poison", x.id)[:16]
                elif s == "drained":
                    if x.onset - 8 * H <= t < x.params["back"]:
                        frac = min(1.0, max(0.0, (t - x.onset + 8 * H) / (8 * H)))
                        fs["/home/runner/work"] = fs["/"] = max(0.0, bf * (1 - frac) + rng.uniform(0, 0.003))
                elif s == "lowtraffic":
                    if t >= x.onset - 2 * DAY:
                        frac = min(1.0, (t - x.onset + 2 * DAY) / (2 * DAY + 0.3 * DAY))
                        fs["/"] = fs["/home/runner/work"] = max(0.002, bf * (1 - frac))
                elif s == "warn-disk" and x.active(t):
                    fs["/"] = rng.uniform(0.04, 0.07)
                elif s == "warn-mem" and x.active(t):
                    avail, psi_some, psi_full = (
                        rng.uniform(0.05, 0.09),
                        rng.uniform(5, 15),
                        rng.uniform(0.5, 3),
                    )
                elif s == "warn-clock" and x.active(t):
                    off += rng.uniform(1.2, 3.0)
                elif s == "warn-docker" and x.active(t):
                    dock = rng.uniform(0.06, 0.09)
            n_oom = sum(1 for e in ooms if prev < e <= t)
            paths = []
            for p, fr in fs.items():
                fr = min(1.0, max(0.0, fr))
                paths.append(
                    {
                        "path": p,
                        "mount_point": "/" if p != "/tmp" else "/tmp",
                        "device": "/dev/nvme0n1p1",
                        "total_bytes": 400 * 2**30,
                        "free_bytes": int(fr * 400 * 2**30),
                        "free_ratio": round(fr, 4),
                        "inodes_total": 26_000_000,
                        "inodes_free": 20_000_000,
                        "inodes_free_ratio": 0.77,
                        "read_only": ro,
                        "write_probe_ok": not ro and fr > 0.0005,
                    }
                )
            if pool["watch_docker"]:
                dock = min(1.0, max(0.0, dock))
                paths.append(
                    {
                        "path": "/var/lib/docker",
                        "mount_point": "/var/lib/docker",
                        "device": "/dev/nvme1n1",
                        "total_bytes": 200 * 2**30,
                        "free_bytes": int(dock * 200 * 2**30),
                        "free_ratio": round(dock, 4),
                        "inodes_total": 13_000_000,
                        "inodes_free": 12_000_000,
                        "inodes_free_ratio": 0.92,
                        "read_only": False,
                        "write_probe_ok": dock > 0.0005,
                    }
                )
            dstat = "problem" if any(p["free_ratio"] < 0.02 for p in paths) else "ok"
            servers = []
            for s in ["0.pool.ntp.org", "1.pool.ntp.org", "time.cloudflare.com"]:
                servers.append(
                    {
                        "server": s,
                        "offset_s": round(off + rng.gauss(0, 0.003), 4),
                        "delay_s": round(rng.uniform(0.002, 0.04), 4),
                        "stratum": 2,
                    }
                )
            offs = sorted(s["offset_s"] for s in servers)
            mem = {
                "check": "memory",
                "status": "problem" if n_oom else "ok",
                "total_bytes": mem_total,
                "available_bytes": int(avail * mem_total),
                "available_ratio": round(avail, 4),
                "swap_used_bytes": 0,
                "psi_some_avg10": round(psi_some, 2),
                "psi_some_avg60": round(psi_some * 0.8, 2),
                "psi_full_avg10": round(psi_full, 2),
                "psi_full_avg60": round(psi_full * 0.8, 2),
                "oom_kills": n_oom,
            }
            if n_oom:
                mem["reason"] = "OomKills"
            disk = {"check": "disk", "status": dstat, "paths": paths}
            if dstat == "problem":
                disk["reason"] = "DiskFull"
            clock = {
                "check": "clock",
                "status": "problem" if abs(offs[1]) > 1 else "ok",
                "offset_s": offs[1],
                "servers": servers,
            }
            cache = {
                "check": "cache",
                "status": "ok",
                "caches": [
                    {
                        "key": k,
                        "path": f"/home/runner/.cache/{k}",
                        "digest": v,
                        "files": 1200,
                        "bytes": 3 * 2**30,
                    }
                    for k, v in caches.items()
                ],
            }
            ident = {
                "id": r.id,
                "name": r.id,
                "machine": r.machine,
                "pool": r.pool,
                "image": (auto_image(f, r, t) if pool["kind"] == "auto" else r.image(t)),
                "labels": r.labels,
                "provider": r.provider,
                "ephemeral": False,
            }
            rep = {
                "agent_id": r.id,
                "boot_id": boot,
                "seq": seq,
                "observed_at": iso_utc(t),
                "runner": ident,
                "readings": [disk, mem, clock, cache],
                "dropped": 0,
                "agent_version": "0.9.3",
            }
            arrive = t + rng.uniform(1, 20)
            if r.id == late_agent and late_span[0] <= t < late_span[1]:
                arrive = late_span[1] + rng.uniform(30, 300)
            reports.append((t, arrive, r.id, rep))
            seq += 1
            prev = t
            t += interval * rng.uniform(0.85, 1.15)
            if (
                f.pools[r.pool]["kind"] != "auto" and rng.random() < 0.0015
            ):  # a reboot: new boot id, seq from 0
                boot = hx("boot", r.id, t)[:12]
                seq = 0
    return reports, interval


# ==================================================================== JUnit
def junit_xml(f: Fleet, job: dict) -> str:
    from xml.sax.saxutils import quoteattr

    tzinfo = timezone(timedelta(hours=f.tz))
    by_mod = defaultdict(list)
    for rec in job["results"]:
        mod = rec["test_id"].split("::")[0]
        by_mod[mod].append(rec)
    out = ['<?xml version="1.0" encoding="utf-8"?>', "<testsuites>"]
    for mod, recs in by_mod.items():
        ts0 = min(r["_t"] for r in recs)
        stamp = datetime.fromtimestamp(ts0, tz=tzinfo).isoformat(timespec="seconds")
        fails = sum(1 for r in recs if r["outcome"] == "failed")
        errs = sum(1 for r in recs if r["outcome"] == "error")
        skips = sum(1 for r in recs if r["outcome"] == "skipped")
        out.append(
            f'<testsuite name="pytest" errors="{errs}" failures="{fails}" skipped="{skips}" tests="{len(recs)}" '
            f'timestamp="{stamp}" hostname="{job["ident"]["machine"]}">'
        )
        cls = mod[:-3].replace("/", ".")
        for r in recs:
            name = r["test_id"].split("::", 1)[1]
            out.append(
                f"<testcase classname={quoteattr(cls)} name={quoteattr(name)} file={quoteattr(mod)} "
                f'time="{r["duration_s"]:.3f}">'
            )
            m = quoteattr(r.get("message") or "")
            if r["outcome"] == "failed":
                out.append(f"<failure message={m}>{r.get('message', '')}</failure>")
            elif r["outcome"] == "error":
                out.append(f"<error message={m}>{r.get('message', '')}</error>")
            elif r["outcome"] == "skipped":
                out.append('<skipped type="pytest.skip" message="skip marker"/>')
            out.append("</testcase>")
        out.append("</testsuite>")
    out.append("</testsuites>")
    return "\n".join(out)


# ==================================================================== main
def main():
    seed = int(sys.argv[1])
    out = Path(sys.argv[2])
    end_s = sys.argv[3] if len(sys.argv) > 3 else "2026-12-05T08:00:00Z"
    out.mkdir(parents=True, exist_ok=True)
    f = Fleet(seed, end_s)
    tests = make_tests(f)
    build_fleet(f)
    faults = plan_faults(f, tests)
    herrings, _ = plan_herrings(f)
    outages = plan_outages(f)
    sim = Sim(f, tests, faults, outages)
    sim.plan_traffic()
    sim.run_all()
    target = f.rng.randint(28000, 38000)
    reports, interval = make_reports(f, sim, faults, herrings, target)

    # JUnit: the mac pool's results, rewritten to what the parser reads back (one time per testsuite)
    junit_feed = []
    for arrive, job in sim.junit_jobs:
        job["results"] = [rec for rec in job["results"] if rec["_t"] < f.end]
        if not job["results"] or arrive * 1000 < 0:
            continue
        by_mod = defaultdict(list)
        for rec in job["results"]:
            by_mod[rec["test_id"].split("::")[0]].append(rec)
        for recs in by_mod.values():
            ts0 = int(min(r["_t"] for r in recs))
            for r in recs:
                r["time"] = iso_utc(ts0)
                r["_t"] = float(ts0)
                r.pop("attempt", None)
                r.pop("commit", None)
        xml = junit_xml(f, job)
        ident = job["ident"]
        params = {
            "runner_id": ident["id"],
            "pool": ident["pool"],
            "machine": ident["machine"],
            "image": ident["image"],
            "job_id": job["job"],
            "run_id": job["run"],
        }
        junit_feed.append(
            (int(arrive * 1000), "junit", ident["id"], json.dumps({"params": params, "xml": xml}))
        )
    # the JUnit timestamps are whole seconds: fix failure rows of the mac pool to match
    mac_runners = {r.id for r in f.runners if r.pool == "mac"}
    f.failrows = [(float(int(row[0])) if row[2] in mac_runners else row[0], *row[1:]) for row in f.failrows]
    # a job may be cut before its results reach the end of the window: keep only results before the end
    results = [r for r in f.results if r["_t"] < f.end]
    keep = {id(r) for r in results}
    feed = [x for x in f.feed]
    feed += junit_feed
    for _t, arrive, sender, rep in reports:
        feed.append((int(arrive * 1000), "report", sender, json.dumps(rep, separators=(",", ":"))))
        if f.rng.random() < 0.005:
            feed.append((int((arrive + 30) * 1000), "report", sender, json.dumps(rep, separators=(",", ":"))))
    # strip private fields from the result lines already serialised: re-serialise cleanly
    clean_feed = []
    for at, ch, sender, rec in feed:
        if ch == "result":
            d = json.loads(rec)
            t_ev = d.pop("_t")
            if t_ev >= f.end:
                continue
            rec = json.dumps(d, separators=(",", ":"))
        clean_feed.append((at, ch, sender, rec))
    clean_feed.sort(key=lambda x: (x[0], x[1]))
    with open(out / "feed.tsv", "w") as fh:
        for at, ch, sender, rec in clean_feed:
            fh.write(f"{at}\t{ch}\t{sender}\t{rec}\n")
    events = []
    for r in results:
        d = dict(r)
        t_ev = d.pop("_t")
        events.append((t_ev, json.dumps(d, separators=(",", ":"))))
    for t, _arrive, _sender, rep in reports:
        events.append((t, json.dumps({"kind": "report", **rep}, separators=(",", ":"))))
    events.sort(key=lambda x: x[0])
    with open(out / "history.ndjson", "w") as fh:
        for _, line in events:
            fh.write(line + "\n")
    with open(out / "failures.tsv", "w") as fh:
        fh.write("time\ttest_id\trunner\tmachine\tpool\timage\tcause\n")
        for row in sorted(f.failrows):
            if row[0] < f.end:
                fh.write(f"{iso_utc(row[0])}\t" + "\t".join(str(x) for x in row[1:]) + "\n")
    del keep

    n_results = len(results)
    n_reports = len(reports)
    arrivals = sorted(x[0] for x in clean_feed)
    cut_frac = f.rng.uniform(0.35, 0.5)
    cut = int((f.start + cut_frac * f.days * DAY) * 1000)

    # ---- truth
    def e_row(x: Fault, stats=None):
        st = stats or {"failures": 0, "tests": set(), "jobs": set(), "first": None, "last": None}
        runners = sorted(x.runners)
        end = x.end
        if x.kind == "image":
            vms = [
                r
                for r in f.runners
                if f.pools[r.pool]["kind"] == "auto" and auto_image(f, r, r.t0) == x.params["image"]
            ]
            runners = sorted(r.id for r in vms)
            if end is not None and vms:
                end = max(end, max(r.t1 for r in vms))  # VMs booted with it keep it until replaced
        weak = st["failures"] < 10 or len(st["tests"]) < 4 or len(st["jobs"]) < 3
        return {
            "id": x.id,
            "sort": x.sort,
            "kind": x.kind,
            "entity": x.entity,
            "sick": x.sick,
            "accept": x.accept,
            "runners": runners,
            "dimensions": x.dims,
            "expected_state": x.state.split("|")[0] if x.sick else "warning",
            "accept_states": x.state.split("|"),
            "onset": iso_utc(x.onset),
            "end": iso_utc(end) if end and end < f.end else None,
            "gradual": x.gradual,
            "failures": st["failures"],
            "distinct_tests": len(st["tests"]),
            "jobs": len(st["jobs"]),
            "first_failure": iso_utc(st["first"]) if st["first"] else None,
            "last_failure": iso_utc(st["last"]) if st["last"] else None,
            "weak": weak if x.sick else True,
            "note": x.note,
        }

    entities = [e_row(x, sim.fault_stats[x.id]) for x in faults] + [e_row(x) for x in herrings]
    for e in entities:
        if e["sort"] == "badimage" and e["last_failure"] and e["end"] is None:
            pass
    outs = []
    for o in outages:
        st = sim.out_stats[o["id"]]
        allowed = bool(o.get("allowed"))
        outs.append(
            {
                "id": o["id"],
                "sort": o["sort"],
                "region": o["region"],
                "start": iso_utc(o["start"]),
                "end": iso_utc(o["end"]),
                "failures": st["failures"],
                "hosts": len(st["hosts"]),
                "allowed": allowed,
                "weak": allowed or st["failures"] < 15 or len(st["hosts"]) < 2,
            }
        )
    tt = {}
    for tid, x in sorted(tests.items()):
        st = sim.tstats[tid]
        label = x.label
        accept = {
            "healthy": ["healthy"],
            "flaky": ["flaky"],
            "broken": ["broken"],
            "broken-fixed": ["broken", "healthy"],
            "platform": ["platform"],
        }[label]
        if x.kind == "branch":
            accept = ["healthy", "broken"]
        own = st["own"]
        weak = (label == "flaky" and own < 5) or (label in ("broken", "broken-fixed", "platform") and own < 5)
        tt[tid] = {
            "label": label,
            "kind": x.kind,
            "accept": accept,
            "rate": round(x.rate, 4) if label == "flaky" else None,
            "suite": x.suite,
            "runs": st["runs"],
            "failures": st["failures"],
            "own_failures": own,
            "base_rate": x.base,
            "causes": dict(st["causes"]),
            "n_runners": len(st["runners"]),
            "pools": sorted(st["pools"]),
            "quarantined": x.quarantined,
            "added": iso_utc(x.added) if x.added else None,
            "broken_from": iso_utc(x.broken_from) if x.broken_from else None,
            "fixed_at": iso_utc(x.fix_at) if x.fix_at else None,
            "weak": weak,
        }
    runners_meta = {}
    for r in f.runners:
        imgs = sorted({i for _, i in r.images if i})
        if f.pools[r.pool]["kind"] == "auto":
            imgs = [auto_image(f, r, r.t0)]
        runners_meta[r.id] = {
            "machine": r.machine,
            "pool": r.pool,
            "az": r.az,
            "images": imgs,
            "agent": r.agent,
            "spot": r.spot,
            "preempted": r.preempt is not None,
            "jobs": r.jobs,
            "from": iso_utc(max(r.t0, f.start)),
            "to": iso_utc(min(r.t1, f.end)),
        }
    agents = sorted(
        r.id for r in f.runners if r.agent and f.pools[r.pool]["kind"] != "auto" and r.pool not in ("mac",)
    )
    arng = random.Random(seed)
    truth = {
        "seed": seed,
        "shape": f.shape,
        "start": iso_utc(f.start),
        "end": iso_utc(f.end),
        "days": f.days,
        "tz_offset_h": f.tz,
        "time_format": f.timefmt,
        "holiday": [iso_utc(x) for x in f.holiday] if f.holiday else None,
        "freeze": [iso_utc(x) for x in f.freeze] if f.freeze else None,
        "pools": {
            p: {
                "kind": d["kind"],
                "suites": d["suites"],
                "watch_docker": d["watch_docker"],
                "runners": d["runners"],
            }
            for p, d in f.pools.items()
        },
        "hosts": {m: rs for m, rs in f.machines.items()},
        "ephemeral_machines": [],
        "runners_meta": runners_meta,
        "renamed": [[a, b, iso_utc(t)] for a, b, t in f.renamed],
        "entities": entities,
        "outages": outs,
        "tests": tt,
        "agent_token_runners": arng.sample(agents, min(2, len(agents))),
        "report_interval_s": round(interval),
        "feed": {
            "backfill_until_ms": cut,
            "unique_results": n_results,
            "unique_reports": n_reports,
            "junit_jobs": len(junit_feed),
            "first_arrival_ms": arrivals[0] if arrivals else None,
        },
        "counts": {
            "results": n_results,
            "reports": n_reports,
            "jobs": sim.jobn,
            "runs": sim.runn,
            "prs": sim.pr_n,
            "merged": sim.main_seq,
            "vms": sum(1 for r in f.runners if f.pools[r.pool]["kind"] == "auto"),
        },
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    sick = [e for e in entities if e["sick"]]
    print(
        f"seed {seed}: {f.shape}, {f.days} d, {len(f.runners)} runners ({truth['counts']['vms']} autoscaled VMs), "
        f"{n_results} results, {n_reports} reports (every {interval:.0f} s), {sim.jobn} jobs, {sim.pr_n} PRs; "
        f"faults: "
        + ", ".join(
            f"{e['id']} {e['sort']} {e['kind']} {e['entity']} {e['failures']}f/"
            f"{e['distinct_tests']}t{' weak' if e['weak'] else ''}"
            for e in sick
        )
        + "; outages: "
        + ", ".join(f"{o['id']} {o['sort']} {o['failures']}f" for o in outs),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
