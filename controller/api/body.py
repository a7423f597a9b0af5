"""Reading request bodies with a hard size limit, before anything is parsed."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request, status
from pydantic import BaseModel


async def read_bounded(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            # Stop reading: a client that lies about Content-Length still cannot make us buffer more.
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def too_large(limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_413_CONTENT_TOO_LARGE,
        detail=f"request body exceeds the limit of {limit} bytes; split it into smaller batches",
    )


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a body read by hand, for `openapi_extra`, with pydantic's `$defs` inlined:
    there its "#/$defs/..." references would point at nothing in the OpenAPI document."""
    schema = model.model_json_schema()
    definitions: dict[str, Any] = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                rest = {key: inline(value) for key, value in node.items() if key != "$ref"}
                return inline(definitions[reference.removeprefix("#/$defs/")]) | rest
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined
