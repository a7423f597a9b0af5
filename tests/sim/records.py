"""Turning simulated arrays into wire records: public test results and agent reports, as JSON-ready dicts."""

from __future__ import annotations

import hashlib
from datetime import UTC
from typing import Any, cast

import numpy as np

from tests.sim.catalog import Catalog
from tests.sim.failures import ERROR, FAILED, OUTCOMES, Causes, Results
from tests.sim.health import GIB, Health
from tests.sim.messages import pick
from tests.sim.scenario import Scenario
from tests.sim.schedule import Commits, Jobs
from tests.sim.topology import Topology

AGENT_VERSION = "0.1.0"
NTP_SERVERS = ("0.pool.ntp.org", "1.pool.ntp.org", "time.cloudflare.com")


def rfc3339(scenario: Scenario, seconds: np.ndarray) -> tuple[list[str], np.ndarray]:
    """RFC 3339 "Z" strings (millisecond precision) and epoch milliseconds for offsets from the start."""
    start = scenario.start.astimezone(UTC).replace(tzinfo=None)
    offset_ms = np.round(seconds * 1000.0).astype(np.int64)
    stamps = np.datetime64(start, "ms") + offset_ms.astype("timedelta64[ms]")
    text = [s + "Z" for s in np.datetime_as_string(stamps, unit="ms").tolist()]
    epoch_ms = stamps.astype(np.int64)
    return text, epoch_ms


def _job_runners(topo: Topology, jobs: Jobs, images: np.ndarray) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for j in range(len(jobs)):
        pool = topo.pools[int(jobs.pool[j])]
        r = int(jobs.runner[j])
        ident: dict[str, Any] = {
            "id": topo.runner_names[r] if r >= 0 else jobs.eph_name[j],
            "machine": topo.machine_names[int(jobs.machine[j])],
            "pool": pool.name,
            "image": topo.images[int(images[j])],
            "shard": str(int(jobs.shard[j])),
            "provider": pool.provider,
        }
        labels = topo.runner_labels(r) if r >= 0 else pool.labels
        if labels:
            ident["labels"] = list(labels)
        if r < 0:
            ident["ephemeral"] = True
        out.append(ident)
    return out


def result_records(
    scenario: Scenario,
    catalog: Catalog,
    topo: Topology,
    jobs: Jobs,
    images: np.ndarray,
    job_ids: list[str],
    run_ids: list[str],
    commits: Commits,
    results: Results,
    causes: Causes,
    rng: np.random.Generator,
) -> tuple[list[dict[str, Any]], list[str], np.ndarray]:
    order = np.argsort(results.t, kind="stable")
    test = results.test[order].tolist()
    job = results.job[order].tolist()
    outcome = results.outcome[order].tolist()
    cause = results.cause[order].tolist()
    duration = np.round(results.duration[order], 3).tolist()
    times, epoch_ms = rfc3339(scenario, results.t[order])
    runners = _job_runners(topo, jobs, images)
    attempt = jobs.attempt.tolist()
    commit = [commits.shas[c] for c in jobs.commit.tolist()]
    run = jobs.run.tolist()
    ids = catalog.ids
    records: list[dict[str, Any]] = []
    labels = causes.labels
    for i in range(len(test)):
        j = job[i]
        rec: dict[str, Any] = {
            "test_id": ids[test[i]],
            "outcome": OUTCOMES[outcome[i]],
            "time": times[i],
            "duration_s": duration[i],
            "job_id": job_ids[j],
            "run_id": run_ids[run[j]],
            "attempt": attempt[j],
            "commit": commit[j],
            "runner": dict(runners[j]),
        }
        if outcome[i] == FAILED or outcome[i] == ERROR:
            rec["message"] = pick(causes.families[cause[i]], rng)
        records.append(rec)
    return records, [labels[c] for c in cause], epoch_ms


def _sha(*parts: object) -> str:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


def _disk(total: int, ratio: float, rtotal: int, root: float, write_ok: bool) -> dict[str, Any]:
    free = int(total * ratio)
    inode_ratio = round(min(1.0, ratio * 1.2), 4)
    paths = [
        {
            "path": "/",
            "mount_point": "/",
            "device": "/dev/sda1",
            "total_bytes": rtotal,
            "free_bytes": int(rtotal * root),
            "free_ratio": root,
            "inodes_total": 1_966_080,
            "inodes_free": int(1_966_080 * root),
            "inodes_free_ratio": root,
            "read_only": False,
            "write_probe_ok": True,
        },
        {
            "path": "/work",
            "mount_point": "/work",
            "device": "/dev/sdb1",
            "total_bytes": total,
            "free_bytes": free,
            "free_ratio": ratio,
            "inodes_total": total // 16384,
            "inodes_free": int(total // 16384 * inode_ratio),
            "inodes_free_ratio": inode_ratio,
            "read_only": False,
            "write_probe_ok": write_ok,
        },
    ]
    reading: dict[str, Any] = {"check": "disk", "status": "ok", "paths": paths}
    if not write_ok:
        reading.update(
            status="problem",
            reason="WriteProbeFailed",
            message=f"/work: write probe failed, {free / GIB:.1f} GiB free",
        )
    elif ratio < 0.10 or free < 2 * GIB:
        reading.update(
            status="problem", reason="LowDiskSpace", message=f"/work: {free / GIB:.1f} GiB free ({ratio:.1%})"
        )
    return reading


def _memory(total: int, avail: float, swap: float, psi: list[float], oom: int) -> dict[str, Any]:
    reading: dict[str, Any] = {
        "check": "memory",
        "status": "ok",
        "total_bytes": total,
        "available_bytes": int(total * avail),
        "available_ratio": avail,
        "swap_used_bytes": int(swap * 8 * GIB),
        "psi_some_avg10": psi[0],
        "psi_some_avg60": psi[1],
        "psi_full_avg10": psi[2],
        "psi_full_avg60": psi[3],
        "oom_kills": oom,
    }
    if oom > 0:
        reading.update(status="problem", reason="OOMKill", message=f"{oom} OOM kills since last reading")
    elif avail < 0.10 or psi[0] > 25:
        reading.update(
            status="problem",
            reason="MemoryPressure",
            message=f"{avail:.0%} available, PSI some avg10 {psi[0]:.0f}",
        )
    return reading


_NO_ANSWER = {
    "check": "clock",
    "status": "unknown",
    "reason": "NoServerAnswered",
    "message": "no NTP server answered",
}


def _clock(
    count: int, down: bool, offsets: list[float], delays: list[float], strata: list[int], errors: list[bool]
) -> dict[str, Any]:
    if down:
        return {**_NO_ANSWER, "servers": [{"server": s, "error": "timeout"} for s in NTP_SERVERS[:count]]}
    servers: list[dict[str, Any]] = []
    answered: list[float] = []
    for i in range(count):
        if errors[i]:
            servers.append({"server": NTP_SERVERS[i], "error": "timeout"})
            continue
        answered.append(offsets[i])
        servers.append(
            {"server": NTP_SERVERS[i], "offset_s": offsets[i], "delay_s": delays[i], "stratum": strata[i]}
        )
    if not answered:
        return {**_NO_ANSWER, "servers": servers}
    answered.sort()
    half = len(answered) // 2
    median = answered[half] if len(answered) % 2 else round((answered[half - 1] + answered[half]) / 2, 6)
    reading: dict[str, Any] = {"check": "clock", "status": "ok", "offset_s": median, "servers": servers}
    if abs(median) > 1.0:
        reading.update(status="problem", reason="ClockSkew", message=f"offset {median:+.3f}s")
    return reading


class _CacheDigests:
    """Cache entries by (pool, epoch, wrong-digest id): a pool's runners agree unless told otherwise."""

    def __init__(self, salt: str) -> None:
        self.salt = salt
        self.memo: dict[tuple[str, tuple[str, ...], int, int], list[dict[str, Any]]] = {}

    def caches(self, pool: str, names: tuple[str, ...], epoch: int, bad: int) -> list[dict[str, Any]]:
        key = (pool, names, epoch, bad)
        if key not in self.memo:
            out = []
            for i, name in enumerate(names):
                lock = _sha(self.salt, pool, name, epoch, "lock")[:10]
                wrong = bad >= 0 and i == 0
                content = _sha(self.salt, pool, name, epoch, bad if wrong else "ok")
                files = 2000 + int(_sha(pool, name, epoch)[:4], 16) % 3000
                files += int(content[:2], 16) % 7 if wrong else 0
                out.append(
                    {
                        "key": f"{name}-{lock}",
                        "path": f"/work/_cache/{name}",
                        "digest": f"sha256:{content}",
                        "files": files,
                        "bytes": files * 183_211,
                        "full_rehash": False,
                    }
                )
            self.memo[key] = out
        return [dict(c) for c in self.memo[key]]


def _agent_identity(topo: Topology, a: int) -> dict[str, Any]:
    pool = topo.pools[int(topo.agent_pool[a])]
    r = int(topo.agent_runner[a])
    machine = topo.machine_names[int(topo.agent_machine[a])]
    ident: dict[str, Any] = {
        "id": topo.agent_names[a],
        "machine": machine,
        "pool": pool.name,
        "image": "",
        "provider": pool.provider,
    }
    if r >= 0:
        labels = topo.runner_labels(r)
        if labels:
            ident["labels"] = list(labels)
        if pool.sharding == "static":
            ident["shard"] = str(int(np.flatnonzero(topo.pool_runners(int(topo.agent_pool[a])) == r)[0]))
    else:
        ident["ephemeral"] = True
    return ident


def report_records(
    scenario: Scenario, topo: Topology, health: Health, seed: int, rng: np.random.Generator
) -> tuple[list[dict[str, Any]], np.ndarray]:
    h = health
    shape = h.t.shape
    cells = np.argwhere(h.valid & h.alive & h.sent)
    times = h.t[cells[:, 0], cells[:, 1]]
    order = np.lexsort((cells[:, 0], times))
    cells = cells[order]
    stamps, epoch_ms = rfc3339(scenario, times[order])
    # Per agent: sequence numbers restart at each boot; lost reports still used a number and are counted
    # in the next delivered report's `dropped`.
    seq = np.zeros(shape, dtype=np.int64)
    dropped = np.zeros(shape, dtype=np.int64)
    boot_ids: dict[tuple[int, int], str] = {}
    for a in range(shape[0]):
        n, lost, last_boot = 0, 0, -1
        for k in np.flatnonzero(h.valid[a] & h.alive[a]).tolist():
            boot = int(h.boot[a, k])
            if boot != last_boot:
                n, last_boot = 0, boot
                boot_ids[(a, boot)] = f"{int(rng.integers(0, 2**63)):016x}"
            seq[a, k] = n
            n += 1
            if h.sent[a, k]:
                dropped[a, k] = lost
                lost = 0
            else:
                lost += 1
    servers = (*shape, len(NTP_SERVERS))
    offsets = np.round(h.clock[:, :, None] + rng.normal(0, 0.0015, size=servers), 6).tolist()
    delays = np.round(rng.uniform(0.004, 0.045, size=servers), 6).tolist()
    strata = rng.integers(1, 4, size=servers).tolist()
    errors = (rng.random(servers) < 0.01).tolist()
    disk_ratio = np.round(h.disk_ratio, 4).tolist()
    root_ratio = np.round(h.root_ratio, 4).tolist()
    write_ok = h.write_ok.tolist()
    mem_avail = np.round(h.mem_avail, 4).tolist()
    swap = h.swap.tolist()
    psi = np.round(np.stack([h.psi10, h.psi60, h.full10, h.full60], axis=-1), 2).tolist()
    oom = h.oom.tolist()
    down = h.ntp_down.tolist()
    epoch = h.cache_epoch.tolist()
    bad = h.cache_bad.tolist()
    image_l = h.image.tolist()
    unknown = h.check_unknown.tolist()
    boot_l = h.boot.tolist()
    seq_l = cast(list[list[int]], seq.tolist())
    dropped_l = cast(list[list[int]], dropped.tolist())
    disk_total = [int(x) for x in h.disk_total]
    root_total = [int(x) for x in h.root_total]
    mem_total = [int(x) for x in h.mem_total]
    ntp_count = h.ntp_servers.tolist()
    idents = [_agent_identity(topo, a) for a in range(shape[0])]
    pools = [topo.pools[int(p)] for p in topo.agent_pool]
    digests = _CacheDigests(f"seed-{seed}")
    unknown_names = ("disk", "memory", "clock", "cache")
    records: list[dict[str, Any]] = []
    for idx, (a, k) in enumerate(cells.tolist()):
        pool = pools[a]
        readings: list[dict[str, Any]] = [
            _disk(disk_total[a], disk_ratio[a][k], root_total[a], root_ratio[a][k], write_ok[a][k]),
            _memory(mem_total[a], mem_avail[a][k], swap[a][k], psi[a][k], oom[a][k]),
            _clock(ntp_count[a], down[a][k], offsets[a][k], delays[a][k], strata[a][k], errors[a][k]),
        ]
        if pool.caches:
            readings.append(
                {
                    "check": "cache",
                    "status": "ok",
                    "caches": digests.caches(pool.name, pool.caches, epoch[a][k], bad[a][k]),
                }
            )
        flags = unknown[a][k]
        for c in range(len(readings)):
            if flags[c]:
                readings[c] = {
                    "check": unknown_names[c],
                    "status": "unknown",
                    "reason": "CheckTimeout",
                    "message": "check did not finish within 10s",
                }
        ident = dict(idents[a])
        ident["image"] = topo.images[image_l[a][k]]
        if "labels" in ident:
            ident["labels"] = list(ident["labels"])
        records.append(
            {
                "agent_id": topo.agent_names[a],
                "boot_id": boot_ids[(a, boot_l[a][k])],
                "seq": seq_l[a][k],
                "observed_at": stamps[idx],
                "runner": ident,
                "readings": readings,
                "dropped": dropped_l[a][k],
                "agent_version": AGENT_VERSION,
            }
        )
    return records, epoch_ms
