"""A fourth held-out fleet: gen.py SEED OUTDIR [END_TIME].

Writes, deterministically for a seed:
  history.ndjson  every result and agent report ("kind": "report") in event-time order;
  feed.tsv        the same records in the order they would reach the controller (ARRIVAL_MS, TYPE,
                  SENDER, JSON per line): results at their job's end, reports when the agent sends them
                  (late for an agent whose network dropped), a few resends; run.sh feeds it live;
  truth.json      what really happened (see README.md);
  failures.tsv    every failed or errored execution with its true cause, to explain errors only.

Nothing here reads the product's analysis: the world is modelled from the issue and the wire formats.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from bisect import bisect_right
from datetime import UTC, datetime
from pathlib import Path
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from common.reports import AgentReport
from common.results import TestResult

H = 3600.0
DAY = 86400.0
GIB = 1 << 30


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def hexid(*parts: object, n: int = 12) -> str:
    return hashlib.sha1(":".join(str(p) for p in parts).encode()).hexdigest()[:n]


# ---------------------------------------------------------------------------------------------- tests

AREAS = {
    # area: tag -> probability that a test of the area carries it
    "storage": {"io": 0.8, "bigdisk": 0.3},
    "cache": {"cache": 0.85, "io": 0.3},
    "net": {"net": 0.75, "fetch": 0.15},
    "artifacts": {"fetch": 0.7, "io": 0.3},
    "auth": {"time": 0.7},
    "sched": {"time": 0.5, "io": 0.2},
    "compile": {"toolchain": 0.8, "io": 0.3},
    "build": {"toolchain": 0.6, "mem": 0.3, "io": 0.3},
    "engine": {"mem": 0.5},
    "api": {"net": 0.2},
    "ui": {},
    "config": {"io": 0.3},
    "metrics": {"time": 0.15},
    "queue": {"net": 0.3, "time": 0.25},
    "parser": {},
    "billing": {"time": 0.3},
    "search": {"mem": 0.3, "io": 0.2},
    "upload": {"io": 0.6, "bigdisk": 0.3, "net": 0.3},
}
BASE_TAGS = {"io": 0.1, "net": 0.05, "mem": 0.04, "time": 0.03, "toolchain": 0.04, "cache": 0.05}
WORDS = [
    "read",
    "write",
    "open",
    "close",
    "flush",
    "sync",
    "merge",
    "split",
    "parse",
    "render",
    "retry",
    "expire",
    "renew",
    "rotate",
    "evict",
    "fetch",
    "push",
    "pull",
    "sign",
    "verify",
    "encode",
    "decode",
    "compress",
    "index",
    "query",
    "sort",
    "stream",
    "batch",
    "commit",
    "rollback",
    "lock",
    "unlock",
    "spawn",
    "kill",
    "resize",
    "upload",
    "download",
    "cancel",
    "resume",
    "schedule",
    "drain",
    "probe",
    "watch",
    "list",
    "patch",
]
NOUNS = [
    "file",
    "block",
    "token",
    "cert",
    "lease",
    "queue",
    "worker",
    "cache",
    "entry",
    "chunk",
    "manifest",
    "blob",
    "config",
    "route",
    "session",
    "user",
    "order",
    "invoice",
    "report",
    "graph",
    "node",
    "edge",
    "snapshot",
    "backup",
    "archive",
    "packet",
    "frame",
    "page",
    "table",
    "column",
    "schema",
    "policy",
    "quota",
    "limit",
    "timer",
    "clock",
    "bucket",
    "key",
    "secret",
    "layer",
    "image",
    "artifact",
]
SUITE_KEYS = {
    "unit": "go-build",
    "integ": "m2-repo",
    "e2e": "npm",
    "tools": "pip",
    "gpu": "conda",
    "pkg": "brew",
}
SUITE_DUR = {
    "unit": (0.02, 1.2),
    "integ": (1.0, 14.0),
    "e2e": (6.0, 40.0),
    "tools": (0.1, 3.0),
    "gpu": (4.0, 30.0),
    "pkg": (3.0, 25.0),
}
SETUP = {"unit": 240.0, "integ": 180.0, "e2e": 240.0, "tools": 60.0, "gpu": 300.0, "pkg": 420.0}
TOLERANCES = ((5, 0.15), (30, 0.35), (60, 0.3), (120, 0.2))


class Test:
    __slots__ = (
        "after",
        "area",
        "cache_key",
        "dur",
        "k1",
        "k2",
        "kind",
        "note",
        "p",
        "p0",
        "platform",
        "renamed_from",
        "renamed_to",
        "shard",
        "since",
        "suite",
        "tags",
        "tid",
        "tol",
        "until",
    )

    def __init__(self, tid: str, suite: str, area: str, dur: float, tags: tuple[str, ...]) -> None:
        self.tid, self.suite, self.area, self.dur, self.tags = tid, suite, area, dur, tags
        self.tol = 0.0
        self.cache_key = SUITE_KEYS[suite]
        self.kind = "healthy"
        self.p = 0.0
        self.p0 = 0.0
        self.after: Test | None = None
        self.since = -math.inf
        self.until = math.inf
        self.k1 = self.k2 = 0
        self.platform = ""
        self.shard = 0
        self.renamed_from = self.renamed_to = ""
        self.note = ""


def test_name(rng: Random, suite: str, area: str, i: int) -> str:
    w, n = rng.choice(WORDS), rng.choice(NOUNS)
    if suite == "unit":
        return f"pkg/{area}/{n}_test.go::Test{w.title()}{n.title()}{i}"
    if suite == "integ":
        return f"com.acme.{area}.{n.title()}{area.title()}IT#{w}{n.title()}{i}"
    if suite == "e2e":
        return f"e2e/{area}.spec.ts > {area} {w}s the {n} #{i}"
    if suite == "tools":
        return f"tools/{area}/test_{n}.py::test_{w}_{n}_{i}"
    if suite == "gpu":
        return f"gpu/test_{area}.py::test_{w}_{n}_cuda_{i}"
    return f"packaging/{area}_{n}.bats::{w} {n} {i}"


def make_suite(rng: Random, suite: str, n: int, areas: list[str]) -> list[Test]:
    out = []
    lo, hi = SUITE_DUR[suite]
    for i in range(n):
        area = rng.choice(areas)
        tags = []
        for tag, p in {**BASE_TAGS, **AREAS[area]}.items():
            if rng.random() < max(p, BASE_TAGS.get(tag, 0.0)):
                tags.append(tag)
        dur = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        t = Test(test_name(rng, suite, area, i), suite, area, dur, tuple(sorted(tags)))
        if "time" in t.tags:
            r, acc = rng.random(), 0.0
            for tol, w in TOLERANCES:
                acc += w
                if r <= acc:
                    t.tol = tol
                    break
            else:
                t.tol = 120
        t.p0 = 0.0 if rng.random() < 0.55 else rng.uniform(0.0001, 0.0012)
        out.append(t)
    return out


# -------------------------------------------------------------------------------------------- runners


class Runner:
    """A persistent runner, or (ephemeral pools) a host slot whose runner id is new per job."""

    __slots__ = (
        "agent",
        "ephemeral",
        "img_t",
        "img_v",
        "labels",
        "machine",
        "platform",
        "pool",
        "provider",
        "rid",
        "shard",
        "slot",
        "t_from",
        "t_to",
        "weight",
        "work",
    )

    def __init__(self, rid: str, machine: str, pool: str, platform: str, provider: str, image: str) -> None:
        self.rid, self.machine, self.pool, self.platform, self.provider = (
            rid,
            machine,
            pool,
            platform,
            provider,
        )
        self.shard: str | None = None
        self.labels: tuple[str, ...] = ()
        self.ephemeral = False
        self.agent = True
        self.t_from = -math.inf
        self.t_to = math.inf
        self.img_t: list[float] = [-math.inf]
        self.img_v: list[str] = [image]
        self.slot = 0
        self.weight = 1.0
        self.work = "/home/runner/work"

    def image_at(self, t: float) -> str:
        return self.img_v[bisect_right(self.img_t, t) - 1]

    def set_image(self, t: float, image: str) -> None:
        i = bisect_right(self.img_t, t)
        self.img_t.insert(i, t)
        self.img_v.insert(i, image)
        # later entries keep their own times; the caller sets whole histories in order


class Pool:
    def __init__(self, name: str, platform: str, ephemeral: bool = False) -> None:
        self.name, self.platform, self.ephemeral = name, platform, ephemeral
        self.runners: list[Runner] = []  # slots
        self.hosts: list[str] = []
        self.jobtypes: list[dict] = []
        self.sparse = False
        self.hard = False
        self.family = ""


# ---------------------------------------------------------------------------------------------- faults


class Fault:
    """A sick entity (or a red herring / outage). `hits(r, t)` says whether it reaches a runner at t;
    `effect(test, t, job)` the failure probability it adds; `mod(vals, t, agent)` its readings."""

    def __init__(self, fid: str, kind: str, entity: str, dims: list[str], note: str) -> None:
        self.fid, self.kind, self.entity, self.dims, self.note = fid, kind, entity, dims, note
        self.spans: list[tuple[float, float]] = []  # when failures can occur (end inf = not fixed)
        self.accept: list[tuple[str, str]] = [(kind, entity)]
        self.expected = "sick"
        self.role = "sick"  # sick | warning | outage | allowed | noise
        self.hits = lambda r, t, mach, img: False
        self.effect = lambda test, t, job: None
        self.mod = None
        self.first_possible: float | None = None
        self.extra: dict = {}

    def active(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.spans)


# ---------------------------------------------------------------------------------------------- world


class World:
    def __init__(self, seed: int, end: float) -> None:
        self.seed = seed
        self.rng = Random(f"h4-{seed}")
        rng = self.rng
        self.shape = ("smallpools", "ephemeral", "longsparse")[seed % 3]
        self.days = {
            "smallpools": rng.randint(12, 17),
            "ephemeral": rng.randint(8, 11),
            "longsparse": rng.randint(20, 27),
        }[self.shape]
        self.end = end
        self.start = end - self.days * DAY
        self.tz = rng.choice((-8, -5, -3, 0, 1, 2, 5.5, 8, 9))
        self.provider = rng.choice(("github", "gitlab", "buildkite", "jenkins"))
        self.weekend = {"smallpools": 0.15, "ephemeral": 0.25, "longsparse": 0.05}[self.shape]
        self.pools: list[Pool] = []
        self.faults: list[Fault] = []
        self.tests: list[Test] = []
        self.suites: dict[str, list[Test]] = {}
        self.events: list[dict] = []
        self.slowdowns: list[tuple[float, float, float]] = []

    # -- time
    def local_hour(self, t: float) -> float:
        return ((t + self.tz * H) % DAY) / H

    def weekday(self, t: float) -> int:
        return (int((t + self.tz * H) // DAY) + 3) % 7

    def intensity(self, t: float) -> float:
        h = self.local_hour(t)
        if h < 7:
            v = 0.06
        elif h < 9:
            v = 0.45
        elif h < 12:
            v = 1.0
        elif h < 13.5:
            v = 0.7
        elif h < 18:
            v = 1.0
        elif h < 21:
            v = 0.4
        else:
            v = 0.12
        if self.weekday(t) >= 5:
            v *= self.weekend
        return v

    def load(self, t: float) -> float:
        return self.intensity(t)

    def local_day_start(self, t: float) -> float:
        return t - ((t + self.tz * H) % DAY)


# ------------------------------------------------------------------------------------------- building


def build_tests(w: World) -> None:
    rng = w.rng
    areas = list(AREAS)
    sizes = {"smallpools": (160, 280), "ephemeral": (200, 340), "longsparse": (120, 220)}[w.shape]
    w.suites["unit"] = make_suite(rng, "unit", rng.randint(*sizes), areas)
    w.suites["integ"] = make_suite(rng, "integ", rng.randint(90, 180), rng.sample(areas, 11))
    w.suites["e2e"] = make_suite(
        rng, "e2e", rng.randint(24, 48), ["ui", "api", "billing", "search", "upload", "auth"]
    )
    w.suites["tools"] = make_suite(
        rng, "tools", rng.randint(15, 35), ["config", "parser", "build", "metrics"]
    )
    w.suites["gpu"] = make_suite(rng, "gpu", rng.randint(12, 24), ["engine", "compile", "search"])
    w.suites["pkg"] = make_suite(
        rng, "pkg", rng.randint(12, 30), ["build", "compile", "artifacts", "storage"]
    )
    for s in w.suites.values():
        w.tests.extend(s)


def assign_behaviours(w: World, main_commits: int) -> None:
    rng = Random(f"h4-beh-{w.seed}")
    unit, integ, e2e = w.suites["unit"], w.suites["integ"], w.suites["e2e"]
    taken: set[str] = set()

    def pick(pool: list[Test], cond=lambda t: True) -> Test:
        cands = [t for t in pool if t.tid not in taken and t.kind == "healthy" and cond(t)]
        t = rng.choice(cands)
        taken.add(t.tid)
        return t

    # plain flaky tests everywhere, rate log-uniform 1-20 %
    for _ in range(rng.randint(8, 18)):
        t = pick(rng.choice((unit, unit, integ, integ, e2e, w.suites["tools"])))
        t.kind, t.p = "flaky", math.exp(rng.uniform(math.log(0.012), math.log(0.2)))
    # order-dependent: B fails when A ran earlier in the same job (unit runs in random order)
    for _ in range(rng.randint(1, 3)):
        a = pick(unit)
        b = (
            pick(unit, lambda t, a=a: t.area == a.area)
            if any(t.area == a.area and t.tid not in taken and t.kind == "healthy" for t in unit)
            else pick(unit)
        )
        taken.add(a.tid)
        b.kind, b.after, b.p = "orderdep", a, rng.uniform(0.4, 0.9)
        b.note = f"fails after {a.tid} in the same job"
    # load-sensitive timeouts: fail in busy hours everywhere (worse under a CI-wide slow-down)
    for _ in range(rng.randint(2, 4)):
        t = pick(rng.choice((integ, e2e)))
        t.kind, t.p = "load", rng.uniform(0.015, 0.05)
    # the hard shard: many e2e tests fail at random at 2-8 %
    for t in e2e:
        if t.tid not in taken and rng.random() < 0.3:
            t.kind, t.p = "hard", rng.uniform(0.02, 0.08)
            taken.add(t.tid)
    # quarantined mid-window: flaky, then never run again
    for _ in range(rng.randint(1, 2)):
        t = pick(rng.choice((unit, integ)))
        t.kind, t.p = "flaky", rng.uniform(0.06, 0.25)
        t.until = w.start + rng.uniform(0.3, 0.6) * w.days * DAY
        t.note = "quarantined (stops running) mid-window"
    # renamed: a new id from a time on (module moved); some are flaky under both names
    renamed = []
    for _ in range(rng.randint(2, 4)):
        t = pick(rng.choice((unit, integ)))
        if rng.random() < 0.5:
            t.kind, t.p = "flaky", rng.uniform(0.05, 0.2)
        at = w.start + rng.uniform(0.3, 0.7) * w.days * DAY
        new = Test(
            t.tid.replace(t.area, t.area + "v2", 1) if t.suite == "unit" else t.tid + "_v2",
            t.suite,
            t.area,
            t.dur,
            t.tags,
        )
        new.tol, new.kind, new.p, new.p0, new.since = t.tol, t.kind, t.p, t.p0, at
        t.until, t.renamed_to, new.renamed_from = at, new.tid, t.tid
        t.note = f"renamed to {new.tid}"
        new.note = f"renamed from {t.tid}"
        taken.add(new.tid)
        renamed.append((t, new))
    for t, new in renamed:
        w.suites[t.suite].append(new)
        w.tests.append(new)
        for p in w.pools:
            for j in p.jobtypes:
                if j["tests"] is not w.suites[t.suite] and t in j["tests"]:
                    j["tests"].append(new)
    # broken from a main commit on, some fixed later
    for _ in range(rng.randint(2, 4)):
        t = pick(rng.choice((unit, unit, integ)))
        t.kind, t.p = "broken", rng.choice((1.0, 1.0, 0.95))
        t.k1 = rng.randint(int(main_commits * 0.15), int(main_commits * 0.8))
        t.k2 = rng.randint(t.k1 + 3, main_commits + 20) if rng.random() < 0.5 else 10**9
    # broken on the release branch only
    for _ in range(rng.randint(1, 2)):
        t = pick(rng.choice((unit, integ)))
        t.kind, t.p = "branch", 1.0
        t.note = "fails on the release branch's commits only"


def build_fleet(w: World) -> None:
    rng = w.rng
    prov = w.provider
    lx_family = "ubuntu-22.04-ci"
    months = ["2026.10.1", "2026.10.3", "2026.11.1"]

    def add_pool(
        name: str,
        platform: str,
        n: int,
        per_host: int = 1,
        family: str | None = None,
        agent_ratio: float = 0.92,
    ) -> Pool:
        p = Pool(name, platform)
        p.family = family or f"{name}-img"
        img = f"{p.family}-{months[0]}"
        for i in range(n):
            if per_host == 1:
                rid, host = f"{name}-{i + 1:02d}", f"{name}-vm{i + 1:02d}"
            else:
                rid, host = f"{name}-{i // 2 + 1:02d}{'ab'[i % 2]}", f"{name}-host{i // 2 + 1:02d}"
            r = Runner(rid, host, name, platform, prov, img)
            r.labels = ("self-hosted", platform, name)
            r.agent = rng.random() < agent_ratio
            r.work = {"windows": "D:\\a", "mac": "/Users/runner/work"}.get(platform, "/home/runner/work")
            if host not in p.hosts:
                p.hosts.append(host)
            p.runners.append(r)
        w.pools.append(p)
        return p

    def add_eph_pool(name: str, hosts: int, slots: int) -> Pool:
        p = Pool(name, "linux", ephemeral=True)
        p.family = "cos-node"
        img = f"{p.family}-{months[0]}"
        for h in range(hosts):
            host = f"{name}-node-{hexid(w.seed, name, h, n=5)}"
            p.hosts.append(host)
            for s in range(slots):
                r = Runner(host, host, name, "linux", prov, img)
                r.ephemeral = True
                r.slot = s
                r.labels = ("self-hosted", "linux", "ephemeral")
                r.agent = True  # a host agent reports for the host
                p.runners.append(r)
        w.pools.append(p)
        return p

    def jt(
        pool: Pool,
        name: str,
        suite: str,
        weight: float,
        schedule: str = "all",
        shard=None,
        retries: int = 0,
        tia: bool = True,
    ) -> None:
        tests = w.suites[suite]
        if shard is not None:
            k, n = shard
            tests = [t for t in tests if int(hexid(t.tid.split("#")[0].split("::")[0], n=6), 16) % n == k]
            for t in tests:
                t.shard = k
        pool.jobtypes.append(
            {
                "name": name,
                "suite": suite,
                "tests": tests,
                "weight": weight,
                "schedule": schedule,
                "retries": retries,
                "tia": tia,
                "pool": pool,
                "shard": None if shard is None else str(shard[0] + 1),
            }
        )

    if w.shape == "smallpools":
        n_pools = rng.randint(6, 10)
        n_integ = 2 if n_pools < 8 else 3
        integ_shards = 2 * n_integ
        lx = add_pool("lx-unit", "linux", rng.randint(4, 9), family=lx_family)
        jt(lx, "unit-linux", "unit", 1.0)
        integ_pools = []
        for k in range(n_integ):
            per = rng.choice((1, 2))
            p = add_pool(
                f"lx-integ-{'abc'[k]}",
                "linux",
                rng.randint(4, 12) if per == 1 else 2 * rng.randint(2, 5),
                per_host=per,
                family=lx_family if k < 2 else "ubuntu-24.04-ci",
            )
            integ_pools.append(p)
        for s in range(integ_shards):
            jt(integ_pools[s % n_integ], f"integ-{s + 1}", "integ", 0.9, shard=(s, integ_shards), retries=2)
        arm = add_pool("arm64", "arm", 2 * rng.randint(2, 4), per_host=2, family="ubuntu-22.04-arm-ci")
        jt(arm, "unit-arm", "unit", 0.55)
        win = add_pool("win2022", "windows", rng.randint(3, 7), family="win2022-ci")
        jt(win, "unit-windows", "unit", 0.45)
        extra = ["e2e-heavy", "macos14", "lx-tools", "gpu", "lx-release"]
        rng.shuffle(extra)
        for name in extra[: n_pools - 3 - n_integ]:
            if name == "e2e-heavy":
                p = add_pool(name, "linux", rng.randint(3, 6), family="ubuntu-e2e")
                p.hard = True
                for r in p.runners:
                    r.shard = "e2e"
                jt(p, "e2e-1", "e2e", 0.35, shard=(0, 2), retries=1, tia=False)
                jt(p, "e2e-2", "e2e", 0.35, shard=(1, 2), retries=1, tia=False)
            elif name == "macos14":
                p = add_pool(name, "mac", rng.randint(3, 4), family="macos14-xcode16")
                p.sparse = True
                jt(p, "unit-mac", "unit", 0.6, schedule="merge+nightly")
                jt(p, "pkg-mac", "pkg", 1.0, schedule="nightly", tia=False)
            elif name == "lx-tools":
                p = add_pool(name, "linux", rng.randint(3, 5), family=lx_family)
                jt(p, "lint", "tools", 0.9, tia=False)
            elif name == "gpu":
                p = add_pool(name, "linux", 3, family="ubuntu-22.04-cuda")
                p.sparse = True
                jt(p, "gpu", "gpu", 0.5, schedule="merge+nightly", tia=False)
            elif name == "lx-release":
                p = add_pool(name, "linux", rng.randint(3, 4), family="ubuntu-22.04-ci")
                p.sparse = True
                jt(p, "release-unit", "unit", 1.0, schedule="release", tia=False)
                jt(p, "release-integ", "integ", 1.0, schedule="release", retries=2, tia=False)
    elif w.shape == "ephemeral":
        n_hosts = rng.randint(10, 30)
        slots = rng.randint(max(6, 150 // n_hosts + 1), max(8, 300 // n_hosts))
        k8s = add_eph_pool("k8s-ci", n_hosts, slots)
        jt(k8s, "unit-linux", "unit", 1.0)
        for s in range(4):
            jt(k8s, f"integ-{s + 1}", "integ", 0.9, shard=(s, 4), retries=2)
        jt(k8s, "e2e", "e2e", 0.4, retries=1, tia=False)
        jt(k8s, "lint", "tools", 0.9, tia=False)
        win = add_pool("win2022", "windows", rng.randint(3, 6), family="win2022-ci")
        jt(win, "unit-windows", "unit", 0.4)
        mac = add_pool("macos14", "mac", rng.randint(2, 4), family="macos14-xcode16")
        mac.sparse = True
        jt(mac, "unit-mac", "unit", 0.5, schedule="merge+nightly")
        jt(mac, "pkg-mac", "pkg", 1.0, schedule="nightly", tia=False)
        if rng.random() < 0.6:
            arm = add_pool("arm64", "arm", 2 * rng.randint(2, 3), per_host=2, family="ubuntu-22.04-arm-ci")
            jt(arm, "unit-arm", "unit", 0.5)
    else:  # longsparse
        build = add_pool("build", "linux", rng.randint(6, 14), family=lx_family)
        jt(build, "unit-linux", "unit", 1.0)
        jt(build, "lint", "tools", 0.8, tia=False)
        test = add_pool("test", "linux", rng.randint(6, 14), per_host=rng.choice((1, 2)), family=lx_family)
        for s in range(3):
            jt(test, f"integ-{s + 1}", "integ", 0.8, shard=(s, 3), retries=2)
        win = add_pool("win", "windows", rng.randint(3, 6), family="win2022-ci")
        jt(win, "unit-windows", "unit", 0.35)
        if rng.random() < 0.7:
            mac = add_pool("mac", "mac", rng.randint(2, 4), family="macos14-xcode16")
            mac.sparse = True
            jt(mac, "unit-mac", "unit", 0.4, schedule="merge+nightly")
            jt(mac, "pkg-mac", "pkg", 1.0, schedule="nightly", tia=False)
        if rng.random() < 0.6:
            nightly = add_pool("nightly", "linux", rng.randint(3, 5), family="ubuntu-e2e")
            nightly.sparse = True
            nightly.hard = True
            for r in nightly.runners:
                r.shard = "e2e"
            jt(nightly, "e2e-nightly", "e2e", 1.0, schedule="nightly", retries=1, tia=False)
            jt(nightly, "e2e-merge", "e2e", 0.3, schedule="merge+nightly", retries=1, tia=False)
        # runners come and go: a few added mid-window, a few decommissioned
        for p in (build, test):
            for _ in range(rng.randint(1, 2)):
                i = len(p.runners) + 1
                r = Runner(
                    f"{p.name}-{i:02d}", f"{p.name}-vm{i:02d}", p.name, "linux", prov, p.runners[0].img_v[0]
                )
                r.labels = p.runners[0].labels
                r.t_from = w.start + rng.uniform(0.25, 0.7) * w.days * DAY
                p.runners.append(r)
                p.hosts.append(r.machine)
                w.events.append({"event": "runner added", "runner": r.rid, "at": iso(r.t_from)})
            victim = rng.choice(p.runners[:-2])
            victim.t_to = w.start + rng.uniform(0.3, 0.8) * w.days * DAY
            w.events.append({"event": "runner removed", "runner": victim.rid, "at": iso(victim.t_to)})
    # a few runners without an agent (never the ephemeral host agents)
    persistent = [r for p in w.pools if not p.ephemeral for r in p.runners]
    for r in rng.sample(persistent, min(len(persistent), rng.randint(1, 3))):
        r.agent = False
    # sparse runners: weight low in the queue
    # routine image updates: the linux family moves to a new version gradually over two days
    t0 = w.start + rng.uniform(0.2, 0.6) * w.days * DAY
    for p in w.pools:
        if p.ephemeral or p.family != lx_family:
            continue
        for r in p.runners:
            r.set_image(t0 + rng.uniform(0, 2 * DAY), f"{lx_family}-{months[1]}")
    w.events.append({"event": "gradual good rollout", "image": f"{lx_family}-{months[1]}", "at": iso(t0)})


# ----------------------------------------------------------------------------------------- faults


def runner_ctx_matcher(kind: str, entity: str):
    if kind == "runner":
        return lambda r, t, mach, img: r.rid == entity
    if kind == "machine":
        return lambda r, t, mach, img: mach == entity
    if kind == "image":
        return lambda r, t, mach, img: img == entity
    return lambda r, t, mach, img: r.pool == entity


def make_faults(w: World) -> None:
    rng = Random(f"h4-faults-{w.seed}")
    S, E, Dd = w.start, w.end, w.days
    used_runners: set[str] = set()
    used_hosts: set[str] = set()
    used_pools: set[str] = set()
    persistent = [r for p in w.pools if not p.ephemeral for r in p.runners]
    runners_on = {}
    for p in w.pools:
        for r in p.runners:
            runners_on.setdefault(r.machine, set()).add(r.rid)

    sparse_pools = {p.name for p in w.pools if p.sparse}

    def free_runner(cond=lambda r: True, agent=True, sparse=False) -> Runner | None:
        cands = [
            r
            for r in persistent
            if r.rid not in used_runners
            and r.machine not in used_hosts
            and r.pool not in used_pools
            and r.agent == agent
            and cond(r)
            and (r.pool in sparse_pools) == sparse
            and r.t_from < S
            and r.t_to > E
        ]
        if not cands:
            return None
        r = rng.choice(cands)
        used_runners.add(r.rid)
        used_hosts.add(r.machine)
        return r

    def free_host(cond=lambda p, h: True) -> tuple[Pool, str] | None:
        cands = [
            (p, h)
            for p in w.pools
            for h in p.hosts
            if h not in used_hosts
            and p.name not in used_pools
            and cond(p, h)
            and all(x.agent for x in p.runners if x.machine == h)
        ]
        if not cands:
            return None
        p, h = rng.choice(cands)
        used_hosts.add(h)
        for r in p.runners:
            if r.machine == h:
                used_runners.add(r.rid)
        return p, h

    def runner_kind(r: Runner) -> tuple[str, str, list]:
        if len(runners_on[r.machine]) == 1:
            return "runner", r.rid, [("runner", r.rid), ("machine", r.machine)]
        return "runner", r.rid, [("runner", r.rid)]

    def host_kind(p: Pool, h: str) -> tuple[str, str, list]:
        if p.ephemeral or len(runners_on[h]) > 1:
            return "machine", h, [("machine", h)]
        rid = next(iter(runners_on[h]))
        return "machine", h, [("machine", h), ("runner", rid)]

    def when(lo: float = 0.1, hi: float = 0.75) -> float:
        return S + rng.uniform(lo, hi) * Dd * DAY

    def fix_after(a: float, lo_h: float, hi_h: float, p_fixed: float = 0.5) -> float:
        if rng.random() < p_fixed:
            return min(E + 30 * DAY, a + rng.uniform(lo_h, hi_h) * H)
        return math.inf

    def new(fid: str, target: tuple[str, str, list], dims: list[str], note: str) -> Fault:
        kind, ent, acc = target
        f = Fault(fid, kind, ent, dims, note)
        f.accept = acc
        f.hits = runner_ctx_matcher(kind, ent)
        w.faults.append(f)
        return f

    makers = []

    def disk_sawtooth() -> None:
        if w.shape == "ephemeral":
            ph = free_host(lambda p, h: p.ephemeral)
            if not ph:
                return
            target = host_kind(*ph)
        else:
            r = free_runner()
            if not r:
                return
            target = runner_kind(r)
        a = when(0.05, 0.6)
        b = fix_after(a, 48, 140, 0.5)
        period = rng.uniform(3, 8) * H
        phase = rng.uniform(0, period)
        f = new(
            "disk-sawtooth",
            target,
            ["disk"],
            f"disk fills every {period / H:.1f} h and is cleaned (intermittent ENOSPC when under 1.5 % free)",
        )
        f.spans = [(a, b)]
        f.extra = {"period_h": round(period / H, 2)}

        def free(t: float) -> float:
            u = ((t - a + phase) % period) / period
            return max(0.002, 0.3 * (1 - u / 0.85)) if u < 0.85 else 0.002

        def effect(test: Test, t: float, job) -> tuple | None:
            fr = free(t)
            if "bigdisk" in test.tags and fr < 0.04:
                return 0.9, "failed", "OSError: [Errno 28] No space left on device"
            if "io" in test.tags and fr < 0.015:
                return 0.8, "failed", "OSError: [Errno 28] No space left on device"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if f.active(t):
                v["free_work"] = v["free_root"] = free(t)

        f.effect, f.mod = effect, mod
        # the first moment a failure can happen
        t = a
        while t < min(b, E) and free(t) >= 0.04:
            t += 300
        f.first_possible = t

    def nic_flap() -> None:
        ph = free_host(lambda p, h: p.ephemeral or len(runners_on[h]) > 1)
        if not ph:
            return
        a = when(0.1, 0.7)
        b = fix_after(a, 30, 120, 0.5)
        rate = rng.uniform(0.18, 0.3)
        f = new(
            "nic-flap",
            host_kind(*ph),
            ["unknown"],
            f"flapping NIC: {rate:.0%} of jobs on the host lose the network for a while (readings fine)",
        )
        f.spans = [(a, b)]
        f.extra = {"job_rate": round(rate, 3)}

        def effect(test: Test, t: float, job) -> tuple | None:
            if job.get(f.fid) is None:
                job[f.fid] = job["rng"].random() < rate
            if job[f.fid] and ("net" in test.tags or "fetch" in test.tags):
                return 0.85, "failed", "ConnectionResetError: [Errno 104] Connection reset by peer"
            return None

        f.effect = effect

    def preexisting() -> None:
        r = free_runner()
        if not r:
            return
        a = S - rng.uniform(1, 3) * DAY
        b = fix_after(S, rng.uniform(12, 40), rng.uniform(60, 200), 0.5)
        f = new(
            "preexisting-readonly",
            runner_kind(r),
            ["disk"],
            "work dir read-only since before the data starts (remounted ro after an I/O error)",
        )
        f.spans = [(a, b)]

        def effect(test: Test, t: float, job) -> tuple | None:
            if "io" in test.tags:
                return 0.95, "failed", f"OSError: [Errno 30] Read-only file system: '{r.work}/_temp'"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if f.active(t):
                v["ro_work"] = True

        f.effect, f.mod = effect, mod

    def double_fault() -> None:
        if w.shape == "ephemeral":
            ph = free_host(lambda p, h: p.ephemeral)
        else:
            ph = free_host(lambda p, h: not p.sparse and len(runners_on[h]) > 1) or free_host(
                lambda p, h: not p.sparse
            )
        if not ph:
            return
        target = host_kind(*ph)
        a1 = when(0.15, 0.7)
        b1 = fix_after(a1, 20, 90, 0.6)
        a2 = a1 + rng.uniform(-6, 6) * H
        b2 = b1 if b1 == math.inf else b1 + rng.uniform(-4, 4) * H
        offset = rng.choice((-1, 1)) * rng.uniform(45, 160)
        f = new(
            "double-fault",
            target,
            ["memory", "clock"],
            f"two faults on one host: memory pressure with OOM "
            f"kills, and ntpd died with the clock {offset:+.0f} s off",
        )
        f.spans = [(min(a1, a2), max(b1, b2))]
        f.extra = {
            "memory": [iso(a1), iso(b1) if b1 < math.inf else None],
            "clock": [iso(a2), iso(b2) if b2 < math.inf else None],
            "offset_s": round(offset, 1),
        }

        def effect(test: Test, t: float, job) -> tuple | None:
            if a1 <= t < b1 and "mem" in test.tags:
                return 0.7, "error", "worker killed by signal 9 (OOM killer)"
            if a2 <= t < b2 and test.tol and test.tol < abs(offset):
                return 0.9, "failed", "ssl.SSLCertVerificationError: certificate is not yet valid"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if a1 <= t < b1:
                v["mem_avail"] = agent["rng"].uniform(0.015, 0.04)
                v["psi_full60"] = agent["rng"].uniform(18, 45)
                v["oom"] = agent["rng"].randint(1, 4)
            if a2 <= t < b2:
                v["offset"] = offset + agent["rng"].gauss(0, 0.5)

        f.effect, f.mod = effect, mod

    def clock_recurring() -> None:
        r = free_runner()
        if not r:
            return
        a1 = when(0.05, 0.45)
        b1 = a1 + rng.uniform(6, 30) * H
        a2 = b1 + rng.uniform(2, 5) * DAY
        b2 = a2 + rng.uniform(6, 36) * H
        if a2 > E - 6 * H:
            a2, b2 = E - rng.uniform(8, 20) * H, math.inf
        offset = rng.choice((-1, 1)) * rng.uniform(35, 300)
        target = runner_kind(r)
        for k, (a, b) in enumerate(((a1, b1), (a2, b2))):
            f = new(
                f"clock-recurring-{k + 1}",
                target,
                ["clock"],
                f"chrony loses its servers, clock {offset:+.0f} "
                f"s off; fixed, then the same again (episode {k + 1} of 2)",
            )
            f.spans = [(a, b)]

            def effect(test: Test, t: float, job, f=f) -> tuple | None:
                if test.tol and test.tol < abs(offset):
                    return (
                        0.9,
                        "failed",
                        "jwt.exceptions.ImmatureSignatureError: The token is not yet valid (iat)",
                    )
                return None

            def mod(v: dict, t: float, agent, f=f) -> None:
                if f.active(t):
                    v["offset"] = offset + agent["rng"].gauss(0, 0.3)

            f.effect, f.mod = effect, mod

    def clock_drift() -> None:
        if w.shape == "ephemeral" and rng.random() < 0.5:
            ph = free_host(lambda p, h: p.ephemeral)
            if not ph:
                return
            target = host_kind(*ph)
        else:
            r = free_runner()
            if not r:
                return
            target = runner_kind(r)
        t0 = when(0.05, 0.55)
        rate = rng.uniform(2, 9) / H  # s per s
        b = fix_after(t0, 60, 200, 0.4)
        f = new(
            "clock-drift",
            target,
            ["clock"],
            f"ntpd dead, the clock drifts {rate * H:.1f} s/h; tests with "
            "a 5/30/60/120 s tolerance fail in turn",
        )
        start = t0 + 5 / rate
        f.spans = [(start, b)]
        f.extra = {
            "drift_from": iso(t0),
            "rate_s_per_h": round(rate * H, 2),
            "reads_over_1s": iso(t0 + 1 / rate),
        }

        def offset(t: float) -> float:
            return min(900.0, (t - t0) * rate)

        def effect(test: Test, t: float, job) -> tuple | None:
            if test.tol and test.tol < offset(t):
                return 0.9, "failed", "AssertionError: lease expired before it was granted (clock skew?)"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if t0 <= t < b:
                v["offset"] = offset(t) + agent["rng"].gauss(0, 0.05)

        f.effect, f.mod = effect, mod

    def noagent_disk() -> None:
        r = free_runner(lambda r: not r.ephemeral, agent=False)
        if not r:
            return
        a = when(0.1, 0.7)
        b = fix_after(a, 24, 100, 0.4)
        f = new("noagent-disk", runner_kind(r), ["unknown", "disk"], "disk full on a runner without an agent")
        f.expected = "suspect"
        f.spans = [(a, b)]

        def effect(test: Test, t: float, job) -> tuple | None:
            if "bigdisk" in test.tags:
                return 0.9, "failed", "IOError: No space left on device"
            if "io" in test.tags:
                return 0.75, "failed", "IOError: No space left on device"
            return None

        f.effect = effect

    def memleak() -> None:
        if w.shape == "ephemeral" or rng.random() < 0.4:
            ph = free_host(lambda p, h: not p.sparse)
            if not ph:
                return
            target = host_kind(*ph)
        else:
            r = free_runner()
            if not r:
                return
            target = runner_kind(r)
        a = when(0.0, 0.35)
        days_to_zero = rng.uniform(1.5, 3.5)
        base = rng.uniform(0.55, 0.7)
        leak = base / (days_to_zero * DAY)
        fixed = a + rng.uniform(0.55, 0.85) * (E - a) if rng.random() < 0.4 else math.inf
        # reboots when memory is nearly gone (someone notices, or the kernel panics)
        reboots = []
        t = a
        while True:
            t_zero = t + (base - 0.004) / leak
            if t_zero >= min(E, fixed):
                break
            reboots.append(t_zero + rng.uniform(0.2, 3) * H)
            t = reboots[-1]
        f = new(
            "memory-leak",
            target,
            ["memory"],
            f"a leaking daemon eats memory over {days_to_zero:.1f} days; "
            f"OOM kills near the bottom; {len(reboots)} reboots",
        )
        f.extra = {"reboots": [iso(x) for x in reboots], "leak_start": iso(a)}

        def avail(t: float) -> float:
            if t < a or t >= fixed:
                return -1.0
            i = bisect_right(reboots, t)
            since = a if i == 0 else reboots[i - 1]
            return max(0.003, base - leak * (t - since))

        # spans: when available < 6 %
        spans = []
        starts = [a, *reboots]
        for i, s in enumerate(starts):
            lo = s + (base - 0.06) / leak
            hi = reboots[i] if i < len(reboots) else fixed
            if lo < hi and lo < E:
                spans.append((lo, hi))
        f.spans = spans
        w.events.append({"event": "reboots", "entity": target[1], "at": f.extra["reboots"]})

        def effect(test: Test, t: float, job) -> tuple | None:
            v = avail(t)
            if 0 <= v < 0.06 and "mem" in test.tags:
                return 0.3 + 0.65 * (0.06 - v) / 0.06, "error", "Killed (OOM): worker exited with signal 9"
            return None

        def mod(v: dict, t: float, agent) -> None:
            x = avail(t)
            if x >= 0:
                v["mem_avail"] = x
                v["psi_full60"] = 0 if x > 0.1 else (0.1 - x) * 300
                v["oom"] = agent["rng"].randint(1, 3) if x < 0.05 else 0
                v["boot"] = bisect_right(reboots, t)

        f.effect, f.mod = effect, mod

    def bad_image_pool() -> None:
        cands = [
            p
            for p in w.pools
            if p.name not in used_pools
            and not p.sparse
            and len(p.hosts) >= 3
            and not any(r.rid in used_runners for r in p.runners)
        ]
        if not cands:
            return
        p = rng.choice(cands)
        used_pools.add(p.name)
        variant = rng.choice(("toolchain", "rotmp"))
        T = when(0.25, 0.75)
        new_img = f"{p.family}-2026.11.{rng.randint(4, 9)}-{p.name}"
        rollback = rng.random() < 0.5
        end = (
            T + rng.uniform(10, 40) * H
            if rollback
            else (T + rng.uniform(30, 80) * H if rng.random() < 0.5 else math.inf)
        )
        fixed_img = f"{p.family}-2026.12.1-{p.name}"
        t_host = {h: T + rng.uniform(0, 25 * 60) for h in p.hosts}
        for r in p.runners:
            old = r.image_at(T)
            t_r = t_host[r.machine]
            r.set_image(t_r, new_img)
            # entries after T from the gradual rollout are dropped: the whole pool moved at once
            keep = [(tt, v) for tt, v in zip(r.img_t, r.img_v, strict=True) if tt <= t_r]
            if end < math.inf:
                keep.append((end + rng.uniform(0, 20 * 60), old if rollback else fixed_img))
            r.img_t, r.img_v = [x for x, _ in keep], [v for _, v in keep]
        accept = [("image", new_img), ("pool", p.name)]
        note = (
            "bad image rolled to the whole pool at once: "
            + (
                "its toolchain is broken (readings fine)"
                if variant == "toolchain"
                else "/tmp mounted read-only"
            )
            + (
                ", rolled back"
                if rollback and end < math.inf
                else ", replaced by a fixed image"
                if end < math.inf
                else ", still in place"
            )
        )
        f = new(
            "bad-image", ("image", new_img, accept), ["unknown"] if variant == "toolchain" else ["disk"], note
        )
        f.spans = [(T, end + 20 * 60 if end < math.inf else end)]
        f.extra = {"pool": p.name, "variant": variant}

        def effect(test: Test, t: float, job) -> tuple | None:
            if variant == "toolchain" and "toolchain" in test.tags:
                return 0.75, "failed", "ld.lld: error: unable to find library -lssl"
            if variant == "rotmp" and "io" in test.tags:
                return 0.9, "failed", "OSError: [Errno 30] Read-only file system: '/tmp/pytest-of-runner'"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if variant == "rotmp":
                v["ro_tmp"] = True

        f.effect = effect
        f.mod = mod if variant == "rotmp" else None

    def good_image_pool() -> None:
        cands = [p for p in w.pools if p.name not in used_pools and not p.ephemeral and len(p.hosts) >= 2]
        if not cands:
            return
        p = rng.choice(cands)
        T = when(0.2, 0.8)
        img = f"{p.family}-2026.11.2-{p.name}"
        for r in p.runners:
            t_r = T + rng.uniform(0, 20 * 60)
            keep = [(tt, v) for tt, v in zip(r.img_t, r.img_v, strict=True) if tt <= t_r] + [(t_r, img)]
            r.img_t, r.img_v = [x for x, _ in keep], [v for _, v in keep]
        w.events.append(
            {
                "event": "good image rolled to the whole pool at once",
                "pool": p.name,
                "image": img,
                "at": iso(T),
            }
        )

    def new_runner_bad_cache() -> None:
        added = [r for r in persistent if r.t_from > S and r.rid not in used_runners and r.agent]
        if added:
            r = rng.choice(added)
            used_runners.add(r.rid)
            used_hosts.add(r.machine)
            a = r.t_from
        else:
            r = free_runner()
            if not r:
                return
            a = when(0.1, 0.7)
        pool = next(p for p in w.pools if p.name == r.pool)
        suites = [j["suite"] for j in pool.jobtypes]
        key = SUITE_KEYS[suites[0]]
        b = fix_after(a, 20, 90, 0.5)
        f = new(
            "poisoned-cache",
            runner_kind(r),
            ["cache"],
            f"poisoned {key} cache on this runner"
            + (" from its first job (added mid-window)" if r.t_from > S else ""),
        )
        f.spans = [(a, b)]
        f.extra = {"key": key}
        bad = "sha256:" + hexid(w.seed, "poison", r.rid, n=40)

        def effect(test: Test, t: float, job) -> tuple | None:
            if "cache" in test.tags and test.cache_key == key:
                return 0.85, "failed", f"corrupt entry in {key} cache: checksum mismatch"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if f.active(t):
                v["caches"][key] = bad

        f.effect, f.mod = effect, mod

    def sparse_cache() -> None:
        r = free_runner(sparse=True)
        if not r:
            return
        pool = next(p for p in w.pools if p.name == r.pool)
        key = SUITE_KEYS[pool.jobtypes[0]["suite"]]
        a = when(0.1, 0.6)
        b = fix_after(a, 48, 160, 0.4)
        f = new(
            "sparse-cache", runner_kind(r), ["cache"], f"poisoned {key} cache on a runner of a sparse pool"
        )
        f.spans = [(a, b)]
        f.extra = {"key": key}
        bad = "sha256:" + hexid(w.seed, "poison", r.rid, n=40)

        def effect(test: Test, t: float, job) -> tuple | None:
            if "cache" in test.tags and test.cache_key == key:
                return 0.85, "failed", f"{key}: corrupted download, sha mismatch"
            if "io" in test.tags and test.suite == "pkg":
                return 0.5, "failed", f"{key}: corrupted download, sha mismatch"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if f.active(t):
                v["caches"][key] = bad

        f.effect, f.mod = effect, mod

    def pool_remote_cache() -> None:
        cands = [
            p
            for p in w.pools
            if p.name not in used_pools
            and not p.sparse
            and len(p.hosts) >= 3
            and not p.ephemeral
            and not any(r.rid in used_runners for r in p.runners)
        ]
        if not cands:
            return
        p = rng.choice(cands)
        used_pools.add(p.name)
        a = when(0.15, 0.8)
        b = a + rng.uniform(10, 40) * H
        f = new(
            "pool-remote-cache",
            ("pool", p.name, [("pool", p.name)]),
            ["unknown", "cache"],
            "the pool's shared remote build cache serves corrupt artifacts (agents' local caches fine)",
        )
        f.spans = [(a, b)]

        def effect(test: Test, t: float, job) -> tuple | None:
            if "cache" in test.tags or "toolchain" in test.tags:
                return 0.55, "failed", "remote cache: artifact digest mismatch (bazel-remote)"
            return None

        f.effect = effect

    def eph_host_disk() -> None:
        ph = free_host(lambda p, h: p.ephemeral)
        if not ph:
            return
        a = when(0.05, 0.6)
        fill = rng.uniform(18, 40) * H
        b = fix_after(a + fill, 10, 60, 0.6)
        f = new(
            "host-disk-filling",
            host_kind(*ph),
            ["disk"],
            f"container layers pile up on the node: the "
            f"disk fills over {fill / H:.0f} h, failing jobs until garbage collection is fixed",
        )

        def free(t: float) -> float:
            return max(0.001, 0.45 * (1 - (t - a) / fill))

        f.spans = [(a + fill * (1 - 0.04 / 0.45), b)]

        def effect(test: Test, t: float, job) -> tuple | None:
            fr = free(t)
            if "bigdisk" in test.tags and fr < 0.04:
                return 0.9, "failed", "failed to register layer: no space left on device"
            if "io" in test.tags and fr < 0.02:
                return 0.8, "failed", "OSError: [Errno 28] No space left on device"
            return None

        def mod(v: dict, t: float, agent) -> None:
            if a <= t < b:
                v["free_root"] = v["free_work"] = free(t)

        f.effect, f.mod = effect, mod

    def eph_host_dimm() -> None:
        ph = free_host(lambda p, h: p.ephemeral)
        if not ph:
            return
        a = when(0.1, 0.7)
        b = fix_after(a, 20, 80, 0.5)
        p_err = rng.uniform(0.03, 0.07)
        f = new(
            "bad-dimm",
            host_kind(*ph),
            ["unknown"],
            f"bad RAM on the node: any test may crash ({p_err:.0%}), readings fine",
        )
        f.spans = [(a, b)]

        def effect(test: Test, t: float, job) -> tuple | None:
            return p_err, "error", "Fatal: Segmentation fault (core dumped)"

        f.effect = effect

    if w.shape == "ephemeral":
        makers = [
            eph_host_disk,
            eph_host_dimm,
            double_fault,
            nic_flap,
            memleak,
            clock_drift,
            bad_image_pool,
            noagent_disk,
            preexisting,
            sparse_cache,
            disk_sawtooth,
        ]
        n = rng.randint(5, 8)
    elif w.shape == "smallpools":
        makers = [
            disk_sawtooth,
            nic_flap,
            preexisting,
            double_fault,
            clock_recurring,
            clock_drift,
            noagent_disk,
            memleak,
            bad_image_pool,
            pool_remote_cache,
            sparse_cache,
            new_runner_bad_cache,
        ]
        n = rng.randint(5, 8)
    else:
        makers = [
            new_runner_bad_cache,
            disk_sawtooth,
            preexisting,
            clock_recurring,
            clock_drift,
            noagent_disk,
            memleak,
            bad_image_pool,
            sparse_cache,
            double_fault,
            nic_flap,
        ]
        n = rng.randint(5, 7)
    rng.shuffle(makers)
    made = 0
    for m in makers:
        before = len(w.faults)
        m()
        made += len(w.faults) > before
        if made >= n:
            break
    if rng.random() < 0.6:
        good_image_pool()

    # ---- red herrings: bad readings, no failures
    def warn(kind: str) -> None:
        r = free_runner()
        if not r:
            return
        f = Fault(f"warn-{kind}", "runner", r.rid, [kind], "")
        f.role = "warning"
        f.hits = runner_ctx_matcher("runner", r.rid)
        a = S + rng.uniform(0, 0.5) * Dd * DAY
        b = a + rng.uniform(2, 8) * DAY
        f.spans = [(a, b)]
        if kind == "disk":
            lvl = rng.uniform(0.022, 0.045)
            f.note = f"disk {lvl:.1%} free for days (under the agent's 5 %), jobs still fit"

            def mod(v: dict, t: float, agent) -> None:
                if f.active(t):
                    v["free_root"] = v["free_work"] = lvl + agent["rng"].uniform(-0.004, 0.004)
        elif kind == "clock":
            off = rng.choice((-1, 1)) * rng.uniform(1.5, 4.0)
            f.note = f"clock {off:+.1f} s off for days; no test cares under 5 s"

            def mod(v: dict, t: float, agent) -> None:
                if f.active(t):
                    v["offset"] = off + agent["rng"].gauss(0, 0.1)
        elif kind == "memory":
            f.note = "memory pressure (PSI full 12-25 %) without OOM kills"

            def mod(v: dict, t: float, agent) -> None:
                if f.active(t):
                    v["mem_avail"] = agent["rng"].uniform(0.07, 0.12)
                    v["psi_full60"] = agent["rng"].uniform(12, 25)
        else:  # unused cache key
            f.note = "cache digest unlike the pool's for key 'legacy-gradle', which no test uses"

            def mod(v: dict, t: float, agent) -> None:
                if f.active(t):
                    v["caches"]["legacy-gradle"] = "sha256:" + hexid("stale", r.rid, n=40)

        f.mod = mod
        w.faults.append(f)

    for k in rng.sample(["disk", "clock", "memory", "cache"], rng.randint(2, 4)):
        warn(k)
    # a noisy agent: about 2 % of its readings are nonsense
    r = free_runner()
    if r:
        f = Fault("noisy-agent", "runner", r.rid, [], "agent sends occasional bogus readings (2 %)")
        f.role = "warning"
        f.hits = runner_ctx_matcher("runner", r.rid)
        f.spans = [(S - DAY, E + DAY)]

        def noisy(v: dict, t: float, agent) -> None:
            x = agent["rng"].random()
            if x < 0.007:
                v["offset"] = agent["rng"].choice((-1, 1)) * agent["rng"].uniform(200, 3000)
            elif x < 0.014:
                v["mem_avail"] = 0.0
                v["oom"] = 1
            elif x < 0.02:
                v["free_root"] = v["free_work"] = 0.0

        f.mod = noisy
        w.faults.append(f)
    # agents that go quiet: one hung (no readings), one whose network dropped (spooled, sent late)
    agents = [r for r in persistent if r.agent and r.rid not in used_runners]
    for style in ("hung", "late"):
        if not agents:
            break
        r = rng.choice(agents)
        agents.remove(r)
        a = when(0.1, 0.85)
        f = Fault(f"agent-{style}", "runner", r.rid, [], f"agent {style} for a few hours")
        f.role = "noise"
        f.hits = runner_ctx_matcher("runner", r.rid)
        f.spans = [(a, a + rng.uniform(3, 10) * H)]
        w.faults.append(f)

    # ---- outages and fleet-wide events
    starts = [pl["t"] for pl in w.pipelines if pl["kind"] != "nightly"]

    def find(cond) -> float:
        lo, hi = S + 0.1 * Dd * DAY, S + 0.92 * Dd * DAY
        cands = [x for x in starts if lo < x < hi and cond(x)]
        if cands:
            return rng.choice(cands) - rng.uniform(0, 10) * 60
        return when(0.1, 0.9)

    def outage(kind: str) -> None:
        if kind == "artifacts":
            a = find(lambda x: w.intensity(x) >= 0.9)
            b = a + rng.uniform(20, 70) * 60
            f = Fault(
                "outage-artifacts", "fleet", "artifacts.internal", [], "artifact registry down fleet-wide"
            )
            tag, p, msg = ("fetch", "toolchain"), 0.85, "HTTP 503 from artifacts.internal/api/v2"
        elif kind == "dns":
            a = find(lambda x: w.intensity(x) <= 0.2)
            b = a + rng.uniform(15, 45) * 60
            f = Fault("outage-dns", "fleet", "dns", [], "DNS resolver outage at a quiet hour")
            tag, p, msg = (
                ("net", "fetch"),
                0.85,
                "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            )
        else:
            svc_tests = [t for t in w.tests if t.suite in ("integ", "e2e") and t.kind == "healthy"]
            chosen = rng.sample(svc_tests, rng.randint(3, 7))
            for t in chosen:
                t.tags = tuple(sorted(set(t.tags) | {"svc"}))
            a = find(lambda x: w.intensity(x) >= 0.9)
            b = a + rng.uniform(45, 180) * 60
            f = Fault(
                "outage-payments",
                "fleet",
                "payments-sandbox",
                [],
                f"external payments sandbox down: the {len(chosen)} tests that call it fail everywhere",
            )
            tag, p, msg = ("svc",), 0.95, "stripe.error.APIConnectionError: sandbox unavailable"
        f.role = "outage"
        f.spans = [(a, b)]
        f.hits = lambda r, t, mach, img: True

        def effect(test: Test, t: float, job, tag=tag, p=p, msg=msg) -> tuple | None:
            if any(x in test.tags for x in tag):
                return p, "failed", msg
            return None

        f.effect = effect
        w.faults.append(f)

    kinds = rng.sample(["artifacts", "dns", "service"], rng.randint(0, 3))
    for k in kinds:
        outage(k)
    # a CI-wide slow-down: every job slower, load-sensitive tests time out more (not an outage to find)
    if rng.random() < 0.6:
        a = when(0.1, 0.9)
        b = a + rng.uniform(2, 6) * H
        w.slowdowns.append((a, b, rng.uniform(1.6, 2.5)))
        f = Fault(
            "ci-slowdown",
            "fleet",
            "ci-slowdown",
            [],
            "CI-wide slow-down (shared storage), load-sensitive tests time out more",
        )
        f.role = "allowed"
        f.spans = [(a, b)]
        w.faults.append(f)


# ------------------------------------------------------------------------------------------ simulation


def slow(w: World, t: float) -> float:
    for a, b, k in w.slowdowns:
        if a <= t < b:
            return k
    return 1.0


def own_failure(w: World, test: Test, t: float, job: dict, ran_before: set[str]) -> tuple | None:
    k = test.kind
    if k == "flaky" or k == "hard":
        return (
            test.p,
            "failed",
            "AssertionError: expected 200, got 504"
            if k == "hard"
            else "AssertionError: condition not met within 2s",
        )
    if k == "orderdep":
        if test.after is not None and test.after.tid in ran_before:
            return test.p, "failed", f"AssertionError: leftover state from {test.after.tid.split('::')[-1]}"
        return None
    if k == "load":
        x = test.p * (0.15 + 2.2 * w.load(t)) * (3.0 if slow(w, t) > 1 else 1.0)
        return min(0.5, x), "error", "TimeoutError: test exceeded its 60 s timeout"
    if k == "broken":
        if test.k1 <= job["main"] < test.k2 and job["branch"] != "release":
            return test.p, "failed", "AssertionError: expected 'v2' in response, got 'v1'"
        return None
    if k == "branch":
        if job["branch"] == "release":
            return test.p, "failed", "ImportError: cannot import name 'Backoff' from 'acme.retry'"
        return None
    if k == "platform":
        if job["platform"] == test.platform:
            return test.p, "failed", f"AssertionError: path separator on {test.platform}"
        return None
    return None


def simulate(w: World):
    rng = Random(f"h4-sim-{w.seed}")
    # ---- commits and pipelines
    pipelines = []
    total_weekday_rate = sum(w.intensity(w.start + h * H + 0.5 * H) for h in range(24 * 7)) / 7
    # size the pipeline rate to the fleet's target volume
    target = {
        "smallpools": rng.randint(70_000, 200_000),
        "ephemeral": rng.randint(110_000, 240_000),
        "longsparse": rng.randint(60_000, 170_000),
    }[w.shape]
    per_pipeline = 0.0
    for p in w.pools:
        for j in p.jobtypes:
            frac = 0.65 if j["tia"] else 1.0
            share = {"all": 0.9, "merge+nightly": 0.22, "nightly": 0.0, "release": 0.08}[j["schedule"]]
            per_pipeline += j["weight"] * share * frac * len(j["tests"])
    per_day = target / w.days
    # nightly pipelines add their own runs
    nightly_per_day = sum(len(j["tests"]) for p in w.pools for j in p.jobtypes)
    rate_per_day = max(10.0, (per_day - nightly_per_day) / per_pipeline)
    lam_max = rate_per_day / total_weekday_rate  # pipelines per hour at intensity 1
    # capacity check: a pool must not be over ~75 % busy at peak
    for p in w.pools:
        busy = 0.0
        for j in p.jobtypes:
            share = {"all": 0.9, "merge+nightly": 0.22, "nightly": 0.0, "release": 0.08}[j["schedule"]]
            dur = 60 + SETUP[j["suite"]] + sum(t.dur for t in j["tests"]) * (0.65 if j["tia"] else 1.0)
            busy += lam_max * j["weight"] * share * dur
        cap = len(p.runners) * H * 0.75
        if busy > cap:
            k = cap / busy
            for j in p.jobtypes:
                j["weight"] *= k
    t = w.start
    main_idx, rel_idx, pr = 0, 0, 0
    day_seen = set()
    while t < w.end:
        t += rng.expovariate(lam_max / H)
        if t >= w.end:
            break
        d = w.local_day_start(t)
        if d not in day_seen:
            day_seen.add(d)
            tn = d + 2 * H  # 02:00 local
            if w.start < tn < w.end:
                pipelines.append({"t": tn, "kind": "nightly", "branch": "main", "main": None})
        if rng.random() > w.intensity(t):
            continue
        x = rng.random()
        if x < 0.22:
            kind, branch = "merge", "main"
        elif x < 0.30:
            kind, branch = "release", "release"
        else:
            kind, branch = "pr", "pr"
        pipelines.append({"t": t, "kind": kind, "branch": branch, "main": None})
    pipelines.sort(key=lambda p: p["t"])
    w.pipelines = pipelines
    for pl in pipelines:
        if pl["kind"] == "merge":
            main_idx += 1
            pl["main"] = main_idx
            pl["commit"] = hexid(w.seed, "main", main_idx, n=40)
        elif pl["kind"] == "nightly":
            pl["main"] = main_idx
            pl["commit"] = hexid(w.seed, "main", main_idx, n=40)
        elif pl["kind"] == "release":
            if rng.random() < 0.3:
                rel_idx += 1
            pl["main"] = 0
            pl["commit"] = hexid(w.seed, "release", rel_idx, n=40)
        else:
            pr += 1
            pl["main"] = max(0, main_idx - rng.randint(0, 12))
            pl["commit"] = hexid(w.seed, "pr", pr, n=40)
    return pipelines, main_idx


def run_jobs(w: World, pipelines: list[dict]):
    rng = Random(f"h4-jobs-{w.seed}")
    results = []  # (time, record-dict, arrival)
    fails = []  # failures.tsv rows
    jobs_by_pool: dict[str, list] = {p.name: [] for p in w.pools}
    run_no = 1000
    for pl in pipelines:
        run_no += 1
        pl["run_id"] = f"{w.provider}-run-{run_no}"
        for p in w.pools:
            for j in p.jobtypes:
                sch, kind = j["schedule"], pl["kind"]
                if kind == "nightly":
                    ok = sch != "release"
                elif sch == "all":
                    ok = kind in ("pr", "merge", "release") and rng.random() < j["weight"]
                elif sch == "merge+nightly":
                    ok = kind == "merge" and rng.random() < j["weight"]
                elif sch == "release":
                    ok = kind == "release" and rng.random() < min(1.0, j["weight"])
                else:
                    ok = False
                if not ok:
                    continue
                areas = None
                if j["tia"] and kind == "pr":
                    all_areas = sorted({t.area for t in j["tests"]})
                    areas = set(rng.sample(all_areas, max(1, int(len(all_areas) * rng.uniform(0.2, 1.0)))))
                jobs_by_pool[p.name].append((pl["t"] + rng.uniform(5, 90), pl, j, areas))
    # queue per pool
    job_no = 0
    scheduled = []
    for p in w.pools:
        arrivals = sorted(jobs_by_pool[p.name], key=lambda x: x[0])
        free_at = [0.0] * len(p.runners)
        for arr, pl, j, areas in arrivals:
            act = [i for i, r in enumerate(p.runners) if r.t_from <= arr < r.t_to]
            if not act:
                continue
            idle = [i for i in act if free_at[i] <= arr]
            i = rng.choice(idle) if idle else min(act, key=lambda k: free_at[k])
            start = max(arr, free_at[i]) + rng.uniform(15, 60)
            r = p.runners[i]
            if start > r.t_to or start > w.end - 60:
                continue
            tests = [
                t for t in j["tests"] if t.since <= start < t.until and (areas is None or t.area in areas)
            ]
            if not tests:
                continue
            job_no += 1
            job = {
                "id": f"{w.provider}-job-{job_no}",
                "pl": pl,
                "jt": j,
                "runner": r,
                "start": start,
                "tests": tests,
                "rng": Random(f"h4-job-{w.seed}-{job_no}"),
            }
            dur = execute(w, job, results, fails, dry=True)
            free_at[i] = start + dur + rng.uniform(5, 30)
            scheduled.append(job)
    return scheduled


def runner_identity(w: World, r: Runner, t: float, job_no: str | None = None) -> dict:
    img = r.image_at(t)
    if r.ephemeral:
        rid = f"{r.pool}-{hexid(w.seed, job_no, n=5)}-{hexid(job_no, 'x', n=5)}" if job_no else r.machine
        d = {
            "id": rid,
            "name": rid,
            "machine": r.machine,
            "pool": r.pool,
            "image": img,
            "labels": list(r.labels),
            "provider": r.provider,
            "ephemeral": True,
        }
        return d
    d = {
        "id": r.rid,
        "name": r.rid,
        "machine": r.machine,
        "pool": r.pool,
        "image": img,
        "labels": list(r.labels),
        "provider": r.provider,
        "ephemeral": False,
    }
    if r.shard:
        d["shard"] = r.shard
    return d


def execute(w: World, job: dict, results: list, fails: list, dry: bool) -> float:
    """Run a job's tests in order (random order for the unit suite), then retry its failures on the same
    runner (attempt 2, 3). With dry=True only the duration is computed (for the queue)."""
    jrng: Random = job["rng"]
    r: Runner = job["runner"]
    jt = job["jt"]
    tests = list(job["tests"])
    if jt["suite"] == "unit":
        Random(f"{w.seed}-{job['id']}-order").shuffle(tests)
    t = job["start"]
    if dry:
        k = slow(w, t)
        job["setup"] = SETUP[jt["suite"]] * jrng.uniform(0.6, 1.4) * k
        return job["setup"] + sum(x.dur for x in tests) * k + 10
    t += job["setup"]
    pl = job["pl"]
    img = r.image_at(t)
    ident = runner_identity(w, r, t, job["id"])
    ctx = {"main": pl["main"] or 0, "branch": pl["branch"], "platform": r.platform, "rng": jrng}
    faults = [f for f in w.faults if f.role in ("sick", "outage") and f.hits(r, t, r.machine, img)]
    ran: set[str] = set()
    failed: list[Test] = []
    recs = []
    retries = jt["retries"]

    def one(test: Test, t: float, attempt: int) -> tuple[str, float]:
        k = slow(w, t)
        d = test.dur * math.exp(jrng.gauss(0, 0.25)) * k
        outcome, msg, cause = "passed", None, None
        for f in faults:
            if not f.active(t):
                continue
            e = f.effect(test, t, ctx)
            if e and jrng.random() < e[0]:
                outcome, msg, cause = e[1], e[2], f.fid
                break
        if cause is None:
            e = own_failure(w, test, t, ctx, ran)
            if e and jrng.random() < e[0]:
                outcome, msg, cause = e[1], e[2], f"own:{test.kind}"
        if cause is None and test.p0 and jrng.random() < test.p0:
            outcome, msg, cause = "failed", "AssertionError", "base"
        if cause is None and r.platform == "windows" and test.suite == "unit" and hash_frac(test.tid) < 0.03:
            outcome = "skipped"
            d = 0.0
        rec = {
            "test_id": test.tid,
            "outcome": outcome,
            "time": iso(t),
            "duration_s": round(d, 3),
            "job_id": job["id"],
            "run_id": pl["run_id"],
            "attempt": attempt,
            "commit": pl["commit"],
            "runner": ident,
        }
        if msg:
            rec["message"] = msg
        recs.append((t, rec))
        if cause is not None:
            fails.append(
                (
                    t,
                    test.tid,
                    outcome,
                    cause,
                    ident["id"],
                    r.machine,
                    r.pool,
                    ident["image"],
                    job["id"],
                    attempt,
                )
            )
        return outcome, d

    for test in tests:
        outcome, d = one(test, t, 1)
        ran.add(test.tid)
        if outcome in ("failed", "error"):
            failed.append(test)
        t += d + 0.05
    for attempt in range(2, 2 + retries):
        if not failed or len(failed) > 10:
            break
        again = []
        for test in failed:
            outcome, d = one(test, t, attempt)
            if outcome in ("failed", "error"):
                again.append(test)
            t += d + 0.05
        failed = again
    arrive = t + jrng.uniform(10, 120)
    for tt, rec in recs:
        results.append((tt, rec, arrive, job["id"]))
    return t - job["start"]


def hash_frac(s: str) -> float:
    return int(hexid(s, n=8), 16) / 16**8


# ------------------------------------------------------------------------------------------- readings


def agent_list(w: World) -> list[dict]:
    agents = []
    for p in w.pools:
        seen = set()
        for r in p.runners:
            if not r.agent:
                continue
            key = r.machine if p.ephemeral else r.rid
            if key in seen:
                continue
            seen.add(key)
            agents.append({"key": key, "runner": r, "rng": Random(f"h4-agent-{w.seed}-{key}")})
    return agents


def cache_majority(w: World, pool: Pool, key: str, t: float, r: Runner) -> str:
    # the pool's cache for a key is refreshed daily at 03:00 local; a runner picks it up 0-90 min later
    d = w.local_day_start(t) + 3 * H
    lag = hash_frac(f"{r.rid}{key}") * 90 * 60
    if t < d + lag:
        d -= DAY
    return "sha256:" + hexid(w.seed, pool.name, key, int(d), n=40)


def make_reports(w: World) -> list:
    agents = agent_list(w)
    n = len(agents)
    budget = 34_000
    # capped at 45 min so that every failure has a reading within half an interval, as a real agent's
    # 30-60 s checks would give; the budget then bends a little (at most ~38k reports)
    interval = max(10.0, min(45.0, math.ceil(n * w.days * 1440 / budget / 5) * 5)) * 60
    w.events.append({"event": "agent interval", "minutes": interval / 60, "agents": n})
    out = []  # (observed, report dict, arrival, sender)
    pools = {p.name: p for p in w.pools}
    agent_faults = [f for f in w.faults if f.mod is not None]
    quiet = {f.entity: f for f in w.faults if f.fid.startswith("agent-")}
    for ag in agents:
        r: Runner = ag["runner"]
        rng: Random = ag["rng"]
        pool = pools[r.pool]
        keys = sorted({SUITE_KEYS[j["suite"]] for j in pool.jobtypes})
        if rng.random() < 0.3:
            keys.append("docker")
        total = rng.choice((64, 128, 256, 512)) * GIB
        mem_total = rng.choice((8, 16, 32, 64)) * GIB
        base_free = rng.uniform(0.25, 0.7)
        base_mem = rng.uniform(0.35, 0.75)
        servers = rng.sample(
            ["ntp1.corp", "ntp2.corp", "time.cloudflare.com", "0.pool.ntp.org"], rng.randint(2, 3)
        )
        t = max(w.start, r.t_from) + rng.uniform(0, interval)
        stop = min(w.end, r.t_to)
        seq_by_boot: dict[int, int] = {}
        extra_boots = sorted(w.start + rng.uniform(0, w.days) * DAY for _ in range(rng.randint(0, 2)))
        k = 0
        q = quiet.get(r.rid if not r.ephemeral else r.machine)
        while t < stop:
            k += 1
            if q and q.active(t) and q.fid == "agent-hung":
                t += interval * rng.uniform(0.85, 1.15)
                continue
            img = r.image_at(t)
            v = {
                "free_root": base_free + 0.05 * math.sin(t / (DAY * 1.7) + k % 7),
                "free_work": base_free + rng.uniform(-0.05, 0.03),
                "free_tmp": rng.uniform(0.4, 0.8),
                "ro_work": False,
                "ro_tmp": False,
                "mem_avail": max(0.08, base_mem + rng.gauss(0, 0.06)),
                "psi_full60": rng.uniform(0, 1.5),
                "oom": 0,
                "offset": rng.gauss(0, 0.004),
                "boot": 0,
                "caches": {key: cache_majority(w, pool, key, t, r) for key in keys},
            }
            for f in agent_faults:
                if f.hits(r, t, r.machine, img):
                    f.mod(v, t, ag)
            boot_n = v["boot"] + bisect_right(extra_boots, t) * 100
            boot = f"{hexid(w.seed, ag['key'], 'boot', boot_n, n=8)}-{hexid(boot_n, ag['key'], n=4)}"
            seq = seq_by_boot.get(boot_n, 0)
            seq_by_boot[boot_n] = seq + 1
            readings = [
                disk_reading(v, total, r),
                memory_reading(v, mem_total),
                clock_reading(v, servers, rng),
            ]
            # cache digests in every report: the check's 10-minute default is shorter than any interval here
            readings.append(
                {
                    "check": "cache",
                    "status": "ok",
                    "caches": [
                        {
                            "key": key,
                            "path": f"{r.work}/../.cache/{key}",
                            "digest": v["caches"][key],
                            "files": 1000 + int(hash_frac(key) * 20000),
                            "bytes": int(hash_frac(key + "b") * 4 * GIB),
                            "full_rehash": k % 48 == 0,
                        }
                        for key in sorted(v["caches"])
                    ],
                }
            )
            ident = runner_identity(w, r, t)
            rep = {
                "agent_id": ag["key"],
                "boot_id": boot,
                "seq": seq,
                "observed_at": iso(t),
                "runner": ident,
                "readings": readings,
                "dropped": 0,
                "spool_depth": 0,
                "agent_version": "0.9.3",
            }
            arrive = t + rng.uniform(1, 20)
            if q and q.active(t) and q.fid == "agent-late":
                arrive = q.spans[0][1] + rng.uniform(10, 120)
                rep["spool_depth"] = int((q.spans[0][1] - t) / interval)
            out.append((t, rep, arrive, ag["key"]))
            t += interval * rng.uniform(0.85, 1.15)
    return out


def disk_reading(v: dict, total: int, r: Runner) -> dict:
    paths = []
    worst = None
    root = "C:\\" if r.platform == "windows" else "/"
    tmp = (
        "C:\\Windows\\Temp"
        if r.platform == "windows"
        else ("/private/tmp" if r.platform == "mac" else "/tmp")
    )
    for path, free, ro, mount in (
        (root, v["free_root"], False, root),
        (r.work, v["free_work"], v["ro_work"], root),
        (tmp, v["free_tmp"], v["ro_tmp"], tmp),
    ):
        free = min(1.0, max(0.0, free))
        fb = int(total * free)
        paths.append(
            {
                "path": path,
                "mount_point": mount,
                "device": "/dev/nvme0n1p1" if mount == root else "tmpfs",
                "total_bytes": total,
                "free_bytes": fb,
                "free_ratio": round(free, 5),
                "inodes_total": 6_553_600,
                "inodes_free": int(6_553_600 * min(1.0, free * 1.3 + 0.05)),
                "inodes_free_ratio": round(min(1.0, free * 1.3 + 0.05), 5),
                "read_only": ro,
                "write_probe_ok": not ro,
            }
        )
        if ro:
            worst = worst or "ReadonlyFilesystem"
        elif free < 0.05 or fb < GIB:
            worst = worst or "DiskFull"
    d = {"check": "disk", "status": "problem" if worst else "ok", "paths": paths}
    if worst:
        d["reason"] = worst
    return d


def memory_reading(v: dict, total: int) -> dict:
    a = min(1.0, max(0.0, v["mem_avail"]))
    d = {
        "check": "memory",
        "status": "ok",
        "total_bytes": total,
        "available_bytes": int(total * a),
        "available_ratio": round(a, 5),
        "swap_used_bytes": int(total * max(0.0, 0.1 - a) * 2),
        "psi_some_avg10": round(v["psi_full60"] * 1.6, 2),
        "psi_some_avg60": round(v["psi_full60"] * 1.4, 2),
        "psi_full_avg10": round(v["psi_full60"] * 1.1, 2),
        "psi_full_avg60": round(v["psi_full60"], 2),
        "oom_kills": v["oom"],
    }
    reason = (
        "OomKills"
        if v["oom"]
        else "MemoryLow"
        if a < 0.05
        else "MemoryPressure"
        if v["psi_full60"] > 10
        else None
    )
    if reason:
        d["status"], d["reason"] = "problem", reason
    return d


def clock_reading(v: dict, servers: list[str], rng: Random) -> dict:
    off = v["offset"]
    ss = []
    for s in servers:
        if rng.random() < 0.02:
            ss.append({"server": s, "error": "timed out"})
        else:
            ss.append(
                {
                    "server": s,
                    "offset_s": round(off + rng.gauss(0, 0.002), 4),
                    "delay_s": round(rng.uniform(0.001, 0.04), 4),
                    "stratum": rng.choice((1, 2, 2, 3)),
                }
            )
    d = {"check": "clock", "status": "ok", "offset_s": round(off, 4), "servers": ss}
    if abs(off) > 1.0:
        d["status"], d["reason"] = "problem", "ClockSkew"
    return d


# --------------------------------------------------------------------------------------------- truth


def build_truth(
    w: World,
    jobs: list[dict],
    fails: list[tuple],
    results_count: int,
    reports_count: int,
    runs_per_entity: dict,
) -> dict:
    by_fault: dict[str, list] = {}
    for row in fails:
        by_fault.setdefault(row[3], []).append(row)
    ents = []
    for f in w.faults:
        if f.role not in ("sick", "warning"):
            continue
        rows = by_fault.get(f.fid, [])
        tests = sorted({x[1] for x in rows})
        runners = (
            sorted({x[4] for x in rows})
            if f.kind != "machine" or not any(p.ephemeral and f.entity in p.hosts for p in w.pools)
            else []
        )
        pools = sorted({x[6] for x in rows})
        machines = sorted({x[5] for x in rows})
        images = sorted({x[7] for x in rows})
        # the entity's own family: every runner/host it covers, for granularity checks
        covered_r, covered_m, covered_p, covered_i = set(), set(), set(), set()
        for p in w.pools:
            for r in p.runners:
                for a, _b in f.spans:
                    tt = min(max(a, w.start), w.end - 1)
                    img = r.image_at(tt)
                    if f.hits(r, tt, r.machine, img) or (f.kind == "image" and f.entity in r.img_v):
                        if not r.ephemeral:
                            covered_r.add(r.rid)
                        covered_m.add(r.machine)
                        covered_p.add(r.pool)
                        if f.kind == "image":
                            covered_i.add(f.entity)
                        else:
                            covered_i.add(img)
        e = {
            "id": f.fid,
            "kind": f.kind,
            "entity": f.entity,
            "sick": f.role == "sick",
            "role": f.role,
            "dimensions": f.dims,
            "expected_state": f.expected if f.role == "sick" else "warning",
            "accept": [list(x) for x in f.accept],
            "note": f.note,
            "spans": [[iso(a), iso(b) if b < math.inf else None] for a, b in f.spans],
            "onset": iso(f.spans[0][0]) if f.spans else None,
            "first_possible": iso(f.first_possible) if f.first_possible else None,
            "end": iso(f.spans[-1][1]) if f.spans and f.spans[-1][1] < w.end else None,
            "failures": len(rows),
            "distinct_tests": len(tests),
            "first_failure": iso(min(x[0] for x in rows)) if rows else None,
            "last_failure": iso(max(x[0] for x in rows)) if rows else None,
            "runs": runs_per_entity.get(f.fid, 0),
            "failing_runners": runners[:50],
            "failing_machines": machines,
            "pools": pools,
            "images": images,
            "covers": {
                "runner": sorted(covered_r),
                "machine": sorted(covered_m),
                "pool": sorted(covered_p),
                "image": sorted(covered_i),
            },
            "has_agent": all(
                r.agent
                for p in w.pools
                for r in p.runners
                if r.rid in covered_r or (p.ephemeral and r.machine in covered_m)
            ),
            "extra": f.extra,
        }
        e["weak"] = e["sick"] and (e["failures"] < 10 or e["distinct_tests"] < 4)
        ents.append(e)
    outages = []
    for f in w.faults:
        if f.role not in ("outage", "allowed"):
            continue
        rows = by_fault.get(f.fid, [])
        a, b = f.spans[0]
        if f.role == "allowed":
            rows = [x for x in fails if a <= x[0] < b and x[3] == "own:load"]
        outages.append(
            {
                "id": f.fid,
                "entity": f.entity,
                "role": f.role,
                "note": f.note,
                "start": iso(a),
                "end": iso(b),
                "failures": len(rows),
                "tests": len({x[1] for x in rows}),
                "hosts": len({x[5] for x in rows}),
                "weak": f.role == "outage" and (len(rows) < 15 or len({x[5] for x in rows}) < 2),
            }
        )
    # tests
    stats: dict[str, dict] = {}
    for row in fails:
        s = stats.setdefault(row[1], {"failures": 0, "own": 0, "causes": {}})
        s["failures"] += 1
        if row[3].startswith("own:"):
            s["own"] += 1
        s["causes"][row[3]] = s["causes"].get(row[3], 0) + 1
    tests = []
    runs = w.test_runs
    for t in w.tests:
        s = stats.get(t.tid, {"failures": 0, "own": 0, "causes": {}})
        label = {
            "healthy": "healthy",
            "flaky": "flaky",
            "hard": "flaky",
            "orderdep": "flaky",
            "load": "flaky",
            "broken": "broken",
            "branch": "broken",
            "platform": "platform",
        }[t.kind]
        if t.kind == "broken" and t.k2 < 10**9:
            label = "broken-fixed"
        accept = {
            "healthy": ["healthy", "resource-sensitive"],
            "flaky": ["flaky"],
            "broken": ["broken"],
            "broken-fixed": ["broken", "healthy"],
            "platform": ["platform"],
        }[label]
        if label == "healthy":
            accept = ["healthy"]
        d = {
            "test_id": t.tid,
            "label": label,
            "behaviour": t.kind,
            "accept": accept,
            "runs": runs.get(t.tid, 0),
            "failures": s["failures"],
            "own_failures": s["own"],
            "causes": s["causes"],
            "rate": round(t.p, 4) if t.kind not in ("healthy",) else round(t.p0, 5),
            "suite": t.suite,
            "tags": list(t.tags),
        }
        if t.note:
            d["note"] = t.note
        if t.platform:
            d["platform"] = t.platform
        if t.kind == "broken":
            d["broken_from_main_commit"] = t.k1
            if t.k2 < 10**9:
                d["fixed_at_main_commit"] = t.k2
        d["weak"] = label != "healthy" and s["own"] < 5
        tests.append(d)
    return {
        "seed": w.seed,
        "shape": w.shape,
        "start": iso(w.start),
        "end": iso(w.end),
        "days": w.days,
        "tz": w.tz,
        "provider": w.provider,
        "results": results_count,
        "reports": reports_count,
        "jobs": len(jobs),
        "pools": [
            {
                "name": p.name,
                "platform": p.platform,
                "ephemeral": p.ephemeral,
                "hosts": len(p.hosts),
                "runners": 0 if p.ephemeral else len(p.runners),
                "slots": len(p.runners),
                "sparse": p.sparse,
                "hard_shard": p.hard,
                "jobtypes": [j["name"] for j in p.jobtypes],
                "images": sorted({v for r in p.runners for v in r.img_v}),
            }
            for p in w.pools
        ],
        "no_agent": sorted(r.rid for p in w.pools for r in p.runners if not r.agent),
        "entities": ents,
        "outages": outages,
        "tests": tests,
        "events": w.events,
        "weak_rule": "sick: >=10 failures and >=4 distinct tests; flaky: >=5 own failures; "
        "outage: >=15 failures on >=2 hosts",
    }


# ---------------------------------------------------------------------------------------------- main


def main() -> None:
    seed = int(sys.argv[1])
    out = Path(sys.argv[2])
    end = parse_time(sys.argv[3] if len(sys.argv) > 3 else "2026-12-05T08:00:00Z")
    out.mkdir(parents=True, exist_ok=True)
    w = World(seed, end)
    build_tests(w)
    build_fleet(w)
    # platform tests need a platform pool in the fleet
    platforms = sorted({p.platform for p in w.pools if p.platform != "linux"})
    rng = Random(f"h4-plat-{seed}")
    pipelines, main_commits = simulate(w)
    assign_behaviours(w, max(10, main_commits))
    for _ in range(rng.randint(2, 5) if platforms else 0):
        cands = [t for t in w.suites["unit"] if t.kind == "healthy"]
        t = rng.choice(cands)
        t.kind, t.platform, t.p = "platform", rng.choice(platforms), rng.uniform(0.85, 1.0)
    make_faults(w)
    jobs = run_jobs(w, pipelines)
    results: list = []
    fails: list = []
    for job in jobs:
        execute(w, job, results, fails, dry=False)
    results.sort(key=lambda x: (x[0], x[1]["job_id"], x[1]["test_id"], x[1]["attempt"]))
    w.test_runs = {}
    runs_per_entity: dict[str, int] = {}
    sick = [f for f in w.faults if f.role == "sick"]
    for _t, rec, _, _ in results:
        w.test_runs[rec["test_id"]] = w.test_runs.get(rec["test_id"], 0) + 1
    for job in jobs:
        r, t0 = job["runner"], job["start"]
        img = r.image_at(t0)
        for f in sick:
            if f.active(t0) and f.hits(r, t0, r.machine, img):
                runs_per_entity[f.fid] = runs_per_entity.get(f.fid, 0) + len(job["tests"])
    reports = make_reports(w)
    reports.sort(key=lambda x: (x[0], x[3]))
    # validate every record against the public models before writing
    for _, rec, _, _ in results:
        TestResult.model_validate(rec)
    for _, rep, _, _ in reports:
        AgentReport.model_validate(rep)
    # history: event order
    events = [(t, 0, json.dumps(rec, separators=(",", ":"))) for t, rec, _, _ in results]
    events += [
        (t, 1, json.dumps({"kind": "report", **rep}, separators=(",", ":"))) for t, rep, _, _ in reports
    ]
    events.sort(key=lambda x: (x[0], x[1]))
    with open(out / "history.ndjson", "w") as fh:
        for _, _, line in events:
            fh.write(line + "\n")
    # feed: arrival order, with a few resends (a CI uploader retrying, an agent whose ack was lost)
    rng = Random(f"h4-feed-{seed}")
    arrivals = []
    for _, rec, arr, _job_id in results:
        arrivals.append((arr, "result", "ci", json.dumps(rec, separators=(",", ":"))))
    resend_jobs = {j["id"] for j in jobs if rng.random() < 0.01}
    for _, rec, arr, job_id in results:
        if job_id in resend_jobs:
            arrivals.append((arr + 1800, "result", "ci", json.dumps(rec, separators=(",", ":"))))
    for _t, rep, arr, key in reports:
        line = json.dumps(rep, separators=(",", ":"))
        arrivals.append((arr, "report", key, line))
        if rng.random() < 0.01:
            arrivals.append((arr + rng.uniform(30, 600), "report", key, line))
    arrivals.sort(key=lambda x: (x[0], x[1]))
    with open(out / "feed.tsv", "w") as fh:
        for arr, typ, sender, line in arrivals:
            fh.write(f"{int(arr * 1000)}\t{typ}\t{sender}\t{line}\n")
    with open(out / "failures.tsv", "w") as fh:
        fh.write("time\ttest\toutcome\tcause\trunner\tmachine\tpool\timage\tjob\tattempt\n")
        for row in sorted(fails):
            fh.write("\t".join([iso(row[0])] + [str(x) for x in row[1:]]) + "\n")
    truth = build_truth(w, jobs, fails, len(results), len(reports), runs_per_entity)
    cut = w.start + Random(f"h4-cut-{seed}").uniform(0.3, 0.5) * w.days * DAY
    cut -= cut % H
    truth["feed"] = {
        "resent_jobs": len(resend_jobs),
        "lines": len(arrivals),
        "unique_results": len(results),
        "unique_reports": len(reports),
        "backfill_until": iso(cut),
        "backfill_until_ms": int(cut * 1000),
    }
    # agent tokens: two runners post their own reports with an agent token bound to them
    own = [
        a for a in sorted({x[3] for x in reports}) if not any(p.ephemeral and a in p.hosts for p in w.pools)
    ]
    truth["agent_token_runners"] = Random(f"h4-tok-{seed}").sample(own, min(2, len(own)))
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    n_sick = sum(1 for e in truth["entities"] if e["sick"])
    print(
        f"seed {seed}: {w.shape}, {w.days} days, {len(w.pools)} pools, {len(jobs)} jobs, {len(results)} results, "
        f"{len(reports)} reports, {len(fails)} failures, {n_sick} sick entities, {len(truth['outages'])} outages",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
