"""The token store: create, look up, list and revoke bearer tokens. Only hashes are kept."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from common.auth import Role, hash_token, new_token, same_secret
from controller.db import tables


@dataclass(frozen=True)
class Principal:
    token_id: int
    name: str
    role: Role
    runner_id: str | None


@dataclass(frozen=True)
class TokenInfo:
    """What `token list` shows of a token: never the token, nor its hash."""

    id: int
    name: str
    role: str
    runner_id: str | None
    created_ms: int
    expires_ms: int | None
    revoked_ms: int | None

    def state(self, now_ms: int) -> str:
        if self.revoked_ms is not None:
            return "revoked"
        if self.expires_ms is not None and self.expires_ms <= now_ms:
            return "expired"
        return "active"


def create_token(
    conn: Connection,
    role: Role,
    name: str,
    runner_id: str | None,
    now_ms: int,
    expires_ms: int | None = None,
) -> str:
    if role is Role.agent and not runner_id:
        raise ValueError("an agent token must name its runner: add --runner ID")
    if expires_ms is not None and expires_ms <= now_ms:
        raise ValueError("the expiry must be in the future")
    token = new_token()
    conn.execute(
        tables.tokens.insert().values(
            name=name,
            role=role.value,
            runner_id=runner_id,
            token_hash=hash_token(token),
            created_ms=now_ms,
            expires_ms=expires_ms,
        )
    )
    return token


def lookup(conn: Connection, token: str, now_ms: int | None = None) -> Principal | None:
    """The token's holder; None for a token unknown, revoked or past its expiry."""
    digest = hash_token(token)
    t = tables.tokens
    now = int(time.time() * 1000) if now_ms is None else now_ms
    live = t.c.revoked_ms.is_(None) & (t.c.expires_ms.is_(None) | (t.c.expires_ms > now))
    row = conn.execute(select(t).where(t.c.token_hash == digest, live)).first()
    if row is None or not same_secret(row.token_hash, digest):
        return None
    return Principal(token_id=row.id, name=row.name, role=Role(row.role), runner_id=row.runner_id)


def list_tokens(conn: Connection) -> list[TokenInfo]:
    t = tables.tokens
    rows = conn.execute(
        select(
            t.c.id, t.c.name, t.c.role, t.c.runner_id, t.c.created_ms, t.c.expires_ms, t.c.revoked_ms
        ).order_by(t.c.id)
    )
    return [TokenInfo(*row) for row in rows]


def revoke_token(conn: Connection, token_id: int, now_ms: int) -> bool | None:
    """Revoke by id: True if revoked now, False if it already was, None if there is no such token."""
    t = tables.tokens
    found = conn.execute(select(t.c.revoked_ms).where(t.c.id == token_id)).first()
    if found is None:
        return None
    if found.revoked_ms is not None:
        return False
    conn.execute(update(t).where(t.c.id == token_id).values(revoked_ms=now_ms))
    return True
