"""The audit log's mode column: the mode an action ran under, or why there is none."""

from __future__ import annotations

from typing import Any

import pytest

from controller.web.format import mode


@pytest.mark.parametrize(
    ("action", "text", "why"),
    [
        ({"action": "rerun-result", "actor": "runner-controller", "mode": "auto"}, "auto", "mode auto"),
        ({"action": "cordon", "actor": "alice", "mode": None}, "operator", "asked for by a person"),
        (
            {"action": "rerun-result", "actor": "runner-controller", "mode": None},
            "none",
            "reruns an operator asked for",
        ),
        (
            {"action": "clear-flakes", "actor": "runner-controller", "mode": None},
            "none",
            "reruns an operator asked for",
        ),
        ({"action": "fleet-incident", "actor": "runner-controller", "mode": None}, "none", "fleet-wide"),
        ({"action": "uncordon", "actor": "runner-controller", "mode": None}, "none", "a cordon's expiry"),
    ],
    ids=[
        "ran-under-a-mode",
        "an-operator",
        "result-of-an-operators-rerun",
        "clearance-of-an-operators-reruns",
        "storm",
        "expiry",
    ],
)
def test_the_mode_column_says_why_when_there_is_none(action: dict[str, Any], text: str, why: str) -> None:
    shown, reason = mode(action)
    assert shown == text
    assert why in reason
