from __future__ import annotations

import pytest

from common.plural import counted, noun


@pytest.mark.parametrize(
    ("count", "singular", "plural", "expected"),
    [
        (0, "runner", None, "0 runners"),
        (1, "runner", None, "1 runner"),
        (2, "runner", None, "2 runners"),
        (1, "entry", "entries", "1 entry"),
        (3, "entry", "entries", "3 entries"),
        (1.0, "failure", None, "1.0 failure"),
    ],
    ids=["zero-is-plural", "one", "many", "own-plural-one", "own-plural-many", "float-one"],
)
def test_counted_agrees_with_its_number(
    count: float, singular: str, plural: str | None, expected: str
) -> None:
    assert counted(count, singular, plural) == expected


def test_noun_alone_for_a_count_formatted_elsewhere() -> None:
    assert f"{1234:,} {noun(1234, 'result')}" == "1,234 results"
    assert f"{1:,} {noun(1, 'result')}" == "1 result"
