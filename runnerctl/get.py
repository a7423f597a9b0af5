"""`runnerctl get runners|incidents|tests|actions`: list resources."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from runnerctl.context import client_of
from runnerctl.examples import examples
from runnerctl.output import Column, check_format, emit

app = typer.Typer(no_args_is_help=True, help="List resources: runners, incidents, tests, actions.")

OutputOption = Annotated[
    str, typer.Option("-o", "--output", callback=check_format, help="table|wide|json|yaml|name")
]
SelectorOption = Annotated[
    str | None, typer.Option("-l", "--selector", help="label selector, e.g. pool=linux,health!=healthy")
]

RUNNER_COLUMNS = (
    Column("name", lambda r: r["identity"]["id"]),
    Column("pool", lambda r: r["identity"].get("pool")),
    Column("health", lambda r: r["health"]["health"]),
    Column("dimension", lambda r: r["health"].get("dimension")),
    Column("cordoned", lambda r: "yes" if r.get("cordon") else "no"),
    Column("failures", lambda r: f"{r['failures']}/{r['executions']}"),
    Column("last-seen", lambda r: r.get("last_seen")),
    Column("machine", lambda r: r["identity"].get("machine"), wide_only=True),
    Column("image", lambda r: r["identity"].get("image"), wide_only=True),
    Column("shard", lambda r: r["identity"].get("shard"), wide_only=True),
    Column("labels", lambda r: r["identity"].get("labels"), wide_only=True),
    Column("last-report", lambda r: r.get("last_report_at"), wide_only=True),
)


@app.command(
    "runners",
    epilog=examples(
        "runnerctl get runners",
        "runnerctl get runners -l pool=linux -o wide",
        "runnerctl get runners -l health=sick -o name",
    ),
)
def runners(
    ctx: typer.Context,
    output: OutputOption = "table",
    selector: SelectorOption = None,
) -> None:
    """List runners with their health."""
    params: dict[str, Any] = {"l": selector} if selector else {}
    items = client_of(ctx).get("/v1/runners", params=params)["items"]
    emit(items, output, RUNNER_COLUMNS, "runner", lambda r: r["identity"]["id"])


INCIDENT_COLUMNS = (
    Column("id", lambda i: i["id"]),
    Column("kind", lambda i: i["kind"]),
    Column("entity", lambda i: i["entity"]),
    Column("state", lambda i: i["state"]),
    Column("dimension", lambda i: i["dimension"]),
    Column("onset", lambda i: i["onset"]),
    Column("failures", lambda i: f"{i['statistics']['failures']}/{i['statistics']['executions']}"),
    Column("expected", lambda i: i["statistics"]["expected"]),
    Column("decided-at", lambda i: i["decided_at"], wide_only=True),
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
    ),
)
def incidents(
    ctx: typer.Context,
    output: OutputOption = "table",
    state: Annotated[
        str | None, typer.Option("--state", help="suspect, sick or resolved (comma-separated)")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="runner, machine, image or pool")] = None,
) -> None:
    """List incidents: entities whose failures are beyond chance, with the sick dimension."""
    params = {k: v for k, v in {"state": state, "kind": kind}.items() if v}
    items = client_of(ctx).get("/v1/incidents", params=params)["items"]
    emit(items, output, INCIDENT_COLUMNS, "incident", lambda i: i["id"])


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
) -> None:
    """List tests with their flake score (failures inside incidents and outages discounted).

    `-o name` prints bare test ids, one per line: a quarantine list for CI.
    """
    wanted = [v for v in (verdict,) if v]
    if flaky:
        wanted.append("flaky")
    if broken:
        wanted += ["broken", "platform"]
    params: dict[str, Any] = {"all": str(all_tests).lower()}
    if wanted:
        params["verdict"] = ",".join(wanted)
    items = client_of(ctx).get("/v1/tests", params=params)["items"]
    if output == "name":
        for item in items:
            typer.echo(item["test_id"])
        if not items:
            from runnerctl.output import stderr

            stderr.print("No resources found")
        return
    emit(items, output, TEST_COLUMNS, "test", lambda t: t["test_id"])


ACTION_COLUMNS = (
    Column("at", lambda a: a["at"]),
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
        "runnerctl get actions --status refused",
    ),
)
def actions(
    ctx: typer.Context,
    output: OutputOption = "table",
    runner: Annotated[str | None, typer.Option("--runner", help="only this runner's")] = None,
    incident: Annotated[str | None, typer.Option("--incident", help="only this incident's")] = None,
    action: Annotated[str | None, typer.Option("--action", help="cordon, uncordon, rerun, ...")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="intended, done, failed, refused, skipped")
    ] = None,
) -> None:
    """The audit log: what the controller and operators did, refused or skipped, and why, newest first."""
    params = {
        k: v
        for k, v in {"runner": runner, "incident": incident, "action": action, "status": status}.items()
        if v
    }
    items = client_of(ctx).get("/v1/actions", params=params)["items"]
    emit(items, output, ACTION_COLUMNS, "action", lambda a: str(a["id"]))
