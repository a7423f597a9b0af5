"""`runnerctl version`."""

from __future__ import annotations

import typer

from runnerctl import __version__
from runnerctl.examples import examples

EPILOG = examples("runnerctl version")


def version() -> None:
    """Print the client version."""
    typer.echo(f"runnerctl {__version__}")
