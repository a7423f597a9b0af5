"""Numbers leave the API at six significant digits, so a client sees the same answer whatever numpy, scipy
or CPU computed it; whole units (bytes free) keep every digit."""

from __future__ import annotations

import json
import math

import pytest

from controller.api.precision import PublishedJSONResponse, published

CASES = [
    # Two flake scores that differ only in the 17th digit (scipy/numpy/CPU noise) publish the same.
    (0.025310603470290228, 0.0253106),
    (0.025310603470290224, 0.0253106),
    (6.802310175485896e-288, 6.80231e-288),
    (-0.0012345678, -0.00123457),
    (295.3812345, 295.381),
    (123456.7, 123457.0),
    (5057323991.0, 5057323991.0),
    (0.0, 0.0),
    (1.0, 1.0),
]


@pytest.mark.parametrize(("value", "shown"), CASES, ids=[repr(v) for v, _ in CASES])
def test_published_precision(value: float, shown: float) -> None:
    assert published(value) == shown


def test_infinite_values_are_left_for_the_encoder_to_refuse() -> None:
    assert published(math.inf) == math.inf


def test_a_response_rounds_every_float_and_leaves_the_rest() -> None:
    content = {
        "as_of": "2026-09-21T10:00:00Z",
        "items": [
            {"score": 0.025310603470290228, "failures": 3, "bounds": (0.01234567891, 0.5), "flaky": True}
        ],
    }
    body = json.loads(PublishedJSONResponse(content).body)
    assert body == {
        "as_of": "2026-09-21T10:00:00Z",
        "items": [{"score": 0.0253106, "failures": 3, "bounds": [0.0123457, 0.5], "flaky": True}],
    }
