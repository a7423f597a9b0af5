"""`runnerctl status`: the fleet at a glance, per pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from common.plural import counted
from runnerctl.context import client_of
from runnerctl.examples import examples
from runnerctl.output import Column, check_format, emit, stdout

STATES = ("healthy", "warning", "suspect", "sick")


def _field(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda line: line.get(name, 0)


EPILOG = examples(
    "runnerctl status",
    "runnerctl status -o json",
    "runnerctl --context prod status",
)


def status(
    ctx: typer.Context,
    output: Annotated[
        str, typer.Option("-o", "--output", callback=check_format, help="table|wide|json|yaml|name")
    ] = "table",
) -> None:
    """Per pool: how many runners are healthy, warning, suspect, sick, cordoned and held (sick, but
    the disruption budget keeps them in rotation for now); open incidents and outages.
    """
    client = client_of(ctx)
    runners = client.get("/v1/runners")["items"]
    incidents = client.get("/v1/incidents")["items"]
    outages = client.get("/v1/outages")["items"]
    pools: dict[str, dict[str, Any]] = {}
    for runner in runners:
        pool = runner["identity"].get("pool") or "default"
        line = pools.setdefault(
            pool, {"pool": pool, "runners": 0, "cordoned": 0, "held": 0} | dict.fromkeys(STATES, 0)
        )
        line["runners"] += 1
        line[runner["health"]["health"]] += 1
        line["cordoned"] += 1 if runner.get("cordon") else 0
        line["held"] += 1 if runner.get("held") else 0
    for incident in incidents:
        for pool in incident.get("pool") or []:
            if pool in pools and incident["state"] != "resolved":
                pools[pool]["incidents"] = pools[pool].get("incidents", 0) + 1
    items = sorted(pools.values(), key=lambda line: line["pool"])
    columns = [
        Column(name, _field(name)) for name in ("pool", "runners", *STATES, "cordoned", "held", "incidents")
    ]
    emit(items, output, columns, "pool", lambda line: line["pool"])
    if output in ("table", "wide"):
        _held(runners)
        open_incidents = [i for i in incidents if i["state"] != "resolved"]
        stdout.print(
            f"\n{counted(len(open_incidents), 'open incident')}, {counted(len(outages), 'outage')} in the stored history",
            markup=False,
        )


def _held(runners: list[dict[str, Any]]) -> None:
    """Under the table, per pool: which sick runners wait for the budget, in the order they will go."""
    queues: dict[str, list[dict[str, Any]]] = {}
    for runner in runners:
        if runner.get("held"):
            queues.setdefault(runner["identity"].get("pool") or "default", []).append(runner)
    for pool, queue in sorted(queues.items()):
        queue.sort(key=lambda r: r["held"]["place"])
        names = ", ".join(r["identity"]["id"] for r in queue)
        stdout.print(
            f"\npool {pool}: {counted(len(queue), 'sick runner')} held: {queue[0]['held']['summary']}; "
            f"queued for a cordon: {names}",
            markup=False,
        )
