"""Shell completion of resource names, asked of the controller the current flags and context point at.

Completion runs on every Tab press, so it asks once, briefly, without retries, and on any failure
offers nothing rather than a traceback or a hang.
"""

from __future__ import annotations

from typing import Any

import typer

from runnerctl.client import Client
from runnerctl.config import resolve

TIMEOUT_S = 2.0


def _client(ctx: typer.Context) -> Client:
    # While completing, the root callback has not run: read its options from the parsed params.
    root = ctx.find_root().params
    target = resolve(root.get("server"), root.get("token"), root.get("context"))
    return Client(target, timeout=TIMEOUT_S, retries=0)


def _names(ctx: typer.Context, path: str, name_of: Any, incomplete: str) -> list[str]:
    try:
        items = _client(ctx).get(path)["items"]
        names = sorted({str(name_of(item)) for item in items})
    except Exception:
        return []
    return [name for name in names if name.startswith(incomplete)]


def runner_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    return _names(ctx, "/v1/runners", lambda r: r["identity"]["id"], incomplete)


def incident_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    return _names(ctx, "/v1/incidents", lambda i: i["id"], incomplete)
