"""Score runnerctl's verdicts against a generated fleet's truth: score.py RUNDIR... [-q].

Each RUNDIR holds truth.json, incidents.json, tests.json, outages.json, runners.json and
history.ndjson(.gz). Prints the errors per fleet, then a compact table per seed and totals.
"""

from __future__ import annotations

import collections
import gzip
import json
import sys
from datetime import datetime
from pathlib import Path

DAY = 86400.0
BANDS: dict[str, list[int]] = {"<3%": [0, 0], "3-6%": [0, 0], ">=6%": [0, 0]}
FLAKY_MSGS = ("AssertionError: expected 3, got 2", "TimeoutError: operation timed out after 30s")


def ts(s: str | None) -> float | None:
    if s is None:
        return None
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def load_json(p: Path, default: object) -> object:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return default


def read_history(d: Path) -> list[dict]:
    p = d / "history.ndjson"
    opener = open
    if not p.exists():
        p = d / "history.ndjson.gz"
        opener = gzip.open  # type: ignore[assignment]
    out = []
    with opener(p, "rt") as f:
        for line in f:
            if line.startswith('{"kind":"report"'):
                continue
            rec = json.loads(line)
            r = rec["runner"]
            out.append(
                {
                    "test": rec["test_id"],
                    "fail": rec["outcome"] in ("failed", "error"),
                    "t": ts(rec["time"]),
                    "rid": r["id"],
                    "machine": r.get("machine"),
                    "image": r.get("image"),
                    "pool": r.get("pool"),
                    "msg": rec.get("message", ""),
                }
            )
    return out


def entity_of(rec: dict, kind: str) -> str | None:
    return {"runner": rec["rid"], "machine": rec["machine"], "image": rec["image"], "pool": rec["pool"]}[kind]


class Seed:
    def __init__(self, d: Path) -> None:
        self.d = d
        self.truth = json.loads((d / "truth.json").read_text())
        self.incidents = load_json(d / "incidents.json", [])
        tests = load_json(d / "tests.json", [])
        self.verdict = {t["test_id"]: t for t in tests}
        outs = load_json(d / "outages.json", {"items": []})
        self.outages = outs.get("items", outs) if isinstance(outs, dict) else outs
        self.runners = {r["identity"]["id"]: r for r in load_json(d / "runners.json", [])}
        self.hist = read_history(d)
        self.rows: dict[str, object] = {}
        self.errors: list[str] = []

    # ----------------------------------------------------------------- entities
    def score_entities(self) -> None:
        sick = self.truth["sick"]
        incs = self.incidents
        used: set[str] = set()
        found = dim_ok = dim_known = 0
        pools = self.truth["pools"]
        for s in sick:
            on = ts(s["onset"])
            end = ts(s["end"])
            win = [
                h
                for h in self.hist
                if entity_of(h, s["kind"]) == s["entity"] and h["t"] >= on and (end is None or h["t"] < end)
            ]
            obs = f"{sum(h['fail'] for h in win)}/{len(win)} failed in window"
            match = [
                i
                for i in incs
                if i["kind"] == s["kind"]
                and i["entity"] == s["entity"]
                and i["state"] in ("sick", "suspect", "resolved")
            ]
            first = min((h["t"] for h in win if h["fail"]), default=on)  # the first failure it could see
            carriers = {h["rid"] for h in win}
            if s["kind"] == "image" and len(carriers) == 1:
                # an image that only ever ran on one runner cannot be told from that runner
                (only,) = carriers
                match += [i for i in incs if i["kind"] == "runner" and i["entity"] == only]
                self.errors.append(
                    f"NOTE image {s['entity']} ran only on runner {only}: a runner incident counts"
                )
            good = [i for i in match if min(abs(ts(i["onset"]) - on), abs(ts(i["onset"]) - first)) <= DAY]
            if good:
                found += 1
                best = min(good, key=lambda i: abs(ts(i["onset"]) - on))
                used.update(i["id"] for i in good)
                if s["dimension"] != "unknown" and not (
                    s["kind"] == "image"
                    and s["dimension"] == "cache"
                    and 2 * len(carriers) >= len(self.truth["pools"][s["pool"]]["runners"])
                ):  # on half the pool or more, a bad image's cache digest is the majority
                    dim_known += 1
                    if best["dimension"] == s["dimension"]:
                        dim_ok += 1
                    else:
                        self.errors.append(
                            f"WRONG-DIM {s['kind']} {s['entity']}: truth {s['dimension']}, product {best['dimension']} ({best['state']})"
                        )
                elif best["dimension"] not in ("unknown", None):
                    self.errors.append(
                        f"DIM-CLAIMED {s['kind']} {s['entity']}: truth unknown (no agent/no reading: {s['reading_dimension']}), product {best['dimension']}"
                    )
                lag = (ts(best["onset"]) - first) / 3600
                if s.get("end") and best["state"] != "resolved":
                    self.errors.append(
                        f"NOT-RESOLVED {s['kind']} {s['entity']}: truth ended {s['end']}, product state {best['state']}"
                    )
                if s.get("end") and best.get("end"):
                    pe = ts(best["end"])
                    after = min(
                        (
                            h["t"]
                            for h in self.hist
                            if entity_of(h, s["kind"]) == s["entity"] and h["t"] >= end
                        ),
                        default=end,
                    )  # the first run it could see healthy again
                    early = sum(
                        1
                        for h in self.hist
                        if entity_of(h, s["kind"]) == s["entity"] and pe + 3600 < h["t"] < end and h["fail"]
                    )  # failures it saw after it said resolved, while still sick
                    if early > 3 or pe > after + 12 * 3600:
                        self.errors.append(
                            f"RESOLVE-OFF {s['kind']} {s['entity']}: truth end {s['end']}, first run after "
                            f"{datetime.utcfromtimestamp(after).isoformat()}Z, product end {best['end']}, "
                            f"{early} failures after product end"
                        )
                if abs(lag) > 6:
                    self.errors.append(
                        f"ONSET-OFF {s['kind']} {s['entity']}: product onset {lag:+.1f} h from the first failure after truth onset ({(first - on) / 3600:+.1f} h)"
                    )
            else:
                used.update(i["id"] for i in match)
                why = (
                    "no incident"
                    if not match
                    else "incident onset off >1 day: " + ", ".join(i["onset"] for i in match)
                )
                rel = self.related_incidents(s)
                self.errors.append(
                    f"MISSED {s['kind']} {s['entity']} ({s['pool']}, {s['dimension']}, onset {s['onset']}, end {s['end']}, "
                    f"fail_p {s['fail_p']}, tests {s['tests_share']}): {why}; {obs}"
                    + (f"; related incidents: {rel}" if rel else "")
                )
        false = alias = 0
        for i in incs:
            if i["id"] in used or i["state"] not in ("sick", "suspect", "resolved"):
                continue
            note = self.annotate(i, pools)
            st = i.get("statistics", {})
            desc = (
                f"{i['kind']} {i['entity']} {i['state']} dim={i['dimension']} onset={i['onset']} "
                f"failures={st.get('failures')}/{st.get('executions')} exp={st.get('expected')} tests={st.get('distinct_tests')}"
            )
            if note.startswith("alias"):
                alias += 1
                self.errors.append(f"ALIAS-INCIDENT {desc} [{note}]")
            else:
                false += 1
                self.errors.append(f"FALSE-INCIDENT {desc} [{note}]")
        warn_flag = 0
        for w in self.truth["warning_only"]:
            rid = w["runner"]
            h = self.runners.get(rid, {}).get("health", {}).get("health")
            inc = [i for i in incs if i["kind"] == "runner" and i["entity"] == rid]
            if h in ("suspect", "sick") or inc:
                warn_flag += 1
                self.errors.append(
                    f"WARNING-ONLY-FLAGGED runner {rid} (bad {w['dimension']} readings, no failures): health={h}, incidents={[(i['state'], i['dimension']) for i in inc]}"
                )
        self.rows.update(
            sick=len(sick),
            found=found,
            dim=f"{dim_ok}/{dim_known}",
            dim_ok=dim_ok,
            dim_known=dim_known,
            false_inc=false,
            alias_inc=alias,
            warn=len(self.truth["warning_only"]),
            warn_flag=warn_flag,
        )

    def related_incidents(self, s: dict) -> str:
        out = []
        for i in self.incidents:
            note = self.annotate(i, self.truth["pools"])
            if s["entity"] in note:
                out.append(f"{i['kind']} {i['entity']} {i['state']}")
        return ", ".join(out)

    def annotate(self, inc: dict, pools: dict) -> str:
        kind, ent = inc["kind"], inc["entity"]
        on = ts(inc["onset"])
        notes = []
        runners_of_inc = {
            h["rid"]
            for h in self.hist
            if entity_of(h, kind) == ent and h["fail"] and on <= h["t"] <= on + 2 * DAY and kind != "runner"
        }
        for s in self.truth["sick"]:
            if kind == "runner" and s["kind"] == "image":
                imgs = {h["image"] for h in self.hist if h["rid"] == ent and h["t"] >= on}
                if s["entity"] in imgs:
                    notes.append(f"alias: runner on sick image {s['entity']}")
            if kind == "runner" and s["kind"] == "pool" and s["entity"] == ent.rsplit("-", 1)[0]:
                notes.append(f"alias: runner in sick pool {s['entity']}")
            if kind == "machine" and s["kind"] == "runner":
                machs = {h["machine"] for h in self.hist if h["rid"] == s["entity"]}
                if ent in machs:
                    notes.append(f"alias: machine of sick runner {s['entity']}")
            if kind == "pool" and s["kind"] in ("image", "runner", "machine") and s["pool"] == ent:
                notes.append(f"alias: pool holding sick {s['kind']} {s['entity']}")
            if kind == "image" and s["kind"] in ("runner", "machine") and runners_of_inc & {s["entity"]}:
                notes.append(f"alias: image of sick {s['kind']} {s['entity']}")
            if (
                kind == "machine"
                and s["kind"] == "image"
                and any(h["image"] == s["entity"] for h in self.hist if h["machine"] == ent and h["t"] >= on)
            ):
                notes.append(f"alias?: machine running sick image {s['entity']}")
        for w in self.truth["warning_only"]:
            if w["runner"] == ent:
                notes.append(f"warning-only runner ({w['dimension']})")
        if ent in self.truth["noisy_healthy"]:
            notes.append("noisy healthy runner")
        for p in pools.values():
            if ent in p.get("large_runners", []):
                notes.append("large runner (runs the heavy shard)")
        for o in self.truth["outages"]:
            if ts(o["start"]) - 3600 <= on <= ts(o["end"]) + 3600:
                notes.append(f"onset near {o['scope']} outage {o['start']}")
        return "; ".join(notes) or "unrelated"

    # ----------------------------------------------------------------- tests
    def score_tests(self) -> None:
        own = collections.Counter()
        execs = collections.Counter()
        fails = collections.Counter()
        res_fail = collections.Counter()  # failures from the runner's own pressure (resource-sensitive)
        disk_sick = [
            (x["entity"], ts(x["onset"]) - DAY, ts(x["end"]) or 1e12)
            for x in self.truth["sick"]
            if x["kind"] in ("runner", "machine")
        ]  # pressure failures on a sick runner are its incident's, not evidence about the test
        for h in self.hist:
            execs[h["test"]] += 1
            fails[h["test"]] += h["fail"]
            if h["fail"] and (
                h["msg"] in ("MemoryError", "OSError: [Errno 28] No space left on device")
                and not any(e in (h["rid"], h["machine"]) and a <= h["t"] < b for e, a, b in disk_sick)
            ):
                res_fail[h["test"]] += 1
            if h["fail"] and h["msg"] in FLAKY_MSGS:
                own[h["test"]] += 1
        truth = self.truth["tests"]
        for cat, verdicts in (
            ("flaky", {"flaky"}),
            ("broken", {"broken"}),
            ("platform", {"platform"}),
            ("resource-sensitive", {"resource-sensitive"}),
        ):
            right = missed = false = missed_obs = 0
            for tid, info in truth.items():
                v = self.verdict.get(tid, {}).get("verdict", "absent")
                if info["category"] == cat and cat == "resource-sensitive" and res_fail[tid] < 3:
                    continue  # never under pressure while it ran: not observable
                if info["category"] == "flaky":
                    band = "<3%" if info["flaky"] < 0.03 else "3-6%" if info["flaky"] < 0.06 else ">=6%"
                    BANDS[band][0] += v == "flaky"
                    BANDS[band][1] += 1
                if info["category"] == cat:
                    if v in verdicts:
                        right += 1
                    else:
                        missed += 1
                        extra = ""
                        if cat == "flaky":
                            extra = f" rate {info['flaky']:.3f}, {own[tid]} own failures / {execs[tid]} runs"
                            if own[tid] >= 4:
                                missed_obs += 1
                        if cat == "platform":
                            extra = f" pool {info['platform']} p={info['platform_p']:.2f}"
                        if cat == "broken":
                            extra = f" from {info['broken_from']}"
                        if cat == "resource-sensitive":
                            extra = f" ({info['resource']}, {res_fail[tid]} pressure failures)"
                        extra += f"; history {fails[tid]}/{execs[tid]} failed"
                        if cat != "flaky" or own[tid] >= 4:
                            self.errors.append(f"MISSED-{cat.upper()} {tid}: product {v};{extra}")
                elif v in verdicts:
                    if cat == "flaky" and info["category"] == "fixture":
                        continue  # a fixture group failing at random together is a flake to its users
                    false += 1
                    pv = self.verdict[tid]
                    self.errors.append(
                        f"FALSE-{cat.upper()} {tid}: truth {info['category']} {json.dumps({k: v for k, v in info.items() if k != 'category'})}; "
                        f"product failures {pv.get('failures')}/{pv.get('executions')} counted {pv.get('counted_failures')} "
                        f"discounted {pv.get('discounted_by')} reason {pv.get('reason', '')!r}"
                    )
            key = {"flaky": "fl", "broken": "br", "platform": "pl", "resource-sensitive": "rs"}[cat]
            self.rows[f"{key}_T"] = right + missed
            self.rows[f"{key}_ok"] = right
            self.rows[f"{key}_miss"] = missed
            self.rows[f"{key}_false"] = false
            if cat == "flaky":
                self.rows["fl_miss_obs"] = missed_obs
        fx = collections.Counter(
            self.verdict.get(tid, {}).get("verdict", "absent")
            for tid, i in truth.items()
            if i["category"] == "fixture"
        )
        self.rows["fixture"] = dict(fx)

    # ----------------------------------------------------------------- outages
    def score_outages(self) -> None:
        prod = [dict(o, _used=False) for o in self.outages]
        found = missed = unobs = 0
        for o in self.truth["outages"]:
            s, e = ts(o["start"]), ts(o["end"])
            tset = set(o["tests"] or [])
            hits = []
            for p in prod:
                ps, pe = ts(p["start"]), ts(p.get("end") or p["start"])
                if pe < s - 1800 or ps > e + 1800:
                    continue
                if (
                    o["scope"] == "tests"
                    and p.get("scope") == "tests"
                    and not (set(p.get("tests") or []) & tset)
                ):
                    continue
                hits.append(p)
            win = [h for h in self.hist if s <= h["t"] < e]
            fails = sum(
                1
                for h in win
                if h["fail"] and h["msg"].startswith(("ConnectionError: Name", "docker:", "HTTPError"))
            )
            if hits:
                found += 1
                for p in hits:
                    p["_used"] = True
                if any(p.get("scope") != o["scope"] for p in hits):
                    self.errors.append(
                        f"OUTAGE-SCOPE {o['scope']} {o['start']}..{o['end']}: product scopes {[p.get('scope') for p in hits]}"
                    )
            elif fails < 20:
                unobs += 1
                self.errors.append(
                    f"UNOBSERVABLE-OUTAGE {o['scope']} {o['start']}..{o['end']}: {fails} outage failures in {len(win)} executions"
                )
            else:
                missed += 1
                self.errors.append(
                    f"MISSED-OUTAGE {o['scope']} {o['cause']} {o['start']}..{o['end']} ({o['n_tests']} tests, p={o['fail_p']}): "
                    f"{fails} outage failures in {len(win)} executions in the window"
                )
        false = 0
        fixtures = {frozenset(f["tests"]) for f in self.truth.get("fixtures", [])}
        for p in prod:
            if p["_used"]:
                continue
            pt = set(p.get("tests") or [])
            if pt and any(pt <= f for f in fixtures):
                self.errors.append(
                    f"FIXTURE-OUTAGE (ok-ish) {p.get('scope')} {p['start']}..{p.get('end')} tests={sorted(pt)}"
                )
                continue
            false += 1
            cats = collections.Counter(self.truth["tests"].get(t, {}).get("category", "?") for t in pt)
            near = [
                f"{s['kind']} {s['entity']}"
                for s in self.truth["sick"]
                if ts(s["onset"]) - 3600 <= ts(p["start"]) <= (ts(s["end"]) or 1e12)
            ]
            self.errors.append(
                f"FALSE-OUTAGE {p.get('scope')} {p['start']}..{p.get('end')} failures={p.get('failures')}/{p.get('executions')} "
                f"runners {p.get('runners_failing')}/{p.get('runners_active')} tests={dict(cats) if pt else '-'} sick-active={near}"
            )
        self.rows.update(
            out_T=len(self.truth["outages"]) - unobs, out_ok=found, out_miss=missed, out_false=false
        )


COLS = [
    ("sick", "sick"),
    ("found", "fnd"),
    ("dim", "dim"),
    ("false_inc", "FPinc"),
    ("alias_inc", "alias"),
    ("warn", "warn"),
    ("warn_flag", "wFlag"),
    ("fl_T", "flT"),
    ("fl_ok", "flOK"),
    ("fl_miss", "flMiss"),
    ("fl_miss_obs", "(obs)"),
    ("fl_false", "flFP"),
    ("br_T", "brT"),
    ("br_ok", "brOK"),
    ("br_false", "brFP"),
    ("pl_T", "plT"),
    ("pl_ok", "plOK"),
    ("pl_false", "plFP"),
    ("rs_T", "rsT"),
    ("rs_ok", "rsOK"),
    ("rs_false", "rsFP"),
    ("out_T", "outT"),
    ("out_ok", "outOK"),
    ("out_false", "outFP"),
]


def main() -> None:
    quiet = "-q" in sys.argv
    dirs = [Path(a) for a in sys.argv[1:] if a != "-q"]
    seeds = []
    for d in dirs:
        if not (d / "truth.json").exists() or not (d / "incidents.json").exists():
            continue
        s = Seed(d)
        s.score_entities()
        s.score_tests()
        s.score_outages()
        seeds.append(s)
        if not quiet:
            print(f"== {d.name}: {s.truth['counts']}")
            for e in s.errors:
                print("  " + e)
            print(f"  fixture-group tests' verdicts: {s.rows['fixture']}")
    print()
    print(f"{'seed':>5} " + " ".join(f"{h:>6}" for _, h in COLS))
    tot: collections.Counter = collections.Counter()
    for s in seeds:
        print(f"{s.d.name:>5} " + " ".join(f"{s.rows[k]!s:>6}" for k, _ in COLS))
        for k, _ in COLS:
            if isinstance(s.rows[k], int):
                tot[k] += s.rows[k]
        tot["dim_ok"] += s.rows["dim_ok"]
        tot["dim_known"] += s.rows["dim_known"]
    tot["dim"] = f"{tot['dim_ok']}/{tot['dim_known']}"  # type: ignore[assignment]
    print(f"{'total':>5} " + " ".join(f"{tot[k]!s:>6}" for k, _ in COLS))
    # every category loop counts flaky tests once per category: divide by the four loops
    print("flaky recall by true rate: " + ", ".join(f"{b} {v[0] // 4}/{v[1] // 4}" for b, v in BANDS.items()))


if __name__ == "__main__":
    main()
