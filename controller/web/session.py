"""Browser sessions for the fleet page: a login form takes an API token, a cookie carries it.

A browser cannot send a Bearer header, so the page accepts the same tokens through a form and keeps
the token in an HttpOnly, SameSite=Strict cookie; every request looks it up again, so a revoked token
stops working at once, and the role check is the API's read check. Only the page reads the cookie: the
API stays Bearer-only, so a cookie never authorises a change.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fastapi import Request, Response

from controller.api.auth import READ_ROLES
from controller.api.body import read_bounded
from controller.tokens import Principal, lookup

COOKIE = "runnerctl_session"
MAX_FORM_BYTES = 4096


class LoginRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def reader(request: Request) -> Principal | None:
    """Who the session cookie names, if that token is live and may read; None otherwise."""
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    principal = _lookup(request, token)
    if principal is None or principal.role not in READ_ROLES:
        return None
    return principal


async def login(request: Request) -> tuple[Principal, str]:
    """Check a submitted login form; the principal and the token to keep, or LoginRefused."""
    if not same_origin(request):
        raise LoginRefused(403, "login refused: the form was posted from another site")
    body = await read_bounded(request, MAX_FORM_BYTES)
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=4)
    except (UnicodeDecodeError, ValueError) as error:
        raise LoginRefused(400, "login refused: the form could not be read") from error
    token = (fields.get("token") or [""])[0].strip()
    if not token:
        raise LoginRefused(400, "enter an API token (runner-controller token create --role read)")
    principal = _lookup(request, token)
    if principal is None:
        raise LoginRefused(401, "unknown or revoked token")
    if principal.role not in READ_ROLES:
        names = ", ".join(sorted(r.value for r in READ_ROLES))
        raise LoginRefused(
            403, f"role '{principal.role.value}' may not read the fleet page; needs one of: {names}"
        )
    return principal, token


def same_origin(request: Request) -> bool:
    """A form post must come from this page: browsers send Origin on POST, and a missing one (an old
    client, curl) is let through since the token alone is what authenticates."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def keep(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


def forget(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


def _lookup(request: Request, token: str) -> Principal | None:
    with request.app.state.engine.connect() as conn:
        return lookup(conn, token)
