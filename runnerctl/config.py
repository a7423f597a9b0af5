"""Where the controller is and how to authenticate: flags, then RUNNERCTL_* env, then the config file.

The file (`~/.config/runnerctl/config.toml`, or `RUNNERCTL_CONFIG`) holds named contexts::

    current-context = "prod"
    [contexts.prod]
    server = "https://controller.example:8080"
    token = "rct_..."
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from error


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
    resolved_server = server or os.environ.get("RUNNERCTL_SERVER") or ctx.get("server")
    resolved_token = token or os.environ.get("RUNNERCTL_TOKEN") or ctx.get("token")
    if not resolved_server:
        raise ConfigError(
            "no controller configured: pass --server URL, set RUNNERCTL_SERVER, "
            "or run `runnerctl config set-context NAME --server URL --token T`"
        )
    return Target(server=resolved_server.rstrip("/"), token=resolved_token)
