"""`runnerctl get runners|incidents|tests|actions`: list resources."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from runnerctl.context import client_of
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


@app.command("runners")
def runners(
    ctx: typer.Context,
    output: OutputOption = "table",
    selector: SelectorOption = None,
) -> None:
    """List runners with their health.

    Examples:
      runnerctl get runners
      runnerctl get runners -l pool=linux -o wide
      runnerctl get runners -l health=sick -o name
    """
    params: dict[str, Any] = {"l": selector} if selector else {}
    items = client_of(ctx).get("/v1/runners", params=params)["items"]
    emit(items, output, RUNNER_COLUMNS, "runner", lambda r: r["identity"]["id"])
