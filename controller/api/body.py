"""Reading request bodies with a hard size limit, before anything is parsed."""

from __future__ import annotations

import re
from collections.abc import Sequence
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
    request.state.body_bytes = size  # for the ingest metrics, which see the request after the route
    return b"".join(chunks)


# A NUL inside a JSON string: a \u0000 escape that is not itself escaped (an even run of backslashes
# before it). JSON cannot carry a raw NUL byte, so this finds every one, in one pass at C speed.
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def refuse_nul(body: bytes, records: Sequence[BaseModel], name: str = "record") -> None:
    """PostgreSQL cannot store NUL in text (SQLite can): refuse a batch holding one in a field it
    stores, naming the record and field. One scan of the raw body clears almost every batch; only a
    body with a NUL somewhere (perhaps in a key the models ignore) has its records searched."""
    if _JSON_NUL.search(body) is None:
        return
    for index, record in enumerate(records):
        where = _nul_in(record, "")
        if where is not None:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                detail=f"{name} {index}: {where}: contains NUL (\\u0000), which cannot be stored: remove it",
            )


def _nul_in(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, BaseModel):
        for field in type(value).model_fields:
            found = _nul_in(getattr(value, field), f"{path}.{field}" if path else field)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _nul_in(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def body_size(request: Request) -> int:
    """Bytes the route read, or what the client declared when the route refused before reading."""
    read = getattr(request.state, "body_bytes", None)
    if read is not None:
        return int(read)
    declared = request.headers.get("content-length", "")
    return int(declared) if declared.isdigit() else 0


class TooLarge(HTTPException):
    """Our 413, which names the limit that applied; told apart from Starlette's limiter's bare one."""


def too_large(limit: int) -> TooLarge:
    return TooLarge(
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
