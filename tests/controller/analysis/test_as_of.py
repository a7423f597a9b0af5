"""`as_of`, from which every window hangs, follows the fleet, not one runner whose clock runs ahead."""

from __future__ import annotations

import pytest

from controller.analysis.engine import analyse, latest_shared_ms
from controller.analysis.frame import Frame

HOUR_MS = 3_600_000
END_MS = 1_790_000_000_000


def frame_of(latest_by_runner: dict[str, int]) -> Frame:
    """Each runner runs one test every hour for a day, up to its own latest time."""
    rows = []
    for runner, latest in latest_by_runner.items():
        for hour in range(24):
            rows.append(
                (
                    len(rows) + 1,
                    latest - hour * HOUR_MS,
                    "passed",
                    False,
                    "t",
                    runner,
                    runner,
                    "linux",
                    "img",
                    None,
                    f"job-{runner}-{hour}",
                    f"run-{hour}",
                    "c1",
                )
            )
    frame = Frame()
    frame.append_results(rows)
    return frame


CASES = [
    ("fleet together", {"a": END_MS, "b": END_MS - 60_000, "c": END_MS - 30 * 60_000}, END_MS),
    ("one runner a day ahead", {"a": END_MS, "b": END_MS - 60_000, "skewed": END_MS + 24 * HOUR_MS}, END_MS),
    ("one runner within the hour", {"a": END_MS, "b": END_MS + HOUR_MS}, END_MS + HOUR_MS),
    ("a fleet of one", {"a": END_MS}, END_MS),
]


@pytest.mark.parametrize(("latest", "as_of"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_as_of_is_the_newest_time_no_runner_holds_alone(latest: dict[str, int], as_of: int) -> None:
    frame = frame_of(latest)
    assert latest_shared_ms(frame) == as_of
    assert analyse(frame).as_of_ms == as_of
