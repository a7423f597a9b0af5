"""A real headless Chromium for page tests, driven by selenium through Debian's chromedriver.

RUNNERCTL_CHROMIUM and RUNNERCTL_CHROMEDRIVER override the paths; missing pieces skip the test with a
reason, unless RUNNERCTL_REQUIRE_ALL=1 (CI) makes that a failure.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def _binary(env: str, *names: str) -> str | None:
    if os.environ.get(env):
        return os.environ[env] if Path(os.environ[env]).is_file() else None
    return next((found for name in names if (found := shutil.which(name))), None)


def missing_reason() -> str | None:
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install -e '.[test]')"
    if _binary("RUNNERCTL_CHROMIUM", "chromium", "chromium-browser") is None:
        return "chromium not found (apt-get install chromium, or set RUNNERCTL_CHROMIUM)"
    if _binary("RUNNERCTL_CHROMEDRIVER", "chromedriver") is None:
        return "chromedriver not found (apt-get install chromium-driver, or set RUNNERCTL_CHROMEDRIVER)"
    return None


def require_chromium() -> None:
    problem = missing_reason()
    if problem:
        if os.environ.get("RUNNERCTL_REQUIRE_ALL") == "1":
            pytest.fail(f"{problem} (RUNNERCTL_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(problem)


@contextmanager
def chromium(width: int = 1600, height: int = 1000) -> Iterator[WebDriver]:
    """A headless Chromium with a fresh profile, its console log kept for `browser_errors`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    require_chromium()
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = _binary("RUNNERCTL_CHROMIUM", "chromium", "chromium-browser") or ""
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        options.add_argument(f"--window-size={width},{height}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=_binary("RUNNERCTL_CHROMEDRIVER", "chromedriver"))
        driver = webdriver.Chrome(options=options, service=service)
        try:
            yield driver
        finally:
            driver.quit()


def browser_errors(driver: WebDriver) -> list[str]:
    """Console messages at warning level or worse since the last call (CSP violations land here)."""
    return [
        str(entry["message"])
        for entry in driver.get_log("browser")
        if entry["level"] in ("SEVERE", "WARNING")
    ]


def full_page_screenshot(driver: WebDriver, path: Path) -> Path:
    """The whole page, not just the window (DevTools captures beyond the viewport)."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
