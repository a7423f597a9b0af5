"""Label selectors as written in settings (`app=runner,tier`, `!spare`) in the form lightkube sends."""

from __future__ import annotations

from typing import Any

from lightkube import operators


def parse_selector(text: str) -> dict[str, Any]:
    """`k=v`, `k==v`, `k!=v`, `k` (exists) and `!k` (does not exist), comma-separated; set-based
    selectors (`k in (a,b)`) are not accepted, so a typo cannot widen what a drain deletes."""
    found: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if "!=" in part:
            key, _, value = part.partition("!=")
            found[key.strip()] = operators.not_equal(value.strip())
        elif "=" in part:
            key, _, value = part.replace("==", "=").partition("=")
            found[key.strip()] = value.strip()
        elif part.startswith("!"):
            found[part[1:].strip()] = operators.not_exists()
        elif " " in part or "(" in part:
            raise ValueError(f"label selector {text!r}: set-based terms are not supported ({part!r})")
        else:
            found[part] = operators.exists()
    return found
