"""The token store: create, look up and revoke bearer tokens. Only hashes are kept."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Connection

from common.auth import Role, hash_token, new_token, same_secret
from controller.db import tables


@dataclass(frozen=True)
class Principal:
    token_id: int
    name: str
    role: Role
    runner_id: str | None


def create_token(conn: Connection, role: Role, name: str, runner_id: str | None, now_ms: int) -> str:
    if role is Role.agent and not runner_id:
        raise ValueError("an agent token must name its runner: add --runner ID")
    token = new_token()
    conn.execute(
        tables.tokens.insert().values(
            name=name, role=role.value, runner_id=runner_id, token_hash=hash_token(token), created_ms=now_ms
        )
    )
    return token


def lookup(conn: Connection, token: str) -> Principal | None:
    digest = hash_token(token)
    t = tables.tokens
    row = conn.execute(select(t).where(t.c.token_hash == digest, t.c.revoked_ms.is_(None))).first()
    if row is None or not same_secret(row.token_hash, digest):
        return None
    return Principal(token_id=row.id, name=row.name, role=Role(row.role), runner_id=row.runner_id)
