"""The work behind `cordon`, `uncordon` and `drain`: resolve the runners, ask the controller, report.

The CLI files only bind flags; this calls back once per runner with the controller's answer (or the
error), so a script, a test or another front end can drive it the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runnerctl.client import ApiError, Client


def resolve(client: Client, runner: str | None, selector: str | None) -> list[str]:
    if runner:
        return [runner]
    items = client.get("/v1/runners", params={"l": selector or ""})["items"]
    return [item["identity"]["id"] for item in items]


def act(
    client: Client,
    verb: str,
    runners: list[str],
    body: dict[str, Any],
    on_done: Callable[[str, dict[str, Any]], None],
    on_error: Callable[[str, ApiError], None],
) -> int:
    """POST /v1/runners/<id>/<verb> for each runner; returns how many failed."""
    failed = 0
    for runner in runners:
        try:
            answer = client.post(f"/v1/runners/{runner}/{verb}", json=body)
        except ApiError as error:
            failed += 1
            on_error(runner, error)
            continue
        on_done(runner, answer)
    return failed


def line(runner: str, status: str, dry_run: bool) -> str:
    """kubectl's wording: `runner/linux-03 cordoned`, `... already cordoned`, `... (dry run)`."""
    return f"runner/{runner} {status}" + (" (dry run)" if dry_run else "")
