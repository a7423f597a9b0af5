"""`runnerctl get runners|nodes|jobs|incidents|tests|actions`: list resources, once or (--watch) as they change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from runnerctl import completion
from runnerctl.context import client_of
from runnerctl.examples import examples
from runnerctl.holds import cordoned
from runnerctl.output import Column, check_format, emit
from runnerctl.times import shown_duration, shown_time
from runnerctl.watch import Fetch, watch

app = typer.Typer(
    no_args_is_help=True, help="List resources: runners, nodes, jobs, incidents, tests, actions."
)

OutputOption = Annotated[
    str, typer.Option("-o", "--output", callback=check_format, help="table|wide|json|yaml|name")
]
SelectorOption = Annotated[
    str | None, typer.Option("-l", "--selector", help="label selector, e.g. pool=linux,health!=healthy")
]
WatchOption = Annotated[
    bool, typer.Option("-w", "--watch", help="after listing, print what changes until Ctrl-C")
]
IntervalOption = Annotated[
    float, typer.Option("--interval", min=0.1, help="seconds between polls while watching")
]
# Bounds a watch for tests and scripts; people end one with Ctrl-C.
PollsOption = Annotated[int | None, typer.Option("--watch-count", min=0, hidden=True)]


def show(
    fetch: Fetch,
    output: str,
    columns: tuple[Column, ...],
    kind: str,
    name_of: Callable[[dict[str, Any]], str],
    watching: bool,
    interval_s: float,
    polls: int | None,
) -> None:
    if watching or polls is not None:
        watch(fetch, output, columns, kind, name_of, interval_s=interval_s, polls=polls)
    else:
        emit(fetch(), output, columns, kind, name_of)


def listing(ctx: typer.Context, path: str, params: dict[str, Any]) -> Fetch:
    client = client_of(ctx)
    return lambda: list(client.get(path, params={k: v for k, v in params.items() if v})["items"])


RUNNER_COLUMNS = (
    Column("name", lambda r: r["identity"]["id"]),
    Column("pool", lambda r: r["identity"].get("pool")),
    Column("health", lambda r: r["health"]["health"]),
    Column("dimension", lambda r: r["health"].get("dimension")),
    Column("cordoned", cordoned),
    Column("failures", lambda r: f"{r['failures']}/{r['executions']}"),
    Column("last-seen", lambda r: shown_time(r.get("last_seen"))),
    Column("machine", lambda r: r["identity"].get("machine"), wide_only=True),
    Column("image", lambda r: r["identity"].get("image"), wide_only=True),
    Column("shard", lambda r: r["identity"].get("shard"), wide_only=True),
    Column("labels", lambda r: r["identity"].get("labels"), wide_only=True),
    Column("last-report", lambda r: shown_time(r.get("last_report_at")), wide_only=True),
    Column("jobs", lambda r: r.get("jobs", 0), wide_only=True),
    Column("job-fail%", lambda r: _percent(r.get("job_failure_rate")), wide_only=True),
    Column("median-job", lambda r: shown_duration(r.get("median_job_duration_s")), wide_only=True),
)


def _percent(rate: float | None) -> str | None:
    return None if rate is None else f"{rate:.0%}"


@app.command(
    "runners",
    epilog=examples(
        "runnerctl get runners",
        "runnerctl get runners -l pool=linux -o wide",
        "runnerctl get runners -l health=sick -o name",
        "runnerctl get runners -l pool=linux --watch",
    ),
)
def runners(
    ctx: typer.Context,
    output: OutputOption = "table",
    selector: SelectorOption = None,
    watching: WatchOption = False,
    interval: IntervalOption = 2.0,
    polls: PollsOption = None,
) -> None:
    """List runners with their health.

    Selector keys: id, name, machine, pool, image, shard, provider, health, ephemeral, and the
    runner's own labels (key=value or bare).
    """
    fetch = listing(ctx, "/v1/runners", {"l": selector})
    show(fetch, output, RUNNER_COLUMNS, "runner", lambda r: r["identity"]["id"], watching, interval, polls)


JOB_COLUMNS = (
    Column("job", lambda j: j["job_id"]),
    Column("name", lambda j: j["name"]),
    Column("runner", lambda j: j["runner"]),
    Column("conclusion", lambda j: j["conclusion"]),
    Column("duration", lambda j: shown_duration(j.get("duration_s"))),
    Column("tests", lambda j: j.get("tests")),
    Column("finished", lambda j: shown_time(j["finished"])),
    Column("run", lambda j: j.get("run_id"), wide_only=True),
    Column("attempt", lambda j: j.get("attempt"), wide_only=True),
    Column("step", lambda j: j.get("failed_step"), wide_only=True),
    Column("reason", lambda j: j.get("failure_reason"), wide_only=True),
    Column("pool", lambda j: j.get("pool"), wide_only=True),
)


@app.command(
    "jobs",
    epilog=examples(
        "runnerctl get jobs",
        "runnerctl get jobs -l runner=linux-03,conclusion!=success -o wide",
        "runnerctl get jobs --conclusion system_failure,timed_out --since 2026-09-21T00:00:00Z",
        "runnerctl get jobs --runner linux-03 --watch",
    ),
)
def jobs(
    ctx: typer.Context,
    output: OutputOption = "table",
    runner: Annotated[
        str | None, typer.Option("--runner", help="only this runner's", autocompletion=completion.runner_ids)
    ] = None,
    pool: Annotated[str | None, typer.Option("--pool", help="only this pool's")] = None,
    conclusion: Annotated[
        str | None,
        typer.Option(
            "--conclusion", help="success, failure, cancelled, timed_out, system_failure (comma-separated)"
        ),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="only jobs of this name")] = None,
    since: Annotated[str | None, typer.Option("--since", help="finished at or after (RFC 3339)")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000, help="newest jobs listed")] = 500,
    selector: Annotated[
        str | None,
        typer.Option(
            "-l",
            "--selector",
            help="over job, run, attempt, name, conclusion, step, reason, runner, pool, machine, provider; "
            "e.g. runner=linux-03,conclusion!=success",
        ),
    ] = None,
    watching: WatchOption = False,
    interval: IntervalOption = 2.0,
    polls: PollsOption = None,
) -> None:
    """List CI job records, newest first: conclusion, duration, tests, and (wide) the failed step and the
    provider's reason."""
    params = {
        "runner": runner,
        "pool": pool,
        "conclusion": conclusion,
        "name": name,
        "since": since,
        "limit": str(limit),
        "l": selector,
    }
    fetch = listing(ctx, "/v1/jobs", params)
    show(fetch, output, JOB_COLUMNS, "job", lambda j: j["job_id"], watching, interval, polls)


NODE_COLUMNS = (
    Column("name", lambda n: n["name"]),
    Column("pool", lambda n: n["pool"]),
    Column("status", lambda n: n["status"]),
    Column("cordoned-by", lambda n: n.get("cordoned_by")),
    Column("taint", lambda n: "runnerctl.io/sick" if n.get("tainted") else None),
    Column("incident", lambda n: n.get("incident")),
    Column("busy", lambda n: n["busy"]),
    Column("idle", lambda n: n["idle"]),
    Column("runner", lambda n: n["runner"], wide_only=True),
    Column("cordoned-at", lambda n: shown_time(n.get("cordoned_at")), wide_only=True),
    Column("probation-since", lambda n: shown_time(n.get("probation_since")), wide_only=True),
)


@app.command(
    "nodes",
    epilog=examples(
        "runnerctl get nodes",
        "runnerctl get nodes -o wide",
        "runnerctl get nodes --watch",
    ),
)
def nodes(
    ctx: typer.Context,
    output: OutputOption = "table",
    watching: WatchOption = False,
    interval: IntervalOption = 2.0,
    polls: PollsOption = None,
) -> None:
    """List the Kubernetes nodes of the configured fleets: who cordoned them (runnerctl, an operator or
    someone else), runnerctl's taint, the incident, probation, and their busy and idle runner pods."""
    fetch = listing(ctx, "/v1/nodes", {})
    show(fetch, output, NODE_COLUMNS, "node", lambda n: n["name"], watching, interval, polls)


INCIDENT_COLUMNS = (
    Column("id", lambda i: i["id"]),
    Column("kind", lambda i: i["kind"]),
    Column("entity", lambda i: i["entity"]),
    Column("state", lambda i: i["state"]),
    Column("dimension", lambda i: i["dimension"]),
    Column("onset", lambda i: shown_time(i["onset"])),
    Column("failures", lambda i: f"{i['statistics']['failures']}/{i['statistics']['executions']}"),
    Column("expected", lambda i: i["statistics"]["expected"]),
    Column("decided-at", lambda i: shown_time(i["decided_at"]), wide_only=True),
    Column("p-adjusted", lambda i: i["statistics"]["p_adjusted"], wide_only=True),
    Column("q-value", lambda i: i["statistics"]["q_value"], wide_only=True),
    Column("distinct-tests", lambda i: i["statistics"]["distinct_tests"], wide_only=True),
    Column("pool", lambda i: i.get("pool"), wide_only=True),
)


@app.command(
    "incidents",
    epilog=examples(
        "runnerctl get incidents",
        "runnerctl get incidents --state sick -o json",
        "runnerctl get incidents -l kind=runner,dimension=disk --watch",
    ),
)
def incidents(
    ctx: typer.Context,
    output: OutputOption = "table",
    state: Annotated[
        str | None, typer.Option("--state", help="suspect, sick or resolved (comma-separated)")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="runner, machine, image or pool")] = None,
    selector: Annotated[
        str | None,
        typer.Option(
            "-l", "--selector", help="over id, kind, entity, state, dimension, pool; e.g. state!=resolved"
        ),
    ] = None,
    watching: WatchOption = False,
    interval: IntervalOption = 2.0,
    polls: PollsOption = None,
) -> None:
    """List incidents: entities whose failures are beyond chance, with the sick dimension."""
    fetch = listing(ctx, "/v1/incidents", {"state": state, "kind": kind, "l": selector})
    show(fetch, output, INCIDENT_COLUMNS, "incident", lambda i: i["id"], watching, interval, polls)


TEST_COLUMNS = (
    Column("test", lambda t: t["test_id"]),
    Column("verdict", lambda t: t["verdict"]),
    Column("score", lambda t: f"{t['score']:.3f}"),
    Column("90%-interval", lambda t: f"{t['lower']:.3f}-{t['upper']:.3f}"),
    Column("failures", lambda t: f"{t['counted_failures']}/{t['counted_executions']}"),
    Column("discounted", lambda t: t["discounted_failures"]),
    Column("naive", lambda t: f"{t['failures']}/{t['executions']}", wide_only=True),
    Column("discounted-by", lambda t: ",".join(sorted(t["discounted_by"])), wide_only=True),
    Column("reason", lambda t: t.get("reason"), wide_only=True),
)


@app.command(
    "tests",
    epilog=examples(
        "runnerctl get tests --flaky",
        "runnerctl get tests --flaky -o name > quarantine.txt",
        "runnerctl get tests --broken -o wide",
    ),
)
def tests(
    ctx: typer.Context,
    output: OutputOption = "table",
    flaky: Annotated[bool, typer.Option("--flaky", help="only flaky tests")] = False,
    broken: Annotated[bool, typer.Option("--broken", help="only broken and platform-specific tests")] = False,
    verdict: Annotated[
        str | None, typer.Option("--verdict", help="flaky, broken, platform, resource-sensitive, healthy")
    ] = None,
    all_tests: Annotated[bool, typer.Option("--all", help="include tests that never failed")] = False,
    selector: Annotated[
        str | None,
        typer.Option("-l", "--selector", help="over test, verdict, discounted-by; e.g. discounted-by=outage"),
    ] = None,
    watching: WatchOption = False,
    interval: IntervalOption = 2.0,
    polls: PollsOption = None,
) -> None:
    """List tests with their flake score (failures inside incidents and outages discounted).

    `-o name` prints bare test ids, one per line: a quarantine list for CI.
    """
    wanted = [v for v in (verdict,) if v]
    if flaky:
        wanted.append("flaky")
    if broken:
        wanted += ["broken", "platform"]
    params = {"all": str(all_tests).lower(), "verdict": ",".join(wanted), "l": selector}
    fetch = listing(ctx, "/v1/tests", params)
    # Bare ids under -o name (kind ""): the quarantine list CI reads.
    show(fetch, output, TEST_COLUMNS, "", lambda t: t["test_id"], watching, interval, polls)


ACTION_COLUMNS = (
    Column("at", lambda a: shown_time(a["at"])),
    Column("action", lambda a: a["action"]),
    Column("status", lambda a: a["status"]),
    Column("runner", lambda a: a.get("runner")),
    Column("incident", lambda a: a.get("incident")),
    Column("job", lambda a: a.get("job")),
    Column("actor", lambda a: a["actor"]),
    Column("detail", lambda a: a.get("detail")),
    Column("mode", lambda a: a.get("mode"), wide_only=True),
    Column("reason", lambda a: a.get("reason"), wide_only=True),
    Column("key", lambda a: a["key"], wide_only=True),
)


@app.command(
    "actions",
    epilog=examples(
        "runnerctl get actions",
        "runnerctl get actions --runner linux-03 -o wide",
        "runnerctl get actions -l status=refused,mode=auto",
        "runnerctl get actions --watch",
    ),
)
def actions(
    ctx: typer.Context,
    output: OutputOption = "table",
    runner: Annotated[
        str | None, typer.Option("--runner", help="only this runner's", autocompletion=completion.runner_ids)
    ] = None,
    incident: Annotated[
        str | None,
        typer.Option("--incident", help="only this incident's", autocompletion=completion.incident_ids),
    ] = None,
    action: Annotated[str | None, typer.Option("--action", help="cordon, uncordon, rerun, ...")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="intended, done, failed, refused, skipped")
    ] = None,
    selector: Annotated[
        str | None,
        typer.Option(
            "-l",
            "--selector",
            help="over action, status, runner, incident, job, actor, mode; e.g. status!=done",
        ),
    ] = None,
    watching: WatchOption = False,
    interval: IntervalOption = 2.0,
    polls: PollsOption = None,
) -> None:
    """The audit log: what the controller and operators did, refused or skipped, and why, newest first."""
    params = {"runner": runner, "incident": incident, "action": action, "status": status, "l": selector}
    fetch = listing(ctx, "/v1/actions", params)
    show(fetch, output, ACTION_COLUMNS, "action", lambda a: str(a["id"]), watching, interval, polls)
