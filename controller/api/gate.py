"""What is refused before a request's body is read: a body declared too large, and a call under /v1/
without a valid bearer token. Bodies that declare no size are cut off at the same limit as they stream.

FastAPI parses a declared body before it runs any dependency, so without this gate an anonymous client
could make the controller read and parse a body (and learn it was malformed) before hearing 401.
Provider webhooks (POST /v1/webhooks/{provider}) are signed instead of carrying a token: the route
checks the signature over the raw body, so the gate lets them through. Buildbot cannot sign; its push
carries a token and is gated like any other call. Once the token is known, its client's limits
(controller/api/limits.py) decide whether the request is served now or answered 429.
"""

from __future__ import annotations

from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.exc import DBAPIError
from starlette.datastructures import Headers
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from controller.api.auth import principal_of
from controller.api.body import too_large
from controller.api.limits import ClientLimits
from controller.metrics import Metrics

GATED_PREFIX = "/v1/"
SIGNED_PREFIX = "/v1/webhooks/"
TOKEN_WEBHOOKS = frozenset({"/v1/webhooks/buildbot"})
PRINCIPAL_KEY = "principal"


def gated(path: str) -> bool:
    """Whether a call to this path must carry a valid token before its body is read."""
    if path.startswith(SIGNED_PREFIX):
        return path in TOKEN_WEBHOOKS
    return path.startswith(GATED_PREFIX)


class Gate:
    def __init__(self, app: ASGIApp, max_body_bytes: int, limits: ClientLimits, metrics: Metrics) -> None:
        # Inside the gate, so that a declared size is refused here with our error shape; Starlette's
        # limiter raises a 413 HTTPException from receive(), which errors.py words like ours.
        self.app = RequestBodyLimitMiddleware(app, max_body_bytes)
        self.max_body_bytes = max_body_bytes
        self.limits = limits
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        admitted: int | None = None
        try:
            declared = headers.get("content-length", "")
            if declared.isascii() and declared.isdigit() and int(declared) > self.max_body_bytes:
                raise too_large(self.max_body_bytes)
            path: str = scope["path"]
            if "\x00" in path or b"%00" in scope["query_string"]:
                # PostgreSQL cannot compare or store a NUL: a runner id or filter holding one is refused.
                raise HTTPException(400, "the URL contains a NUL character (%00): remove it")
            if gated(path):
                engine = scope["app"].state.engine
                principal = await run_in_threadpool(principal_of, engine, headers.get("authorization", ""))
                scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
                refusal = self.limits.admit(principal.token_id, principal.name, principal.role.value)
                if refusal is not None:
                    self.metrics.client_limited.labels(refusal.limit).inc()
                    raise HTTPException(429, refusal.detail, {"Retry-After": str(refusal.retry_after_s)})
                admitted = principal.token_id
        except HTTPException as refused:
            response = JSONResponse(
                {"detail": refused.detail, "errors": []},
                status_code=refused.status_code,
                headers=refused.headers,
            )
            await response(scope, receive, send)
            return
        except DBAPIError as failure:
            # The token lookup met a database outage: answer as the routes do (503 with Retry-After, or
            # 507), through the app's own handler, which re-raises what it does not recognise.
            handler = scope["app"].exception_handlers[DBAPIError]
            response = await handler(Request(scope), failure)
            await response(scope, receive, send)
            return
        if admitted is None:
            await self.app(scope, receive, send)
            return
        self.metrics.in_progress.inc()
        try:
            await self.app(scope, receive, send)
        finally:
            self.limits.release(admitted)
            self.metrics.in_progress.dec()
