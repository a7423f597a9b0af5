"""The precision at which numbers leave the API: six significant digits, never coarser than a whole unit.

Scores, bounds and p-values are computed in floating point, and their last digits move with the numpy
or scipy version, the CPU's kernels and the order of a sum. Past the sixth digit they carry no meaning
for an operator, and a client comparing two answers should not see them change. Whole-unit quantities
(bytes free, counts carried as floats) keep every digit: rounding stops at the units place.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi.responses import JSONResponse

SIGNIFICANT_DIGITS = 6


def published(value: float) -> float:
    """`value` at SIGNIFICANT_DIGITS significant digits, or to the unit where it has more before the point."""
    if value == 0 or not math.isfinite(value):
        return value
    decimals = SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(abs(value)))
    return round(value, max(decimals, 0))


def published_tree(content: Any) -> Any:
    """Every float in a JSON-ready tree of dicts and lists, at the published precision."""
    if isinstance(content, float):
        return published(content)
    if isinstance(content, dict):
        return {key: published_tree(item) for key, item in content.items()}
    if isinstance(content, list | tuple):
        return [published_tree(item) for item in content]
    return content


class PublishedJSONResponse(JSONResponse):
    """The API's default response: the JSON FastAPI would send, its floats at the published precision."""

    def render(self, content: Any) -> bytes:
        return super().render(published_tree(content))
