"""`runnerctl config`: named contexts (a controller and its token) in the config file, kubectl-style."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import tomli_w
import typer
import yaml

from runnerctl.config import config_path, load_file, save_file
from runnerctl.examples import examples
from runnerctl.output import Column, check_format, clean, emit, fail, stderr

app = typer.Typer(
    no_args_is_help=True,
    help="Manage named contexts (controller URL and token) in the config file "
    "(~/.config/runnerctl/config.toml, or RUNNERCTL_CONFIG).",
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}$")
REDACTED = "REDACTED"


def complete_context(incomplete: str) -> list[str]:
    try:
        return [name for name in sorted(load_file().get("contexts", {})) if name.startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the user's shell
        return []


ContextName = Annotated[
    str, typer.Argument(help="context name", metavar="NAME", autocompletion=complete_context)
]


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise typer.BadParameter(
            f"'{clean(name)}' is not a context name: use letters, digits and . _ @ : - (at most 100)",
            param_hint="NAME",
        )
    return name


def _check_server(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise typer.BadParameter(
            f"'{clean(url)}' is not a controller URL: give http(s)://host[:port]", param_hint="--server"
        )
    return url.rstrip("/")


@app.command(
    "set-context",
    epilog=examples(
        "runnerctl config set-context prod --server https://controller.example:8080 --token-file ~/.prod-token",
        "runnerctl config set-context lab --server http://127.0.0.1:8080 --token rct_...",
        "runnerctl config set-context prod --server https://controller-2.example:8080",
    ),
)
def set_context(
    name: Annotated[str, typer.Argument(help="context name", metavar="NAME", callback=_check_name)],
    server: Annotated[
        str | None, typer.Option("--server", "-s", help="controller URL", callback=_check_server)
    ] = None,
    token: Annotated[str | None, typer.Option("--token", help="bearer token, stored in the file")] = None,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", help="file holding the token, read at each use (not copied)"),
    ] = None,
) -> None:
    """Create a context, or change the fields given of an existing one."""
    if token is not None and token_file is not None:
        raise typer.BadParameter("give --token or --token-file, not both", param_hint="--token")
    data = load_file()
    contexts: dict[str, Any] = data.setdefault("contexts", {})
    existing = name in contexts
    if not existing and server is None:
        raise typer.BadParameter(f"context '{name}' is new: give its --server URL", param_hint="--server")
    entry: dict[str, Any] = dict(contexts.get(name, {}))
    if server is not None:
        entry["server"] = server
    if token is not None:
        entry.pop("token-file", None)
        entry["token"] = token
    if token_file is not None:
        entry.pop("token", None)
        entry["token-file"] = str(token_file.expanduser().resolve())
    contexts[name] = entry
    save_file(data)
    typer.echo(f'Context "{name}" {"modified" if existing else "created"}.')


@app.command("use-context", epilog=examples("runnerctl config use-context prod"))
def use_context(name: ContextName) -> None:
    """Make NAME the context every command uses (unless --context or RUNNERCTL_CONTEXT says otherwise)."""
    data = load_file()
    if name not in data.get("contexts", {}):
        raise fail(
            f"no context named '{clean(name)}' in {config_path()} (see `runnerctl config get-contexts`)"
        )
    data["current-context"] = name
    save_file(data)
    typer.echo(f'Switched to context "{name}".')


@app.command("current-context", epilog=examples("runnerctl config current-context"))
def current_context() -> None:
    """Print the name of the current context."""
    name = load_file().get("current-context")
    if not name:
        raise fail(f"current-context is not set in {config_path()} (use `runnerctl config use-context NAME`)")
    typer.echo(name)


def _auth(entry: dict[str, Any]) -> str:
    if entry.get("token"):
        return "token"
    if entry.get("token-file"):
        return f"token-file {entry['token-file']}"
    return "none"


@app.command(
    "get-contexts",
    epilog=examples("runnerctl config get-contexts", "runnerctl config get-contexts -o name"),
)
def get_contexts(
    output: Annotated[
        str, typer.Option("-o", "--output", callback=check_format, help="table|wide|json|yaml|name")
    ] = "table",
) -> None:
    """List the contexts; the current one is marked with *."""
    data = load_file()
    current = data.get("current-context")
    items = [
        {"name": name, "current": name == current, "server": entry.get("server"), "auth": _auth(entry)}
        for name, entry in sorted(data.get("contexts", {}).items())
    ]
    columns = (
        Column("current", lambda c: "*" if c["current"] else " "),
        Column("name", lambda c: c["name"]),
        Column("server", lambda c: c["server"]),
        Column("auth", lambda c: c["auth"]),
    )
    emit(items, output, columns, "context", lambda c: c["name"])


@app.command(
    "view",
    epilog=examples("runnerctl config view", "runnerctl config view -o yaml", "runnerctl config view --raw"),
)
def view(
    raw: Annotated[bool, typer.Option("--raw", help="show tokens instead of REDACTED")] = False,
    output: Annotated[str, typer.Option("-o", "--output", help="toml|yaml|json")] = "toml",
) -> None:
    """Print the config file, tokens redacted unless --raw."""
    if output not in ("toml", "yaml", "json"):
        raise typer.BadParameter(
            f"unknown output format '{output}'; allowed: toml, yaml, json", param_hint="-o"
        )
    data = load_file()
    if not raw:
        data = data | {
            "contexts": {
                name: entry | ({"token": REDACTED} if "token" in entry else {})
                for name, entry in data.get("contexts", {}).items()
            }
        }
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif output == "yaml":
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))
    else:
        sys.stdout.write(tomli_w.dumps(data))


@app.command("delete-context", epilog=examples("runnerctl config delete-context lab"))
def delete_context(name: ContextName) -> None:
    """Remove a context from the config file (and unset it if it was the current one)."""
    data = load_file()
    contexts = data.get("contexts", {})
    if name not in contexts:
        raise fail(f"no context named '{clean(name)}' in {config_path()}")
    del contexts[name]
    if data.get("current-context") == name:
        del data["current-context"]
        stderr.print(f"warning: {name} was the current context; none is current now", markup=False)
    path = save_file(data)
    typer.echo(f"deleted context {name} from {path}")
