"""What every command gets from the root: where the controller is and a client for it."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from runnerctl.client import Client
from runnerctl.config import resolve


@dataclass
class Globals:
    server: str | None
    token: str | None
    context: str | None

    def client(self) -> Client:
        return Client(resolve(self.server, self.token, self.context))


def client_of(ctx: typer.Context) -> Client:
    root = ctx.find_root().obj
    assert isinstance(root, Globals)
    return root.client()
