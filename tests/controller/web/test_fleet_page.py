"""The fleet page over a real controller fed a simulated fleet: one sick runner, an outage, two flaky
tests (one of them named with markup), a cordon in the audit log. Login and escaping over plain HTTP,
then the page itself in a real headless Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from controller.web.trend import y_of
from tests.chromium import browser_errors, chromium, full_page_screenshot, require_chromium
from tests.servers import REPO, Controller, runnerctl_cmd, running_controller
from tests.sim import simulate
from tests.sim.events import Outage
from tests.sim.scenarios import seed_story

HOSTILE = 'tests/evil.py::test_name[<script>alert("x")</script>&amp;]'
SICK = "linux-03"
SCREENSHOTS_ENV = "RUNNERCTL_SCREENSHOT_DIR"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    tmp = tmp_path_factory.mktemp("fleetpage")
    story = seed_story()
    fleet = simulate(replace(story, events=(*story.events, Outage(start=timedelta(hours=20), minutes=45))), 1)
    renamed = sorted(fleet.truth.flaky_tests)[0]
    lines = []
    for line in fleet.ndjson_lines():
        record = json.loads(line)
        if record.get("test_id") == renamed:
            record["test_id"] = HOSTILE
        lines.append(json.dumps(record) + "\n")
    history = tmp / "history.ndjson"
    history.write_text("".join(lines + job_lines(lines)))
    with running_controller(tmp, env={"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0"}) as controller:
        env = os.environ | {
            "RUNNERCTL_SERVER": controller.url,
            "RUNNERCTL_TOKEN": controller.admin_token,
            "XDG_STATE_HOME": str(tmp / "state"),
        }
        done = subprocess.run(
            runnerctl_cmd("import", str(history)), capture_output=True, text=True, cwd=REPO, env=env
        )
        assert done.returncode == 0, done.stderr
        cordoned = controller.post(
            f"/v1/runners/{SICK}/cordon", controller.token("operator"), json={"reason": "disk full, see inc"}
        )
        assert cordoned.status_code == 200, cordoned.text
        yield controller


def job_lines(lines: list[str]) -> list[str]:
    """`kind: job` records of the simulated jobs: each failed if one of its tests did."""
    jobs: dict[tuple[str, str], dict[str, Any]] = {}
    for line in lines:
        record = json.loads(line)
        if record.get("kind") or not record.get("job_id"):
            continue
        job = jobs.setdefault(
            (record["job_id"], record["runner"]["id"]),
            {
                "kind": "job",
                "job_id": record["job_id"],
                "name": "tests",
                "runner": record["runner"],
                "finished": record["time"],
                "conclusion": "success",
                "tests": 0,
            },
        )
        job["finished"] = max(job["finished"], record["time"])
        job["tests"] += 1
        if record["outcome"] in ("failed", "error"):
            job["conclusion"] = "failure"
    return [json.dumps(job) + "\n" for job in jobs.values()]


def login(controller: Controller, token: str, **headers: str) -> requests.Response:
    return requests.post(
        controller.url + "/login", data={"token": token}, headers=headers, allow_redirects=False, timeout=60
    )


def test_the_page_needs_a_login(served: Controller) -> None:
    answer = requests.get(served.url + "/", allow_redirects=False, timeout=30)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/login"
    form = requests.get(served.url + "/login", timeout=30)
    assert form.status_code == 200
    assert '<form method="post" action="/login"' in form.text
    assert 'type="password"' in form.text


@pytest.mark.parametrize(
    ("role", "status", "message"),
    [
        (None, 401, "unknown or revoked token"),
        ("agent", 403, "role 'agent' may not read the fleet page; needs one of: admin, operator, read"),
        ("ingest", 403, "role 'ingest' may not read the fleet page"),
    ],
    ids=["unknown-token", "agent-token", "ingest-token"],
)
def test_login_refuses_tokens_that_may_not_read(
    served: Controller, role: str | None, status: int, message: str
) -> None:
    token = served.token(role, runner=SICK if role == "agent" else None) if role else "not-a-token"
    answer = login(served, token)
    assert answer.status_code == status
    assert message in html.unescape(answer.text)
    assert "set-cookie" not in answer.headers
    assert token not in answer.text


def test_login_sets_a_strict_httponly_cookie_and_the_api_ignores_it(served: Controller) -> None:
    token = served.token("read")
    answer = login(served, token)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("runnerctl_session=")
    assert {"HttpOnly", "SameSite=strict", "Path=/"} <= {part.strip() for part in cookie.split(";")}
    page = requests.get(served.url + "/", cookies=answer.cookies, timeout=60)
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store"
    assert token not in page.text
    # The API stays Bearer-only: the session cookie authorises nothing there.
    api = requests.get(served.url + "/v1/runners", cookies=answer.cookies, timeout=30)
    assert api.status_code == 401
    assert token not in served.log.read_text()


def test_a_login_posted_from_another_site_is_refused(served: Controller) -> None:
    answer = login(served, served.token("read"), Origin="https://evil.example")
    assert answer.status_code == 403
    assert "posted from another site" in html.unescape(answer.text)
    assert "set-cookie" not in answer.headers


def test_a_dead_session_goes_back_to_the_login_form(served: Controller) -> None:
    answer = requests.get(
        served.url + "/",
        cookies={"runnerctl_session": "revoked-or-made-up"},
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/login"
    assert 'runnerctl_session=""' in answer.headers["set-cookie"]


def test_untrusted_test_ids_are_escaped(served: Controller) -> None:
    cookies = login(served, served.token("read")).cookies
    page = requests.get(served.url + "/", cookies=cookies, timeout=60).text
    assert "<script" not in page
    assert "tests/evil.py::test_name[&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;amp;]" in page


@pytest.mark.needs_chromium
def test_the_page_in_chromium(served: Controller, tmp_path: Path) -> None:
    require_chromium()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    shots = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path / "screenshots")
    with chromium() as driver:
        driver.get(served.url + "/")
        assert driver.current_url == served.url + "/login"
        driver.find_element(By.ID, "token").send_keys(served.token("read"))
        driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        WebDriverWait(driver, 60).until(
            lambda d: d.find_elements(By.ID, "fleet") or d.find_elements(By.CLASS_NAME, "error")
        )
        assert driver.current_url == served.url + "/", driver.page_source
        assert driver.title == "Fleet · runnerctl"
        assert "token=" not in driver.current_url
        errors = browser_errors(driver)
        path = full_page_screenshot(driver, shots / "fleet-page.png")
        print(f"fleet page screenshot: {path}")

        # The sick runner stands out: its row is marked sick, and outside the outage (which heats every
        # row at once) its heat-map cells are the hottest.
        rows = {r.get_attribute("data-runner"): r for r in driver.find_elements(By.CSS_SELECTOR, "tr.runner")}
        assert len(rows) == 8
        assert "h-sick" in (rows[SICK].get_attribute("class") or "")
        assert {name for name, row in rows.items() if row.get_attribute("data-health") != "healthy"} == {SICK}
        assert "cordoned" in rows[SICK].text
        hottest = dict(driver.execute_script(HOTTEST))
        assert hottest[SICK] > max(level for name, level in hottest.items() if name != SICK)
        assert rows[SICK].find_elements(By.CSS_SELECTOR, "td.c.inc"), "no cell marked inside the incident"

        # No runs is not zero failures, on the sick runner's tinted row too: a bin where nothing ran
        # looks unlike one that ran clean, and the legend shows each as the grid does.
        looks = driver.execute_script(CELL_LOOKS, SICK)
        assert looks["empty"] != looks["clean"]
        assert "gradient" in looks["empty"][0] and looks["clean"][0] == "none"
        assert (looks["legend_empty"], looks["legend_clean"]) == (looks["empty"], looks["clean"])
        legend = driver.find_element(By.CSS_SELECTOR, "#fleet .legend").text
        assert "no runs (hatched)" in legend and "ran, 0 failed" in legend

        # Each runner has a trend beside its counts: one step per bin that ran, at the height of that
        # bin's failure rate as the heat map's cell reports it, and a gap where nothing ran.
        assert "a gap: no runs" in driver.find_element(By.CSS_SELECTOR, "[aria-label='trend legend']").text
        trends = {name: (width, path, titles) for name, width, path, titles in driver.execute_script(TRENDS)}
        assert set(trends) == set(rows)
        for name, (width, path, titles) in trends.items():
            counts = [tuple(map(int, re.findall(r"· (\d+)/(\d+) failed", t)[0])) for t in titles]
            bin_width = float(width) / len(counts)
            steps = {round(x0 / bin_width): y for x0, _x1, y in _steps(path)}
            ran = {j: y_of(f / e) for j, (f, e) in enumerate(counts) if e}
            assert steps == pytest.approx(ran, abs=0.011), name
        assert trends[SICK][1].count("M") > 1, "the sick runner's empty bins should break its trend"

        # Beside it, the same line for its CI jobs, and the sick runner's jobs fail most.
        job_trends = dict(driver.execute_script(JOB_TRENDS))
        assert set(job_trends) == set(rows)
        assert all(
            title.startswith(f"{name}: job failure rate per bin") for name, title in job_trends.items()
        )
        job_fail = {
            name: float(row.find_elements(By.CSS_SELECTOR, "td.num")[3].text.rstrip("%"))
            for name, row in rows.items()
        }
        assert job_fail[SICK] > max(rate for name, rate in job_fail.items() if name != SICK)

        # The outage spans the fleet: its columns are marked above every row.
        assert driver.find_elements(By.CSS_SELECTOR, "tr.outages th.ot.on")

        incidents = driver.find_elements(By.CSS_SELECTOR, "article.incident")
        assert [i.get_attribute("data-entity") for i in incidents] == [SICK]
        text = incidents[0].text
        assert "sick" in text and "disk" in text and "affected jobs" in text.lower()
        assert re.search(r"free [\d.]+ GiB \([\d.]+%\), inodes free [\d.]+%", text), "no disk reading shown"

        # Markup in a test id is text: shown as written, never run.
        flaky = driver.find_elements(By.CSS_SELECTOR, "tbody[data-verdict=flaky] tr[data-test] code")
        assert HOSTILE in [cell.text for cell in flaky]
        assert driver.find_elements(By.CSS_SELECTOR, "#actions tr.st-done")
        # No blank mode: an operator's cordon says it was an operator's, and why no pool mode applies.
        (mine,) = [
            r
            for r in driver.find_elements(By.CSS_SELECTOR, "#actions tbody tr")
            if "operator-token" in r.text
        ]
        cell = mine.find_element(By.CSS_SELECTOR, "td.mode")
        assert cell.text == "operator" and "asked for by a person" in (cell.get_attribute("title") or "")
    assert errors == []


CELL_LOOKS = """
const look = el => { const s = getComputedStyle(el); return [s.backgroundImage, s.backgroundColor]; };
const row = document.querySelector(`tr.runner[data-runner="${arguments[0]}"]`);
return {
  empty: look(row.querySelector('td.c.lx')),
  clean: look(row.querySelector('td.c.l0')),
  legend_empty: look(document.querySelector('.legend [data-legend=no-runs]')),
  legend_clean: look(document.querySelector('.legend [data-legend=no-failures]')),
};
"""

TRENDS = """
return Array.from(document.querySelectorAll('tr.runner')).map(row => {
  const svg = row.querySelector('td.trend svg.trend');
  return [
    row.dataset.runner,
    svg.getAttribute('width'),
    svg.querySelector('path.rate').getAttribute('d'),
    Array.from(row.querySelectorAll('td.c'), cell => cell.getAttribute('title')),
  ];
});
"""


JOB_TRENDS = """
return Array.from(document.querySelectorAll('tr.runner')).map(row => [
  row.dataset.runner, row.querySelector('td.job-trend svg.trend title').textContent,
]);
"""


def _steps(path: str) -> list[tuple[float, float, float]]:
    """The horizontal steps (x0, x1, y) of a trend's path: `M x,y` moves, `V y` rises or falls, `H x` steps."""
    x = y = 0.0
    out = []
    for command, a, b in re.findall(r"([MVH])([\d.]+)(?:,([\d.]+))?", path):
        if command == "M":
            x, y = float(a), float(b)
        elif command == "V":
            y = float(a)
        else:
            out.append((x, float(a), y))
            x = float(a)
    return out


HOTTEST = """
return Array.from(document.querySelectorAll('tr.runner')).map(row => [
  row.dataset.runner,
  Math.max(-1, ...Array.from(row.querySelectorAll('td.c:not(.ot-col)'), cell => {
    const level = cell.className.match(/\\bl(\\d)\\b/);
    return level ? Number(level[1]) : -1;
  })),
]);
"""


def test_an_empty_controller_shows_an_empty_page(tmp_path: Path) -> None:
    with running_controller(tmp_path) as controller:
        cookies = login(controller, controller.token("operator")).cookies
        page = requests.get(controller.url + "/", cookies=cookies, timeout=30)
    assert page.status_code == 200
    assert "No runners yet" in page.text
    assert "No open incidents." in page.text
    assert "No remediation actions yet." in page.text
