"""How the demo talks: numbered steps, indented detail, spinners while it waits, and the real runnerctl
commands run in front of the operator with their own output."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from runnerctl.output import clean

STEPS = 8


class Narrator:
    def __init__(self, out: Console, status: Console) -> None:
        self.out = out
        self.status_console = status  # spinners on stderr: the story on stdout stays greppable
        self.started = time.monotonic()
        self.server: str | None = None
        self.token: str | None = None

    def title(self, text: str) -> None:
        self.out.print(f"[bold]{escape(text)}[/]")

    def step(self, number: int, name: str, text: str) -> None:
        self.out.print()
        self.out.print(f"[bold cyan]{number}/{STEPS}  {escape(name)}[/]  {escape(clean(text))}")

    def line(self, text: str, style: str | None = None) -> None:
        body = escape(clean(text))
        self.out.print(f"      [{style}]{body}[/]" if style else f"      {body}")

    def ok(self, text: str) -> None:
        self.out.print(f"      [green]✓[/] {escape(clean(text))}")

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        # Only when the story goes to the terminal too: a spinner routes stdout through itself while it
        # spins, which would send a redirected story to the terminal instead.
        if not self.out.is_terminal:
            yield
            return
        with self.status_console.status(what):
            yield

    def runnerctl(self, *args: str) -> None:
        """Show the command, then run the real runnerctl against the demo controller, output untouched."""
        self.out.print(f"      [bold]$ runnerctl {escape(' '.join(_quoted(a) for a in args))}[/]")
        self.out.file.flush()
        sys.stdout.flush()
        env = {k: v for k, v in os.environ.items() if k not in ("RUNNERCTL_CONTEXT", "RUNNERCTL_CONFIG")}
        env |= {"RUNNERCTL_SERVER": self.server or "", "RUNNERCTL_TOKEN": self.token or ""}
        subprocess.run([sys.executable, "-m", "runnerctl.main", *args], env=env, check=False, timeout=60)
        sys.stdout.flush()


def runnerctl_name() -> str:
    """How the operator calls runnerctl: bare when it is on PATH, else the path of this install's script."""
    script = Path(sys.executable).parent / "runnerctl"
    found = shutil.which("runnerctl")
    if not script.exists() or (found is not None and Path(found).resolve() == script.resolve()):
        return "runnerctl"
    with contextlib.suppress(ValueError):
        return str(script.relative_to(Path.cwd()))
    return str(script)


def _quoted(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in " :*?[]") else arg
