"""The runnerctl root: global options, then one sub-command per file, in alphabetical order."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from runnerctl import cordon, demo, describe, drain, explain, get, import_, status, uncordon
from runnerctl.client import ApiError
from runnerctl.config import ConfigError
from runnerctl.context import Globals
from runnerctl.output import stderr
from runnerctl.version import version

# Plain click errors (`Error: Invalid value for '-o'…`) read better in scripts than rich's boxes.
app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Operate a fleet of CI runners: find the sick ones, drain them, fix the flake scores.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def root(
    ctx: typer.Context,
    server: Annotated[
        str | None, typer.Option("--server", "-s", help="controller URL (or RUNNERCTL_SERVER)")
    ] = None,
    token: Annotated[str | None, typer.Option("--token", help="bearer token (or RUNNERCTL_TOKEN)")] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="named context from the config file")
    ] = None,
) -> None:
    ctx.obj = Globals(server=server, token=token, context=context)


app.command("cordon")(cordon.cordon)
app.command("demo")(demo.demo)
app.add_typer(describe.app, name="describe")
app.command("drain")(drain.drain)
app.add_typer(explain.app, name="explain")
app.add_typer(get.app, name="get")
app.command("import")(import_.import_files)
app.command("status")(status.status)
app.command("uncordon")(uncordon.uncordon)
app.command("version")(version)


def main() -> None:
    try:
        app(standalone_mode=True)
    except (ApiError, ConfigError) as error:
        if os.environ.get("RUNNERCTL_DEBUG"):
            raise
        stderr.print(f"error: {getattr(error, 'message', None) or error}", markup=False)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
