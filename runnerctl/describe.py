"""`runnerctl describe runner ID | node NAME`: everything the controller knows about one resource."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from common.plural import noun
from runnerctl import completion
from runnerctl.context import client_of
from runnerctl.examples import examples
from runnerctl.holds import held_line
from runnerctl.output import clean, stdout
from runnerctl.probes import probe_line
from runnerctl.times import shown_duration, shown_time

RunnerId = Annotated[str, typer.Argument(help="runner id", autocompletion=completion.runner_ids)]

app = typer.Typer(no_args_is_help=True, help="Show one resource in detail.")


@app.command(
    "runner",
    epilog=examples(
        "runnerctl describe runner linux-03",
        "runnerctl --context prod describe runner linux-03",
    ),
)
def runner(ctx: typer.Context, runner_id: RunnerId) -> None:
    """Identity, health, cordon state and the last reading of each check."""
    data = client_of(ctx).get(f"/v1/runners/{runner_id}")
    ident = data["identity"]
    # Only for runners the controller has probed before returning them to rotation.
    probe = [("Probe", probe_line(data["probe"]))] if data.get("probe") else []
    lines = [
        ("Name", ident["id"]),
        ("Pool", ident.get("pool")),
        ("Machine", ident.get("machine")),
        ("Image", ident.get("image")),
        ("Shard", ident.get("shard")),
        ("Labels", ", ".join(ident.get("labels") or []) or None),
        ("Provider", ident.get("provider")),
        ("Ephemeral", "yes" if ident.get("ephemeral") else "no"),
        (
            "Health",
            data["health"]["health"]
            + (f" ({data['health']['dimension']})" if data["health"].get("dimension") else ""),
        ),
        ("Cordoned", _cordon(data.get("cordon"), data.get("probation"), data.get("held"))),
        *probe,
        ("Executions", f"{data['executions']} ({data['failures']} failed)"),
        ("Jobs", _jobs(data)),
        ("First seen", shown_time(data.get("first_seen"))),
        ("Last seen", shown_time(data.get("last_seen"))),
        ("Last report", shown_time(data.get("last_report_at"))),
    ]
    for label, value in lines:
        shown = clean(str(value)) if value not in (None, "") else "<none>"
        stdout.print(f"{label + ':':<13} {shown}", markup=False)
    for warning in data["health"].get("warnings") or []:
        stdout.print(f"{'Warning:':<13} {warning}", markup=False)
    stdout.print("Readings:", markup=False)
    if not data.get("last_readings"):
        stdout.print("  <none>", markup=False)
    for reading in data.get("last_readings") or []:
        status = reading.get("status", "?")
        line = f"  {reading['check']:<7} {status:<8} {shown_time(reading.get('observed_at'))}  {_summary(reading)}"
        stdout.print(clean(line), markup=False)


def _jobs(data: dict[str, Any]) -> str:
    """Its CI jobs over the analysis window: count, failures (rate), median duration."""
    jobs = data.get("jobs") or 0
    if not jobs:
        return "0"
    median = shown_duration(data.get("median_job_duration_s"))
    return (
        f"{jobs} ({data.get('job_failures', 0)} failed, {data['job_failure_rate']:.0%}); "
        f"median {median if median is not None else '<unknown>'}"
    )


@app.command(
    "node",
    epilog=examples(
        "runnerctl describe node n3",
    ),
)
def node(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Kubernetes node name")]) -> None:
    """A fleet's node: who cordoned it, runnerctl's taint, incident, probation, its runner pods (busy
    ones are left to finish by a drain) and its audit entries."""
    data = client_of(ctx).get(f"/v1/nodes/{name}")
    lines = [
        ("Name", data["name"]),
        ("Pool", f"{data['pool']} ({data['runner']} runners)"),
        ("Status", data["status"]),
        ("Cordoned by", data.get("cordoned_by")),
        ("Taint", "runnerctl.io/sick=true:NoSchedule" if data.get("tainted") else None),
        ("Incident", data.get("incident")),
        ("Cordoned at", shown_time(data.get("cordoned_at"))),
        ("Probation", shown_time(data.get("probation_since"))),
    ]
    for label, value in lines:
        shown = clean(str(value)) if value not in (None, "") else "<none>"
        stdout.print(f"{label + ':':<13} {shown}", markup=False)
    stdout.print(f"Runner pods:  {data['busy']} busy, {data['idle']} idle", markup=False)
    for pod in data.get("pods") or []:
        state = "busy" if pod["busy"] else "idle"
        stdout.print(clean(f"  {pod['namespace']}/{pod['name']}  {state}  {pod['why']}"), markup=False)
    stdout.print("Actions:", markup=False)
    if not data.get("actions"):
        stdout.print("  <none>", markup=False)
    for entry in data.get("actions") or []:
        line = f"  {shown_time(entry['at'])}  {entry['action']} {entry['status']} by {entry['actor']}"
        line += f" ({entry['reason']})" if entry.get("reason") else ""
        line += f": {entry['detail']}" if entry.get("detail") else ""
        stdout.print(clean(line), markup=False)


def _cordon(
    cordon: dict[str, Any] | None, probation: dict[str, Any] | None, held: dict[str, Any] | None
) -> str:
    if held:
        return f"no, {held_line(held)}"
    if probation:
        return (
            f"no, on probation since {shown_time(probation['since'])}: "
            f"{len(probation['passed_jobs'])} of {probation['probe_jobs']} {noun(probation['probe_jobs'], 'probe job')} passed"
        )
    if not cordon:
        return "no"
    return f"yes, by {cordon.get('by')} at {shown_time(cordon.get('at'))}: {cordon.get('reason')}"


def _summary(reading: dict[str, Any]) -> str:
    check = reading["check"]
    if check == "disk":
        return "; ".join(
            f"{p['path']} free {p.get('free_ratio', 0):.1%}" + (" read-only" if p.get("read_only") else "")
            for p in reading.get("paths", [])
            if p.get("free_ratio") is not None
        )
    if check == "memory" and reading.get("available_ratio") is not None:
        return f"available {reading['available_ratio']:.1%}, OOM kills {reading.get('oom_kills', 0)}"
    if check == "clock" and reading.get("offset_s") is not None:
        return f"offset {reading['offset_s']:+.3f} s"
    if check == "cache":
        return "; ".join(f"{c['key']} {str(c.get('digest'))[:12]}" for c in reading.get("caches", []))
    return reading.get("reason") or ""
