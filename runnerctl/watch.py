"""`get --watch`: list once, then poll and print only what changed, as kubectl does, until Ctrl-C.

A change is judged in the format shown: a table row whose cells differ, a JSON/YAML object that
differs, a name not seen before. So a watch of the table stays quiet while only hidden fields move.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from runnerctl.client import ApiError
from runnerctl.output import Column, clean, emit, row_of, shown_columns, stderr

Fetch = Callable[[], list[dict[str, Any]]]


def watch(
    fetch: Fetch,
    fmt: str,
    columns: Sequence[Column],
    kind: str,
    name_of: Callable[[dict[str, Any]], str],
    *,
    interval_s: float,
    polls: int | None = None,
) -> None:
    """Print the listing, then every change; `polls` bounds the number of re-fetches (tests, scripts)."""
    widths: list[int] = []

    def show(items: list[dict[str, Any]], first: bool) -> None:
        nonlocal widths
        if fmt in ("json", "yaml"):  # a stream of objects, one document each, as kubectl prints them
            for item in items:
                if fmt == "yaml":
                    sys.stdout.write("---\n")
                emit([item], fmt, columns, kind, name_of, single=True)
        else:
            widths = emit(items, fmt, columns, kind, name_of, header=first or not widths, widths=widths)
        sys.stdout.flush()

    try:
        items = fetch()
        show(items, first=True)
        seen = {name_of(item): _shape(item, fmt, columns) for item in items}
        done = 0
        while polls is None or done < polls:
            time.sleep(interval_s)
            done += 1
            try:
                items = fetch()
            except ApiError as error:  # a controller restart should not end an operator's watch
                stderr.print(f"error: {clean(error.message)} (still watching)", markup=False)
                continue
            changed = [item for item in items if seen.get(name_of(item)) != _shape(item, fmt, columns)]
            seen = {name_of(item): _shape(item, fmt, columns) for item in items}
            if changed:
                show(changed, first=False)
    except KeyboardInterrupt:
        # Ctrl-C is how a watch is meant to end: no traceback, and what was printed stands.
        sys.stdout.flush()


def _shape(item: dict[str, Any], fmt: str, columns: Sequence[Column]) -> str:
    if fmt in ("table", "wide"):
        return "\t".join(row_of(item, shown_columns(columns, fmt)))
    if fmt == "name":
        return ""
    return json.dumps(item, sort_keys=True)
