"""`runnerctl uncordon RUNNER | -l SELECTOR`: put runners back into rotation."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from runnerctl import rotation
from runnerctl.context import client_of
from runnerctl.cordon import DryRunOption, RunnerArg, SelectorOption, report_error, targets
from runnerctl.examples import examples
from runnerctl.output import clean

EPILOG = examples(
    "runnerctl uncordon linux-03",
    "runnerctl uncordon -l pool=linux --dry-run",
)


def uncordon(
    ctx: typer.Context,
    runner: RunnerArg = None,
    selector: SelectorOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="uncordon even a runner the controller still judges sick")
    ] = False,
    dry_run: DryRunOption = False,
) -> None:
    """Mark runners schedulable again, whoever cordoned them."""
    runners = targets(ctx, runner, selector)
    body: dict[str, Any] = {"dry_run": dry_run, "force": force}

    def done(name: str, answer: dict[str, Any]) -> None:
        typer.echo(clean(rotation.line(name, answer["status"], dry_run)))

    if rotation.act(client_of(ctx), "uncordon", runners, body, done, report_error):
        raise typer.Exit(1)
