"""`runner-controller serve | migrate | token create | token list | token revoke`."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError

from common.auth import Role
from common.timeutil import iso
from controller.db.engine import default_url, make_engine, normalise_url
from controller.db.schema import SchemaMismatch, ensure_current, migrate, state
from controller.settings import ControllerSettings
from controller.tokens import create_token, list_tokens, revoke_token

app = typer.Typer(no_args_is_help=True, add_completion=False, help="The runnerctl controller service.")
token_app = typer.Typer(no_args_is_help=True, help="Manage API tokens.")
app.add_typer(token_app, name="token")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="database URL (postgresql://… or a SQLite path); default: ./runnerctl.db"),
]


def _url(db: str | None) -> str:
    return normalise_url(db or ControllerSettings().db or default_url())


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _shown(db: str | None, url: str) -> str:
    """The database as the operator named it, minus any password (errors end up in logs)."""
    if db and "://" not in db:
        return db
    return make_url(db or url).render_as_string(hide_password=True)


@contextmanager
def _reachable(db: str | None, url: str) -> Iterator[None]:
    """An unreachable server or unopenable file is one `error:` line, not a traceback."""
    try:
        yield
    except OperationalError as error:
        reason = str(error.orig or error).strip().splitlines()[0]
        _fail(f"cannot open database {_shown(db, url)}: {reason} (check --db, and that the server is up)")


@app.command()
def serve(
    db: DbOption = None,
    host: Annotated[str | None, typer.Option(help="address to bind")] = None,
    port: Annotated[int | None, typer.Option(help="port to listen on")] = None,
) -> None:
    """Serve the API. A new, empty database is migrated; any other version must be migrated first."""
    from controller.api.app import create_app
    from controller.server import serve as serve_http

    overrides = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
    settings = ControllerSettings(**overrides)  # type: ignore[arg-type]
    url = _url(db)
    engine = make_engine(url)
    try:
        with _reachable(db, url):
            ensure_current(engine, _shown(db, url))
    except SchemaMismatch as error:
        _fail(str(error))
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    serve_http(create_app(engine, settings), settings)


@app.command("migrate")
def migrate_command(db: DbOption = None) -> None:
    """Apply the database migrations up to this version's schema."""
    url = _url(db)
    engine = make_engine(url)
    with _reachable(db, url):
        before = state(engine)
        migrate(engine)
        after = state(engine)
    if before.current == after.current:
        typer.echo(f"database already at {after.current}")
    else:
        typer.echo(f"migrated database from {before.current or 'empty'} to {after.current}")


@token_app.command("create")
def token_create(
    role: Annotated[Role, typer.Option("--role", help="agent, ingest, read, operator or admin")],
    runner: Annotated[
        str | None, typer.Option("--runner", help="runner id (required for agent tokens)")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="a note saying whose token this is")] = None,
    expires_in: Annotated[
        str | None,
        typer.Option(
            "--expires-in", help="stop working after this long: 90d, 12h, 30m or 3600s (default: never)"
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Create a token and print it once, alone on stdout. Only its hash is stored."""
    lifetime_s = _duration_s(expires_in) if expires_in is not None else None
    engine, url = _current_engine(db)
    now_ms = int(time.time() * 1000)
    expires_ms = None if lifetime_s is None else now_ms + round(lifetime_s * 1000)
    try:
        with _reachable(db, url), engine.begin() as conn:
            token = create_token(conn, role, name or f"{role.value}-token", runner, now_ms, expires_ms)
    except ValueError as error:
        _fail(str(error))
    sys.stdout.write(token + "\n")


@token_app.command("list")
def token_list(db: DbOption = None) -> None:
    """List the tokens: id, name, role, runner, when created and when they expire, and their state.
    Never the tokens themselves: only their hashes are stored."""
    engine, url = _current_engine(db)
    with _reachable(db, url), engine.connect() as conn:
        tokens = list_tokens(conn)
    if not tokens:
        typer.echo("No resources found", err=True)
        return
    now_ms = int(time.time() * 1000)
    rows = [
        (
            str(t.id),
            t.name,
            t.role,
            t.runner_id or "-",
            iso(t.created_ms) or "-",
            iso(t.expires_ms) or "never",
            t.state(now_ms),
        )
        for t in tokens
    ]
    header = ("ID", "NAME", "ROLE", "RUNNER", "CREATED", "EXPIRES", "STATE")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        typer.echo("   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[int, typer.Argument(metavar="ID", help="the token's id, as `token list` shows it")],
    db: DbOption = None,
) -> None:
    """Revoke a token: every request carrying it is refused (401) from now on, on every replica."""
    engine, url = _current_engine(db)
    with _reachable(db, url), engine.begin() as conn:
        revoked = revoke_token(conn, token_id, int(time.time() * 1000))
    if revoked is None:
        _fail(f"no token with id {token_id}: see `runner-controller token list`")
    typer.echo(f"token/{token_id} revoked" if revoked else f"token/{token_id} already revoked")


def _current_engine(db: str | None) -> tuple[Engine, str]:
    url = _url(db)
    engine = make_engine(url)
    try:
        with _reachable(db, url):
            ensure_current(engine, _shown(db, url))
    except SchemaMismatch as error:
        _fail(str(error))
    return engine, url


_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# The same ceiling as a cordon's expiry: a time the controller can store and print.
_MAX_LIFETIME_S = 10 * 365 * 86400


def _duration_s(text: str) -> float:
    number, unit = text[:-1], text[-1:].lower()
    if unit not in _UNITS_S or not number.isdigit() or int(number) == 0:
        raise typer.BadParameter(
            f"{text!r}: give a whole number of s, m, h or d, e.g. 90d", param_hint="--expires-in"
        )
    seconds = int(number) * _UNITS_S[unit]
    if seconds > _MAX_LIFETIME_S:
        raise typer.BadParameter(f"{text!r}: at most 3650d", param_hint="--expires-in")
    return float(seconds)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
