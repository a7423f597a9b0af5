"""`runnerctl demo`: start a real controller on SQLite, feed it a small fleet with one sick runner, and
show it judge, drain, rerun and clear — then leave it running for the operator to explore."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from runnerctl.demo.narrate import Narrator
from runnerctl.demo.walkthrough import Options, run
from runnerctl.demo.workdir import DemoError
from runnerctl.examples import examples
from runnerctl.output import fail, stderr, stdout

EPILOG = examples(
    "runnerctl demo",
    "runnerctl demo --dir /tmp/demo --port 0 --exit",
)


def demo(
    directory: Annotated[
        Path, typer.Option("--dir", help="where the demo keeps its database, logs and history")
    ] = Path("runnerctl-demo"),
    port: Annotated[
        int | None,
        typer.Option("--port", help="controller port; default 8080 (another if taken); 0: any free port"),
    ] = None,
    exit_after: Annotated[
        bool,
        typer.Option("--exit", help="stop the controller when the walkthrough ends (for scripts and tests)"),
    ] = False,
) -> None:
    """Run the whole product on this machine in under a minute: a real runner-controller on SQLite, a
    simulated pool of six runners (one whose disk fills), a local stand-in for the CI provider, and
    the verdict, drain, reruns and flake clearances as they happen. The controller then keeps running
    for you to explore, until Ctrl-C. Nothing outside the demo directory and loopback is touched.
    """
    if port is not None and not 0 <= port <= 65535:
        raise typer.BadParameter("must be between 0 and 65535", param_hint="--port")
    # SIGTERM ends the demo as Ctrl-C does: through the clean-up that stops the controller it started.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        run(Options(directory=directory, port=port, stay=not exit_after), Narrator(stdout, stderr))
    except DemoError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt:
        stderr.print("interrupted: the controller and the CI stand-in were stopped")
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt
