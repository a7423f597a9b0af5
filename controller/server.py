"""How the API is served: uvicorn's h11 protocol with deadlines for slow or stalled clients.

uvicorn times out idle keep-alive connections but nothing else: a client that opens a connection and
sends its request a byte at a time (or never finishes a body) holds it, and a file descriptor, forever;
one whose body we refused early (401, 413) may go on sending it, and uvicorn reads and discards it for
as long as it likes. Here every request must arrive, headers within `header_timeout_s` and whole within
`request_timeout_s` of its first byte; a late one gets 408 and the connection is closed. After an answer
sent before the body was read, the rest of the body is discarded for at most `LINGER_S`, then the
connection is closed (closing at once could reset it before the client has read the answer).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import h11
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from controller.access_log import redact_access_log
from controller.settings import ControllerSettings

LINGER_S = 2.0


class DeadlineH11Protocol(H11Protocol):
    header_timeout_s = 10.0
    request_timeout_s = 60.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._started = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._begin()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._begin()
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.SEND_BODY:
            # Answered before the body was read: discard the rest briefly, then hang up.
            self._arm(LINGER_S)
        else:
            self._follow()

    def _begin(self) -> None:
        self._started = time.monotonic()
        self._arm(self.header_timeout_s)

    def _follow(self) -> None:
        """Move the deadline along as the request arrives: whole-request once its headers are in."""
        state = self.conn.their_state
        if state is h11.SEND_BODY and self.cycle is not None and not self.cycle.response_complete:
            self._arm(self._started + self.request_timeout_s - time.monotonic())
        elif state is not h11.IDLE and state is not h11.SEND_BODY:
            self._cancel()
        elif state is h11.IDLE and self.cycle is not None and self.cycle.response_complete:
            self._cancel()  # between requests: uvicorn's keep-alive timeout takes over

    def _arm(self, delay: float) -> None:
        self._cancel()
        self._deadline = self.loop.call_later(max(delay, 0.0), self._expired)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_timeout_response(self.header_timeout_s, self.request_timeout_s))
        self.logger.info("closed a connection whose request did not arrive in time (client %s)", self.client)
        self.transport.close()


def _timeout_response(header_timeout_s: float, request_timeout_s: float) -> bytes:
    body = json.dumps(
        {
            "detail": f"request not received in time: headers are due within {header_timeout_s:g} s and "
            f"the whole request within {request_timeout_s:g} s",
            "errors": [],
        }
    ).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def protocol_for(settings: ControllerSettings) -> type[DeadlineH11Protocol]:
    return type(
        "ControllerH11Protocol",
        (DeadlineH11Protocol,),
        {"header_timeout_s": settings.header_timeout_s, "request_timeout_s": settings.request_timeout_s},
    )


def serve(app: FastAPI, settings: ControllerSettings) -> None:
    import uvicorn

    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        http=protocol_for(settings),
    )
    # After the Config: creating it configures uvicorn's loggers.
    redact_access_log()
    uvicorn.Server(config).run()
