"""A third held-out CI fleet: gen.py SEED OUTDIR [END_TIME] writes OUTDIR/history.ndjson and truth.json.

Modelling choices (deliberately different from eval/sims/heldout and eval/sims/heldout2 where realistic):

* traffic follows the team's working hours in a per-fleet time zone: busy weekdays, quiet nights and
  weekends, a nightly pipeline at 02:00 local that also runs the slow nightly-only suite;
* pipelines are PR pipelines that run only the modules a change touches (test impact analysis), merge
  pipelines that run everything, and re-runs of the same PR commit; a matrix runs the unit suite on every
  platform pool, the integration suite on linux only;
* jobs are queued on busy runners (a job waits for a free runner); a failed job's failed tests (only
  those) are retried on another runner of the same pool, with attempt 2 (and sometimes 3);
* runners: persistent VMs (one runner each), arm hosts with two runner processes each, windows and mac
  pools, and an ephemeral pod pool on a few hosts whose host agent reports for the host;
* faults act on the tests that use the broken resource: a full disk (filling over days), inode
  exhaustion and a read-only filesystem fail the tests that write; memory pressure kills only the heavy
  tests (outcome error); a clock drifting after ntpd died fails only time/TLS-sensitive tests once the
  offset passes what they tolerate; a poisoned cache fails only tests that use that cache key; a bad
  image canaried to part of a pool fails its toolchain tests; a pool whose NTP server broke; a sick
  ephemeral host; a sick arm host under two runners; a sick runner whose agent went silent;
* red herrings: warning-only readings, cache digests that disagree for hours while a cache refresh
  propagates, a good image rollout, a "heavy" static shard holding the flaky-prone integration tests,
  a fleet-wide artifact registry outage, one pool's network outage, an external service down, broken
  and platform-only tests, flaky tests (some only in busy hours), a small healthy base rate.

Everything is in event order in the file (results at their finish time, reports at observed_at).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

DAY = 86400.0
HOUR = 3600.0
MIN = 60.0

# failure messages per cause
MSG = {
    "disk": "OSError: [Errno 28] No space left on device: '/home/runner/work/_temp'",
    "inodes": "OSError: [Errno 28] No space left on device (could not create temp file)",
    "readonly": "OSError: [Errno 30] Read-only file system: '/home/runner/work'",
    "oom": "Process killed by signal 9 (SIGKILL): out of memory",
    "clock": "ssl.SSLCertVerificationError: certificate is not yet valid",
    "cache": "ImportError: undefined symbol in cached build artifact (cache restored from key)",
    "image": "error: toolchain: libstdc++.so.6: version `GLIBCXX_3.4.32' not found",
    "pool": "AssertionError: token expired (clock)",
    "silent": "OSError: [Errno 5] Input/output error",
    "dns": "socket.gaierror: [Errno -3] Temporary failure in name resolution",
    "registry": "ConnectionError: artifacts.internal:443 502 Bad Gateway",
    "network": "socket.timeout: timed out connecting to artifacts.internal",
    "service": "HTTPError: 503 Service Unavailable from payments-sandbox.example.com",
    "flaky": "AssertionError: timed out waiting for condition after 5.0s",
    "base": "AssertionError: unexpected value",
    "broken": "AssertionError: expected 3 items, got 2",
    "platform": "AssertionError: path mismatch 'a\\\\b' != 'a/b'",
}


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def h8(*parts: object) -> str:
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()


def poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


class Runner:
    def __init__(self, rid, machine, pool, platform, has_agent, speed, shard=None):
        self.id = rid
        self.machine = machine
        self.pool = pool
        self.platform = platform
        self.has_agent = has_agent
        self.speed = speed
        self.shard = shard
        self.busy_until = 0.0
        self.images: list[tuple[float, str]] = []  # (from time, image)

    def image_at(self, t):
        img = self.images[0][1]
        for t0, name in self.images:
            if t0 <= t:
                img = name
        return img


class Effect:
    """A fault (or a warning-only oddity) on an entity over [onset, end)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def matches(self, runner_id, machine, pool, image):
        if self.kind == "runner":
            return runner_id == self.entity
        if self.kind == "machine":
            return machine == self.entity
        if self.kind == "pool":
            return pool == self.entity
        if self.kind == "image":
            return image == self.entity
        return False


def build(seed: int, end: float):
    rng = random.Random(seed * 7919 + 3)
    days = rng.randint(5, 14)
    start = end - days * DAY
    tz = rng.choice([-8, -5, -3, 0, 1, 2, 5.5, 8, 9])
    provider = rng.choice(["github-actions", "gitlab", "buildkite", "jenkins"])
    style = rng.choice(["pytest", "junit", "go", "jest"])
    target_results = int(math.exp(rng.uniform(math.log(30000), math.log(230000))))
    base_noise = rng.choice([0.0, 0.0003, 0.0008, 0.0015, 0.002])

    # ---- pools -------------------------------------------------------------------------------
    names = {
        "x64": rng.choice(["linux-x64", "ubuntu", "lnx"]),
        "eph": rng.choice(["k8s-pods", "eph-linux", "autoscale"]),
        "arm": rng.choice(["linux-arm64", "graviton", "arm"]),
        "win": rng.choice(["windows", "win2022"]),
        "mac": rng.choice(["macos", "mac-mini"]),
    }
    n_pools = rng.choice([1, 2, 2, 3, 3, 4, 4, 5])
    kinds = ["x64"]
    extra = ["eph", "arm", "win", "mac"]
    rng.shuffle(extra)
    kinds += extra[: n_pools - 1]
    if n_pools >= 2 and rng.random() < 0.25 and "eph" in kinds:
        kinds.remove("x64")  # the linux work runs on ephemeral pods only
        if len(kinds) == 1:
            kinds.append("win")
    total_runners = rng.randint(20, 150)
    pools = {}
    runners: list[Runner] = []
    eph_hosts: dict[str, list[str]] = {}
    share = {"x64": 5, "eph": 4, "arm": 2, "win": 2, "mac": 1}
    tot_share = sum(share[k] for k in kinds)
    agent_cov = rng.choice([1.0, 0.95, 0.85, 0.7])
    months = ["2026.08", "2026.09", "2026.10", "2026.11"]
    for k in kinds:
        pname = names[k]
        platform = {"x64": "linux", "eph": "linux", "arm": "linux-arm", "win": "windows", "mac": "macos"}[k]
        n = max(3, round(total_runners * share[k] / tot_share))
        img0 = f"{pname}-{rng.choice(months[:2])}.{rng.randint(1, 9)}"
        pools[pname] = {"kind": k, "platform": platform, "image0": img0, "runners": [], "hosts": []}
        if k == "eph":
            nh = max(2, min(8, n // 4))
            hosts = [f"{pname}-node-{i:02d}" for i in range(1, nh + 1)]
            pools[pname]["hosts"] = hosts
            pools[pname]["host_agent"] = rng.random() < 0.8
            pools[pname]["slots"] = n
            eph_hosts[pname] = hosts
            continue
        no_agents_pool = k == "mac" and rng.random() < 0.5
        per_host = 2 if k == "arm" else 1
        for i in range(1, n + 1):
            host = (
                f"{pname}-host-{(i + per_host - 1) // per_host:02d}"
                if per_host > 1
                else f"{pname}-vm-{i:03d}"
            )
            r = Runner(
                f"{pname}-{i:03d}",
                host,
                pname,
                platform,
                (not no_agents_pool) and rng.random() < agent_cov,
                rng.uniform(0.8, 1.3),
            )
            if per_host > 1:  # both runners on a host share the agent's view of the host
                pass
            r.images.append((0.0, img0))
            runners.append(r)
            pools[pname]["runners"].append(r)
        pools[pname]["no_agents"] = no_agents_pool
    # a heavy static shard in the biggest persistent linux pool
    lin_pools = [p for p, v in pools.items() if v["platform"] == "linux" and v["kind"] != "eph"]
    heavy_pool = None
    if lin_pools and len(pools[lin_pools[0]]["runners"]) >= 12 and rng.random() < 0.6:
        heavy_pool = lin_pools[0]
        rs = pools[heavy_pool]["runners"]
        for r in rng.sample(rs, max(3, len(rs) // 6)):
            r.shard = "heavy"

    # ---- tests -------------------------------------------------------------------------------
    n_tests = rng.randint(100, 800)
    cache_keys = {
        "pytest": ["pip", "venv", "pre-commit"],
        "junit": ["gradle", "maven", "m2"],
        "go": ["go-mod", "go-build", "golangci"],
        "jest": ["npm", "node_modules", "yarn"],
    }[style]
    n_mod = max(8, n_tests // rng.randint(6, 14))
    modules = []
    words = [
        "auth",
        "billing",
        "cache",
        "cli",
        "config",
        "core",
        "db",
        "events",
        "export",
        "gateway",
        "ingest",
        "jobs",
        "ledger",
        "mail",
        "metrics",
        "notify",
        "orders",
        "parser",
        "payments",
        "queue",
        "render",
        "reports",
        "search",
        "session",
        "storage",
        "sync",
        "tokens",
        "upload",
        "users",
        "web",
    ]
    for m in range(n_mod):
        modules.append(
            {
                "name": f"{rng.choice(words)}{m}",
                "cache": rng.choice(cache_keys),
                "cache_dep": rng.random() < 0.6,
            }
        )
    tests = []
    for i in range(n_tests):
        mod = modules[rng.randrange(n_mod)] if i >= n_mod else modules[i]
        u = rng.random()
        suite = "unit" if u < 0.65 else ("integration" if u < 0.9 else "nightly")
        cls = f"T{h8(seed, i)[:4]}"
        leaf = f"test_{rng.choice(words)}_{i}"
        if style == "pytest":
            tid = f"tests/{suite}/{mod['name']}/test_{mod['name']}.py::{cls}::{leaf}"
        elif style == "junit":
            tid = f"com.acme.{mod['name']}.{suite}.{cls}Test#{leaf}"
        elif style == "go":
            tid = f"github.com/acme/svc/{suite}/{mod['name']}.Test{cls}_{i}"
        else:
            tid = f"src/{mod['name']}/{suite}/{cls}.test.ts > {leaf.replace('_', ' ')}"
        dur = {
            "unit": math.exp(rng.gauss(-1.0, 1.2)),
            "integration": math.exp(rng.gauss(2.0, 1.0)),
            "nightly": math.exp(rng.gauss(4.5, 0.8)),
        }[suite]
        t = {
            "id": tid,
            "idx": i,
            "module": mod["name"],
            "suite": suite,
            "dur": min(dur, 900.0),
            "io": rng.random() < {"unit": 0.35, "integration": 0.8, "nightly": 0.9}[suite],
            "mem": rng.random() < {"unit": 0.04, "integration": 0.3, "nightly": 0.5}[suite],
            "time": rng.random() < 0.1,
            "net": rng.random() < {"unit": 0.15, "integration": 0.6, "nightly": 0.7}[suite],
            "cache": mod["cache"] if mod["cache_dep"] and rng.random() < 0.85 else None,
            "toolchain": rng.random() < 0.25,
            "ext": False,
            "heavy": suite == "integration" and heavy_pool is not None and rng.random() < 0.25,
            "base": base_noise * rng.choice([0.0, 0.5, 1.0, 1.0, 2.0]),
            "flaky": 0.0,
            "busy_only": False,
            "broken": None,  # (main index from, main index fixed or None)
            "platform_bad": None,
            "skip_on": "windows" if rng.random() < 0.03 else None,
            "truth": "healthy",
        }
        tests.append(t)
    platforms = sorted({v["platform"] for v in pools.values()})
    # flaky tests, more of them in the heavy shard
    n_flaky = max(3, round(n_tests * rng.uniform(0.02, 0.07)))
    for t in rng.sample(tests, n_flaky):
        t["flaky"] = math.exp(rng.uniform(math.log(0.01), math.log(0.3)))
        t["busy_only"] = rng.random() < 0.3
        t["truth"] = "flaky"
    if heavy_pool:
        heavy = [t for t in tests if t["heavy"] and t["truth"] == "healthy"]
        for t in rng.sample(heavy, min(len(heavy), rng.randint(2, 5))):
            t["flaky"] = rng.uniform(0.04, 0.2)
            t["truth"] = "flaky"
    # a shared fixture that sometimes fails to come up: every test of that module in the job fails
    fixture_mods = {}
    for m in rng.sample(modules, rng.choice([0, 0, 1, 1, 2])):
        members = [
            t
            for t in tests
            if t["module"] == m["name"] and t["suite"] == "integration" and t["truth"] == "healthy"
        ]
        if len(members) >= 3:
            q = rng.uniform(0.02, 0.1)
            fixture_mods[m["name"]] = q
            for t in members:
                t["fixture"] = q
                t["truth"] = "flaky"
    # external-service tests
    cand = [t for t in tests if t["truth"] == "healthy" and t["suite"] != "nightly"]
    ext = rng.sample(cand, rng.randint(3, 8))
    for t in ext:
        t["ext"] = True
    return {
        "rng": rng,
        "seed": seed,
        "start": start,
        "end": end,
        "days": days,
        "tz": tz,
        "provider": provider,
        "style": style,
        "target_results": target_results,
        "base_noise": base_noise,
        "pools": pools,
        "runners": runners,
        "tests": tests,
        "platforms": platforms,
        "heavy_pool": heavy_pool,
        "cache_keys": cache_keys,
        "modules": modules,
        "fixture_mods": fixture_mods,
    }


def local_hour(f, t):
    lt = t + f["tz"] * HOUR
    return (lt % DAY) / HOUR, int(lt // DAY + 3) % 7  # 1970-01-01 was a Thursday: weekday 0 = Monday


def traffic(f, t):
    h, wd = local_hour(f, t)
    if wd >= 5:
        return 0.06 + (0.08 if 10 <= h < 18 else 0.0)
    if h < 7:
        return 0.04
    if h < 9:
        return 0.2 + 0.4 * (h - 7)
    if h < 12:
        return 1.0
    if h < 13:
        return 0.75
    if h < 17:
        return 1.0
    if h < 20:
        return 0.5
    return 0.15


def plan(f):
    """Choose faults, red herrings, broken and platform tests, outages."""
    rng = f["rng"]
    start, end = f["start"], f["end"]
    tests, pools, runners = f["tests"], f["pools"], f["runners"]
    effects: list[Effect] = []
    outages = []
    used: set[str] = set()
    n_main_est = None  # noqa: F841

    def busy_time(lo, hi):
        # a time inside working hours on a weekday, between lo and hi
        for _ in range(200):
            t = rng.uniform(lo, hi)
            if traffic(f, t) >= 0.9:
                return t
        return rng.uniform(lo, hi)

    def free_runner(pool=None, agent=None, kinds=("x64", "arm", "win", "mac")):
        c = [
            r
            for r in runners
            if r.id not in used
            and r.machine not in used
            and r.pool not in used
            and pools[r.pool]["kind"] in kinds
            and (pool is None or r.pool == pool)
            and (agent is None or r.has_agent == agent)
            and r.shard is None
        ]
        # never the only runner on a small pool: a runner needs peers
        c = [r for r in c if len(pools[r.pool]["runners"]) >= 4]
        return rng.choice(c) if c else None

    def window(min_len, max_len, recover_p=0.35):
        onset = rng.uniform(start + 1.5 * DAY, end - 1.0 * DAY)
        fin = None
        if rng.random() < recover_p:
            fin = onset + rng.uniform(min_len, max_len)
            if fin > end - 12 * HOUR:
                fin = None
        return onset, fin

    n_sick = rng.randint(2, 7)
    types = [
        "disk_fill",
        "inodes",
        "readonly",
        "oom",
        "clock",
        "cache",
        "image",
        "silent",
        "pool",
        "eph_host",
        "arm_host",
        "disk_cycle",
        "pool_dns",
    ]
    weights = [3, 1, 2, 2, 2, 2, 2, 1, 1, 2, 2, 2, 1]
    made = 0
    tries = 0
    while made < n_sick and tries < 60:
        tries += 1
        typ = rng.choices(types, weights)[0]
        e = None
        if typ in ("disk_fill", "inodes", "readonly", "oom", "clock", "cache", "silent", "disk_cycle"):
            r = free_runner(
                agent=(typ != "silent") or None,
                kinds=("x64", "arm", "win", "mac") if typ != "cache" else ("x64", "arm"),
            )
            if r is None:
                continue
            if pools[r.pool]["kind"] == "arm" and typ != "cache":
                continue  # arm hosts are sick as machines (arm_host)
            if typ == "cache":
                keys = [k for k in f["cache_keys"] if sum(1 for t in tests if t["cache"] == k) >= 8]
                if not keys:
                    continue
            if typ == "clock" and sum(1 for t in tests if t["time"]) < 8:
                continue
            onset, fin = window(12 * HOUR, 3 * DAY)
            kind, entity = "runner", r.id
            if pools[r.pool]["kind"] == "arm":
                # a runner process's cache on a shared host: still the runner (its own work dir)
                pass
            dim = {
                "disk_cycle": "disk",
                "disk_fill": "disk",
                "inodes": "disk",
                "readonly": "disk",
                "oom": "memory",
                "clock": "clock",
                "cache": "cache",
                "silent": "unknown",
            }[typ]
            e = Effect(
                typ=typ,
                kind=kind,
                entity=entity,
                machine=r.machine,
                pool=r.pool,
                dimension=dim,
                onset=onset,
                end=fin,
            )
            if typ == "disk_fill":
                e.fill_days = rng.uniform(2, 4)
            if typ == "clock":
                e.drift = rng.uniform(4, 30)  # s per hour
                e.tol = 30.0
            if typ == "cache":
                e.key = rng.choice(keys)
            if typ == "silent":
                e.state = "suspect"
                e.silence_from = onset - rng.uniform(2, 20) * HOUR if r.has_agent else None
            used.update({r.id, r.machine})
        elif typ == "image":
            cands = [
                p
                for p, v in pools.items()
                if v["kind"] in ("x64", "eph", "arm", "win")
                and p not in used
                and (len(v["runners"]) >= 6 or v["kind"] == "eph")
            ]
            if not cands:
                continue
            p = rng.choice(cands)
            onset, fin = window(18 * HOUR, 3 * DAY, 0.5)
            onset = busy_time(onset - 6 * HOUR, onset + 6 * HOUR)
            e = Effect(
                typ="image",
                kind="image",
                entity=f"{p}-canary-{h8(seed_of(f), p)[:6]}",
                pool=p,
                dimension="unknown",
                onset=onset,
                end=fin,
                frac=rng.uniform(0.2, 0.4),
            )
            used.add(p)
        elif typ == "pool_dns":
            # a pool's DNS resolver answers badly for days: its network tests fail half the time; no
            # agent check sees DNS, so the readings are all fine
            cands = [
                p for p, v in pools.items() if v["kind"] != "eph" and p not in used and len(v["runners"]) >= 3
            ]
            if len(pools) < 2 or not cands:
                continue
            p = rng.choice(cands)
            onset, fin = window(1 * DAY, 3 * DAY)
            onset = busy_time(onset - 6 * HOUR, onset + 6 * HOUR)
            no_agents = all(not r.has_agent for r in pools[p]["runners"])
            e = Effect(
                typ="pool_dns", kind="pool", entity=p, pool=p, dimension="unknown", onset=onset, end=fin
            )
            if no_agents:
                e.state = "suspect"
            used.add(p)
        elif typ == "pool":
            cands = [
                p
                for p, v in pools.items()
                if v["kind"] in ("mac", "win", "arm") and p not in used and 3 <= len(v["runners"]) <= 12
            ]
            if not cands or sum(1 for t in tests if t["time"]) < 8:
                continue
            p = rng.choice(cands)
            onset, fin = window(1 * DAY, 3 * DAY)
            no_agents = all(not r.has_agent for r in pools[p]["runners"])
            e = Effect(
                typ="pool",
                kind="pool",
                entity=p,
                pool=p,
                dimension="unknown" if no_agents else "clock",
                onset=onset,
                end=fin,
                drift=rng.uniform(10, 40),
                tol=30.0,
            )
            if no_agents:
                e.state = "suspect"
            used.add(p)
        elif typ == "eph_host":
            cands = [
                p for p, v in pools.items() if v["kind"] == "eph" and p not in used and len(v["hosts"]) >= 3
            ]
            if not cands:
                continue
            p = rng.choice(cands)
            host = rng.choice(pools[p]["hosts"])
            if host in used:
                continue
            onset, fin = window(12 * HOUR, 2 * DAY)
            sub = rng.choice(["disk_fill", "oom", "readonly"])
            dim = {"disk_fill": "disk", "oom": "memory", "readonly": "disk"}[sub]
            e = Effect(
                typ=sub,
                kind="machine",
                entity=host,
                machine=host,
                pool=p,
                dimension=dim if pools[p]["host_agent"] else "unknown",
                onset=onset,
                end=fin,
                fill_days=rng.uniform(1.5, 3),
            )
            if not pools[p]["host_agent"]:
                e.state = "suspect"
            used.add(host)
        elif typ == "arm_host":
            cands = [p for p, v in pools.items() if v["kind"] == "arm" and p not in used]
            if not cands:
                continue
            p = rng.choice(cands)
            hosts = sorted({r.machine for r in pools[p]["runners"] if r.machine not in used})
            hosts = [h for h in hosts if sum(1 for r in pools[p]["runners"] if r.machine == h) == 2]
            if len(hosts) < 3:
                continue
            host = rng.choice(hosts)
            onset, fin = window(12 * HOUR, 2 * DAY)
            sub = rng.choice(["disk_fill", "oom", "readonly", "inodes"])
            has = any(r.has_agent for r in pools[p]["runners"] if r.machine == host)
            dim = {"disk_fill": "disk", "oom": "memory", "readonly": "disk", "inodes": "disk"}[sub]
            e = Effect(
                typ=sub,
                kind="machine",
                entity=host,
                machine=host,
                pool=p,
                dimension=dim if has else "unknown",
                onset=onset,
                end=fin,
                fill_days=rng.uniform(1.5, 3),
            )
            if not has:
                e.state = "suspect"
            used.add(host)
            for r in pools[p]["runners"]:
                if r.machine == host:
                    used.add(r.id)
        if e is None:
            continue
        if not hasattr(e, "state"):
            e.state = "sick"
        e.sick = True
        e.id = f"S{made + 1}"
        effects.append(e)
        made += 1

    # ---- red herrings: warning-only readings, no failures ------------------------------------
    for j in range(rng.randint(1, 4)):
        r = free_runner(agent=True)
        if r is None:
            break
        typ = rng.choice(["warn_disk", "warn_clock", "warn_mem", "warn_cache", "noisy"])
        if typ == "warn_cache" and pools[r.pool]["kind"] not in ("x64", "arm"):
            typ = "warn_disk"
        onset = rng.uniform(start, end - 2 * DAY)
        e = Effect(
            typ=typ,
            kind="runner",
            entity=r.id,
            machine=r.machine,
            pool=r.pool,
            dimension=None,
            onset=onset,
            end=None,
            sick=False,
            id=f"W{j + 1}",
            state="warning",
        )
        effects.append(e)
        used.update({r.id, r.machine})
    # cache refresh propagation: a cache key's digest changes daily, runners pick it up within hours
    f["cache_versions"] = {}
    for p, _v in pools.items():
        for k in f["cache_keys"]:
            times = []
            d = start - DAY
            while d < end:
                times.append(d + rng.uniform(0, DAY))
                d += DAY * rng.uniform(0.7, 2.5)
            f["cache_versions"][(p, k)] = times

    # ---- good image rollout -----------------------------------------------------------------------
    rollouts = []
    for p, _v in pools.items():
        if rng.random() < 0.5:
            t0 = rng.uniform(start + DAY, end - DAY)
            rollouts.append(
                {
                    "pool": p,
                    "image": f"{p}-2026.11.{rng.randint(10, 30)}",
                    "at": t0,
                    "span": rng.uniform(2, 20) * HOUR,
                }
            )
    f["rollouts"] = rollouts

    # ---- outages ------------------------------------------------------------------------------
    n_out = rng.choice([0, 1, 1, 2, 2, 3])
    for j in range(n_out):
        typ = rng.choice(["registry", "registry", "network", "service"])
        if typ == "network" and len(pools) < 2:
            typ = "registry"
        dur = {
            "registry": rng.uniform(20, 60),
            "network": rng.uniform(30, 90),
            "service": rng.uniform(45, 150),
        }[typ] * MIN
        t0 = busy_time(start + DAY, end - 6 * HOUR)
        if typ == "registry" and rng.random() < 0.3:
            # maintenance gone wrong at night: few runners are busy then
            for _ in range(100):
                t0 = rng.uniform(start + DAY, end - 6 * HOUR)
                if traffic(f, t0) < 0.1:
                    break
        o = {"id": f"O{j + 1}", "typ": typ, "start": t0, "end": t0 + dur}
        if typ == "network":
            o["pool"] = rng.choice(sorted(pools))
        if typ == "service":
            o["tests"] = [t["id"] for t in tests if t["ext"]]
        outages.append(o)
    # the ext tests may also have a second, shorter service blip
    return effects, outages


def seed_of(f):
    return f["seed"]


def schedule(f, effects, outages):
    """Generate pipelines, jobs, results; return result records with causes."""
    rng = f["rng"]
    start, end = f["start"], f["end"]
    pools, tests = f["pools"], f["tests"]
    modules = [m["name"] for m in f["modules"]]
    by_suite = {s: [t for t in tests if t["suite"] == s] for s in ("unit", "integration", "nightly")}
    lin = [p for p, v in pools.items() if v["platform"] == "linux"]
    lin_weights = [3 if pools[p]["kind"] == "x64" else 2 for p in lin]
    other_platform_pools = [p for p, v in pools.items() if v["platform"] != "linux"]

    # results per pipeline (roughly) to hit the target size
    n_unit, n_int = len(by_suite["unit"]), len(by_suite["integration"])
    n_plat = 1 + len(other_platform_pools)
    per_pipe = 0.75 * (n_unit * n_plat + n_int)
    per_day = f["target_results"] / f["days"]
    nightly_per = n_unit * n_plat + n_int + len(by_suite["nightly"]) * min(2, n_plat)
    pipes_per_day = max(4.0, (per_day - nightly_per) / per_pipe)
    # traffic integrates to about 5 * (8.5 h full) + weekends over a week; scale per hour
    mean_traffic = sum(traffic(f, start + i * 900) for i in range(int(f["days"] * 96))) / (f["days"] * 96)
    lam_hour_peak = pipes_per_day / 24.0 / mean_traffic

    pipelines = []
    t = start
    main_idx = 0
    pr_last: dict[int, tuple[str, int]] = {}
    pr_n = 0
    while t < end - HOUR:
        n = poisson(rng, lam_hour_peak * traffic(f, t))
        for _ in range(n):
            ts = t + rng.uniform(0, HOUR)
            u = rng.random()
            if u < 0.28:
                main_idx += 1
                pipelines.append(
                    {
                        "t": ts,
                        "kind": "main",
                        "base": main_idx,
                        "commit": h8("main", f["seed"], main_idx)[:12],
                        "mods": None,
                    }
                )
            elif u < 0.40 and pr_last:
                # a re-run of a PR's last push: the same commit again
                k = rng.choice(sorted(pr_last))
                c, base = pr_last[k]
                pipelines.append(
                    {
                        "t": ts,
                        "kind": "rerun",
                        "base": base,
                        "commit": c,
                        "mods": pipelines_mods(rng, modules, k),
                    }
                )
            else:
                pr_n += 1
                base = max(0, main_idx - rng.randint(0, 15))
                c = h8("pr", f["seed"], pr_n)[:12]
                pr_last[pr_n] = (c, base)
                if len(pr_last) > 40:
                    pr_last.pop(min(pr_last))
                pipelines.append(
                    {
                        "t": ts,
                        "kind": "pr",
                        "base": base,
                        "commit": c,
                        "mods": pipelines_mods(rng, modules, pr_n),
                    }
                )
        t += HOUR
    # nightly at 02:00 local
    d = start - (start + f["tz"] * HOUR) % DAY + 2 * HOUR - f["tz"] * HOUR
    while d < end - 2 * HOUR:
        if d > start:
            pipelines.append(
                {"t": d, "kind": "nightly", "base": main_idx_at(pipelines, d), "commit": None, "mods": None}
            )
        d += DAY
    pipelines.sort(key=lambda p: p["t"])
    # broken tests (by main commit index) and platform-only tests, decided with the commit count known
    total_main = max(main_idx, 8)
    for t in rng.sample(
        [t for t in tests if t["truth"] == "healthy" and t["suite"] != "nightly" and not t["ext"]],
        rng.randint(0, 3),
    ):
        c0 = rng.randint(int(total_main * 0.25), int(total_main * 0.8))
        c1 = (
            c0 + rng.randint(max(5, total_main // 20), max(10, total_main // 6))
            if rng.random() < 0.35
            else None
        )
        if c1 is not None and c1 >= total_main - 3:
            c1 = None
        t["broken"] = (c0, c1)
        t["truth"] = "broken" if c1 is None else "broken-fixed"
    if other_platform_pools or len({pools[p]["platform"] for p in pools}) >= 2:
        bad_platforms = sorted({pools[p]["platform"] for p in pools} - {"linux"}) or []
        if bad_platforms:
            for t in rng.sample(
                [t for t in by_suite["unit"] if t["truth"] == "healthy" and not t["ext"]], rng.randint(0, 3)
            ):
                t["platform_bad"] = rng.choice(bad_platforms)
                t["platform_rate"] = rng.choice([1.0, 1.0, 0.95, 0.85])
                t["truth"] = "platform"

    last_main = {"base": 0, "commit": h8("main", f["seed"], 0)[:12]}
    for p in pipelines:
        if p["kind"] == "main":
            last_main = p
        if p["kind"] == "nightly":
            p["base"], p["commit"] = last_main["base"], last_main["commit"]
    f["main_commits"] = main_idx

    out = []  # (time, record, cause)
    eph_n = [0]
    job_n = [0]

    def pick_runner(pool, t, exclude=None):
        v = pools[pool]
        if v["kind"] == "eph":
            eph_n[0] += 1
            host = rng.choice(v["hosts"])
            return ("eph", host, eph_n[0]), t + rng.uniform(5, 40)
        cands = v["runners"]
        return pick_persistent(rng, cands, t, exclude)

    def run_job(p, pool, job_tests, t, attempt, run_id, job_label, exclude=None, shard=None):
        if not job_tests:
            return
        if shard == "heavy":
            rs = [r for r in pools[pool]["runners"] if r.shard == "heavy"]
            who, t0 = pick_persistent(rng, rs, t, exclude)
        elif pools[pool]["kind"] != "eph":
            rs = [r for r in pools[pool]["runners"] if r.shard is None]
            who, t0 = pick_persistent(rng, rs, t, exclude)
        else:
            who, t0 = pick_runner(pool, t, exclude)
        job_n[0] += 1
        job_id = f"{job_n[0]}"
        if isinstance(who, tuple):
            _, host, n = who
            pod = f"{pool}-pod-{h8(f['seed'], n)[:8]}"
            img = pool_image(f, pool, t0, eph_key=n, effects=effects)
            ident = {
                "id": pod,
                "name": pod,
                "machine": host,
                "pool": pool,
                "image": img,
                "labels": ["linux", "ephemeral"],
                "provider": f["provider"],
                "ephemeral": True,
            }
            rid, machine, speed = pod, host, 1.0
            runner_obj = None
        else:
            r = who
            img = r.image_at(t0)
            ident = {
                "id": r.id,
                "name": r.id,
                "machine": r.machine,
                "pool": pool,
                "image": img,
                "labels": [r.platform],
                "provider": f["provider"],
            }
            if r.shard:
                ident["shard"] = r.shard
            rid, machine, speed = r.id, r.machine, r.speed
            runner_obj = r
        platform = pools[pool]["platform"]
        active = [
            e
            for e in effects
            if e.sick
            and e.onset - 4 * DAY <= t0
            and (e.end is None or t0 < e.end)
            and e.matches(rid, machine, pool, img)
        ]
        outs = [
            o
            for o in outages
            if o["start"] - HOUR < t0 < o["end"] and (o["typ"] != "network" or o["pool"] == pool)
        ]
        tt = t0 + rng.uniform(20, 120)  # checkout, setup
        failed = []
        load = traffic(f, t0)
        fixture_down = {m for m, q in f["fixture_mods"].items() if rng.random() < q}
        for test in job_tests:
            dur = test["dur"] * speed * rng.uniform(0.7, 1.5)
            tt += dur
            if test["skip_on"] == platform:
                out.append(
                    (
                        tt,
                        rec(test, "skipped", tt, 0.0, job_id, run_id, attempt, None, p["commit"], ident),
                        None,
                        job_label,
                    )
                )
                continue
            causes = []
            if test["base"]:
                causes.append(("base", test["base"]))
            if test["flaky"]:
                rate = test["flaky"] * (min(1.0, 1.6 * load**2) if test["busy_only"] else 1.0)
                causes.append(("flaky", rate))
            if test.get("fixture") and test["module"] in fixture_down:
                causes.append(("flaky", 1.0))
            if test["broken"]:
                c0, c1 = test["broken"]
                if p["base"] >= c0 and (c1 is None or p["base"] < c1):
                    causes.append(("broken", 1.0))
            if test["platform_bad"] == platform:
                causes.append(("platform", test["platform_rate"]))
            for e in active:
                pe = effect_p(e, test, tt, runner_obj, f)
                if pe > 0:
                    causes.append((e.id, pe))
            for o in outs:
                if o["start"] <= tt < o["end"]:
                    if o["typ"] == "service" and test["ext"]:
                        causes.append((o["id"], 0.95))
                    elif o["typ"] in ("registry", "network") and test["net"]:
                        causes.append((o["id"], 0.9 if o["typ"] == "registry" else 0.95))
            cause = None
            if causes:
                surv = 1.0
                for _, pc in causes:
                    surv *= 1 - pc
                if rng.random() < 1 - surv:
                    tot = sum(pc for _, pc in causes)
                    x = rng.uniform(0, tot)
                    for c, pc in causes:
                        x -= pc
                        if x <= 0:
                            cause = c
                            break
                    cause = cause or causes[-1][0]
            if cause is None:
                out.append(
                    (
                        tt,
                        rec(test, "passed", tt, dur, job_id, run_id, attempt, None, p["commit"], ident),
                        None,
                        job_label,
                    )
                )
            else:
                msg, outcome = message_for(cause, effects, outages)
                out.append(
                    (
                        tt,
                        rec(
                            test,
                            outcome,
                            tt,
                            dur * rng.uniform(0.1, 1.0),
                            job_id,
                            run_id,
                            attempt,
                            msg,
                            p["commit"],
                            ident,
                        ),
                        cause,
                        job_label,
                    )
                )
                failed.append(test)
        if runner_obj is not None:
            runner_obj.busy_until = tt
        # retry only the failed tests on another runner of the same pool
        if failed and len(failed) <= 10 and attempt < 3 and rng.random() < (0.8 if attempt == 1 else 0.3):
            run_job(
                p,
                pool,
                failed,
                tt + rng.uniform(30, 600),
                attempt + 1,
                run_id,
                job_label,
                exclude=rid,
                shard=shard,
            )

    for pi, p in enumerate(pipelines):
        run_id = f"{pi + 1}"
        mods = p["mods"]
        unit = [t for t in by_suite["unit"] if mods is None or t["module"] in mods]
        integ = [t for t in by_suite["integration"] if mods is None or t["module"] in mods]
        night = by_suite["nightly"] if p["kind"] == "nightly" else []
        # matrix: unit on each platform (linux on one of the linux pools), integration on linux
        lp = rng.choices(lin, lin_weights)[0] if lin else None
        targets = ([lp] if lp else []) + other_platform_pools
        for pool in targets:
            k = shards_for(pools, pool, len(unit))
            for s in range(k):
                jt = [t for t in unit if t["idx"] % k == s]
                run_job(p, pool, jt, p["t"] + rng.uniform(0, 120), 1, run_id, f"unit-{s}")
        if lp:
            hv = [t for t in integ if t["heavy"]]
            rest = [t for t in integ if not t["heavy"]]
            k = shards_for(pools, lp, len(rest))
            for s in range(k):
                jt = [t for t in rest if t["idx"] % k == s]
                run_job(p, lp, jt, p["t"] + rng.uniform(60, 300), 1, run_id, f"integ-{s}")
            if hv:
                hpool = f["heavy_pool"] if f["heavy_pool"] else lp
                run_job(
                    p,
                    hpool,
                    hv,
                    p["t"] + rng.uniform(60, 300),
                    1,
                    run_id,
                    "integ-heavy",
                    shard="heavy" if f["heavy_pool"] else None,
                )
            if night:
                npools = [lp, *other_platform_pools[:1]]
                for pool in npools:
                    k = max(1, min(4, len(night) // 15))
                    for s in range(k):
                        jt = [t for t in night if t["idx"] % k == s]
                        run_job(p, pool, jt, p["t"] + rng.uniform(0, 600), 1, run_id, f"nightly-{s}")
    return out


def main_idx_at(pipelines, d):
    return 0


def pipelines_mods(rng, modules, key):
    r = random.Random(hash_int(key))
    n = max(1, int(len(modules) * r.uniform(0.2, 1.0)))
    return set(r.sample(modules, n))


def hash_int(*parts):
    return int(h8(*parts)[:12], 16)


def shards_for(pools, pool, n):
    v = pools[pool]
    cap = len(v["runners"]) if v["kind"] != "eph" else v["slots"]
    return max(1, min(6, cap // 3 or 1, n // 25 or 1))


def pick_persistent(rng, cands, t, exclude):
    c = [r for r in cands if r.id != exclude] or cands
    free = [r for r in c if r.busy_until <= t]
    if free:
        # runners that registered first pick up jobs more often (a deterministic, skewed share)
        r = rng.choice(free)
        return r, t
    r = min(c, key=lambda r: r.busy_until)
    return r, r.busy_until + rng.uniform(1, 20)


def pool_image(f, pool, t, eph_key=None, effects=()):
    img = f["pools"][pool]["image0"]
    for ro in f["rollouts"]:
        if ro["pool"] == pool and t >= ro["at"] + (hash_int("ro", eph_key) % 1000) / 1000 * ro["span"]:
            img = ro["image"]
    for e in effects:
        live = (
            e.sick and e.typ == "image" and e.pool == pool and e.onset <= t and (e.end is None or t < e.end)
        )
        if live and (hash_int("canary", eph_key) % 1000) / 1000 < e.frac:
            img = e.entity
    return img


def effect_p(e, test, t, runner, f):
    """The failure probability a fault adds to this test at time t (0 before the fault bites)."""
    typ = e.typ
    if typ == "disk_fill":
        if t < e.onset or not test["io"]:
            return 0.0
        return min(0.95, 0.35 + 0.6 * (t - e.onset) / DAY)
    if t < e.onset:
        return 0.0
    if typ == "disk_cycle":
        # the workspace fills every working day and the nightly cleanup frees it: full from ~14:00 local
        h, _ = local_hour(f, t)
        return 0.7 if test["io"] and (h >= 14 or h < 2) else 0.0
    if typ == "pool_dns":
        return 0.5 if test["net"] else 0.0
    if typ == "inodes":
        return 0.75 if test["io"] else 0.0
    if typ == "readonly":
        return 0.98 if test["io"] else 0.0
    if typ == "oom":
        return 0.6 if test["mem"] else (0.03 if test["io"] else 0.0)
    if typ in ("clock", "pool"):
        return 0.9 if test["time"] else 0.0
    if typ == "cache":
        return 0.85 if test["cache"] == e.key else 0.0
    if typ == "image":
        return 0.8 if test["toolchain"] else 0.0
    if typ == "silent":
        return 0.8 if test["io"] else 0.0
    return 0.0


def message_for(cause, effects, outages):
    for e in effects:
        if e.id == cause:
            m = {
                "disk_fill": "disk",
                "inodes": "inodes",
                "readonly": "readonly",
                "oom": "oom",
                "clock": "clock",
                "pool": "pool",
                "cache": "cache",
                "image": "image",
                "silent": "silent",
                "disk_cycle": "disk",
                "pool_dns": "dns",
            }[e.typ]
            return MSG[m], ("error" if m == "oom" else "failed")
    for o in outages:
        if o["id"] == cause:
            return MSG[o["typ"]], "error"
    return MSG[cause], "failed"


def rec(test, outcome, t, dur, job_id, run_id, attempt, msg, commit, ident):
    r = {
        "test_id": test["id"],
        "outcome": outcome,
        "time": iso(t),
        "duration_s": round(dur, 3),
        "job_id": job_id,
        "run_id": run_id,
        "attempt": attempt,
        "commit": commit,
        "runner": ident,
    }
    if msg:
        r["message"] = msg
    return r


# ---- agent reports --------------------------------------------------------------------------------


def agents(f, effects):
    """Who reports: persistent runners with an agent, and each ephemeral pool's hosts (host agent)."""
    out = []
    for r in f["runners"]:
        if r.has_agent:
            out.append(
                {"id": r.id, "machine": r.machine, "pool": r.pool, "platform": r.platform, "runner": r}
            )
    for p, v in f["pools"].items():
        if v["kind"] == "eph" and v["host_agent"]:
            for h in v["hosts"]:
                out.append({"id": h, "machine": h, "pool": p, "platform": "linux", "runner": None})
    return out


def reports(f, effects):
    random.Random(f["seed"] * 31 + 1)
    start, end = f["start"], f["end"]
    ags = agents(f, effects)
    budget = 30000
    interval = max(10 * MIN, len(ags) * (end - start) / budget)
    lines = []
    mstate = {}
    for a in ags:
        m = a["machine"]
        if m not in mstate:
            mr = random.Random(hash_int("m", f["seed"], m))
            mstate[m] = {
                "total": mr.choice([100, 200, 250, 500]) * 2**30,
                "free0": mr.uniform(0.3, 0.7),
                "mem": mr.choice([16, 32, 64]) * 2**30,
                "avail0": mr.uniform(0.35, 0.7),
                "clock0": mr.gauss(0, 0.01),
            }
    for a in ags:
        ar = random.Random(hash_int("a", f["seed"], a["id"]))
        t = start + ar.uniform(0, interval)
        boot = h8("boot", a["id"], 0)[:10]
        seq = 0
        silences = []
        if ar.random() < 0.15:  # an agent silent for a few hours: harmless
            s0 = ar.uniform(start, end)
            silences.append((s0, s0 + ar.uniform(2, 10) * HOUR))
        for e in effects:
            if e.sick and e.typ == "silent" and e.entity == a["id"] and getattr(e, "silence_from", None):
                silences.append((e.silence_from, end + DAY))
        reboot_at = ar.uniform(start, end) if ar.random() < 0.3 else None
        mine = [e for e in effects if matches_agent(e, a, f)]
        last_oom_t = t
        while t < end:
            if any(s0 <= t < s1 for s0, s1 in silences):
                t += interval * ar.uniform(0.9, 1.1)
                continue
            if reboot_at and t >= reboot_at:
                boot = h8("boot", a["id"], 1)[:10]
                seq = 0
                reboot_at = None
            readings = readings_at(f, a, mstate[a["machine"]], mine, t, last_oom_t, ar)
            last_oom_t = t
            ident = {"id": a["id"], "name": a["id"], "machine": a["machine"], "pool": a["pool"]}
            if a["runner"] is not None:
                ident["image"] = a["runner"].image_at(t)
            else:
                ident["ephemeral"] = False
            lines.append(
                (
                    t,
                    {
                        "kind": "report",
                        "agent_id": f"agent-{a['id']}",
                        "boot_id": boot,
                        "seq": seq,
                        "observed_at": iso(t),
                        "runner": ident,
                        "readings": readings,
                        "agent_version": "1.4.2",
                    },
                )
            )
            seq += 1
            t += interval * ar.uniform(0.9, 1.1)
    return lines


def matches_agent(e, a, f):
    if e.kind == "runner":
        return e.entity == a["id"]
    if e.kind == "machine":
        return e.entity == a["machine"]
    if e.kind == "pool":
        return e.entity == a["pool"]
    return False  # a bad image shows nothing in the readings


def readings_at(f, a, ms, mine, t, last_t, ar):
    total = ms["total"]
    # workspace grows through the day and is cleaned each night
    day_frac = ((t + f["tz"] * HOUR) % DAY) / DAY
    free = max(0.0, ms["free0"] - 0.15 * day_frac + ar.gauss(0, 0.01))
    inodes = 0.8 + ar.gauss(0, 0.02)
    ro = False
    avail = min(0.95, max(0.05, ms["avail0"] + ar.gauss(0, 0.05)))
    psi = max(0.0, ar.gauss(1.0, 1.0))
    oom = 0
    offset = ms["clock0"] + ar.gauss(0, 0.004)
    caches = {}
    if a["platform"] in ("linux", "linux-arm") and a["runner"] is not None:
        for k in f["cache_keys"]:
            vt = f["cache_versions"][(a["pool"], k)]
            lag = (hash_int("lag", a["id"], k) % 1000) / 1000 * 4 * HOUR
            v = sum(1 for x in vt if x + lag <= t)
            caches[k] = h8("cache", a["pool"], k, v)[:16]
    for e in mine:
        recovered = e.end is not None and t >= e.end
        if e.typ == "disk_fill":
            t_start = e.onset - e.fill_days * DAY
            if t_start <= t and not recovered:
                frac = min(1.0, (t - t_start) / (e.fill_days * DAY))
                free = max(0.001, 0.3 * (1 - frac) + 0.015 * frac - 0.03 * max(0.0, (t - e.onset) / DAY))
                free = max(0.0005, free)
        elif e.typ == "disk_cycle" and t >= e.onset - DAY and not recovered:
            h, _ = local_hour(f, t)
            since = (h - 2) % 24  # hours since the nightly cleanup at 02:00
            free = max(0.0005, 0.3 - 0.3 * min(1.0, since / 12.0) + ar.gauss(0, 0.003))
        elif e.typ == "inodes" and t >= e.onset - 6 * HOUR and not recovered:
            inodes = (
                max(0.0005, 0.8 * (1 - (t - (e.onset - 6 * HOUR)) / (6 * HOUR))) if t < e.onset else 0.0008
            )
        elif e.typ == "readonly" and t >= e.onset and not recovered:
            ro = True
        elif e.typ == "oom" and t >= e.onset - 2 * HOUR and not recovered:
            avail = ar.uniform(0.01, 0.06)
            psi = ar.uniform(25, 80)
            oom = ar.choice([0, 1, 1, 2, 3]) if traffic(f, t) > 0.3 else ar.choice([0, 0, 1])
        elif e.typ in ("clock", "pool") and not recovered:
            t_dead = e.onset - e.tol / e.drift * HOUR
            if t >= t_dead:
                offset = min(3600.0, e.drift * (t - t_dead) / HOUR)
        elif e.typ == "cache" and t >= e.onset and not recovered:
            caches[e.key] = h8("poison", a["id"], e.key)[:16]
        elif e.typ == "warn_disk" and t >= e.onset:
            free = ar.uniform(0.02, 0.04)
        elif e.typ == "warn_clock" and t >= e.onset:
            offset = ar.uniform(1.5, 6.0)
        elif e.typ == "warn_mem" and t >= e.onset:
            avail = ar.uniform(0.04, 0.08)
            psi = ar.uniform(15, 40)
        elif e.typ == "warn_cache" and t >= e.onset:
            caches["docs-site"] = h8("stale", a["id"])[:16]
        elif e.typ == "noisy" and t >= e.onset:
            if ar.random() < 0.3:
                psi = ar.uniform(20, 60)
                avail = ar.uniform(0.06, 0.12)
            offset += ar.gauss(0, 0.3)
    rd = []
    path = "C:\\" if a["platform"] == "windows" else "/"
    rd.append(
        {
            "check": "disk",
            "status": "problem" if (free < 0.05 or inodes < 0.05 or ro) else "ok",
            "reason": ("ReadOnlyFilesystem" if ro else "LowDiskSpace" if free < 0.05 else "LowInodes")
            if (free < 0.05 or inodes < 0.05 or ro)
            else None,
            "paths": [
                {
                    "path": path,
                    "total_bytes": total,
                    "free_bytes": int(total * free),
                    "free_ratio": round(free, 5),
                    "inodes_total": 6_000_000,
                    "inodes_free": int(6_000_000 * inodes),
                    "inodes_free_ratio": round(min(1.0, max(0.0, inodes)), 5),
                    "read_only": ro,
                    "write_probe_ok": not ro,
                }
            ],
        }
    )
    mem = {
        "check": "memory",
        "total_bytes": ms["mem"],
        "available_bytes": int(ms["mem"] * avail),
        "available_ratio": round(avail, 4),
        "oom_kills": oom,
    }
    if a["platform"] != "windows":
        mem["psi_some_avg10"] = round(psi, 2)
        mem["psi_some_avg60"] = round(psi * 0.8, 2)
    if avail < 0.05 or oom:
        mem["status"], mem["reason"] = "problem", "MemoryPressure" if not oom else "OOMKills"
    rd.append(mem)
    servers = [
        {"server": s, "offset_s": round(offset + ar.gauss(0, 0.002), 4), "delay_s": 0.01, "stratum": 2}
        for s in ("ntp1.internal", "ntp2.internal", "time.cloudflare.com")
    ]
    ck = {"check": "clock", "offset_s": round(offset, 4), "servers": servers}
    if abs(offset) > 1.0:
        ck["status"], ck["reason"] = "problem", "ClockSkew"
    rd.append(ck)
    if caches:
        rd.append(
            {
                "check": "cache",
                "caches": [
                    {"key": k, "path": f"/cache/{k}", "digest": d, "files": 1000}
                    for k, d in sorted(caches.items())
                ],
            }
        )
    for r in rd:
        if r.get("reason") is None:
            r.pop("reason", None)
    return rd


def main():
    seed = int(sys.argv[1])
    outdir = Path(sys.argv[2])
    end_s = sys.argv[3] if len(sys.argv) > 3 else "2026-12-05T08:00:00Z"
    end = datetime.fromisoformat(end_s.replace("Z", "+00:00")).timestamp()
    outdir.mkdir(parents=True, exist_ok=True)
    f = build(seed, end)
    effects, outages = plan(f)
    # apply the canary image to persistent runners (a fixed share of the pool, re-imaged at onset)
    for e in effects:
        if e.sick and e.typ == "image" and f["pools"][e.pool]["kind"] != "eph":
            rs = f["pools"][e.pool]["runners"]
            rr = random.Random(hash_int("canary", f["seed"], e.pool))
            for r in rr.sample(rs, max(2, round(len(rs) * e.frac))):
                r.images.append((e.onset + rr.uniform(0, 2 * HOUR), e.entity))
                if e.end is not None:
                    r.images.append((e.end, f"{e.pool}-2026.12.1"))  # rolled back to a fixed image
    for ro in f["rollouts"]:
        rs = f["pools"][ro["pool"]]["runners"]
        for r in rs:
            t = ro["at"] + (hash_int("ro", r.id) % 1000) / 1000 * ro["span"]
            # a rollout does not overwrite a canary already on the runner
            r.images.append((t, ro["image"]))
            r.images.sort()
            if any(img.find("-canary-") >= 0 for _, img in r.images):
                pass
    for r in f["runners"]:
        # keep a canary (and its rollback) in force over a rollout that came between
        can = [(t, i) for t, i in r.images if "-canary-" in i]
        if can:
            t0, ci = can[0]
            e = next(e for e in effects if e.sick and e.typ == "image" and e.entity == ci)
            fin = e.end if e.end is not None else float("inf")
            r.images = [(t, i) for t, i in r.images if not (t0 < t < fin and "-canary-" not in i)]
            r.images.sort()
    results = schedule(f, effects, outages)
    reps = reports(f, effects)

    # ---- truth --------------------------------------------------------------------------------
    tstats = {t["id"]: {"runs": 0, "fail": 0, "causes": {}} for t in f["tests"]}
    estats = {e.id: {"fail": 0, "tests": set(), "first": None} for e in effects}
    ostats = {o["id"]: {"fail": 0, "tests": set()} for o in outages}
    for tm, r, cause, _ in results:
        if r["outcome"] == "skipped":
            continue
        s = tstats[r["test_id"]]
        s["runs"] += 1
        if cause:
            s["fail"] += 1
            s["causes"][cause] = s["causes"].get(cause, 0) + 1
            if cause in estats:
                es = estats[cause]
                es["fail"] += 1
                es["tests"].add(r["test_id"])
                es["first"] = tm if es["first"] is None else min(es["first"], tm)
            if cause in ostats:
                ostats[cause]["fail"] += 1
                ostats[cause]["tests"].add(r["test_id"])
    # executions on each sick entity inside its window
    eruns = {e.id: 0 for e in effects}
    for tm, r, _, _ in results:
        ident = r["runner"]
        for e in effects:
            if (
                e.onset <= tm
                and (e.end is None or tm < e.end)
                and e.matches(ident["id"], ident.get("machine"), ident.get("pool"), ident.get("image"))
            ):
                eruns[e.id] += 1
    truth = {
        "seed": f["seed"],
        "start": iso(f["start"]),
        "end": iso(f["end"]),
        "days": f["days"],
        "tz": f["tz"],
        "style": f["style"],
        "results": len(results),
        "reports": len(reps),
        "pools": {
            p: {
                "kind": v["kind"],
                "platform": v["platform"],
                "runners": len(v["runners"]),
                "hosts": v["hosts"],
                "agents": sum(1 for r in v["runners"] if r.has_agent)
                + (len(v["hosts"]) if v.get("host_agent") else 0),
            }
            for p, v in f["pools"].items()
        },
        "runners": {
            r.id: {
                "machine": r.machine,
                "pool": r.pool,
                "agent": r.has_agent,
                "shard": r.shard,
                "images": sorted({i for _, i in r.images}),
            }
            for r in f["runners"]
        },
        "heavy_pool": f["heavy_pool"],
        "rollouts": [{**ro, "at": iso(ro["at"])} for ro in f["rollouts"]],
        "main_commits": f["main_commits"],
        "entities": [],
        "outages": [],
        "tests": {},
    }
    for e in effects:
        d = {
            "id": e.id,
            "type": e.typ,
            "kind": e.kind,
            "entity": e.entity,
            "pool": e.pool,
            "sick": e.sick,
            "state": e.state,
            "dimension": e.dimension,
            "onset": iso(e.onset),
            "end": iso(e.end) if e.end else None,
            "failures": estats[e.id]["fail"],
            "runs": eruns[e.id],
            "distinct_tests": len(estats[e.id]["tests"]),
            "first_failure": iso(estats[e.id]["first"]) if estats[e.id]["first"] else None,
        }
        if e.kind == "runner":
            d["machine"] = e.machine
        for k in ("key", "drift", "fill_days", "frac", "silence_from"):
            if getattr(e, k, None) is not None:
                d[k] = iso(getattr(e, k)) if k == "silence_from" else getattr(e, k)
        truth["entities"].append(d)
    for o in outages:
        truth["outages"].append(
            {
                **o,
                "start": iso(o["start"]),
                "end": iso(o["end"]),
                "failures": ostats[o["id"]]["fail"],
                "distinct_tests": len(ostats[o["id"]]["tests"]),
            }
        )
    for t in f["tests"]:
        s = tstats[t["id"]]
        truth["tests"][t["id"]] = {
            "truth": t["truth"],
            "suite": t["suite"],
            "rate": round(t["flaky"], 4)
            if t["flaky"]
            else (round(t["fixture"], 4) if t.get("fixture") else None),
            "fixture": t.get("fixture") and t["module"],
            "busy_only": t["busy_only"] or None,
            "platform": t["platform_bad"],
            "platform_rate": t.get("platform_rate"),
            "broken": t["broken"],
            "heavy": t["heavy"] or None,
            "ext": t["ext"] or None,
            "runs": s["runs"],
            "failures": s["fail"],
            "causes": s["causes"],
        }
    # every failure with its true cause, for the scorer's explanations (not fed to the product)
    with open(outdir / "failures.tsv", "w") as fh:
        for tm, r, cause, _ in sorted(results, key=lambda x: x[0]):
            if cause:
                ri = r["runner"]
                fh.write(
                    f"{tm:.3f}\t{r['test_id']}\t{ri['id']}\t{ri.get('machine')}\t{ri.get('pool')}\t{ri.get('image')}\t{cause}\t{r['attempt']}\n"
                )
    lines = [(tm, r) for tm, r, _, _ in results] + reps
    lines.sort(key=lambda x: x[0])
    with open(outdir / "history.ndjson", "w") as fh:
        for _, r in lines:
            fh.write(json.dumps(r, separators=(",", ":")))
            fh.write("\n")
    (outdir / "truth.json").write_text(json.dumps(truth, indent=1, default=list))
    sick = [f"{e.id}:{e.typ}:{e.kind}:{e.entity}" for e in effects if e.sick]
    print(
        f"seed {seed}: {f['days']} d, {len(f['runners'])} runners, pools {sorted(f['pools'])}, {len(f['tests'])} tests, "
        f"{len(results)} results, {len(reps)} reports; sick {sick}; outages {[o['typ'] for o in outages]}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
