"""Reading request bodies with a hard size limit, before anything is parsed."""

from __future__ import annotations

from fastapi import HTTPException, Request, status


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
