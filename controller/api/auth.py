"""Bearer-token authentication and role checks as FastAPI dependencies."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import HTTPException, Request, status
from sqlalchemy.engine import Engine

from common.auth import Role
from controller.tokens import Principal, lookup

READ_ROLES = (Role.read, Role.operator, Role.admin)
OPERATE_ROLES = (Role.operator, Role.admin)
INGEST_ROLES = (Role.ingest, Role.admin)
REPORT_ROLES = (Role.agent, Role.ingest, Role.admin)


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(status.HTTP_401_UNAUTHORIZED, detail=message, headers={"WWW-Authenticate": "Bearer"})


def principal_of(engine: Engine, header: str) -> Principal:
    """Who sends this Authorization header; 401 when nobody we know. Messages never echo the token."""
    scheme, _, token = header.partition(" ")
    if not header:
        raise _unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("malformed Authorization header: expected 'Bearer <token>'")
    with engine.connect() as conn:
        principal = lookup(conn, token.strip())
    if principal is None:
        raise _unauthorized("unknown or revoked token")
    return principal


def authenticate(request: Request) -> Principal:
    # The gate (controller/api/gate.py) has already authenticated most calls before their body was read.
    known: Principal | None = getattr(request.state, "principal", None)
    if known is not None:
        return known
    return principal_of(request.app.state.engine, request.headers.get("authorization", ""))


def require(*roles: Role) -> Callable[[Request], Principal]:
    allowed = frozenset(roles)
    names = ", ".join(sorted(r.value for r in allowed))

    def dependency(request: Request) -> Principal:
        principal = authenticate(request)
        if principal.role not in allowed:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                detail=f"role '{principal.role.value}' may not do this; needs one of: {names}",
            )
        return principal

    return dependency
