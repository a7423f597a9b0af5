"""`runnerctl version`."""

from __future__ import annotations

import typer

from runnerctl import __version__


def version() -> None:
    """Print the client version."""
    typer.echo(f"runnerctl {__version__}")
