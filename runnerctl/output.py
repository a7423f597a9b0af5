"""Printing resources the kubectl way: -o table|wide|json|yaml|name, data on stdout, notes on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

FORMATS = ("table", "wide", "json", "yaml", "name")

# Piped output is for scripts and greps: never fold a table to an 80-column guess.
stdout = Console(soft_wrap=True, highlight=False, width=None if sys.stdout.isatty() else 1000)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[dict[str, Any]], Any]
    wide_only: bool = False


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise typer.BadParameter(
            f"unknown output format '{fmt}'; allowed: {', '.join(FORMATS)}", param_hint="-o"
        )
    return fmt


def emit(
    items: Sequence[dict[str, Any]],
    fmt: str,
    columns: Sequence[Column],
    kind: str,
    name_of: Callable[[dict[str, Any]], str],
    *,
    single: bool = False,
    header: bool = True,
    widths: list[int] | None = None,
) -> list[int]:
    """Print items in the format asked for; returns the table's column widths, so that rows printed
    later (a watch) line up under the first table."""
    if fmt == "json":
        sys.stdout.write(
            json.dumps(items[0] if single and items else list(items), indent=2, ensure_ascii=False) + "\n"
        )
        return []
    if fmt == "yaml":
        sys.stdout.write(
            yaml.safe_dump(items[0] if single and items else list(items), sort_keys=False, allow_unicode=True)
        )
        return []
    if not items:
        if header:
            stderr.print("No resources found")
        return widths or []
    if fmt == "name":
        for item in items:
            # An empty kind prints bare names: lists other tools read (a quarantine file).
            sys.stdout.write(f"{kind}/" * bool(kind) + f"{clean(name_of(item))}\n")
        return []
    shown = shown_columns(columns, fmt)
    rows = [row_of(item, shown) for item in items]
    found = [
        max([len(column.header) * header, *(len(row[n]) for row in rows), (widths or [0] * len(shown))[n]])
        for n, column in enumerate(shown)
    ]
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", show_header=header)
    for column, width in zip(shown, found, strict=True):
        table.add_column(column.header.upper(), overflow="fold", min_width=width)
    for row in rows:
        table.add_row(*row)
    with stdout.capture() as captured:
        stdout.print(table)
    # Padding after the last column is noise in a diff, a snapshot or a `grep -x`.
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
    sys.stdout.flush()
    return found


def shown_columns(columns: Sequence[Column], fmt: str) -> list[Column]:
    return [c for c in columns if fmt == "wide" or not c.wide_only]


def row_of(item: dict[str, Any], shown: Sequence[Column]) -> list[str]:
    return [_cell(column.value(item)) for column in shown]


_CONTROL = dict.fromkeys(range(32), "?") | {127: "?"}


def clean(text: str) -> str:
    """Names come from untrusted senders: never let one write escape sequences to a terminal."""
    return text.translate(_CONTROL)


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "<none>"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list | tuple):
        return clean(",".join(str(v) for v in value)) or "<none>"
    return clean(str(value))


def fail(message: str, code: int = 1) -> typer.Exit:
    stderr.print(f"error: {message}", markup=False)
    return typer.Exit(code)
