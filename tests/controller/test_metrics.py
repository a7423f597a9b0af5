"""GET /metrics of a real controller after a story, and the alert rules and dashboard shipped for it.

The story: the seed fleet (linux-03's disk fills) in auto mode, with a pool that may not lose a runner
(min_active = its size, so the budget refuses the cordon), a Buildbot that is not there (an operator's
cordon fails on it), agents that report their spool, and uploads the controller must refuse.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.controller.api.test_ingest import report, result
from tests.servers import REPO, Controller, free_port, running_controller
from tests.sim import simulate
from tests.sim.scenarios import seed_story

ALERTS = REPO / "packaging" / "prometheus" / "alerts.yml"
DASHBOARD = REPO / "packaging" / "grafana" / "runnerctl-dashboard.json"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(controller: Controller) -> tuple[str, Samples]:
    text = controller.get("/metrics").text
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Controller, str, Samples]]:
    fleet = simulate(seed_story(), seed=1)
    for record in (*fleet.results, *fleet.reports):  # the fleet runs on Buildbot (one that is down)
        record["runner"]["provider"] = "buildbot"
    env = {
        "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.2",
        "RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps({"linux": {"mode": "auto", "min_active": 8}}),
        "RUNNER_CONTROLLER_PROVIDERS": json.dumps({"buildbot": {"url": f"http://127.0.0.1:{free_port()}/"}}),
        "RUNNER_CONTROLLER_POOL_PROVIDERS": json.dumps({"linux": "buildbot"}),
    }
    with running_controller(tmp_path_factory.mktemp("metrics"), env=env) as controller:
        for start in range(0, len(fleet.results), 20_000):
            assert (
                controller.post("/v1/results", json=fleet.results[start : start + 20_000]).status_code == 200
            )
        assert controller.post("/v1/reports", json={"reports": fleet.reports}).status_code == 200
        assert controller.post("/v1/results", json=fleet.results[:10]).status_code == 200  # all duplicates
        agents = [report(1, "mac-01", spool_depth=40, dropped=3), report(1, "mac-02", spool_depth=2)]
        for agent in agents:
            agent["runner"]["pool"] = "mac"
        assert controller.post("/v1/reports", json={"reports": agents}).status_code == 200
        assert controller.post("/v1/results", json=[result(outcome="exploded")]).status_code == 422
        foreign = controller.post(
            "/v1/reports", token=controller.token("agent", "mac-01"), json={"reports": [report(2, "mac-02")]}
        )
        assert foreign.status_code == 403
        assert controller.post("/v1/analysis/run").status_code == 200
        operator = controller.post("/v1/runners/linux-05/cordon", json={"reason": "disk swap"})
        assert operator.status_code == 503  # fails closed: the provider could not confirm the pause
        deadline = time.monotonic() + 20
        while True:  # the loop's budget refusal comes on its next pass
            text, samples = scrape(controller)
            if (
                value(samples, "runnerctl_remediation_blocked_total", reason="budget")
                or time.monotonic() > deadline
            ):
                break
            time.sleep(0.2)
        yield controller, text, samples


def test_ingest_metrics(story: tuple[Controller, str, Samples]) -> None:
    controller, _, samples = story
    assert value(samples, "runnerctl_ingest_results_total", status="new") == controller.count("results")
    assert value(samples, "runnerctl_ingest_results_total", status="duplicate") == 10
    assert value(samples, "runnerctl_ingest_requests_total", kind="results", outcome="accepted") == 3
    assert value(samples, "runnerctl_ingest_requests_total", kind="results", outcome="rejected") == 1
    assert value(samples, "runnerctl_ingest_rejected_total", kind="results", code="422") == 1
    assert value(samples, "runnerctl_ingest_rejected_total", kind="reports", code="403") == 1
    assert value(samples, "runnerctl_ingest_bytes_total", kind="results") > 1_000_000
    assert value(samples, "runnerctl_ingest_duration_seconds_count", kind="reports") == 3


def test_incident_and_remediation_metrics(story: tuple[Controller, str, Samples]) -> None:
    _, _, samples = story
    assert value(samples, "runnerctl_incidents", kind="runner", state="sick", dimension="disk") == 1
    assert value(samples, "runnerctl_remediation_blocked_total", reason="budget") >= 1
    assert value(samples, "runnerctl_remediation_blocked_total", reason="storm") == 0
    assert (
        value(
            samples, "runnerctl_remediation_actions_total", action="cordon", actor="operator", result="failed"
        )
        == 1
    )
    assert (
        value(
            samples,
            "runnerctl_provider_errors_total",
            provider="buildbot",
            method="state",
            kind="unavailable",
        )
        == 1
    )
    assert value(samples, "runnerctl_provider_requests_total", provider="buildbot", method="state") == 1
    assert value(samples, "runnerctl_analysis_pending") == 0
    assert value(samples, "runnerctl_analysis_last_success_timestamp_seconds") > time.time() - 600


def test_agent_spool_metrics_per_pool(story: tuple[Controller, str, Samples]) -> None:
    _, text, samples = story
    assert value(samples, "runnerctl_agent_spool_depth_reports", pool="mac") == 42
    assert value(samples, "runnerctl_agent_reporting", pool="mac") == 2
    assert value(samples, "runnerctl_agent_spool_dropped_reports_total", pool="mac") == 3
    assert "runner=" not in text  # no label that grows with the fleet


def metric_names(expr: str) -> set[str]:
    return set(re.findall(r"\b(runnerctl_[a-z0-9_]+|up)\b", expr))


def balanced(expr: str) -> bool:
    """Without promtool, at least every bracket closes in order."""
    stack: list[str] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for char in re.sub(r'"[^"]*"', "", expr):
        if char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack


def test_alert_rules_parse_and_use_real_metrics(story: tuple[Controller, str, Samples]) -> None:
    _, _, samples = story
    exposed = {name for name, _labels in samples}
    rules = yaml.safe_load(ALERTS.read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert {a["alert"] for a in alerts} >= {
        "RunnerControllerDown",
        "SickRunnerNotRemediated",
        "RemediationBlocked",
        "ProviderErrors",
        "AgentSpoolDropping",
        "IngestRejecting",
        "AnalysisStale",
    }
    for alert in alerts:
        assert set(alert) <= {"alert", "expr", "for", "labels", "annotations"}, alert["alert"]
        assert alert["annotations"]["summary"] and alert["labels"]["severity"] in (
            "critical",
            "warning",
            "info",
        )
        assert metric_names(alert["expr"]), alert["alert"]
        assert balanced(alert["expr"]), alert["alert"]
        used = metric_names(alert["expr"]) - {"up"}  # `up` is Prometheus's own
        assert used <= exposed, (
            f"{alert['alert']} uses metrics the controller does not expose: {used - exposed}"
        )


def test_alert_rules_pass_promtool() -> None:
    if shutil.which("promtool") is None:
        # CI installs it (.ci/run: Debian's prometheus package), so there its absence is a failure.
        if os.environ.get("RUNNERCTL_REQUIRE_ALL") == "1":
            pytest.fail("promtool is not installed (RUNNERCTL_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip("promtool is not installed")
    done = subprocess.run(
        ["promtool", "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_dashboard_queries_use_real_metrics(story: tuple[Controller, str, Samples]) -> None:
    _, _, samples = story
    exposed = {name for name, _labels in samples}
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert len(exprs) >= 12
    assert all(balanced(expr) for expr in exprs)
    used = set().union(*(metric_names(e) for e in exprs))
    assert used <= exposed, f"the dashboard queries metrics the controller does not expose: {used - exposed}"
    # Every metric family the controller exposes has a panel, bar the generic HTTP latency.
    families = {
        re.sub(r"_(bucket|count|sum|created|total)$", "", name)
        for name in exposed
        if name.startswith("runnerctl_")
    }
    shown = {re.sub(r"_(bucket|count|sum|created|total)$", "", name) for name in used}
    assert families - shown <= {"runnerctl_http_request_duration_seconds"}
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
