"""`runner-controller serve | migrate | token create`."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from common.auth import Role
from controller.db.engine import default_url, make_engine, normalise_url
from controller.db.schema import SchemaMismatch, ensure_current, migrate, state
from controller.settings import ControllerSettings
from controller.tokens import create_token

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
    db: DbOption = None,
) -> None:
    """Create a token and print it once, alone on stdout. Only its hash is stored."""
    url = _url(db)
    engine = make_engine(url)
    try:
        with _reachable(db, url):
            ensure_current(engine, _shown(db, url))
    except SchemaMismatch as error:
        _fail(str(error))
    try:
        with _reachable(db, url), engine.begin() as conn:
            token = create_token(conn, role, name or f"{role.value}-token", runner, int(time.time() * 1000))
    except ValueError as error:
        _fail(str(error))
    sys.stdout.write(token + "\n")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
