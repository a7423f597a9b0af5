"""`runnerctl uncordon RUNNER | node/NAME | -l SELECTOR`: put runners (or a node) back into rotation."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from runnerctl import nodes, rotation
from runnerctl.context import client_of
from runnerctl.cordon import DryRunOption, RunnerArg, SelectorOption, report_error, targets
from runnerctl.examples import examples
from runnerctl.output import clean

EPILOG = examples(
    "runnerctl uncordon linux-03",
    "runnerctl uncordon -l pool=linux --dry-run",
    "runnerctl uncordon node/n3",
)


def uncordon(
    ctx: typer.Context,
    runner: RunnerArg = None,
    name: nodes.NameArg = None,
    selector: SelectorOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="uncordon even one the controller still judges sick, or a node someone else cordoned",
        ),
    ] = False,
    dry_run: DryRunOption = False,
) -> None:
    """Mark runners schedulable again, whoever cordoned them. A node someone else cordoned (not
    runnerctl) is left alone unless --force."""
    kind, runner = nodes.target(runner, name)
    if kind == "node" and runner:
        nodes.refuse_runner_options(**{"-l": selector})
        if not nodes.act(client_of(ctx), "uncordon", runner, {"dry_run": dry_run, "force": force}):
            raise typer.Exit(1)
        return
    runners = targets(ctx, runner, selector)
    body: dict[str, Any] = {"dry_run": dry_run, "force": force}

    def done(name: str, answer: dict[str, Any]) -> None:
        typer.echo(clean(rotation.line(name, answer["status"], dry_run)))

    if rotation.act(client_of(ctx), "uncordon", runners, body, done, report_error):
        raise typer.Exit(1)
