"""The work behind `cordon|uncordon|drain node/NAME`: kubectl's resource forms, the controller's answer.

`cordon`, `uncordon` and `drain` take a runner id, `runner/ID`, `node/NAME` or `node NAME`; the CLI files
only bind flags and hand a node here. A dry run prints each Kubernetes API write it would send.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from runnerctl.client import ApiError, Client
from runnerctl.output import clean, stderr

KINDS = {"node": "node", "nodes": "node", "no": "node", "runner": "runner", "runners": "runner"}

NameArg = Annotated[
    str | None, typer.Argument(help="with TYPE `node` (or `runner`): its name, as in `node n3`")
]


def target(resource: str | None, name: str | None) -> tuple[str, str | None]:
    """(kind, name) from kubectl's forms: `TYPE/NAME`, `TYPE NAME`, or a bare runner id."""
    if name is not None:
        if resource not in KINDS:
            raise typer.BadParameter(
                f"unknown resource type '{resource}': use node NAME, node/NAME or a runner id",
                param_hint="TYPE",
            )
        return KINDS[resource], name
    if resource and "/" in resource:
        kind, _, named = resource.partition("/")
        if kind not in KINDS or not named:
            raise typer.BadParameter(f"'{resource}' is not node/NAME or runner/ID", param_hint="RUNNER")
        return KINDS[kind], named
    return "runner", resource


def line(node: str, status: str, dry_run: bool) -> str:
    return f"node/{node} {status}" + (" (dry run)" if dry_run else "")


def act(
    client: Client,
    verb: str,
    node: str,
    body: dict[str, Any],
    then: Callable[[dict[str, Any]], None] | None = None,
) -> bool:
    """POST /v1/nodes/<node>/<verb> and print the answer kubectl's way; False when it failed."""
    try:
        answer = client.post(f"/v1/nodes/{node}/{verb}", json=body)
    except ApiError as error:
        stderr.print(f"error: {clean(error.message)}", markup=False)
        return False
    dry_run = bool(answer.get("dry_run"))
    typer.echo(clean(line(node, answer["status"], dry_run)))
    if answer.get("detail") and answer["status"].startswith("already"):
        stderr.print(clean(answer["detail"]), markup=False)
    for call in answer.get("calls") or []:
        typer.echo(clean(f"  {call}"))
    for note in answer.get("notes") or []:
        stderr.print(clean(note), markup=False)
    if then is not None:
        then(answer)
    return True


def refuse_runner_options(**options: Any) -> None:
    """Options that select or time runners mean nothing for a node: say so rather than ignore them."""
    given = [flag for flag, value in options.items() if value not in (None, False, "")]
    if given:
        raise typer.BadParameter(f"{', '.join(given)} applies to runners only", param_hint="node")
