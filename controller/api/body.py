"""Reading request bodies with a hard size limit, before anything is parsed."""

from __future__ import annotations

from fastapi import HTTPException, Request, status


async def read_bounded(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            # Stop reading: a client that lies about Content-Length still cannot make us buffer more.
            raise _too_large(limit)
        chunks.append(chunk)
    request.state.body_bytes = size  # for the ingest metrics, which see the request after the route
    return b"".join(chunks)


def body_size(request: Request) -> int:
    """Bytes the route read, or what the client declared when the route refused before reading."""
    read = getattr(request.state, "body_bytes", None)
    if read is not None:
        return int(read)
    declared = request.headers.get("content-length", "")
    return int(declared) if declared.isdigit() else 0


def _too_large(limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_413_CONTENT_TOO_LARGE,
        detail=f"request body exceeds the limit of {limit} bytes; split it into smaller batches",
    )
