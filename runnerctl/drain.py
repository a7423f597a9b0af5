"""`runnerctl drain RUNNER | node/NAME | -l SELECTOR [--rerun]`: cordon, then rerun its failed jobs
elsewhere; a node's idle runner pods are deleted first, busy ones left to finish."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from runnerctl import nodes, rotation
from runnerctl.context import client_of
from runnerctl.cordon import DryRunOption, ReasonOption, RunnerArg, SelectorOption, report_error, targets
from runnerctl.examples import examples
from runnerctl.output import clean, stderr

EPILOG = examples(
    "runnerctl drain linux-03 --rerun",
    "runnerctl drain linux-03 --rerun --dry-run",
    "runnerctl drain node/n3 --rerun --dry-run",
    "runnerctl drain node n3 --rerun --ignore-budget",
)


def drain(
    ctx: typer.Context,
    runner: RunnerArg = None,
    name: nodes.NameArg = None,
    selector: SelectorOption = None,
    reason: ReasonOption = "",
    rerun: Annotated[
        bool, typer.Option("--rerun/--no-rerun", help="rerun the jobs that failed on it during its incident")
    ] = False,
    dry_run: DryRunOption = False,
    ignore_budget: Annotated[
        bool,
        typer.Option(
            "--ignore-budget", help="cordon it even where the pool's disruption budget is spent (see status)"
        ),
    ] = False,
) -> None:
    """Cordon runners and (with --rerun) rerun the jobs that failed on them during their incident, on
    healthy runners. In a pool in `approve` mode this is the operator's approval, so the pool's
    disruption budget binds it as it binds the controller (--ignore-budget overrides).

    A Kubernetes node (node/NAME): cordoned and tainted, its idle runner pods deleted, busy ones left to
    finish; --dry-run prints each API write it would send and sends none.
    """
    kind, runner = nodes.target(runner, name)
    body: dict[str, Any] = {
        "reason": reason,
        "dry_run": dry_run,
        "rerun": rerun,
        "ignore_budget": ignore_budget,
    }
    if kind == "node" and runner:
        nodes.refuse_runner_options(**{"-l": selector})
        node = runner

        def drained(answer: dict[str, Any]) -> None:
            typer.echo(clean(nodes.line(node, "drained", answer["dry_run"])))

        if not nodes.act(client_of(ctx), "drain", node, body, drained):
            raise typer.Exit(1)
        return
    runners = targets(ctx, runner, selector)

    def done(name: str, answer: dict[str, Any]) -> None:
        typer.echo(clean(rotation.line(name, answer["status"], dry_run)))
        for note in answer.get("notes") or []:
            stderr.print(clean(note), markup=False)
        typer.echo(clean(rotation.line(name, "drained", dry_run)))

    if rotation.act(client_of(ctx), "drain", runners, body, done, report_error):
        raise typer.Exit(1)
