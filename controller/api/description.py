"""What the OpenAPI description says beyond what FastAPI infers: that every error comes in our shape
(FastAPI documents its own 422 body and no other error), and that no string may hold a NUL (the gate
and the body readers refuse it, because PostgreSQL cannot store it). Fuzzers and client generators
read the description; where it says less than the API does, they expect the wrong thing."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from controller.api.errors import Error

NO_NUL = "^[^\\u0000]*$"
_ERROR = {"$ref": "#/components/schemas/Error"}


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):
                components.pop(name, None)
            _forbid_nul(schema)
            components["Error"] = Error.model_json_schema()
            for operations in schema["paths"].values():
                for operation in operations.values():
                    _document_errors(operation["responses"])
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _document_errors(responses: dict[str, Any]) -> None:
    if "422" in responses:
        responses["422"]["content"] = {"application/json": {"schema": _ERROR}}
    responses["default"] = {
        "description": "Any error: 400, 401, 403, 404, 408, 409, 413, 422, 503",
        "content": {"application/json": {"schema": _ERROR}},
    }


def _forbid_nul(node: Any) -> None:
    """Every string the API reads, in bodies and parameters, gets a pattern without NUL."""
    if isinstance(node, dict):
        if node.get("type") == "string" and "pattern" not in node and "enum" not in node:
            node["pattern"] = NO_NUL
        for value in node.values():
            _forbid_nul(value)
    elif isinstance(node, list):
        for item in node:
            _forbid_nul(item)
