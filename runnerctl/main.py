"""The runnerctl root: global options, then one sub-command per file, in alphabetical order."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from runnerctl import (
    config_cmd,
    cordon,
    demo,
    describe,
    drain,
    explain,
    get,
    import_,
    status,
    uncordon,
    version,
)
from runnerctl.client import ApiError
from runnerctl.config import ConfigError
from runnerctl.context import Globals
from runnerctl.examples import examples
from runnerctl.output import stderr

# Plain click errors (`Error: Invalid value for '-o'…`) read better in scripts than rich's boxes.
app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Operate a fleet of CI runners: find the sick ones, drain them, fix the flake scores.",
    epilog=examples(
        "runnerctl config set-context prod --server https://controller.example:8080 --token-file ~/.prod-token",
        "runnerctl get runners -l health=sick",
        "runnerctl drain linux-03 --rerun",
    ),
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
        str | None,
        typer.Option(
            "--context", help="named context from the config file", autocompletion=config_cmd.complete_context
        ),
    ] = None,
) -> None:
    ctx.obj = Globals(server=server, token=token, context=context)


app.add_typer(config_cmd.app, name="config")
app.command("cordon", epilog=cordon.EPILOG)(cordon.cordon)
app.command("demo", epilog=demo.EPILOG)(demo.demo)
app.add_typer(describe.app, name="describe")
app.command("drain", epilog=drain.EPILOG)(drain.drain)
app.add_typer(explain.app, name="explain")
app.add_typer(get.app, name="get")
app.command("import", epilog=import_.EPILOG)(import_.import_files)
app.command("status", epilog=status.EPILOG)(status.status)
app.command("uncordon", epilog=uncordon.EPILOG)(uncordon.uncordon)
app.command("version", epilog=version.EPILOG)(version.version)


def main() -> None:
    try:
        app(prog_name="runnerctl", standalone_mode=True)
    except (ApiError, ConfigError) as error:
        if os.environ.get("RUNNERCTL_DEBUG"):
            raise
        stderr.print(f"error: {getattr(error, 'message', None) or error}", markup=False)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
