"""A black hole over real HTTP: job records and results posted, the runner named sick, its health and
`runnerctl explain runner` showing the job evidence."""

from __future__ import annotations

from tests.controller.analysis.jobfleet import build, wire
from tests.runnerctl.test_import_explain import ctl
from tests.servers import Controller

BH = "linux-bh"


def test_a_black_hole_posted_over_http_is_sick_and_explained(controller: Controller) -> None:
    results, jobs = wire(build(3, runners=4, hours=6, black_holes=(BH,), bad_from_s=3 * 3600))
    for start in range(0, len(results), 2000):
        assert controller.post("/v1/results", json=results[start : start + 2000]).status_code == 200
    assert controller.post("/v1/jobs", json=jobs).json()["new"] == len(jobs)
    assert controller.post("/v1/analysis/run").status_code == 200
    incidents = controller.get("/v1/incidents").json()["items"]
    assert [(i["entity"], i["state"], i["dimension"]) for i in incidents] == [(BH, "sick", "jobs")]
    assert controller.get(f"/v1/runners/{BH}").json()["health"]["health"] == "sick"
    done = ctl(controller, "explain", "runner", BH)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "Health:    sick (jobs)" in lines
    assert any(
        line.startswith("  jobs: ") and "died early" in line and "peers' jobs die early at" in line
        for line in lines
    )
    assert any(line.startswith("  statistic: log-likelihood ratio") for line in lines)
    assert any(": failure after " in line and "(no tests)" in line for line in lines)
