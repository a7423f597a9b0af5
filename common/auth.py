"""Token and signature helpers shared by the controller and its clients.

Tokens are 256-bit random strings; the controller stores only their SHA-256. A fast hash is right
here (unlike for passwords) because the secret has full entropy: there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from enum import StrEnum

TOKEN_PREFIX = "rct_"  # noqa: S105 - a marker that makes leaked tokens greppable, not a secret


class Role(StrEnum):
    agent = "agent"  # posts reports for its own runner identity only
    ingest = "ingest"  # posts results, JUnit, reports and webhooks for any runner
    read = "read"  # reads everything
    operator = "operator"  # reads, cordons, uncordons, drains
    admin = "admin"  # everything


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_secret(a: str | bytes, b: str | bytes) -> bool:
    """Constant-time comparison, so a timing side channel cannot reveal a secret byte by byte."""
    left = a.encode("utf-8") if isinstance(a, str) else a
    right = b.encode("utf-8") if isinstance(b, str) else b
    return hmac.compare_digest(left, right)


def hmac_sha256_hex(secret: str | bytes, body: bytes) -> str:
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def redact(token: str | None) -> str:
    """What a log line may say about a token: its prefix and nothing that helps guess it."""
    if not token:
        return "<none>"
    return token[:6] + "…"
