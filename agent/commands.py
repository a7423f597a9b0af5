"""`runner-agent run | once | config`: the typer app. The console script (`agent.cli`) starts a plain
`run` without it; the work lives in the daemon and the checks."""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import sys
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from agent import checks, settings
from agent.checks.base import CheckConfig
from agent.checks.memory import OOM_STATE_FILE, MemoryConfig
from agent.cli import run_daemon
from agent.runner import Outcome, run_check
from agent.tomlout import dumps as toml_dumps
from common.readings import Status

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="runner-agent: reads this CI runner's health and reports it to runner-controller.",
)

ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config", "-c", help="config file (default /etc/runner-agent/config.toml or $RUNNER_AGENT_CONFIG)"
    ),
]


class OnceFormat(StrEnum):
    table = "table"
    json = "json"


class ConfigFormat(StrEnum):
    toml = "toml"
    json = "json"


def _load(config: str | None) -> settings.AgentSettings:
    try:
        return settings.load(config)
    except settings.ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def run(config: ConfigOption = None) -> None:
    """Run the agent: checks on their schedule, reports spooled and sent. SIGTERM stops it cleanly."""
    raise typer.Exit(run_daemon(config))


@app.command()
def once(
    config: ConfigOption = None,
    output: Annotated[OnceFormat, typer.Option("--output", "-o", help="table or json")] = OnceFormat.table,
) -> None:
    """Run every enabled check now and print the readings; exit 1 if any is a problem."""
    cfg = _load(config)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="runner-agent-once-") as scratch:
        outcomes = [
            run_check(module, _once_config(cfg, module.NAME, Path(scratch)))
            for module in checks.CHECKS
            if cfg.check_config(module.NAME).enabled
        ]
    if output is OnceFormat.json:
        typer.echo(json.dumps([_as_json(o) for o in outcomes], indent=2))
    else:
        _print_table(outcomes)
    if any(o.reading.status is Status.problem for o in outcomes):
        raise typer.Exit(1)


@app.command("config")
def show_config(
    config: ConfigOption = None,
    output: Annotated[ConfigFormat, typer.Option("--output", "-o", help="toml or json")] = ConfigFormat.toml,
) -> None:
    """Print the effective configuration (file + environment + defaults), the token redacted."""
    cfg = _load(config)
    data = settings.redacted(cfg)
    if output is ConfigFormat.json:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(toml_dumps(data), nl=False)


def _once_config(cfg: settings.AgentSettings, name: str, scratch: Path) -> CheckConfig:
    """`once` must not move the daemon's state: the memory check reads a copy of the OOM counter, so
    the kills it shows are still reported by the daemon's next reading."""
    config = cfg.check_config(name)
    if isinstance(config, MemoryConfig) and config.state_dir:
        counter = Path(config.state_dir) / OOM_STATE_FILE
        with contextlib.suppress(OSError):
            shutil.copy(counter, scratch / OOM_STATE_FILE)
        return config.model_copy(update={"state_dir": str(scratch)})
    return config


def _as_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "check": outcome.name,
        "duration_s": round(outcome.duration_s, 4),
        "reading": outcome.reading.model_dump(mode="json", exclude_none=True),
    }


def _print_table(outcomes: list[Outcome]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("CHECK", "STATUS", "REASON", "DURATION", "MESSAGE"):
        table.add_column(column, overflow="fold")
    colours = {Status.ok: "green", Status.problem: "red", Status.unknown: "yellow"}
    for o in outcomes:
        r = o.reading
        table.add_row(
            o.name,
            f"[{colours[r.status]}]{r.status.value}[/]",
            r.reason or "",
            f"{o.duration_s:.2f}s",
            r.message or "",
        )
    Console(width=None if sys.stdout.isatty() else 160).print(table)
