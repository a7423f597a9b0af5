from __future__ import annotations

import tomllib

import pytest

from agent.tomlout import dumps


@pytest.mark.parametrize(
    "data",
    [
        {"a": 1, "b": 'x"y\\z', "c": [1.5, "two"], "d": True},
        {"top": "v", "t": {"k": 1, "sub": {"deep": ["a"]}}, "u": {"dotted.key": "ok"}},
        {"only": {"tables": {"x": 1}}},
    ],
    ids=["scalars", "nested", "tables-only"],
)
def test_round_trip(data: dict[str, object]) -> None:
    assert tomllib.loads(dumps(data)) == data


def test_none_is_a_comment() -> None:
    assert dumps({"token": None, "a": 1}) == "# token is not set\na = 1\n"
