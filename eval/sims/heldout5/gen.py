"""Generate a held-out fleet: gen.py SEED OUTDIR [END_TIME].

A datacenter-style fleet: 2-3 regions, each with a few pools of long-lived static runners (many on
bare-metal hosts carrying 2-4 runner processes), sometimes an arm pool, an ephemeral pod pool on a few
nodes in one region and a windows pool whose CI (Jenkins) uploads JUnit XML. Every pool mounts one
shared NFS workspace/cache server. The integration suite is statically sharded; the last shard holds the
slow, timing-sensitive tests.

Writes into OUTDIR:
  history.ndjson   every result and report (`"kind": "report"`) in event order (JUnit-fed results as
                   the controller stores them: the suite's timestamp)
  feed.tsv         arrival_ms TAB channel TAB sender TAB payload, in arrival order; channel is
                   result | report | junit (payload: {"params": {...}, "xml": "..."})
  truth.json       the world and what is true about it
  failures.tsv     every failed execution: time, test, runner, machine, pool, image, cause
"""

from __future__ import annotations

import json
import math
import random
import sys
import zlib
from collections import defaultdict
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

HOUR = 3600.0
DAY = 86400.0


def iso(ts: float, tz: timezone) -> str:
    return datetime.fromtimestamp(ts, tz).isoformat(timespec="milliseconds")


def iso_utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# --------------------------------------------------------------------------------------------- world


class Runner:
    def __init__(self, rid, machine, pool, region, image, shard=None, labels=(), ephemeral=False):
        self.id = rid
        self.machine = machine
        self.pool = pool
        self.region = region
        self.image = image  # current image; image events may change it
        self.shard = shard
        self.labels = list(labels)
        self.ephemeral = ephemeral
        self.agent = True
        self.busy_until = 0.0
        self.active_from = 0.0
        self.active_to = math.inf
        self.image_timeline: list[tuple[float, str]] = []  # (from, image)

    def image_at(self, t):
        img = self.image
        for frm, name in self.image_timeline:
            if t >= frm:
                img = name
        return img

    def identity(self, t, slot_id=None):
        d = {
            "id": slot_id or self.id,
            "name": slot_id or self.id,
            "machine": self.machine,
            "pool": self.pool,
            "image": self.image_at(t),
            "labels": self.labels,
            "provider": "buildkite" if not self.pool.endswith("win") else "jenkins",
            "ephemeral": self.ephemeral,
        }
        if self.shard:
            d["shard"] = self.shard
        return d


RESOURCES = ("net", "fs", "mem", "time", "toolchain", "nfs", "fetch")


class Test:
    def __init__(self, tid, suite, uses, base, label):
        self.id = tid
        self.suite = suite
        self.uses = set(uses)
        self.base = base  # random failure rate on healthy infrastructure
        self.label = label  # healthy | flaky | broken | broken-fixed | platform | interaction
        self.accept = {label}
        self.broken_from = None  # commit index
        self.broken_to = None
        self.platform = None  # pool suffix where it fails
        self.platform_rate = 0.0
        self.interaction_runner = None
        self.duration = 1.0
        self.cache_key = None
        self.shard = None
        self.pools = None  # restrict to pools (one-pool flaky)


def build(seed: int, end: float):
    rng = random.Random(seed * 7919 + 5)
    shape = seed % 3
    days = rng.randint(9, 14) if shape != 1 else rng.randint(16, 22)
    start = end - days * DAY
    # company time zone: non-UTC
    tz_h = rng.choice([-7, -5, 1, 2, 5.5, 8, 9])
    tz = timezone(timedelta(hours=tz_h))
    region_names = rng.sample(["fra", "iad", "sin", "syd", "gru", "ams"], 3 if shape == 0 else 2)
    if shape == 1:
        region_names = region_names[:2]
    pools: dict[str, dict] = {}
    runners: list[Runner] = []
    hosts: dict[str, list[str]] = defaultdict(list)
    n_shards = rng.choice([3, 4]) if shape != 1 else rng.choice([4, 5])
    for ri, reg in enumerate(region_names):
        # the x64 pool: static, long-lived; shards assigned statically
        if shape == 1:
            n = rng.randint(28, 50)
        elif shape == 0:
            n = rng.randint(10, 18)
        else:
            n = rng.randint(14, 24)
        pname = f"{reg}-x64"
        img = f"ubuntu22-ci-{rng.randint(40, 60)}"
        pools[pname] = {"region": reg, "kind": "x64", "images": [img], "nfs": f"nfs-{reg}-1"}
        i = 0
        hostno = 0
        while i < n:
            hostno += 1
            # bare metal carries 2-4 runners, VMs one
            k = rng.choice([1, 1, 1, 2, 3, 4]) if shape != 2 else rng.choice([1, 1, 2])
            k = min(k, n - i)
            machine = f"{reg}-bm{hostno:02d}" if k > 1 else f"{reg}-vm{hostno:02d}"
            for _ in range(k):
                i += 1
                rid = f"{reg}-x64-{i:03d}"
                shard = str((i - 1) % n_shards + 1)
                r = Runner(rid, machine, pname, reg, img, shard, ["self-hosted", "linux", "x64", reg])
                runners.append(r)
                hosts[machine].append(rid)
        # arm: two runner processes per host
        if shape != 1 and (ri == 0 or rng.random() < 0.4):
            pname = f"{reg}-arm"
            img = f"ubuntu22-arm-{rng.randint(10, 30)}"
            pools[pname] = {"region": reg, "kind": "arm", "images": [img], "nfs": f"nfs-{reg}-1"}
            for h in range(rng.randint(3, 5)):
                machine = f"{reg}-arm{h + 1:02d}"
                for p in range(2):
                    rid = f"{reg}-arm-{h + 1:02d}{'ab'[p]}"
                    r = Runner(rid, machine, pname, reg, img, None, ["self-hosted", "linux", "arm64", reg])
                    runners.append(r)
                    hosts[machine].append(rid)
    # ephemeral pods in the first region (shapes 0, 2)
    if shape != 1:
        reg = region_names[0]
        pname = f"{reg}-pods"
        img = f"pod-builder-{rng.randint(100, 200)}"
        pools[pname] = {"region": reg, "kind": "pods", "images": [img], "nfs": f"nfs-{reg}-2"}
        for h in range(rng.randint(5, 9)):
            machine = f"{reg}-node{h + 1:02d}"
            r = Runner(machine, machine, pname, reg, img, None, ["k8s", "ephemeral", reg], ephemeral=True)
            runners.append(r)
            hosts[machine].append(machine)
    # windows pool fed as JUnit, in the last region
    reg = region_names[-1]
    pname = f"{reg}-win"
    img = f"win2022-vs17-{rng.randint(1, 9)}"
    pools[pname] = {"region": reg, "kind": "win", "images": [img], "nfs": f"nfs-{reg}-1"}
    for h in range(rng.randint(5, 9)):
        machine = f"{reg}-winvm{h + 1:02d}"
        r = Runner(f"{reg}-win-{h + 1:02d}", machine, pname, reg, img, None, ["self-hosted", "windows", reg])
        runners.append(r)
        hosts[machine].append(r.id)
    # a perf runner in the first x64 pool: the only one that runs the nightly perf suite
    x64 = [r for r in runners if r.pool.endswith("-x64")]
    perf = rng.choice(x64)
    perf.labels.append("perf")
    # a few agents missing
    for r in rng.sample(x64, max(1, len(x64) // 30)):
        if r is not perf:
            r.agent = False
    # a runner decommissioned and a new one added mid-window in a big pool
    if shape == 1:
        late = rng.choice(x64)
        late.active_from = start + rng.uniform(0.3, 0.6) * days * DAY
    return dict(
        rng=rng,
        shape=shape,
        days=days,
        start=start,
        end=end,
        tz=tz,
        tz_h=tz_h,
        regions=region_names,
        pools=pools,
        runners=runners,
        hosts=dict(hosts),
        n_shards=n_shards,
        perf=perf,
    )


def make_tests(w):
    rng = w["rng"]
    tests: list[Test] = []
    n_unit = rng.randint(70, 130)
    n_integ = rng.randint(90, 170)
    mods_u = ["core", "parse", "util", "model", "api", "cli", "auth", "config", "render", "sched"]
    mods_i = ["storage", "network", "build", "deploy", "cache", "db", "upload", "sync", "tls", "jobs"]

    def uses_for(mod, integ):
        u = set()
        if integ:
            u.add("fs") if rng.random() < 0.7 else None
            u.add("net") if rng.random() < 0.55 or mod in ("network", "upload", "sync", "tls") else None
            u.add("nfs") if rng.random() < 0.35 or mod in ("cache", "build") else None
            u.add("mem") if rng.random() < 0.3 or mod in ("db", "build") else None
            u.add("time") if mod in ("tls", "sched", "sync") or rng.random() < 0.12 else None
            u.add("toolchain") if mod in ("build", "deploy") or rng.random() < 0.2 else None
            u.add("fetch") if rng.random() < 0.25 or mod in ("build",) else None
        else:
            u.add("fs") if rng.random() < 0.3 else None
            u.add("mem") if rng.random() < 0.1 else None
            u.add("time") if mod in ("sched", "auth") and rng.random() < 0.6 else None
            u.add("toolchain") if rng.random() < 0.15 else None
        return u

    for i in range(n_unit):
        mod = rng.choice(mods_u)
        t = Test(
            f"unit/{mod}/test_{mod}_{i:03d}.py::test_case_{rng.randint(1, 40)}",
            "unit",
            uses_for(mod, False),
            rng.choice([0, 0, 0.0003, 0.001, 0.002]),
            "healthy",
        )
        t.duration = rng.uniform(0.05, 3)
        tests.append(t)
    for i in range(n_integ):
        mod = rng.choice(mods_i)
        t = Test(
            f"it/{mod}/{mod.capitalize()}IT#case{i:03d}",
            "integ",
            uses_for(mod, True),
            rng.choice([0, 0.0005, 0.001, 0.002, 0.003]),
            "healthy",
        )
        t.duration = rng.uniform(1, 25)
        t.shard = str(rng.randint(1, w["n_shards"] - 1))
        if "time" in t.uses and rng.random() < 0.5:
            pass
        tests.append(t)
    # slow / hard tests: all in the last shard, 2-5 % random failures on the same code
    for i in range(rng.randint(8, 16)):
        mod = rng.choice(["e2e", "slow"])
        t = Test(
            f"it/{mod}/Slow{mod.capitalize()}IT#scenario{i:02d}",
            "integ",
            {"fs", "net", "mem"} | ({"time"} if rng.random() < 0.4 else set()),
            rng.uniform(0.02, 0.05),
            "flaky",
        )
        t.duration = rng.uniform(30, 120)
        t.shard = str(w["n_shards"])
        tests.append(t)
    for t in tests:
        if ((t.suite == "integ" and "nfs" in t.uses) or "toolchain" in t.uses or "fs" in t.uses) and (
            rng.random() < 0.5
        ):
            t.cache_key = rng.choice(["gradle", "ccache", "pip"])
    # platform-only tests: windows suite (runs only on windows) and arm specific
    for i in range(rng.randint(15, 30)):
        t = Test(
            f"Contoso.Win.{rng.choice(['Path', 'Registry', 'Service'])}Tests::Test{i:02d}",
            "win",
            {"fs"} if rng.random() < 0.5 else set(),
            rng.choice([0, 0.001]),
            "healthy",
        )
        t.duration = rng.uniform(0.2, 8)
        tests.append(t)
    for i in range(rng.randint(8, 15) if any(p.endswith("-pods") for p in w["pools"]) else 0):
        t = Test(
            f"build/pods/test_image_build.py::test_layer_{i:02d}",
            "pods",
            {"fs", "toolchain", "fetch"},
            rng.choice([0, 0.001]),
            "healthy",
        )
        t.cache_key = "layers"
        t.duration = rng.uniform(10, 60)
        tests.append(t)
    # perf suite: only ever runs on the perf runner at night
    for i in range(rng.randint(6, 12)):
        t = Test(
            f"perf/bench_{i:02d}.py::test_throughput",
            "perf",
            {"mem", "fs"},
            rng.uniform(0.01, 0.12),
            "healthy",
        )
        t.duration = rng.uniform(20, 90)
        t.label = "flaky" if t.base >= 0.03 else ("healthy" if t.base < 0.01 else "flaky-weak")
        tests.append(t)
    unit = [t for t in tests if t.suite == "unit"]
    integ = [t for t in tests if t.suite == "integ" and t.label == "healthy"]
    # genuinely flaky tests spread over many runners
    for t in rng.sample(unit, rng.randint(3, 6)) + rng.sample(integ, rng.randint(3, 7)):
        t.base = rng.choice([0.01, 0.02, 0.03, 0.05, 0.08, 0.1])
        t.label = "flaky"
    # a flaky test that runs on only one pool (arm or win, or the pods)
    oneplace = [t for t in tests if t.suite in ("win", "pods") and t.label == "healthy"]
    for t in rng.sample(oneplace, min(2, len(oneplace))):
        t.base = rng.choice([0.04, 0.06, 0.1])
        t.label = "flaky"
    # broken from a commit on (some fixed later)
    cands = [t for t in unit + integ if t.label == "healthy"]
    for t in rng.sample(cands, rng.randint(2, 4)):
        t.label = "broken"
        t.broken_from = True  # commit set later
    for t in rng.sample([t for t in cands if t.label == "healthy"], rng.randint(0, 2)):
        t.label = "broken-fixed"
        t.broken_from = True
    # platform: unit tests that fail on windows (path separators) or on arm
    for t in rng.sample([t for t in unit if t.label == "healthy"], rng.randint(2, 4)):
        t.label = "platform"
        t.platform = rng.choice(
            ["win", "win", "arm"] if any(p.endswith("-arm") for p in w["pools"]) else ["win"]
        )
        t.platform_rate = rng.uniform(0.85, 1.0)
    # test x runner interaction: one test fails on one runner (a locale / a stale file): the runner is
    # not sick; the test's verdict is a judgement call
    if rng.random() < 0.7:
        t = rng.choice([t for t in integ if t.label == "healthy"])
        t.label = "interaction"
        w["interaction_test"] = t
    for t in tests:
        t.accept = {t.label}
    return tests


# --------------------------------------------------------------------------------------------- faults


class Fault:
    """A truth entity: something wrong (sick) or something that only looks wrong (herring)."""

    def __init__(self, fid, kind, entity, dimension, onset, end, sort, sick=True):
        self.id = fid
        self.kind = kind
        self.entity = entity
        self.dimension = dimension  # accepted dimensions (list)
        self.onset = onset
        self.end = end  # None: still sick at the end
        self.sort = sort
        self.sick = sick
        self.expected_state = "sick"
        self.accept: list[tuple[str, str]] = [(kind, entity)]
        self.gradual = False
        self.params: dict = {}
        self.runners: list[str] = []
        self.note = ""

    def active(self, t):
        return self.onset <= t and (self.end is None or t < self.end)


def plan_faults(w, tests):
    rng = w["rng"]
    start, end = w["start"], w["end"]
    span = end - start
    runners = w["runners"]
    hosts = w["hosts"]
    used: set[str] = set()  # machines already carrying a fault or herring
    faults: list[Fault] = []

    def pick(pred, single=None):
        c = [r for r in runners if pred(r) and r.machine not in used and r.agent and "perf" not in r.labels]
        if single is True:
            c = [r for r in c if len(hosts[r.machine]) == 1]
        elif single is False:
            c = [r for r in c if len(hosts[r.machine]) > 1]
        if not c:
            return None
        r = rng.choice(c)
        used.add(r.machine)
        return r

    def t_in(lo, hi):
        return start + rng.uniform(lo, hi) * span

    def runner_accept(f, r):
        f.runners = [r.id]
        if len(hosts[r.machine]) == 1:
            f.accept.append(("machine", r.machine))

    x64 = lambda r: r.pool.endswith("-x64")  # noqa: E731
    static = lambda r: not r.ephemeral and not r.pool.endswith("-win")  # noqa: E731

    menu = [
        "memhost",
        "memleak",
        "inode",
        "readonly",
        "clockhost",
        "badimage",
        "cache",
        "nodedisk",
        "nfs",
        "slowdisk",
        "noagent",
    ]
    rng.shuffle(menu)
    n = rng.randint(4, 7)
    chosen = menu[:n]
    if w["shape"] == 1:
        chosen = [c if c != "nodedisk" else "slowdisk2" for c in chosen]
    k = 0
    for sort in chosen:
        k += 1
        fid = f"F{k}"
        if sort == "memleak":
            r = pick(lambda r: static(r), single=True)
            if not r:
                continue
            grow_days = rng.uniform(2.5, 5)
            leak_start = t_in(0.05, 0.45)
            onset = leak_start + grow_days * DAY * 0.85  # available falls under ~8 % here
            fixed = rng.random() < 0.5
            fend = onset + rng.uniform(0.8, 2.5) * DAY if fixed else None
            if fend and fend > end - 6 * HOUR:
                fend = None
            if onset > end - 1.5 * DAY:
                onset = end - 1.5 * DAY
                leak_start = onset - grow_days * DAY * 0.85
            f = Fault(fid, "runner", r.id, ["memory"], onset, fend, sort)
            f.params = {"leak_start": leak_start, "grow": grow_days * DAY}
            f.gradual = True
            runner_accept(f, r)
        elif sort == "inode":
            r = pick(lambda r: static(r))
            if not r:
                continue
            onset = t_in(0.2, 0.75)
            fend = onset + rng.uniform(6, 40) * HOUR if rng.random() < 0.6 else None
            f = Fault(fid, "runner", r.id, ["disk"], onset, fend, sort)
            runner_accept(f, r)
            if len(hosts[r.machine]) > 1:
                f.note = "inodes of the runner's own work volume"
        elif sort == "readonly":
            r = pick(lambda r: static(r), single=True)
            if not r:
                continue
            onset = t_in(0.15, 0.8)
            fend = onset + rng.uniform(8, 36) * HOUR if rng.random() < 0.6 else None
            f = Fault(fid, "runner", r.id, ["disk"], onset, fend, sort)
            runner_accept(f, r)
        elif sort == "memhost":
            # a runaway process on a bare-metal host: every runner on it is starved of memory
            r = pick(lambda r: static(r), single=False)
            if not r:
                continue
            onset = t_in(0.2, 0.8)
            fend = onset + rng.uniform(6, 36) * HOUR if rng.random() < 0.6 else None
            f = Fault(fid, "machine", r.machine, ["memory"], onset, fend, sort)
            f.runners = list(hosts[r.machine])
        elif sort == "clockhost":
            r = pick(lambda r: static(r), single=False)
            if not r:
                continue
            onset = t_in(0.2, 0.8)
            fend = onset + rng.uniform(8, 48) * HOUR if rng.random() < 0.5 else None
            f = Fault(fid, "machine", r.machine, ["clock"], onset, fend, sort)
            f.runners = list(hosts[r.machine])
            f.params = {"offset": rng.choice([-1, 1]) * rng.uniform(40, 400)}
        elif sort == "badimage":
            pool = rng.choice([p for p in w["pools"] if p.endswith("-x64")])
            prs = [r for r in runners if r.pool == pool]
            old = w["pools"][pool]["images"][0]
            new = old.rsplit("-", 1)[0] + f"-{int(old.rsplit('-', 1)[1]) + 1}"
            onset = t_in(0.2, 0.7)
            part = rng.sample(prs, max(2, int(len(prs) * rng.uniform(0.25, 0.5))))
            rollback = rng.random() < 0.7
            fend = onset + rng.uniform(14, 50) * HOUR if rollback else None
            if fend and fend > end - 4 * HOUR:
                fend = None
            for i, r in enumerate(part):
                at = onset + i * rng.uniform(5, 25) * 60
                r.image_timeline.append((at, new))
                if fend:
                    r.image_timeline.append((fend + rng.uniform(0, 40) * 60, old))
            w["pools"][pool]["images"].append(new)
            f = Fault(fid, "image", new, ["unknown"], onset, fend, sort)
            f.expected_state = "suspect|sick"
            f.runners = [r.id for r in part]
            f.params = {"pool": pool, "old": old}
        elif sort == "cache":
            r = pick(lambda r: static(r))
            if not r:
                continue
            onset = t_in(0.1, 0.8)
            fend = onset + rng.uniform(5, 30) * HOUR if rng.random() < 0.5 else None
            key = rng.choice(["gradle", "ccache", "pip"])
            f = Fault(fid, "runner", r.id, ["cache"], onset, fend, sort)
            f.params = {"key": key}
            runner_accept(f, r)
        elif sort == "nodedisk":
            r = pick(lambda r: r.ephemeral)
            if not r:
                continue
            fill_start = t_in(0.15, 0.6)
            fill = rng.uniform(10, 30) * HOUR
            onset = fill_start + fill * 0.9
            fend = onset + rng.uniform(10, 36) * HOUR if rng.random() < 0.6 else None
            f = Fault(fid, "machine", r.machine, ["disk"], onset, fend, sort)
            f.params = {"fill_start": fill_start, "fill": fill}
            f.runners = [r.id]
        elif sort == "nfs":
            pool = rng.choice([p for p in w["pools"] if p.endswith("-x64") or p.endswith("-arm")])
            onset = t_in(0.2, 0.8)
            fend = onset + rng.uniform(8, 30) * HOUR
            if fend > end - 3 * HOUR:
                fend = None
            f = Fault(fid, "pool", pool, ["unknown", "cache", "disk"], onset, fend, sort)
            f.expected_state = "suspect|sick"
            f.runners = [r.id for r in runners if r.pool == pool]
            f.note = f"the pool's shared NFS server {w['pools'][pool]['nfs']} returns EIO/stale handles"
        elif sort in ("slowdisk", "slowdisk2"):
            r = pick(lambda r: static(r) and x64(r), single=True if rng.random() < 0.6 else None)
            if not r:
                continue
            fill_start = t_in(0.05, 0.5)
            fill = rng.uniform(3, 6) * DAY
            onset = fill_start + fill * 0.9  # free under ~2.5 %: first ENOSPC
            if onset > end - 1.5 * DAY:
                onset = end - 1.5 * DAY
                fill_start = onset - fill * 0.9
            fend = None
            if rng.random() < 0.4:
                fend = onset + rng.uniform(1, 2) * DAY
                if fend > end - 6 * HOUR:
                    fend = None
            f = Fault(fid, "runner", r.id, ["disk"], onset, fend, "slowdisk")
            f.params = {"fill_start": fill_start, "fill": fill}
            f.gradual = True
            runner_accept(f, r)
        elif sort == "noagent":
            c = [r for r in runners if not r.agent and r.machine not in used]
            if not c:
                r = pick(lambda r: static(r) and x64(r), single=True)
                if not r:
                    continue
                r.agent = False
            else:
                r = rng.choice(c)
                used.add(r.machine)
            onset = t_in(0.2, 0.7)
            fend = onset + rng.uniform(10, 40) * HOUR if rng.random() < 0.5 else None
            f = Fault(fid, "runner", r.id, ["unknown", "disk"], onset, fend, "noagent")
            f.expected_state = "suspect"
            f.note = "no agent: full disk unseen"
            runner_accept(f, r)
        else:
            continue
        faults.append(f)

    # red herrings: bad readings, nothing wrong
    herrings: list[Fault] = []
    for i in range(rng.randint(2, 4)):
        r = pick(lambda r: static(r))
        if not r:
            break
        sort = rng.choice(["diskfull92", "memhigh", "ntpdisagree", "inodeslow"])
        f = Fault(f"H{i + 1}", "runner", r.id, [], start, None, sort, sick=False)
        f.runners = [r.id]
        if sort == "ntpdisagree":
            f.params = {"at": t_in(0.1, 0.9), "len": rng.uniform(0.5, 3) * HOUR}
        herrings.append(f)
    # the perf runner is a herring too: it fails more because of what it runs
    p = w["perf"]
    f = Fault(f"H{len(herrings) + 1}", "runner", p.id, [], start, None, "perf-suite", sick=False)
    f.runners = [p.id]
    herrings.append(f)
    if "interaction_test" in w:
        t = w["interaction_test"]
        c = [r for r in runners if r.shard == t.shard and r.pool.endswith("-x64") and r.machine not in used]
        if c:
            r = rng.choice(c)
            used.add(r.machine)
            t.interaction_runner = r.id
            f = Fault(f"H{len(herrings) + 1}", "runner", r.id, [], start, None, "interaction", sick=False)
            f.runners = [r.id]
            f.params = {"test": t.id}
            herrings.append(f)
        else:
            t.label = "healthy"
            t.accept = {"healthy"}
    return faults, herrings


def plan_outages(w):
    rng = w["rng"]
    start, end = w["start"], w["end"]
    out = []
    # a regional network outage: one region's pools lose the network for 30-90 min
    reg = rng.choice(w["regions"])

    def busy(lo, hi):
        # outages happen at any hour, but one nobody's CI noticed is not worth grading: prefer weekday hours
        for _ in range(30):
            a = start + rng.uniform(lo, hi) * (end - start)
            lt = datetime.fromtimestamp(a, w["tz"])
            if lt.weekday() < 5 and 7 <= lt.hour < 21:
                return a
        return a

    a = busy(0.15, 0.85)
    out.append(
        {
            "id": "O1",
            "sort": "region-network",
            "region": reg,
            "pools": [p for p, d in w["pools"].items() if d["region"] == reg],
            "start": a,
            "end": a + rng.uniform(30, 90) * 60,
            "uses": "net",
        }
    )
    if rng.random() < 0.6:
        a = busy(0.1, 0.9)
        out.append(
            {
                "id": "O2",
                "sort": "registry",
                "region": None,
                "pools": list(w["pools"]),
                "start": a,
                "end": a + rng.uniform(20, 60) * 60,
                "uses": "fetch",
            }
        )
    return out


# --------------------------------------------------------------------------------------------- readings


def fault_failure(f: Fault, test: Test, r: Runner, t: float, rng, w) -> tuple[float, str, str] | None:
    """(probability, outcome, message) that fault f fails this execution, or None if it does not touch it."""
    s = f.sort
    if s == "memleak":
        avail = mem_avail(f, t)
        if avail > 0.09:
            return None
        sev = (0.09 - avail) / 0.09
        if "mem" in test.uses:
            return (0.35 + 0.5 * sev, "error", "Killed: worker exited with signal 9 (OOM)")
        return (0.04 + 0.2 * sev, "error", "MemoryError / worker lost")
    if s == "memhost":
        if "mem" in test.uses or (test.suite == "integ" and rng.random() < 0.3):
            return (0.6, "error", "Killed (signal 9): out of memory")
        return (0.06, "error", "worker process crashed: Cannot allocate memory")
    if s == "inode":
        if "fs" in test.uses or test.cache_key:
            return (0.7, "failed", "OSError: [Errno 28] No space left on device (inodes)")
        return (0.03, "failed", "cannot create temp file: No space left on device")
    if s == "readonly":
        if "fs" in test.uses or test.cache_key or test.suite == "integ":
            return (0.92, "error", "OSError: [Errno 30] Read-only file system")
        return (0.1, "error", "Read-only file system: /home/ci/work/.pytest_cache")
    if s == "clockhost":
        if "time" in test.uses:
            return (0.9, "failed", "certificate is not yet valid / token expired (clock skew)")
        if "net" in test.uses:
            return (0.25, "failed", "SSL: CERTIFICATE_VERIFY_FAILED")
        return None
    if s == "badimage":
        if r.image_at(t) != f.entity:
            return None
        if "toolchain" in test.uses:
            return (0.85, "failed", "ld: cannot find -lssl (libssl3 missing from image)")
        if "fs" in test.uses:
            return (0.05, "failed", "tool not found")
        return None
    if s == "cache":
        if test.cache_key == f.params["key"]:
            return (0.85, "failed", f"corrupt artifact in {f.params['key']} cache: checksum mismatch")
        return None
    if s in ("nodedisk", "slowdisk", "noagent"):
        free = disk_free(f, t)
        if free > 0.025:
            return None
        sev = min(1.0, (0.025 - free) / 0.02)
        if "fs" in test.uses or test.cache_key or test.suite == "pods":
            return (0.25 + 0.6 * sev, "failed", "OSError: [Errno 28] No space left on device")
        return (0.02 + 0.08 * sev, "error", "No space left on device while writing junit/log")
    if s == "nfs":
        if "nfs" in test.uses or test.cache_key:
            return (
                0.45,
                "error",
                f"OSError: [Errno 116] Stale file handle: /mnt/{w['pools'][r.pool]['nfs']}",
            )
        return None
    return None


def mem_avail(f, t):
    p = f.params
    if f.end is not None and t >= f.end:
        return 0.55
    if t < p["leak_start"]:
        return 0.55
    x = (t - p["leak_start"]) / p["grow"]
    return max(0.005, 0.55 - 0.55 * x)


def disk_free(f, t):
    p = f.params
    if f.sort == "noagent":
        return 0.004 if f.active(t) else 0.3
    if f.end is not None and t >= f.end:
        return 0.45
    if t < p["fill_start"]:
        return 0.45
    x = (t - p["fill_start"]) / p["fill"]
    # fills to ~2.5 % free at 0.9 of the span, then keeps falling slowly
    return max(0.001, 0.45 - 0.472 * x) if x < 1 else 0.001


def readings_for(r: Runner, t: float, faults, herrings, w, rng, majority):
    """A runner's (or node's) bundled agent readings at t."""
    free = 0.35 + 0.2 * ((zlib.crc32(r.machine.encode()) % 100) / 100)
    inodes = 0.6
    ro = False
    probe = True
    avail = 0.45 + 0.2 * ((zlib.crc32(r.id.encode()) % 50) / 50)
    psi = 0.3
    oom = 0
    offset = rng.gauss(0, 0.004)
    servers = None
    caches = dict(majority)
    status_disk = status_mem = status_clock = status_cache = "ok"
    for f in faults + herrings:
        if r.id not in f.runners and not (f.kind == "machine" and r.machine == f.entity):
            continue
        s = f.sort
        if s == "memleak":
            avail = mem_avail(f, t)
            if avail < 0.15:
                psi = 5 + (0.15 - avail) * 400
            if avail < 0.05:
                oom = rng.choice([0, 1, 1, 2, 3])
        elif s == "memhost" and f.active(t):
            avail = rng.uniform(0.01, 0.04)
            psi = rng.uniform(25, 70)
            oom = rng.choice([0, 1, 2, 4])
        elif s == "inode" and f.active(t):
            inodes = rng.uniform(0.0, 0.0015)
        elif s == "inode" and t > f.onset - 10 * HOUR and not (f.end and t >= f.end):
            inodes = max(0.002, 0.6 * (f.onset - t) / (10 * HOUR))
        elif s == "readonly" and f.active(t):
            ro, probe = True, False
        elif s == "clockhost" and f.active(t):
            offset = f.params["offset"] + rng.gauss(0, 0.05)
        elif s == "cache" and f.active(t):
            caches[f.params["key"]] = "blake2b:" + format(
                zlib.crc32((f.id + "poison").encode()) * 65537 & 0xFFFFFFFFFFFF, "012x"
            )
        elif s in ("nodedisk", "slowdisk"):
            free = disk_free(f, t)
        elif s == "diskfull92":
            free = 0.08 + rng.uniform(-0.005, 0.005)
        elif s == "inodeslow":
            inodes = 0.07 + rng.uniform(-0.01, 0.01)
        elif s == "memhigh":
            avail = 0.07 + rng.uniform(-0.01, 0.02)
            psi = rng.uniform(4, 12)
        elif s == "ntpdisagree":
            a = f.params["at"]
            if a <= t < a + f.params["len"]:
                servers = [0.003, rng.uniform(2.5, 6), -0.002]
                if t < a + f.params["len"] * 0.2:
                    # briefly, two of three disagree: the median itself is off
                    servers = [0.003, 1.6, 2.2]
    if servers is None:
        servers = [offset + rng.gauss(0, 0.002) for _ in range(3)]
    med = sorted(servers)[1]
    if free < 0.1 or inodes < 0.05 or ro or not probe:
        status_disk = "problem"
    if avail < 0.1 or oom:
        status_mem = "problem"
    if abs(med) > 1:
        status_clock = "problem"
    total = 200 * 2**30
    readings = [
        {
            "check": "disk",
            "status": status_disk,
            "paths": [
                {
                    "path": "/home/ci/work",
                    "mount_point": "/home/ci",
                    "device": "/dev/sdb1",
                    "total_bytes": total,
                    "free_bytes": int(total * free),
                    "free_ratio": round(free, 5),
                    "inodes_total": 13_000_000,
                    "inodes_free": int(13_000_000 * inodes),
                    "inodes_free_ratio": round(inodes, 6),
                    "read_only": ro,
                    "write_probe_ok": probe,
                }
            ],
        },
        {
            "check": "memory",
            "status": status_mem,
            "total_bytes": 64 * 2**30,
            "available_bytes": int(64 * 2**30 * avail),
            "available_ratio": round(avail, 4),
            "swap_used_bytes": 0,
            "psi_some_avg10": round(psi, 2),
            "psi_some_avg60": round(psi * 0.8, 2),
            "psi_full_avg10": round(psi * 0.3, 2),
            "psi_full_avg60": round(psi * 0.2, 2),
            "oom_kills": oom,
        },
        {
            "check": "clock",
            "status": status_clock,
            "offset_s": round(med, 4),
            "servers": [
                {
                    "server": f"ntp{i}.{r.region}.corp",
                    "offset_s": round(o, 4),
                    "delay_s": 0.01 + 0.003 * i,
                    "stratum": 2,
                }
                for i, o in enumerate(servers)
            ],
        },
        {
            "check": "cache",
            "status": status_cache,
            "caches": [
                {"key": k, "path": f"/home/ci/.cache/{k}", "digest": d, "files": 12000, "bytes": 2**31}
                for k, d in sorted(caches.items())
            ],
        },
    ]
    return readings


# --------------------------------------------------------------------------------------------- traffic


def main() -> None:
    seed = int(sys.argv[1])
    out = Path(sys.argv[2])
    end_s = sys.argv[3] if len(sys.argv) > 3 else "2026-12-05T08:00:00Z"
    end = datetime.fromisoformat(end_s.replace("Z", "+00:00")).timestamp()
    out.mkdir(parents=True, exist_ok=True)
    w = build(seed, end)
    rng = w["rng"]
    tests = make_tests(w)
    faults, herrings = plan_faults(w, tests)
    outages = plan_outages(w)
    start, tz = w["start"], w["tz"]
    runners = w["runners"]
    by_pool: dict[str, list[Runner]] = defaultdict(list)
    for r in runners:
        by_pool[r.pool].append(r)
    pools = w["pools"]
    regions = w["regions"]
    unit = [t for t in tests if t.suite == "unit"]
    integ = [t for t in tests if t.suite == "integ"]
    wins = [t for t in tests if t.suite == "win"]
    pods = [t for t in tests if t.suite == "pods"]
    perf = [t for t in tests if t.suite == "perf"]
    # commits: main advances with merges; broken tests break at a merge
    merges_per_day = rng.randint(15, 35)
    n_commits = int(w["days"] * merges_per_day) + 1
    commit_time = sorted(start + rng.uniform(0, 1) * (end - start) for _ in range(n_commits))
    commit_time[0] = start - HOUR
    for t in tests:
        if t.broken_from:
            c = rng.randint(int(n_commits * 0.15), int(n_commits * 0.8))
            t.broken_from = c
            if t.label == "broken-fixed":
                t.broken_to = min(n_commits - 1, c + rng.randint(merges_per_day // 3, merges_per_day * 2))
    import bisect

    def main_commit_at(ts):
        return max(0, bisect.bisect_right(commit_time, ts) - 1)

    # traffic: pipelines per hour follow the company's local day
    def rate(ts):
        lt = datetime.fromtimestamp(ts, tz)
        wd = lt.weekday() < 5
        h = lt.hour + lt.minute / 60
        day = 1.0 if 8 <= h < 19 else (0.55 if 6 <= h < 22 else 0.25)
        return day if wd else 0.2 + 0.1 * day

    shape = w["shape"]
    x64_pools = [p for p in pools if p.endswith("-x64")]
    target = rng.randint(100_000, 190_000) if shape != 1 else rng.randint(140_000, 230_000)
    # expected results of one pipeline, of the nightlies and of the benchmark, to set the pipeline rate
    n_hard = sum(1 for x in integ if x.shard == str(w["n_shards"]))
    has_arm = sum(1 for reg in regions if f"{reg}-arm" in pools) / len(regions)
    per_pipe = (
        0.75 * len(unit)
        + 0.37 * len(unit) * has_arm
        + 0.8 * (len(integ) - n_hard)
        + 0.65 * n_hard
        + (0.6 * len(pods) if pods else 0)
        + 0.31 * (len(wins) + 0.3 * len(unit))
    ) * 1.02
    fixed = w["days"] * (len(x64_pools) * len(integ) + 12 * len(perf))
    peak = max(0.5, (target - fixed) / per_pipe / (w["days"] * 24 * 0.545))

    records: list[tuple[float, str]] = []  # (event time, json) for history
    feed: list[tuple[float, str, str, str]] = []  # (arrival, channel, sender, payload)
    fails_out: list[str] = []
    truth_fail = defaultdict(
        lambda: {"failures": 0, "tests": set(), "jobs": set(), "first": None, "last": None, "runs": 0}
    )
    outage_fail = defaultdict(int)
    outage_hosts = defaultdict(set)
    test_stats = defaultdict(
        lambda: {
            "runs": 0,
            "failures": 0,
            "own": 0,
            "causes": defaultdict(int),
            "pools": set(),
            "runners": set(),
        }
    )
    job_no = [0]
    run_no = [0]
    region_off = {o["region"]: o for o in outages if o["sort"] == "region-network"}
    tzfmt = rng.choice(["local", "local", "epoch", "utc"])  # how the NDJSON uploader writes times
    active_faults = faults

    def fmt_time(ts):
        if tzfmt == "epoch":
            return round(ts, 3)
        if tzfmt == "utc":
            return iso_utc(ts)
        return iso(ts, tz)

    def upload_delay(r, t_end):
        # results of a region without network reach the controller after the outage
        o = region_off.get(r.region)
        if o and o["start"] <= t_end < o["end"]:
            return o["end"] - t_end + rng.uniform(30, 300)
        return rng.uniform(5, 120)

    def run_job(pool, shard, tlist, t0, commit, pipe_id, attempt=1, avoid=None, only=None):
        cands = [
            r
            for r in by_pool[pool]
            if (shard is None or r.shard == shard)
            and r.active_from <= t0 < r.active_to
            and r.id != avoid
            and (only is None or r is only)
        ]
        if not tlist or not cands:
            return
        free = [r for r in cands if r.busy_until <= t0]
        r = rng.choice(free) if free else min(cands, key=lambda r: r.busy_until)
        ts = max(t0, r.busy_until) + rng.uniform(20, 120)
        job_no[0] += 1
        jid = f"job-{job_no[0]}"
        slot = f"{r.machine}-pod-{job_no[0]:07d}" if r.ephemeral else None
        ident = r.identity(ts, slot)
        results = []
        failed = []
        tlist = list(tlist)
        if pool.endswith("-x64") or pool.endswith("-arm"):
            rng.shuffle(tlist)
        for test in tlist:
            dur = test.duration * rng.uniform(0.7, 1.4)
            p = test.base
            cause = "random"
            outcome = "failed"
            msg = "AssertionError: expected 200, got 500 (intermittent)"
            # broken / platform
            if (
                test.broken_from is not None
                and commit >= test.broken_from
                and (test.broken_to is None or commit < test.broken_to)
            ):
                p, cause, msg = 1.0, "broken", "AssertionError: regression from commit"
            if test.platform and pool.endswith("-" + test.platform):
                p, cause, msg = test.platform_rate, "platform", "path separator mismatch / unsupported"
            if test.interaction_runner == r.id and rng.random() < 0.6:
                p, cause, msg = max(p, 0.6), "interaction", "UnicodeDecodeError in locale-dependent fixture"
            extra = []
            for f in active_faults:
                if (r.id in f.runners or (f.kind == "machine" and r.machine == f.entity)) and (
                    f.sort in ("memleak", "nodedisk", "slowdisk") or f.active(ts)
                ):
                    ff = fault_failure(f, test, r, ts, rng, w)
                    if ff:
                        extra.append((ff, f.id))
            for o in outages:
                if o["start"] <= ts < o["end"] and r.pool in o["pools"] and o["uses"] in test.uses:
                    extra.append(
                        (
                            (
                                0.85,
                                "error",
                                "ConnectionError: Name or service not known"
                                if o["uses"] == "net"
                                else "503 Service Unavailable from artifacts registry",
                            ),
                            o["id"],
                        )
                    )
            fail = False
            for (pp, oc, mm), cid in extra:
                if rng.random() < pp:
                    fail, cause, outcome, msg = True, cid, oc, mm
                    break
            if fail:
                dur *= rng.uniform(
                    0.05, 0.3
                )  # a broken resource fails fast: the runner takes the next job sooner
            elif rng.random() < p:
                fail = True
            if test.label == "flaky" and cause == "random":
                cause = "flaky"
            res_t = ts
            test_stats[test.id]["runs"] += 1
            test_stats[test.id]["pools"].add(pool)
            test_stats[test.id]["runners"].add(r.machine if r.ephemeral else r.id)
            if fail:
                failed.append(test)
                st = test_stats[test.id]
                st["failures"] += 1
                st["causes"][cause] += 1
                if cause in ("random", "flaky", "broken", "platform", "interaction"):
                    st["own"] += 1
                fails_out.append(
                    f"{iso_utc(res_t)}\t{test.id}\t{ident['id']}\t{r.machine}\t{pool}\t"
                    f"{ident['image']}\t{cause}\t{jid}"
                )
                if cause.startswith("F"):
                    tf = truth_fail[cause]
                    tf["failures"] += 1
                    tf["tests"].add(test.id)
                    tf["jobs"].add(jid)
                    tf["first"] = res_t if tf["first"] is None else min(tf["first"], res_t)
                    tf["last"] = res_t if tf["last"] is None else max(tf["last"], res_t)
                elif cause.startswith("O"):
                    outage_fail[cause] += 1
                    outage_hosts[cause].add(r.machine)
            results.append((test, "passed" if not fail else outcome, res_t, dur, msg if fail else None))
            ts += dur
        job_end = ts + rng.uniform(5, 60)
        r.busy_until = job_end
        arrival = job_end + upload_delay(r, job_end)
        run_id = f"run-{pipe_id}"
        if pool.endswith("-win"):
            # Jenkins uploads JUnit: one testsuite per class, with the suite's local timestamp
            suites = defaultdict(list)
            for test, oc, rt, dur, msg in results:
                cls = test.id.split("::", 1)[0]
                suites[cls].append((test, oc, rt, dur, msg))
            parts = ['<?xml version="1.0" encoding="UTF-8"?>', f'<testsuites name="{jid}">']
            for cls, rows in suites.items():
                t_s = rows[0][2]
                nf = sum(1 for x in rows if x[1] == "failed")
                ne = sum(1 for x in rows if x[1] == "error")
                parts.append(
                    f'<testsuite name={quoteattr(cls)} tests="{len(rows)}" failures="{nf}" errors="{ne}" '
                    f'timestamp="{iso(t_s, tz)[:19]}{iso(t_s, tz)[23:]}" hostname="{r.machine}">'
                )
                for test, oc, _rt, dur, msg in rows:
                    classname, name = test.id.split("::", 1)
                    parts.append(
                        f'<testcase classname={quoteattr(classname)} name={quoteattr(name)} time="{dur:.3f}">'
                    )
                    if oc == "failed":
                        parts.append(f"<failure message={quoteattr(msg)}>{escape(msg)}</failure>")
                    elif oc == "error":
                        parts.append(f"<error message={quoteattr(msg)}>{escape(msg)}</error>")
                    parts.append("</testcase>")
                    # what the controller will store: the suite's timestamp, to the second
                    rec = {
                        "test_id": test.id,
                        "outcome": oc,
                        "time": iso_utc(math.floor(t_s)),
                        "duration_s": round(dur, 3),
                        "job_id": jid,
                        "run_id": run_id,
                        "attempt": attempt,
                        "runner": {k: v for k, v in ident.items() if k in ("id", "machine", "pool", "image")},
                    }
                    if msg:
                        rec["message"] = msg
                    records.append((t_s, json.dumps(rec)))
                parts.append("</testsuite>")
            parts.append("</testsuites>")
            params = {
                "runner_id": ident["id"],
                "pool": pool,
                "machine": r.machine,
                "image": ident["image"],
                "job_id": jid,
                "run_id": run_id,
                "attempt": attempt,
                "commit": f"c{commit:05d}",
            }
            feed.append((arrival, "junit", r.id, json.dumps({"params": params, "xml": "\n".join(parts)})))
        else:
            for test, oc, rt, dur, msg in results:
                rec = {
                    "test_id": test.id,
                    "outcome": oc,
                    "time": fmt_time(rt),
                    "duration_s": round(dur, 3),
                    "job_id": jid,
                    "run_id": run_id,
                    "attempt": attempt,
                    "commit": f"c{commit:05d}",
                    "runner": ident,
                }
                if msg:
                    rec["message"] = msg
                line = json.dumps(rec)
                records.append((rt, line))
                feed.append((arrival, "result", r.id, line))
        # retry the failed tests once on another runner of the pool (x64 shards and pods)
        if failed and attempt == 1 and rng.random() < 0.65 and len(failed) <= 12:
            run_job(pool, shard, failed, job_end + rng.uniform(60, 600), commit, pipe_id, 2, avoid=r.id)

    pipe = 0
    t = start
    while t < end:
        lam = peak * rate(t)
        t += rng.expovariate(max(lam, 0.05)) * HOUR
        if t >= end:
            break
        pipe += 1
        run_no[0] += 1
        mc = main_commit_at(t)
        is_merge = rng.random() < 0.3
        commit = mc if is_merge else max(0, mc - rng.randint(0, 6))
        reg = rng.choice(regions)
        xp = f"{reg}-x64"
        frac = 1.0 if is_merge else rng.uniform(0.3, 1.0)
        us = [x for x in unit if rng.random() < frac]
        half = len(us) // 2
        run_job(xp, None, us[:half], t, commit, pipe)
        run_job(xp, None, us[half:], t, commit, pipe)
        for s in range(1, w["n_shards"] + 1):
            its = [x for x in integ if x.shard == str(s) and (s == w["n_shards"] or rng.random() < frac)]
            if s == w["n_shards"] and not is_merge and rng.random() < 0.5:
                continue
            run_job(xp, str(s), its, t, commit, pipe)
        if f"{reg}-arm" in pools and rng.random() < 0.7:
            run_job(f"{reg}-arm", None, [x for x in unit if rng.random() < frac * 0.7], t, commit, pipe)
        if f"{regions[0]}-pods" in pools and rng.random() < 0.6:
            run_job(f"{regions[0]}-pods", None, pods, t, commit, pipe)
        winp = f"{regions[-1]}-win"
        if rng.random() < (0.5 if is_merge else 0.25):
            run_job(winp, None, wins + [x for x in unit if rng.random() < 0.3], t, commit, pipe)
    # nightly at 02:00 local: full suite on every x64 pool, perf suite on the perf runner
    d0 = datetime.fromtimestamp(start, tz).replace(hour=2, minute=0, second=0, microsecond=0)
    while d0.timestamp() < end:
        tn = d0.timestamp()
        if tn > start:
            pipe += 1
            mc = main_commit_at(tn)
            for xp in x64_pools:
                for s in range(1, w["n_shards"] + 1):
                    run_job(xp, str(s), [x for x in integ if x.shard == str(s)], tn, mc, pipe)
        d0 += timedelta(days=1)
    # the continuous benchmark: the perf suite every ~2 h on the perf runner only
    pr = w["perf"]
    tb = start + rng.uniform(0, 2 * HOUR)
    while tb < end:
        pipe += 1
        run_job(pr.pool, None, perf, tb, main_commit_at(tb), pipe, only=pr)
        tb += rng.uniform(1.5, 2.5) * HOUR

    # ------------------------------------------------------------------ agent reports
    agents = []
    for r in runners:
        if r.ephemeral:
            agents.append(r)  # a host agent per node
        elif r.agent:
            agents.append(r)
    n_days = w["days"]
    interval = max(15 * 60, len(agents) * n_days * DAY / 38_000)
    majority = {
        "gradle": "blake2b:" + format(rng.getrandbits(48), "012x"),
        "ccache": "blake2b:" + format(rng.getrandbits(48), "012x"),
        "pip": "blake2b:" + format(rng.getrandbits(48), "012x"),
    }
    # caches refresh daily; runners pick the new digest up over ~2 h (a transient minority)
    refresh = []
    d0 = datetime.fromtimestamp(start, tz).replace(hour=4, minute=0, second=0, microsecond=0)
    while d0.timestamp() < end:
        refresh.append(d0.timestamp())
        d0 += timedelta(days=1)
    digests = {ts: {k: "blake2b:" + format(rng.getrandbits(48), "012x") for k in majority} for ts in refresh}
    n_reports = 0
    for r in agents:
        boot = f"boot-{rng.getrandbits(40):010x}"
        seq = 0
        lag = {ts: rng.uniform(0, 2.5 * HOUR) for ts in refresh}
        ts = start + rng.uniform(0, interval)
        aid = f"agent-{r.id}"
        reboot_at = start + rng.uniform(0.2, 0.9) * (end - start) if rng.random() < 0.3 else None
        # memleak runners reboot when fixed
        for f in faults:
            if f.sort == "memleak" and r.id in f.runners and f.end:
                reboot_at = f.end
        while ts < end:
            if reboot_at and ts >= reboot_at:
                boot = f"boot-{rng.getrandbits(40):010x}"
                seq = 0
                reboot_at = None
            maj = dict(majority)
            for rt in refresh:
                if ts >= rt + lag[rt]:
                    maj = digests[rt]
            readings = readings_for(r, ts, faults, herrings, w, rng, maj)
            ident = r.identity(ts)
            ident["id"] = r.machine if r.ephemeral else r.id
            rep = {
                "agent_id": aid,
                "boot_id": boot,
                "seq": seq,
                "observed_at": fmt_time(ts) if tzfmt != "epoch" else iso(ts, tz),
                "runner": ident,
                "readings": readings,
                "dropped": 0,
                "agent_version": "1.4.2",
            }
            seq += 1
            line = json.dumps(rep)
            records.append((ts, '{"kind":"report",' + line[1:]))
            o = region_off.get(r.region)
            arr = ts + rng.uniform(1, 20)
            if o and o["start"] <= ts < o["end"]:
                arr = o["end"] + rng.uniform(10, 600)  # spooled while the region was cut off
            feed.append((arr, "report", r.id, line))
            n_reports += 1
            ts += interval * rng.uniform(0.8, 1.2)

    # ------------------------------------------------------------------ write
    records.sort(key=lambda x: x[0])
    with open(out / "history.ndjson", "w") as fh:
        for _, line in records:
            fh.write(line + "\n")
    feed.sort(key=lambda x: x[0])
    # duplicates: an uploader retrying ~0.5 % of jobs' results
    with open(out / "feed.tsv", "w") as fh:
        for arr, ch, sender, payload in feed:
            fh.write(f"{int(arr * 1000)}\t{ch}\t{sender}\t{payload}\n")
    with open(out / "failures.tsv", "w") as fh:
        fh.write("time\ttest\trunner\tmachine\tpool\timage\tcause\tjob\n")
        fh.write("\n".join(fails_out) + "\n")
    n_results = sum(1 for _, ch, _, _ in feed if ch == "result")
    n_junit_results = sum(1 for rec in records if False)  # placeholder
    truth = {
        "seed": seed,
        "shape": ["datacenter", "bigstatic", "mixed"][shape],
        "start": iso_utc(start),
        "end": iso_utc(end),
        "tz_hours": w["tz_h"],
        "time_format": tzfmt,
        "regions": regions,
        "pools": {p: {**d, "runners": [r.id for r in by_pool[p]]} for p, d in pools.items()},
        "hosts": w["hosts"],
        "no_agent": [r.id for r in runners if not r.agent and not r.ephemeral],
        "ephemeral_machines": [r.machine for r in runners if r.ephemeral],
        "runners_meta": {
            r.id: {
                "machine": r.machine,
                "pool": r.pool,
                "shard": r.shard,
                "images": [r.image] + [n for _, n in r.image_timeline],
            }
            for r in runners
        },
        "entities": [],
        "outages": [],
        "tests": {},
        "feed": {
            "results_records": len(records) - n_reports,
            "reports": n_reports,
            "junit_jobs": sum(1 for _, ch, _, _ in feed if ch == "junit"),
            "ndjson_results": n_results,
        },
        "agent_token_runners": [r.id for r in rng.sample([r for r in agents if not r.ephemeral], 2)],
    }
    del n_junit_results
    end_ts = end
    for f in faults + herrings:
        tf = truth_fail.get(f.id, {"failures": 0, "tests": set(), "jobs": set(), "first": None, "last": None})
        weak = f.sick and (tf["failures"] < 10 or len(tf["tests"]) < 4 or len(tf["jobs"]) < 3)
        truth["entities"].append(
            {
                "id": f.id,
                "sick": f.sick,
                "sort": f.sort,
                "kind": f.kind,
                "entity": f.entity,
                "accept": [list(a) for a in f.accept],
                "dimensions": f.dimension,
                "expected_state": f.expected_state,
                "onset": iso_utc(f.onset) if f.sick else None,
                "end": iso_utc(f.end) if f.end else None,
                "gradual": f.gradual,
                "runners": f.runners,
                "note": f.note,
                "params": {
                    k: (iso_utc(v) if k in ("leak_start", "fill_start", "at") else v)
                    for k, v in f.params.items()
                },
                "failures": tf["failures"],
                "distinct_tests": len(tf["tests"]),
                "jobs": len(tf["jobs"]),
                "first_failure": iso_utc(tf["first"]) if tf["first"] else None,
                "last_failure": iso_utc(tf["last"]) if tf["last"] else None,
                "weak": weak,
            }
        )
    for o in outages:
        truth["outages"].append(
            {
                "id": o["id"],
                "sort": o["sort"],
                "region": o["region"],
                "pools": o["pools"],
                "start": iso_utc(o["start"]),
                "end": iso_utc(o["end"]),
                "failures": outage_fail[o["id"]],
                "hosts": len(outage_hosts[o["id"]]),
                "weak": outage_fail[o["id"]] < 15 or len(outage_hosts[o["id"]]) < 2,
            }
        )
    for test in tests:
        st = test_stats[test.id]
        label = test.label
        accept = {label}
        weak = False
        fault_fails = sum(v for k, v in st["causes"].items() if k.startswith("F"))
        if label == "flaky-weak":
            label, accept = "flaky", {"flaky", "healthy"}
            weak = True
        if label == "flaky":
            rate_ = test.base
            if st["own"] < 5 or rate_ < 0.015:
                weak = True
            if test.suite == "perf":
                # only ever runs on one runner: a test x runner interaction cannot be told apart
                accept = {"flaky", "healthy"} if rate_ < 0.05 else {"flaky"}
        elif label == "broken-fixed":
            accept = {"broken", "healthy"}
            weak = st["causes"].get("broken", 0) < 5
        elif label == "broken":
            accept = {"broken"}
            weak = st["causes"].get("broken", 0) < 5
        elif label == "platform":
            accept = {"platform"}
            weak = st["causes"].get("platform", 0) < 5
        elif label == "interaction":
            accept = {"healthy", "flaky", "platform"}
            weak = True
        elif label == "healthy":
            accept = {"healthy"}
            res_fails = sum(
                v
                for k, v in st["causes"].items()
                if k
                in {
                    f.id
                    for f in faults
                    if f.sort in ("memleak", "inode", "readonly", "nodedisk", "slowdisk", "noagent")
                }
            )
            if st["failures"] and res_fails >= 0.5 * st["failures"] and res_fails >= 3:
                accept.add("resource-sensitive")
        truth["tests"][test.id] = {
            "label": label,
            "accept": sorted(accept),
            "weak": weak,
            "base_rate": round(test.base, 4),
            "suite": test.suite,
            "shard": test.shard,
            "runs": st["runs"],
            "failures": st["failures"],
            "own_failures": st["own"],
            "fault_failures": fault_fails,
            "causes": dict(st["causes"]),
            "pools": sorted(st["pools"]),
            "n_runners": len(st["runners"]),
            "broken_from": (iso_utc(commit_time[test.broken_from]) if test.broken_from is not None else None),
            "broken_to": (iso_utc(commit_time[test.broken_to]) if test.broken_to is not None else None),
            "platform": test.platform,
        }
    # backfill cut: the first 35-50 % of the window arrives through `runnerctl import`
    truth["feed"]["backfill_until_ms"] = int((start + rng.uniform(0.35, 0.5) * (end - start)) * 1000)
    truth["feed"]["unique_results"] = len(records) - n_reports
    truth["feed"]["unique_reports"] = n_reports
    (out / "truth.json").write_text(json.dumps(truth, indent=1, default=sorted))
    print(
        f"seed {seed}: {truth['shape']}, {w['days']} days, {len(runners)} runners/nodes, {len(tests)} tests, "
        f"{len(records) - n_reports} results ({truth['feed']['junit_jobs']} JUnit jobs), {n_reports} reports, "
        f"{len(faults)} faults, {len(outages)} outages, time {tzfmt} {w['tz_h']:+}h",
        file=sys.stderr,
    )
    del end_ts


if __name__ == "__main__":
    main()
