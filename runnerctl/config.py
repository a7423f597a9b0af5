"""Where the controller is and how to authenticate: flags, then RUNNERCTL_* env, then the config file.

The file (`~/.config/runnerctl/config.toml`, or `RUNNERCTL_CONFIG`) holds named contexts::

    current-context = "prod"
    [contexts.prod]
    server = "https://controller.example:8080"
    token = "rct_..."              # or: token-file = "/run/secrets/runnerctl-token"

It holds secrets, so it is only ever written whole, with mode 0600, through a rename.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import tomli_w


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    server: str
    token: str | None


def config_path() -> Path:
    explicit = os.environ.get("RUNNERCTL_CONFIG")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "runnerctl" / "config.toml"


def load_file(path: Path | None = None) -> dict[str, Any]:
    path = path or config_path()
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from error
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from error
    if not isinstance(data.get("contexts", {}), dict):
        raise ConfigError(f"cannot read {path}: 'contexts' must be a table of named contexts")
    return data


def save_file(data: dict[str, Any], path: Path | None = None) -> Path:
    """Replace the file atomically: a crash leaves the old file or the new one, never half of either."""
    path = path or config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "wb") as out:
            tomli_w.dump(data, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a power cut
    finally:
        os.close(dir_fd)
    return path


def token_of(context: dict[str, Any]) -> str | None:
    """A context's token: inline, or read from its token file (which may be rotated under us)."""
    if context.get("token"):
        return str(context["token"])
    token_file = context.get("token-file")
    if not token_file:
        return None
    try:
        return Path(token_file).expanduser().read_text(encoding="utf-8").strip() or None
    except OSError as error:
        raise ConfigError(f"cannot read the token file {token_file}: {error.strerror}") from error


def resolve(server: str | None, token: str | None, context: str | None = None) -> Target:
    data = load_file()
    name = context or os.environ.get("RUNNERCTL_CONTEXT") or data.get("current-context")
    ctx: dict[str, Any] = {}
    if name:
        contexts = data.get("contexts", {})
        if name not in contexts:
            known = ", ".join(sorted(contexts)) or "none"
            raise ConfigError(f"context '{name}' not found in {config_path()} (known: {known})")
        ctx = contexts[name]
    sources = (
        (server, "--server"),
        (os.environ.get("RUNNERCTL_SERVER"), "RUNNERCTL_SERVER"),
        (ctx.get("server"), f"context '{name}'"),
    )
    resolved_server, source = next(((str(v), where) for v, where in sources if v), (None, ""))
    resolved_token = token or os.environ.get("RUNNERCTL_TOKEN") or token_of(ctx)
    if not resolved_server:
        raise ConfigError(
            "no controller configured: pass --server URL, set RUNNERCTL_SERVER, "
            "or run `runnerctl config set-context NAME --server URL --token T`"
        )
    return Target(server=checked_url(resolved_server, source).rstrip("/"), token=resolved_token)


def checked_url(url: str, source: str) -> str:
    """The controller's URL as given, or an error naming what is wrong and where it came from: requests
    would otherwise fail deep inside with a traceback (`InvalidSchema`) for `127.0.0.1:8080`."""
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or "://" not in url:
        hint = f"http://{url.split('://', 1)[-1]}"
        raise ConfigError(f"{source} {url!r} is not an http:// or https:// URL: use e.g. {hint!r}")
    if not parsed.hostname:
        raise ConfigError(f"{source} {url!r} names no host: use e.g. 'http://127.0.0.1:8080'")
    try:
        parsed.port  # noqa: B018 -- raises on a port that is not a number in range
    except ValueError:
        raise ConfigError(f"{source} {url!r} has a port that is not a number from 1 to 65535") from None
    return url
