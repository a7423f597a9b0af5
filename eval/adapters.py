"""One adapter per simulator: its run directory's truth.json (and what it wrote beside it) -> eval.truth.Truth.

heldout5 to heldout8 share one layout (heldout5's: `entities` with `accept`, `runners_meta`, `tests` by id),
heldout4 its own (`spans`, `covers`, `tests` as a list), tests/sim (`sim:NAME`) its own `Truth.to_json()`
plus the per-result causes and the history it wrote. Each adapter keeps the simulator's own weak rule.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from eval.truth import Key, OutageTruth, RunnerInfo, SickEntity, TestTruth, Truth

Json = dict[str, Any]


def ts(value: object) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def must_ts(value: object) -> float:
    t = ts(value)
    if t is None:
        raise ValueError(f"missing time: {value!r}")
    return t


def _keys(pairs: list[list[str]]) -> frozenset[Key]:
    return frozenset((k, e) for k, e in pairs)


def _test_label(label: str) -> str:
    return {"broken-fixed": "broken", "lowrate": "flaky"}.get(label, label)


def _resource_ok(accept: frozenset[str], label: str, test: Json, resource: set[str]) -> frozenset[str]:
    """A healthy test whose failures were mostly a disk or memory fault's may be called resource-sensitive."""
    res = sum(n for cause, n in test.get("causes", {}).items() if cause in resource)
    if label == "healthy" and res >= 3 and res * 2 >= test["failures"]:
        return accept | {"resource-sensitive"}
    return accept


# ---------------------------------------------------------------- heldout5 .. heldout8


def _related(kind: str, runners: set[str], meta: dict[str, Json], accept: frozenset[Key]) -> frozenset[Key]:
    """Parents and children of a fault over `runners`: their runners, machines, pools and images."""
    out: set[Key] = set()
    for r in runners:
        m = meta.get(r)
        out.add(("runner", r))
        if m is None:  # an ephemeral host: the runner id is the host
            out.add(("machine", r))
            continue
        out.add(("machine", m["machine"]))
        out.add(("pool", m["pool"]))
        out.update(("image", i) for i in m.get("images", []))
    return frozenset(out - accept)


def heldout5_layout(run: Path, sim: str) -> Truth:
    t = json.loads((run / "truth.json").read_text())
    meta: dict[str, Json] = t["runners_meta"]
    runners = {
        r: RunnerInfo(m["machine"], m["pool"], frozenset(m.get("images", []))) for r, m in meta.items()
    }
    sick = []
    herrings: dict[Key, str] = {}
    for e in t["entities"]:
        if not e["sick"]:
            herrings[(e["kind"], e["entity"])] = e["sort"]
            continue
        accept = _keys(e["accept"])
        covered = set(e["runners"])
        sick.append(
            SickEntity(
                id=e["id"],
                kind=e["kind"],
                entity=e["entity"],
                accept=accept,
                dimensions=frozenset(e["dimensions"]),
                accept_states=frozenset(e.get("accept_states") or [e["expected_state"]]),
                spans=((must_ts(e["onset"]), ts(e["end"])),),
                first_failure=ts(e["first_failure"]),
                last_failure=ts(e["last_failure"]),
                failures=e["failures"],
                runners=frozenset(covered),
                related=_related(e["kind"], covered, meta, accept),
                weak=bool(e["weak"]) or not e["failures"],
                gradual=bool(e.get("gradual")),
                label=e["sort"],
            )
        )
    resource = {e["id"] for e in t["entities"] if set(e["dimensions"]) & {"disk", "memory"}}
    tests = {}
    for tid, x in t["tests"].items():
        label = _test_label(x["label"])
        tests[tid] = TestTruth(
            label=label,
            accept=_resource_ok(frozenset(x["accept"]), label, x, resource),
            runs=x["runs"],
            failures=x["failures"],
            own_failures=x["own_failures"],
            weak=bool(x["weak"])
            or (label == "flaky" and x["runs"] > 0 and x["own_failures"] / x["runs"] < 0.02),
        )
    outages = tuple(
        OutageTruth(must_ts(o["start"]), must_ts(o["end"]), bool(o.get("weak")), bool(o.get("allowed")))
        for o in t["outages"]
    )
    return Truth(
        sim=sim,
        seed=str(t.get("seed", run.name)),
        start=must_ts(t["start"]),
        end=must_ts(t["end"]),
        sick=tuple(sick),
        herrings=herrings,
        tests=tests,
        outages=outages,
        runners=runners,
        ephemeral_machines=frozenset(t.get("ephemeral_machines", [])),
    )


# ---------------------------------------------------------------- heldout4


def heldout4_layout(run: Path, sim: str) -> Truth:
    t = json.loads((run / "truth.json").read_text())
    sick = []
    herrings: dict[Key, str] = {}
    for e in t["entities"]:
        if not e["sick"]:
            herrings[(e["kind"], e["entity"])] = e.get("note", e["role"])
            continue
        accept = _keys(e["accept"])
        states = {e["expected_state"]}
        dims = set(e["dimensions"])
        if e["expected_state"] == "suspect":
            dims.add("unknown")
        elif "unknown" in dims:
            states.add("suspect")  # fine readings: sick or suspect
        related = frozenset((k, x) for k, names in e["covers"].items() for x in names) - accept
        sick.append(
            SickEntity(
                id=e["id"],
                kind=e["kind"],
                entity=e["entity"],
                accept=accept,
                dimensions=frozenset(dims),
                accept_states=frozenset(states),
                spans=tuple((must_ts(a), ts(b)) for a, b in e["spans"]),
                first_failure=ts(e["first_failure"]),
                last_failure=ts(e["last_failure"]),
                failures=e["failures"],
                runners=frozenset(e.get("failing_runners", [])),
                related=related,
                weak=bool(e["weak"]),
                gradual=len(e["spans"]) > 1 or "over" in e.get("note", ""),
                label=e["id"],
            )
        )
    resource = {e["id"] for e in t["entities"] if set(e["dimensions"]) & {"disk", "memory"}}
    tests = {
        x["test_id"]: TestTruth(
            label=_test_label(x["label"]),
            accept=_resource_ok(frozenset(x["accept"]), _test_label(x["label"]), x, resource),
            runs=x["runs"],
            failures=x["failures"],
            own_failures=x["own_failures"],
            weak=bool(x["weak"]),
        )
        for x in t["tests"]
    }
    outages = tuple(
        OutageTruth(must_ts(o["start"]), must_ts(o["end"]), bool(o["weak"]), o["role"] == "allowed")
        for o in t["outages"]
        if o["role"] in ("outage", "allowed")
    )
    return Truth(
        sim=sim,
        seed=str(t["seed"]),
        start=must_ts(t["start"]),
        end=must_ts(t["end"]),
        sick=tuple(sick),
        herrings=herrings,
        tests=tests,
        outages=outages,
    )


# ---------------------------------------------------------------- heldout3

H3_ACCEPT = {
    "healthy": {"healthy"},
    "flaky": {"flaky"},
    "broken": {"broken"},
    "broken-fixed": {"broken", "healthy"},
    "platform": {"platform"},
}


def heldout3_layout(run: Path, sim: str) -> Truth:
    """heldout3: one (kind, entity) per fault, its `state` and `dimension`; tests by id with `truth`."""
    t = json.loads((run / "truth.json").read_text())
    meta: dict[str, Json] = t["runners"]
    runners = {
        r: RunnerInfo(m["machine"], m["pool"], frozenset(m.get("images", []))) for r, m in meta.items()
    }
    truth = Truth(sim, str(t["seed"]), must_ts(t["start"]), must_ts(t["end"]), (), {}, {}, (), runners)
    sick = []
    herrings: dict[Key, str] = {}
    for e in t["entities"]:
        if not e["sick"]:
            herrings[(e["kind"], e["entity"])] = e["type"]
            continue
        accept = {(e["kind"], e["entity"])}
        machine = e.get("machine")
        if e["kind"] == "runner" and machine and sum(m["machine"] == machine for m in meta.values()) == 1:
            accept.add(("machine", machine))  # a runner alone on its VM: the VM is the same thing
        states = {e["state"]}
        if e["state"] == "sick" and e["dimension"] == "unknown":
            states.add("suspect")  # readings there and fine (a bad image): heldout3 lists it apart
        covered = truth.covers(e["kind"], e["entity"])
        sick.append(
            SickEntity(
                id=e["id"],
                kind=e["kind"],
                entity=e["entity"],
                accept=frozenset(accept),
                dimensions=frozenset({e["dimension"]}),
                accept_states=frozenset(states),
                spans=((must_ts(e["onset"]), ts(e["end"])),),
                first_failure=ts(e["first_failure"]),
                last_failure=truth.end if e["end"] is None else None,
                failures=e["failures"],
                runners=frozenset(covered),
                related=_related(e["kind"], covered, meta, frozenset(accept)),
                weak=e["failures"] < 10 or e["distinct_tests"] < 4,
                gradual="fill_days" in e or "drift" in e,
                label=e["type"],
            )
        )
    tests = {}
    for tid, x in t["tests"].items():
        own = x["causes"].get(x["truth"], 0) if x["truth"] == "flaky" else 0
        tests[tid] = TestTruth(
            label=_test_label(x["truth"]),
            accept=frozenset(H3_ACCEPT[x["truth"]]),
            runs=x["runs"],
            failures=x["failures"],
            own_failures=own,
            weak=x["truth"] == "flaky" and own < 5,
        )
    outages = tuple(
        OutageTruth(must_ts(o["start"]), must_ts(o["end"]), weak=o["failures"] < 20) for o in t["outages"]
    )
    return Truth(sim, truth.seed, truth.start, truth.end, tuple(sick), herrings, tests, outages, runners)


# ---------------------------------------------------------------- heldout (the first)

H1_FLAKY_MSGS = ("AssertionError: expected 3, got 2", "TimeoutError: operation timed out after 30s")
H1_PRESSURE_MSGS = ("MemoryError", "OSError: [Errno 28] No space left on device")
H1_OUTAGE_MSGS = ("ConnectionError: Name", "docker:", "HTTPError")
H1_ACCEPT = {
    "healthy": {"healthy"},
    "flaky": {"flaky"},
    "broken": {"broken"},
    "platform": {"platform"},
    "resource-sensitive": {"resource-sensitive"},
    "fixture": {"healthy", "flaky"},  # a fixture group failing at random together is a flake to its users
}


def heldout1_layout(run: Path, sim: str) -> Truth:
    """heldout: `sick` with (kind, entity, dimension, onset, end), `tests` by id with `category`; first
    failures, own failures (its flaky messages) and topology come from the history, as its scorer read them."""
    t = json.loads((run / "truth.json").read_text())
    sick_wins = [(s, must_ts(s["onset"]), ts(s["end"])) for s in t["sick"]]
    meta: dict[str, Json] = {}
    runs: Counter[str] = Counter()
    fails: Counter[str] = Counter()
    own: Counter[str] = Counter()
    pressure: Counter[str] = Counter()
    first: dict[int, float] = {}
    count: Counter[int] = Counter()
    touched: dict[int, set[str]] = defaultdict(set)
    outage_fails: Counter[int] = Counter()
    outs = [(must_ts(o["start"]), must_ts(o["end"])) for o in t["outages"]]
    for rec in _history(run):
        if rec.get("kind") == "report":
            continue
        r = rec["runner"]
        m = meta.setdefault(
            r["id"], {"machine": r.get("machine") or r["id"], "pool": r.get("pool") or "", "images": set()}
        )
        if r.get("image"):
            m["images"].add(r["image"])
        tid, when, msg = rec["test_id"], must_ts(rec["time"]), rec.get("message") or ""
        runs[tid] += 1
        if rec["outcome"] not in ("failed", "error"):
            continue
        fails[tid] += 1
        own[tid] += msg in H1_FLAKY_MSGS
        names = {
            "runner": r["id"],
            "machine": r.get("machine"),
            "image": r.get("image"),
            "pool": r.get("pool"),
        }
        on_sick = False
        for k, (x, a, b) in enumerate(sick_wins):
            if names[x["kind"]] == x["entity"] and a <= when and (b is None or when < b):
                first.setdefault(k, when)
                count[k] += 1
                touched[k].add(r["id"])
            if x["kind"] in ("runner", "machine") and x["entity"] in (r["id"], r.get("machine")):
                on_sick = on_sick or a - 86400 <= when < (b or 1e12)
        if msg in H1_PRESSURE_MSGS and not on_sick:
            pressure[tid] += 1
        if msg.startswith(H1_OUTAGE_MSGS):
            for k, (a, b) in enumerate(outs):
                outage_fails[k] += a <= when < b
    runners = {r: RunnerInfo(m["machine"], m["pool"], frozenset(m["images"])) for r, m in meta.items()}
    sick = []
    for k, (x, a, b) in enumerate(sick_wins):
        accept = {(x["kind"], x["entity"])}
        if x["kind"] == "image" and len(touched[k]) == 1:
            accept.add(("runner", next(iter(touched[k]))))  # an image only one runner ran: that runner
        dims = {x["dimension"]}
        pool_runners = t["pools"].get(x.get("pool"), {}).get("runners", [])
        if x["kind"] == "image" and x["dimension"] == "cache" and 2 * len(touched[k]) >= len(pool_runners):
            dims = {
                "disk",
                "memory",
                "clock",
                "cache",
                "unknown",
            }  # on half the pool: its digest is the majority
        covered = set(touched[k])
        sick.append(
            SickEntity(
                id=f"{x['kind']}:{x['entity']}",
                kind=x["kind"],
                entity=x["entity"],
                accept=frozenset(accept),
                dimensions=frozenset(dims),
                accept_states=frozenset({"sick", "suspect"}),
                spans=((a, b),),
                first_failure=first.get(k),
                last_failure=None,  # the old scorer judged resolution by its own rules; not judged here
                failures=count[k],
                runners=frozenset(covered),
                related=_related(x["kind"], covered, meta, frozenset(accept)),
                weak=count[k] == 0,
                label=x["dimension"],
            )
        )
    tests = {}
    for tid, info in t["tests"].items():
        cat = info["category"]
        verdicts = set(H1_ACCEPT.get(cat, {"healthy"}))
        if cat == "resource-sensitive" and pressure[tid] < 3:
            verdicts.add("healthy")  # never under pressure while it ran: not observable
        label = {"resource-sensitive": "resource", "fixture": "other"}.get(cat, cat)
        tests[tid] = TestTruth(
            label, frozenset(verdicts), runs[tid], fails[tid], own[tid], weak=cat == "flaky" and own[tid] < 4
        )
    outages = tuple(OutageTruth(a, b, weak=outage_fails[k] < 20) for k, (a, b) in enumerate(outs))
    herrings: dict[Key, str] = {
        ("runner", w["runner"]): f"warning-only {w['dimension']}" for w in t["warning_only"]
    }
    herrings.update({("runner", r): "noisy healthy runner" for r in t.get("noisy_healthy", [])})
    times = [a for _, a, _ in sick_wins]
    return Truth(
        sim,
        run.name,
        must_ts(t["start"]) if "start" in t else min(times, default=0.0),
        must_ts(t["end"]) if "end" in t else max(times, default=0.0),
        tuple(sick),
        herrings,
        tests,
        outages,
        runners,
    )


# ---------------------------------------------------------------- heldout2


def heldout2_layout(run: Path, sim: str) -> Truth:
    """heldout2: `sick` (kind, id, expected_dimension, onset, end, runners, machines), tests by category
    with per-cause failure counts (`fail_other` is a flaky test's own), `runners`/`machines`/`eph_runners`.
    The truth lists only tests that failed; every other test id in the history is healthy."""
    t = json.loads((run / "truth.json").read_text())
    machines: dict[str, Json] = t["machines"]
    meta: dict[str, Json] = {
        r: {"machine": m["machine"], "pool": m["pool"], "images": sorted({i for _, i in m.get("images", [])})}
        for r, m in t["runners"].items()
    }
    for r, m in t["eph_runners"].items():
        meta[r] = {"machine": m, "pool": machines.get(m, {}).get("pool", ""), "images": []}
    runners = {r: RunnerInfo(m["machine"], m["pool"], frozenset(m["images"])) for r, m in meta.items()}
    sick = []
    for x in t["sick"]:
        accept = {(x["kind"], x["id"])}
        if x["kind"] == "runner":
            m = meta.get(x["id"], {}).get("machine")
            if m and machines.get(m, {}).get("runners") == [x["id"]]:
                accept.add(("machine", m))  # a runner alone on its machine: the machine is the same thing
        covered = set(x["runners"]) | {r for r, m in meta.items() if m["machine"] in x.get("machines", [])}
        caused = (x.get("stats") or {}).get("caused_failures", 1)
        sick.append(
            SickEntity(
                id=f"{x['kind']}:{x['id']}",
                kind=x["kind"],
                entity=x["id"],
                accept=frozenset(accept),
                dimensions=frozenset({x["expected_dimension"]}),
                accept_states=frozenset({"sick", "suspect"}),
                spans=((must_ts(x["onset"]), ts(x["end"])),),
                first_failure=None,  # not in the truth: the delay counts from the onset
                last_failure=None,
                failures=caused,
                runners=frozenset(covered),
                related=_related(x["kind"], covered, meta, frozenset(accept)),
                weak=caused == 0,
                gradual=x["case"] == "slow_disk",  # a disk filling over days: failures ramp up
                label=x["case"],
            )
        )
    runs: Counter[str] = Counter()
    for rec in _history(run):
        if rec.get("kind") != "report" and rec.get("outcome") != "skipped":
            runs[rec["test_id"]] += 1
    tt = t["tests"]
    tests = {
        tid: TestTruth("healthy", frozenset({"healthy", "resource-sensitive"}), n, 0, 0)
        for tid, n in runs.items()
    }
    for tid, x in tt["healthy_stats"].items():
        tests[tid] = TestTruth(
            "healthy", frozenset({"healthy", "resource-sensitive"}), x["executions"], x["failures"], 0
        )
    for label, verdicts in (("broken", {"broken"}), ("platform", {"platform"}), ("flaky", {"flaky"})):
        for tid, x in tt[label].items():
            own = x["fail_other"] if label == "flaky" else 0
            tests[tid] = TestTruth(label, frozenset(verdicts), x["executions"], x["failures"], own)
    anything = frozenset({"healthy", "flaky", "broken", "platform", "resource-sensitive"})
    for tid, x in tt["interaction"].items():  # a test failing on one runner: any verdict is defensible
        tests[tid] = TestTruth("other", anything, x["executions"], x["failures"], 0)
    return Truth(
        sim,
        str(t["seed"]),
        must_ts(t["start"]),
        must_ts(t["end_time"]),
        tuple(sick),
        {("runner", h["runner"]): h["reason"] for h in t["red_herrings"]},
        tests,
        tuple(OutageTruth(must_ts(o["start"]), must_ts(o["end"])) for o in t["outages"]),
        runners,
    )


# ---------------------------------------------------------------- tests/sim


def _history(run: Path) -> Iterator[Json]:
    path = run / "history.ndjson.gz"
    with gzip.open(path, "rt") if path.exists() else (run / "history.ndjson").open() as fh:
        for line in fh:
            yield json.loads(line)


def sim_layout(run: Path, sim: str) -> Truth:
    """tests/sim: truth.json is `Truth.to_json()`; causes.txt.gz the cause of each result in order."""
    t = json.loads((run / "truth.json").read_text())
    causes_path = run / "causes.txt.gz"
    with gzip.open(causes_path, "rt") if causes_path.exists() else (run / "causes.txt").open() as fh:
        causes = [line.rstrip("\n") for line in fh]
    runners: dict[str, tuple[str, str, set[str]]] = {}
    runs: Counter[str] = Counter()
    fails: Counter[str] = Counter()
    own: Counter[str] = Counter()
    base: Counter[str] = Counter()
    first: dict[str, float] = {}
    count: Counter[str] = Counter()
    touched: dict[str, set[str]] = defaultdict(set)
    onsets = {f"sick:{s['kind']}:{s['entity']}": must_ts(s["onset"]) for s in t["sick"]}
    times: list[float] = []
    n = 0
    for rec in _history(run):
        if rec.get("kind") == "report":
            continue
        cause = causes[n]
        n += 1
        r = rec["runner"]
        info = runners.setdefault(r["id"], (r.get("machine") or r["id"], r.get("pool") or "", set()))
        if r.get("image"):
            info[2].add(r["image"])
        tid = rec["test_id"]
        runs[tid] += 1
        when = must_ts(rec["time"])
        times.append(when)
        if not cause:
            continue
        fails[tid] += 1
        own[tid] += cause in ("flaky", "base")
        base[tid] += cause == "base"
        if cause in onsets and when >= onsets[cause]:
            first.setdefault(cause, when)
            count[cause] += 1
            touched[cause].add(r["id"])
    if n != len(causes):
        raise ValueError(f"{run}: {n} results but {len(causes)} causes")
    meta: dict[str, Json] = {
        r: {"machine": m, "pool": p, "images": sorted(i)} for r, (m, p, i) in runners.items()
    }
    sick = []
    for s in t["sick"]:
        key = f"sick:{s['kind']}:{s['entity']}"
        accept = frozenset({(s["kind"], s["entity"])})
        dims = (
            {s["dimension"]}
            if s["dimension"] != "unknown"
            else {"disk", "memory", "clock", "cache", "unknown"}
        )
        sick.append(
            SickEntity(
                id=key,
                kind=s["kind"],
                entity=s["entity"],
                accept=accept,
                dimensions=frozenset(dims),
                accept_states=frozenset({"sick", "suspect"}),
                spans=((must_ts(s["onset"]), None),),
                first_failure=first.get(key),
                last_failure=None,  # the truth has no end: resolution is not judged
                failures=count[key],
                runners=frozenset(touched[key]),
                related=_related(s["kind"], touched[key], meta, accept),
                weak=count[key] == 0,
                gradual=False,
                label=s["dimension"],
            )
        )
    labels: dict[str, tuple[str, frozenset[str]]] = {}
    for tid in t["flaky_tests"]:
        labels[tid] = ("flaky", frozenset({"flaky"}))
    for tid in t["resource_sensitive_tests"]:
        labels[tid] = ("resource", frozenset({"resource-sensitive", "healthy"}))
    for tid in t["platform_tests"]:
        labels[tid] = ("platform", frozenset({"platform", "broken"}))
    for tid in t["broken_tests"]:
        labels[tid] = ("broken", frozenset({"broken"}))
    for x in t["interaction"]:
        # a test that fails on one runner only: not flaky, whatever else it is called
        labels.setdefault(x["test_id"], ("other", frozenset({"healthy", "platform", "broken"})))
    tests = {}
    for tid, n_runs in runs.items():
        label, verdicts = labels.get(tid, ("healthy", frozenset({"healthy"})))
        if label == "healthy" and base[tid] >= 0.01 * n_runs:
            # fails a run in a hundred at random: flaky to whoever reruns (Fleet.noisy_tests)
            verdicts = frozenset({"healthy", "flaky"})
        tests[tid] = TestTruth(label, verdicts, n_runs, fails[tid], own[tid], weak=False)
    start, end = min(times), max(times)
    outages = []
    for o in t["outages"]:
        a, b = must_ts(o["start"]), must_ts(o["end"])
        seen = any(a <= x < b for x in times)  # no test ran in it: nothing to find
        outages.append(OutageTruth(a, b, weak=not seen))
    return Truth(
        sim=sim,
        seed=run.name,
        start=start,
        end=end,
        sick=tuple(sick),
        herrings={("runner", r): "warning readings" for r in t["warning_runners"]},
        tests=tests,
        outages=tuple(outages),
        runners={r: RunnerInfo(m["machine"], m["pool"], frozenset(m["images"])) for r, m in meta.items()},
    )


# ---------------------------------------------------------------- blackhole


def blackhole_layout(run: Path, sim: str) -> Truth:
    """blackhole: `black_holes` (runner, pool, onset, end, the finish times of the jobs it failed),
    `herrings` by runner, `tests` by id with `label` (flaky or healthy); a flaky test's failures are
    all its own. A black hole is judged by its jobs alone: dimension `jobs`, sick."""
    t = json.loads((run / "truth.json").read_text())
    meta: dict[str, Json] = t["runners"]
    sick = []
    for hole in t["black_holes"]:
        if not hole["jobs"]:
            continue
        entity = hole["entity"]
        accept = frozenset({("runner", entity), ("machine", meta[entity]["machine"])})
        sick.append(
            SickEntity(
                id=hole["id"],
                kind="runner",
                entity=entity,
                accept=accept,
                dimensions=frozenset({"jobs"}),
                accept_states=frozenset({"sick"}),
                spans=((must_ts(hole["onset"]), ts(hole["end"])),),
                first_failure=ts(hole["first_failure"]),
                last_failure=ts(hole["jobs"][-1]),
                failures=len(hole["jobs"]),
                runners=frozenset({entity}),
                related=_related("runner", {entity}, meta, accept),
                weak=len(hole["jobs"]) < 3,  # fewer jobs than the goal allows to name it
                label="black hole",
            )
        )
    tests = {
        tid: TestTruth(
            label=x["label"],
            accept=frozenset({x["label"]}),
            runs=x["runs"],
            failures=x["failures"],
            own_failures=x["failures"] if x["label"] == "flaky" else 0,
            weak=x["label"] == "flaky" and x["failures"] < 5,
        )
        for tid, x in t["tests"].items()
    }
    return Truth(
        sim=sim,
        seed=str(t["seed"]),
        start=must_ts(t["start"]),
        end=must_ts(t["end"]),
        sick=tuple(sick),
        herrings={("runner", r): why for r, why in t["herrings"].items()},
        tests=tests,
        outages=(),
        runners={r: RunnerInfo(m["machine"], m["pool"]) for r, m in meta.items()},
    )


ADAPTERS: dict[str, Callable[[Path, str], Truth]] = {
    "blackhole": blackhole_layout,
    "heldout2": heldout2_layout,
    "heldout": heldout1_layout,
    "heldout3": heldout3_layout,
    "heldout4": heldout4_layout,
    "heldout5": heldout5_layout,
    "heldout6": heldout5_layout,
    "heldout7": heldout5_layout,
    "heldout8": heldout5_layout,
}


def load_truth(run: Path, sim: str) -> Truth:
    if sim.startswith("sim:"):
        return sim_layout(run, sim)
    if sim not in ADAPTERS:
        raise KeyError(f"{sim}: no truth adapter yet (adapted: {', '.join(sorted(ADAPTERS))}, sim:NAME)")
    return ADAPTERS[sim](run, sim)
