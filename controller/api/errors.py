"""One error shape for every API failure: `{"detail": "<what and how to fix>", "errors": [...]}`."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY
from starlette.requests import ClientDisconnect

from controller.api.body import too_large


class Error(BaseModel):
    """How the OpenAPI description shows every error answer."""

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
    _describe_errors(app)

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
        if exc.status_code == 413 and MAX_BODY_SIZE_SCOPE_KEY in request.scope:
            # Starlette's body limiter says only "Content Too Large": name the limit, as read_bounded does.
            detail = too_large(request.scope[MAX_BODY_SIZE_SCOPE_KEY]).detail
        return JSONResponse(
            {"detail": detail, "errors": []}, status_code=exc.status_code, headers=exc.headers
        )


def _describe_errors(app: FastAPI) -> None:
    """Make the OpenAPI description say what the handlers above send: FastAPI documents its own 422
    shape, and no other error at all, so fuzzers and client generators would expect something else."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            reference = {"$ref": "#/components/schemas/Error"}
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components["Error"] = Error.model_json_schema()
            for name in ("HTTPValidationError", "ValidationError"):
                components.pop(name, None)
            for operations in schema["paths"].values():
                for operation in operations.values():
                    responses = operation["responses"]
                    if "422" in responses:
                        responses["422"]["content"] = {"application/json": {"schema": reference}}
                    responses["default"] = {
                        "description": "Any error: 400, 401, 403, 404, 408, 409, 413, 422, 503",
                        "content": {"application/json": {"schema": reference}},
                    }
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
