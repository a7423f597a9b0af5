"""The demo, step by step: a real controller judges a simulated fleet, drains the sick runner through a
CI provider, reruns its jobs and clears the flake records, and the operator watches each step.

The story (runnerctl/demo/story.py) knows the truth; the controller is not told it. At the end the demo
checks the controller's conclusions against the truth and fails, saying where, when they differ.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common.plural import counted, noun
from runnerctl.client import Client
from runnerctl.config import Target
from runnerctl.demo import baseline, local_controller, story, workdir
from runnerctl.demo.local_controller import LocalController
from runnerctl.demo.narrate import Narrator, runnerctl_name
from runnerctl.demo.standin import BuildbotStandIn, Call
from runnerctl.demo.workdir import DemoError

POLL_S = 0.3
REMEDIATION_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Options:
    directory: Path
    port: int | None  # None: 8080 if free; 0: any free port
    stay: bool  # keep the controller up for the operator until Ctrl-C


def controller_settings(standin_url: str) -> dict[str, str]:
    """Remediation in auto mode for the demo pool, through the stand-in; quick loops, so it fits a minute."""
    return {
        "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "1",
        "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "1",
        "RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps({story.POOL: {"mode": "auto"}}),
        "RUNNER_CONTROLLER_PROVIDERS": json.dumps({story.PROVIDER: {"url": standin_url, "timeout_s": 5}}),
    }


def run(options: Options, say: Narrator) -> None:
    directory = options.directory
    say.title("runnerctl demo: a CI fleet with one sick runner, judged, drained and cleared on this machine")
    say.line(workdir.prepare(directory))

    say.step(1, "Readings", "this machine's health, from the real agent: runner-agent once -o json")
    found = baseline.measure(directory)
    say.line(found.summary())
    for note in found.notes:
        say.line(note, style="yellow")
    say.line("every healthy runner in the story reports readings of this shape")

    told = story.tell(datetime.now(UTC), found.readings)
    history = directory / "history.ndjson"
    _write_history(history, told)

    standin = BuildbotStandIn(told)
    standin.start()
    say.step(2, "CI provider", "local stand-in (no real CI system was touched)")
    say.line(
        f"a Buildbot-compatible API at {standin.url}: {len(told.runners)} workers, {len(told.builds)} builds "
        "of history; it pauses workers, rebuilds builds on unpaused ones and posts their JUnit to the controller"
    )
    controller: LocalController | None = None
    try:
        port, port_note = local_controller.choose_port(options.port)
        say.step(3, "Controller", f"runner-controller on SQLite {_relative(directory / 'runnerctl.db')}")
        if port_note:
            say.line(port_note, style="yellow")
        with say.waiting("starting runner-controller"):
            controller = local_controller.start(directory, port, controller_settings(standin.url), say.line)
        say.server, say.token = controller.url, controller.admin_token
        standin.connect(controller.url + "/v1/results/junit", controller.ingest_token)
        _write_env(directory, controller)
        say.ok(
            f"serving {controller.url} (pid {controller.process.pid}); pool {story.POOL} in remediation mode auto"
        )

        admin = Client(Target(controller.url, controller.admin_token))
        _feed(say, controller, told, history)
        incident = _verdict(say, admin)
        _remediation(say, admin, standin, incident)
        _flake_records(say, admin, incident)
        say.step(8, "Explain", f"the evidence chain behind the verdict on {incident['entity']}")
        _restated(say, admin, incident)
        say.runnerctl("explain", "runner", incident["entity"])
        say.out.print()
        say.ok(f"demo finished in {say.elapsed():.0f} s")
        if options.stay:
            _hold(say, controller, incident)
    finally:
        if controller is not None:
            controller.stop()
        standin.stop()
        _write_calls(directory / "ci-standin.jsonl", standin.recorded())
    if controller is not None:
        say.line(
            f"stopped the controller and the stand-in; the demo's data stays in {_relative(directory)}/ "
            "(run `runnerctl demo` again to start afresh)"
        )


def _feed(say: Narrator, controller: LocalController, told: story.Story, history: Path) -> None:
    say.step(
        4,
        "History",
        f"{len(told.runners)} runners in pool {story.POOL}, {len(story.TESTS)} tests, {len(told.builds)} builds "
        f"over {story.HISTORY.total_seconds() / 3600:.0f} h",
    )
    say.line(
        f"the story: {story.SICK}'s disk starts filling at {_clock(told.disk_fills_at)} and is full by "
        f"{_clock(told.disk_full_at)}; its builds then fail {len(story.VICTIMS)} distinct disk-writing tests. "
        f"{len(story.FLAKY)} tests are genuinely flaky on every runner. Nobody tells the controller which."
    )
    ingest = Client(Target(controller.url, controller.ingest_token), timeout=120)
    with say.waiting("sending results and agent reports"):
        sent = ingest.post(
            "/v1/results",
            data="".join(json.dumps(r) + "\n" for r in told.results()).encode(),
            headers={"Content-Type": "application/x-ndjson"},
        )
        reports = ingest.post("/v1/reports", json={"reports": list(told.reports)})
    say.ok(
        f"sent {sent['accepted']:,} test results (POST /v1/results) and {reports['accepted']} agent reports "
        f"(POST /v1/reports); both are in {_relative(history)} for `runnerctl import`"
    )


def _verdict(say: Narrator, admin: Client) -> dict[str, Any]:
    say.step(5, "Verdict", "which failures are beyond chance, where, and why")
    with say.waiting("analysing"):
        status = admin.post("/v1/analysis/run", timeout=300)
    say.line(
        f"analysed {status['results']:,} {noun(status['results'], 'result')} and "
        f"{status['readings']:,} {noun(status['readings'], 'reading')}"
    )
    say.runnerctl("get", "incidents")
    incidents = admin.get("/v1/incidents", params={"state": "sick"})["items"]
    sick = [i for i in incidents if i["kind"] == "runner"]
    if [i["entity"] for i in sick] != [story.SICK] or sick[0]["dimension"] != "disk":
        found = ", ".join(f"{i['entity']} ({i['dimension']})" for i in sick) or "none"
        raise DemoError(f"the controller should find {story.SICK} sick (disk); it found: {found}")
    incident: dict[str, Any] = sick[0]
    stats = incident["statistics"]
    say.ok(
        f"runner {incident['entity']} is sick, dimension {incident['dimension']}: {counted(stats['failures'], 'failure')} "
        f"across {counted(stats['distinct_tests'], 'distinct test')} ({_which(incident)}), {_times(stats['ratio'])} its "
        f"peers' rates predict; its own disk readings cover {incident['evidence']['coverage']:.0%} of them"
    )
    return incident


def _which(incident: dict[str, Any]) -> str:
    """The incident counts every test that failed there; the story counts the disk-writing ones. Say how
    the two numbers meet, so a reader comparing them is not left to guess."""
    failed = {t["test_id"] for t in incident["tests"]}
    victims = failed & set(story.VICTIMS)
    others = sorted(failed - victims)
    which = f"{len(victims)} disk-writing"
    if others:
        which += f" and {len(others)} genuinely flaky that failed there too: {', '.join(others)}"
    return which


def _restated(say: Narrator, admin: Client, incident: dict[str, Any]) -> None:
    """The analysis runs again once the reruns' passing results arrive: peers' rates in the incident's
    hours drop, and with them the incident's expected count. Say so before `explain` shows the new
    numbers, so one incident is not read as two sets of numbers."""
    # Analysed now, on everything the reruns posted: `explain` below then reads this same analysis
    # rather than whichever the controller's own schedule has reached.
    admin.post("/v1/analysis/run", timeout=300)
    (now,) = [i for i in admin.get("/v1/incidents")["items"] if i["id"] == incident["id"]]
    before, after = incident["statistics"], now["statistics"]
    if (before["expected"], before["ratio"]) == (after["expected"], after["ratio"]):
        return
    say.line(
        f"the numbers below are the latest analysis's: the reruns' passing results on its peers came in "
        f"after the verdict above, so {incident['id']} now expects {after['expected']:.2f} failures "
        f"({_ratio(after['ratio'])}) where it expected {before['expected']:.2f} ({_ratio(before['ratio'])}); "
        f"`runnerctl get incidents` shows the same latest numbers"
    )


def _ratio(ratio: float | None) -> str:
    return "no ratio: none expected" if ratio is None else f"ratio {ratio:.1f}"


def _times(ratio: float | None) -> str:
    return "where none at all is what" if ratio is None else f"about {ratio:.0f} times what"


def _remediation(say: Narrator, admin: Client, standin: BuildbotStandIn, incident: dict[str, Any]) -> None:
    runner = incident["entity"]
    say.step(
        6,
        "Drain",
        f"the controller's remediation loop (mode auto) cordons {runner}, reruns its failed jobs elsewhere, "
        "and clears the flake records when they pass",
    )
    shown: set[str] = set()
    deadline = time.monotonic() + REMEDIATION_TIMEOUT_S
    with say.waiting(f"waiting for the controller to drain {runner}"):
        while True:
            # Read the end condition first: whatever led to it is then printed before leaving.
            cordon = admin.get(f"/v1/runners/{runner}").get("cordon") or {}
            cleared = [c for c in admin.get("/v1/clearances")["items"] if c["incident"] == incident["id"]]
            done = bool(cleared) and cordon.get("state") == "drained"
            actions = admin.get("/v1/actions", params={"runner": runner})["items"]
            for _at, key, text, style in sorted(_progress(actions, standin.recorded())):
                if key not in shown:
                    shown.add(key)
                    say.line(text, style=style)
            if done:
                say.line(f"controller  runner/{runner} drained: out of rotation, its reruns settled")
                break
            if time.monotonic() > deadline:
                raise DemoError(
                    f"the controller did not drain {runner} and clear its flake records within "
                    f"{REMEDIATION_TIMEOUT_S:.0f} s (cordon: {cordon.get('state') or 'none'}, clearance: "
                    f"{'yes' if cleared else 'no'}); see `runnerctl get actions` and the controller log"
                )
            time.sleep(POLL_S)
    paused = [c for c in standin.recorded() if c.what == "pause" and c.target == runner]
    reruns = [c for c in standin.recorded() if c.what == "build"]
    if not paused:
        raise DemoError(f"{runner} was never paused in the CI stand-in")
    elsewhere = {c.detail.split(" ran on ")[1].split(":")[0] for c in reruns}
    say.ok(
        f'{runner} cordoned through the CI provider (paused: "{paused[0].detail}") and drained; '
        f"{len(reruns)} failed builds rebuilt on {', '.join(sorted(elsewhere))}: "
        f"{sum('success' in c.detail for c in reruns)} passed"
    )


def _progress(actions: list[dict[str, Any]], calls: list[Call]) -> list[tuple[float, str, str, str | None]]:
    """The controller's audit log and the stand-in's calls as one timeline: (time, key, line, style)."""
    lines: list[tuple[float, str, str, str | None]] = []
    for action in actions:
        if action["status"] == "intended":
            continue  # in flight: shown once it is done, failed or refused
        # A clearance's detail lists every test; its reason says what it means.
        what = action.get("reason") if action["action"] == "clear-flakes" else action.get("detail")
        job = f" job {action['job']}" if action.get("job") else ""
        at = datetime.fromisoformat(action["at"]).timestamp()
        text = f"controller  {action['action']} {action['status']}{job}: {what or action.get('reason') or ''}"
        lines.append((at, f"action:{action['id']}", text, None))
    verbs = {
        "pause": "pause worker",
        "unpause": "unpause worker",
        "rebuild": "rebuild build",
        "build": "build",
    }
    for index, call in enumerate(calls):
        text = f"CI stand-in {verbs.get(call.what, call.what)} {call.target}: {call.detail}"
        lines.append((call.at, f"call:{index}", text, "magenta"))
    return lines


def _flake_records(say: Narrator, admin: Client, incident: dict[str, Any]) -> None:
    say.step(7, "Flake records", "a failure-counting scorer against runnerctl")
    tests = {t["test_id"]: t for t in admin.get("/v1/tests")["items"]}
    victims = [tests[v] for v in story.VICTIMS if v in tests]
    flaky = [tests[f] for f, _p in story.FLAKY if f in tests]
    # The rule a failure-counting scorer applies: failed twice or more, and passed otherwise.
    naive = sum(1 for t in tests.values() if 2 <= t["failures"] < t["executions"])
    say.line(
        f"{counted(len(tests), 'test')} failed at least once; a failure-counting scorer (two failures make a flake) "
        f"would quarantine {naive} of them. runnerctl:"
    )
    width = max(len(t) for t in tests)
    say.line(f"{'TEST'.ljust(width)}  FAILED  COUNTED  VERDICT   CLEARED BY", style="bold")
    for test in sorted(tests.values(), key=lambda t: (t["verdict"] != "flaky", t["test_id"])):
        cleared = ", ".join(test["cleared_by"]) or "-"
        say.line(
            f"{test['test_id'].ljust(width)}  {test['failures']:>6}  {test['counted_failures']:>7}  "
            f"{test['verdict']:<8}  {cleared}"
        )
    say.line("COUNTED leaves out failures inside the incident: they were the runner's, not the test's")
    wrong = [
        t["test_id"] for t in victims if t["verdict"] == "flaky" or incident["id"] not in t["cleared_by"]
    ]
    wrong += [t["test_id"] for t in flaky if t["verdict"] != "flaky" or incident["id"] in t["cleared_by"]]
    if wrong or len(victims) != len(story.VICTIMS) or len(flaky) != len(story.FLAKY):
        raise DemoError(f"flake records not as the story has them: {', '.join(wrong) or 'tests missing'}")
    say.ok(
        f"the {len(victims)} tests that failed only on {incident['entity']} while its disk was full are "
        f"cleared by {incident['id']} (reran green elsewhere), not flaky"
    )
    say.ok(
        f"the {len(flaky)} genuinely flaky tests stay flaky, and no clearance vouches for them: "
        "a quarantine list for CI"
    )
    say.runnerctl("get", "tests", "--flaky", "-o", "name")


def _hold(say: Narrator, controller: LocalController, incident: dict[str, Any]) -> None:
    """Keep the controller up for the operator; Ctrl-C (or SIGTERM) ends it."""
    name = runnerctl_name()
    env_file = _relative(controller.directory / "env")
    say.out.print()
    say.title(f"The controller keeps running at {controller.url} (log: {_relative(controller.log)}).")
    say.line("In another shell:")
    say.out.print()
    say.line(f"export RUNNERCTL_SERVER={controller.url} RUNNERCTL_TOKEN={controller.admin_token}")
    say.line(f"# (or: . {env_file})")
    victim = story.VICTIMS[0]
    for command in (
        "status",
        "get runners -o wide",
        f"explain test '{victim}'",
        f"get actions --runner {incident['entity']} -o wide",
        f"uncordon {incident['entity']} --force   # refused without --force while it is sick; unpauses it in the stand-in",
    ):
        say.line(f"{name} {command}")
    say.out.print()
    say.line("Press Ctrl-C to stop the controller and the CI stand-in.")
    try:
        while controller.alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        say.out.print()
        return
    raise DemoError(
        f"the controller exited by itself (code {controller.process.returncode}); "
        f"its log:\n{controller.log_tail()}"
    )


def _write_history(path: Path, told: story.Story) -> None:
    """The story as an NDJSON history: results, then reports (`runnerctl import` reads it back)."""
    with path.open("w", encoding="utf-8") as out:
        for record in told.results():
            out.write(json.dumps(record) + "\n")
        for report in told.reports:
            out.write(json.dumps({"kind": "report"} | report) + "\n")


def _write_env(directory: Path, controller: LocalController) -> None:
    path = directory / "env"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds an admin token
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(
            f"export RUNNERCTL_SERVER={controller.url}\nexport RUNNERCTL_TOKEN={controller.admin_token}\n"
        )


def _write_calls(path: Path, calls: list[Call]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for call in calls:
            out.write(
                json.dumps({"at": call.at, "what": call.what, "target": call.target, "detail": call.detail})
            )
            out.write("\n")


def _clock(at: datetime) -> str:
    return at.astimezone().strftime("%H:%M")


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
