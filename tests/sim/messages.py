"""Failure messages by family, as a CI log would show them: enough to read, not a label to cheat with."""

from __future__ import annotations

import numpy as np

MESSAGES: dict[str, tuple[str, ...]] = {
    "disk": (
        "OSError: [Errno 28] No space left on device: '/work/_temp/{n}'",
        "sqlite3.OperationalError: database or disk is full",
        "fixture 'tmp_path' error: OSError: [Errno 28] No space left on device",
        "zipfile.BadZipFile: File is not a zip file (truncated write)",
        "AssertionError: expected 4096 bytes written, got {n}",
    ),
    "memory": (
        "MemoryError",
        "Worker exited unexpectedly: killed by signal 9 (SIGKILL)",
        "subprocess.CalledProcessError: Command '['cc', '-O2']' died with <Signals.SIGKILL: 9>.",
        "Timeout: test exceeded 300s (host swapping)",
    ),
    "clock": (
        "jwt.exceptions.ImmatureSignatureError: The token is not yet valid (iat)",
        "ssl.SSLCertVerificationError: certificate verify failed: certificate is not yet valid",
        "AssertionError: expected expiry in 3600s, got {n}s",
        "botocore.exceptions.ClientError: RequestTimeTooSkewed",
    ),
    "cache": (
        "ImportError: cannot import name 'Schema' from 'pkg.models' (stale build cache)",
        "RuntimeError: checksum mismatch for cached artifact build/{n}.o",
        "ModuleNotFoundError: No module named 'pkg._speedups'",
        "error: linking failed: undefined reference to `vtable for Parser'",
    ),
    "unknown": (
        "ImportError: libssl.so.3: cannot open shared object file: No such file or directory",
        "FileNotFoundError: [Errno 2] No such file or directory: 'git-lfs'",
        "AssertionError: unexpected locale 'POSIX'",
        "RuntimeError: toolchain version mismatch: expected 13.2, found 12.3",
    ),
    "outage": (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='artifacts.internal', port=443): "
        "Max retries exceeded",
        "socket.gaierror: [Errno -3] Temporary failure in name resolution",
        "grpc.RpcError: StatusCode.UNAVAILABLE: failed to connect to all addresses",
        "TimeoutError: timed out fetching https://registry.internal/v2/",
    ),
    "flaky": (
        "AssertionError: condition not met within 5.0s",
        "AssertionError: assert ['b', 'a'] == ['a', 'b']",
        "TimeoutError: worker did not respond within 2s",
        "AssertionError: expected 3 events, got 2",
    ),
    "broken": (
        "AssertionError: expected status 200, got 500",
        "TypeError: parse() got an unexpected keyword argument 'strict'",
    ),
    "platform": (
        "NotImplementedError: os.fork is not available on this platform",
        "AssertionError: path separator mismatch",
    ),
    "interaction": (
        "UnicodeDecodeError: 'ascii' codec can't decode byte 0xc3 in position {n}",
        "PermissionError: [Errno 13] Permission denied: '/opt/tool/cache'",
    ),
    "base": ("AssertionError", "AssertionError: assert 0.30000000000000004 == 0.3", "KeyError: 'id'"),
    "abort": ("The runner has lost communication with the server. The job was cancelled.",),
}


def pick(family: str, rng: np.random.Generator) -> str:
    options = MESSAGES.get(family, MESSAGES["base"])
    text = options[int(rng.integers(0, len(options)))]
    return text.replace("{n}", str(int(rng.integers(1, 5000))))
