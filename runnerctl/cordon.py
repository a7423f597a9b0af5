"""`runnerctl cordon RUNNER | node/NAME | -l SELECTOR`: take runners (or a Kubernetes node) out of
rotation; their current job finishes."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from runnerctl import completion, nodes, rotation
from runnerctl.client import ApiError
from runnerctl.context import client_of
from runnerctl.examples import examples
from runnerctl.output import clean, stderr

RunnerArg = Annotated[
    str | None,
    typer.Argument(
        help="runner id, node/NAME or `node NAME` (or use -l)", autocompletion=completion.runner_ids
    ),
]
SelectorOption = Annotated[
    str | None, typer.Option("-l", "--selector", help="label selector, e.g. pool=linux")
]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="say what would happen, change nothing")]
ReasonOption = Annotated[
    str, typer.Option("--reason", help="why; recorded with the cordon and in the audit log")
]


def targets(ctx: typer.Context, runner: str | None, selector: str | None) -> list[str]:
    if bool(runner) == bool(selector):
        raise typer.BadParameter("name one RUNNER or give -l SELECTOR (not both)", param_hint="RUNNER")
    found = rotation.resolve(client_of(ctx), runner, selector)
    if not found:
        stderr.print("No resources found")
    return found


def report_error(runner: str, error: ApiError) -> None:
    stderr.print(f"error: {clean(error.message)}", markup=False)


EPILOG = examples(
    'runnerctl cordon linux-03 --reason "disk replaced tomorrow"',
    "runnerctl cordon -l pool=linux,health=sick --dry-run",
    "runnerctl cordon node/n3 --dry-run",
)


def cordon(
    ctx: typer.Context,
    runner: RunnerArg = None,
    name: nodes.NameArg = None,
    selector: SelectorOption = None,
    reason: ReasonOption = "",
    expires_in: Annotated[
        float | None, typer.Option("--expires-in", help="seconds; uncordon by itself after that")
    ] = None,
    dry_run: DryRunOption = False,
) -> None:
    """Mark runners unschedulable: the CI provider pauses them and sends no new jobs. A Kubernetes node
    (node/NAME) is cordoned and tainted through the cluster's API; its runner pods are left alone."""
    kind, runner = nodes.target(runner, name)
    if kind == "node" and runner:
        nodes.refuse_runner_options(**{"-l": selector, "--expires-in": expires_in})
        if not nodes.act(client_of(ctx), "cordon", runner, {"reason": reason, "dry_run": dry_run}):
            raise typer.Exit(1)
        return
    runners = targets(ctx, runner, selector)
    body: dict[str, Any] = {"reason": reason, "dry_run": dry_run, "expires_in_s": expires_in}

    def done(name: str, answer: dict[str, Any]) -> None:
        typer.echo(clean(rotation.line(name, answer["status"], dry_run)))

    if rotation.act(client_of(ctx), "cordon", runners, body, done, report_error):
        raise typer.Exit(1)
