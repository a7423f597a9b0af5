"""Secrets kept out of uvicorn's access log, which writes every request's path with its query string.

A client that puts its token in the URL (`?token=…`) is refused, but the line recording that refusal
would keep the secret in the log for anyone who reads it, and in every log shipper after it.
"""

from __future__ import annotations

import logging
import re

# Query parameters that carry a secret in the clients and providers we know of, by name.
_SECRET_PARAMETER = re.compile(
    r"([?&;](?:[a-z_]*token|api[_-]?key|key|password|passwd|secret|signature|sig|auth|authorization)=)"
    r"[^&;#\s]*",
    re.IGNORECASE,
)
# A runnerctl token anywhere else in the line (in the path, under a parameter of any name).
_OUR_TOKEN = re.compile(r"rct_[A-Za-z0-9_-]+")
REDACTED = "<redacted>"


def redact(text: str) -> str:
    return _OUR_TOKEN.sub(REDACTED, _SECRET_PARAMETER.sub(r"\1" + REDACTED, text))


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in record.args)
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def redact_access_log() -> None:
    """Attach the filter to uvicorn's access logger; call after uvicorn has configured logging."""
    logging.getLogger("uvicorn.access").addFilter(RedactSecrets())
