"""A TOML writer for the agent's own configuration shape (tables of scalars, lists and sub-tables);
the standard library reads TOML but cannot write it."""

from __future__ import annotations

import json
from typing import Any


def dumps(data: dict[str, Any]) -> str:
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(data: dict[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    if path and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
    for key, value in scalars.items():
        if value is None:
            lines.append(f"# {_key(key)} is not set")
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in tables.items():
        _table(value, [*path, key], lines)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # JSON string escapes are valid TOML basic strings
