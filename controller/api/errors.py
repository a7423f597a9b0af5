"""One error shape for every API failure: `{"detail": "<what and how to fix>", "errors": [...]}`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY
from starlette.requests import ClientDisconnect

from controller.api.body import TooLarge, too_large
from controller.db.failures import classify

log = logging.getLogger(__name__)
# How long a sender should wait before resending after a database failure; agents back off on their own.
RETRY_AFTER_S = 5
# After a full disk: space comes back by an operator's hand, not in seconds (agents cap their own backoff
# at 60 s and keep their reports spooled meanwhile).
DISK_FULL_RETRY_AFTER_S = 30


class Error(BaseModel):
    """Every error answer, as the OpenAPI description shows it."""

    detail: str = Field(description="what is wrong and how to fix it")
    errors: list[dict[str, Any]] = Field(description="per field: loc, msg, type (validation errors only)")


class ApiError(Exception):
    def __init__(self, status: int, detail: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.errors = errors or []


def invalid_input(
    error: ValidationError, prefix: tuple[str | int, ...] = ("body",), what: str = ""
) -> ApiError:
    """A 422 whose message names the first bad field, e.g. `record 3: outcome: Input should be ...`."""
    errors = [
        {"loc": [*prefix, *item["loc"]], "msg": item["msg"], "type": item["type"]} for item in error.errors()
    ]
    first = error.errors()[0]
    return ApiError(422, f"{what}{describe_loc(first['loc'])}: {first['msg']}", errors)


def describe_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and not parts:
            parts.append(f"record {item}")
        elif isinstance(item, int):
            parts[-1] = f"{parts[-1]}[{item}]"
        else:
            parts.append(str(item) if not parts or parts[-1].startswith("record") else f".{item}")
    text = ""
    for part in parts:
        if part.startswith("."):
            text += part
        elif text:
            text += f": {part}"
        else:
            text = part
    return text or "body"


def install(app: FastAPI) -> None:

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"detail": exc.detail, "errors": exc.errors}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        first = errors[0] if errors else {"loc": ["request"], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        return JSONResponse({"detail": f"{where}: {first['msg']}", "errors": errors}, status_code=422)

    @app.exception_handler(ClientDisconnect)
    async def _gone(_request: Request, _exc: ClientDisconnect) -> Response:
        # The client hung up (or the server cut off a late request) mid-body: nobody reads this answer,
        # and it is not a server error worth a traceback.
        return Response(status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail
        if (
            exc.status_code == 413
            and MAX_BODY_SIZE_SCOPE_KEY in request.scope
            and not isinstance(exc, TooLarge)
        ):
            # Starlette's body limiter says only "Content Too Large": name the limit, as read_bounded does.
            # Not over our own 413, which already names the route's limit (1 MiB for webhooks).
            detail = too_large(request.scope[MAX_BODY_SIZE_SCOPE_KEY]).detail
        return JSONResponse(
            {"detail": detail, "errors": []}, status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(DBAPIError)
    async def _database(request: Request, exc: DBAPIError) -> JSONResponse:
        failure = classify(exc, request.app.state.engine)
        if failure is None:
            raise exc  # not the database's condition but our bug: a 500 with its traceback in the log
        # One line per request, not a traceback: an outage would otherwise bury the log.
        log.warning("%s %s: %s", request.method, request.url.path, failure.message)
        if failure.disk_full:
            detail = f"{failure.message}: nothing was stored from this request; free space there, then resend"
            return JSONResponse(
                {"detail": detail, "errors": []},
                status_code=507,
                headers={"Retry-After": str(DISK_FULL_RETRY_AFTER_S)},
            )
        return JSONResponse(
            {"detail": f"{failure.message}: nothing was stored from this request; retry later", "errors": []},
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
