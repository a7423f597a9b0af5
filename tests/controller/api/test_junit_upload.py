"""JUnit XML uploads over real HTTP: identity from query or headers, attacks refused, nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controller.api.test_ingest import count
from tests.servers import Controller

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "junit"


def test_pytest_report_with_identity_in_query(shared_controller: Controller) -> None:
    before = count(shared_controller, "results")
    response = shared_controller.post(
        "/v1/results/junit?runner_id=linux-07&pool=linux&machine=vm-07&job_id=job-1&run_id=run-1&attempt=1",
        data=(FIXTURES / "pytest_xunit2.xml").read_bytes(),
        headers={"Content-Type": "application/xml"},
    )
    assert response.status_code == 200, response.text
    stored = response.json()["new"]
    assert stored > 5
    assert count(shared_controller, "results") == before + stored
    runner = shared_controller.get("/v1/runners/linux-07").json()
    assert runner["identity"]["machine"] == "vm-07"
    assert runner["failures"] >= 2


def test_identity_from_headers(shared_controller: Controller) -> None:
    response = shared_controller.post(
        "/v1/results/junit",
        data=(FIXTURES / "jest_junit.xml").read_bytes(),
        headers={"X-Runner-Id": "mac-02", "X-Runner-Pool": "macos", "X-Job-Id": "j-9"},
    )
    assert response.status_code == 200, response.text
    assert shared_controller.get("/v1/runners/mac-02").json()["identity"]["pool"] == "macos"


def test_runner_id_is_required(shared_controller: Controller) -> None:
    response = shared_controller.post("/v1/results/junit", data=(FIXTURES / "jest_junit.xml").read_bytes())
    assert response.status_code == 422
    assert "runner_id is required" in response.json()["detail"]


ATTACKS = sorted(p.name for p in (FIXTURES / "attacks").iterdir())


@pytest.mark.parametrize("name", ATTACKS)
def test_hostile_xml_is_refused_and_nothing_stored(shared_controller: Controller, name: str) -> None:
    before = count(shared_controller, "results"), count(shared_controller, "runners")
    response = shared_controller.post(
        "/v1/results/junit?runner_id=evil-01", data=(FIXTURES / "attacks" / name).read_bytes()
    )
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith("JUnit XML rejected: ")
    assert (count(shared_controller, "results"), count(shared_controller, "runners")) == before
