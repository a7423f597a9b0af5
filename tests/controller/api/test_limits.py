"""Per-client limits: one token's flood is answered 429 with Retry-After, and nobody else waits for it."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
import requests

from controller.api.limits import ClientLimits
from tests.security.test_limits import connect, head
from tests.servers import Controller, running_controller


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_token_may_hold_only_so_many_requests_at_once() -> None:
    limits = ClientLimits(max_in_flight=2, rates={}, burst=1)
    assert limits.admit(1, "ci", "ingest") is None
    assert limits.admit(1, "ci", "ingest") is None
    refusal = limits.admit(1, "ci", "ingest")
    assert refusal is not None and refusal.retry_after_s == 1
    assert "token 'ci' already has 2 requests in progress" in refusal.detail
    assert limits.admit(2, "other", "ingest") is None, "another token is not held back by this one"
    limits.release(1)
    assert limits.admit(1, "ci", "ingest") is None, "an answered request frees its place"


def test_one_request_after_another_is_never_refused_without_a_rate() -> None:
    limits = ClientLimits(max_in_flight=1, rates={"agent": 1.0}, burst=2)
    for _ in range(1000):
        assert limits.admit(7, "backfill", "ingest") is None
        limits.release(7)


def test_a_rate_limited_role_gets_its_burst_then_waits_for_its_rate() -> None:
    clock = Clock()
    limits = ClientLimits(max_in_flight=100, rates={"agent": 0.5}, burst=3, clock=clock)
    for _ in range(3):
        assert limits.admit(3, "agent-linux-01", "agent") is None
        limits.release(3)
    refusal = limits.admit(3, "agent-linux-01", "agent")
    assert refusal is not None
    assert refusal.retry_after_s == 2, "one request comes back every 2 s at 0.5/s"
    assert refusal.detail == (
        "token 'agent-linux-01' sends more than 0.5 requests a second, the most one agent token may "
        "(bursts of 3): slow down"
    )
    clock.now += 2
    assert limits.admit(3, "agent-linux-01", "agent") is None
    assert limits.admit(4, "agent-linux-02", "agent") is None, "each agent has its own bucket"


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    env = {
        "RUNNER_CONTROLLER_MAX_IN_FLIGHT_PER_CLIENT": "2",
        "RUNNER_CONTROLLER_CLIENT_RATE_PER_S": json.dumps({"agent": 0.01}),  # one back every 100 s
        "RUNNER_CONTROLLER_CLIENT_BURST": "2",
    }
    with running_controller(tmp_path_factory.mktemp("limited"), env=env) as controller:
        yield controller


def test_a_client_flooding_with_connections_is_refused_and_others_are_served(limited: Controller) -> None:
    flooder = limited.token("ingest")
    held: list[socket.socket] = []
    try:
        # Two uploads whose bodies never finish: both are in progress, the flooder's most.
        for _ in range(2):
            sock = connect(limited)
            sock.sendall(head("POST", "/v1/results", flooder, "Content-Length: 1000") + b"[")
            held.append(sock)
        # The held uploads reach the gate a moment after they were sent (later on a loaded machine).
        deadline = time.monotonic() + 60
        while _metric(limited, "runnerctl_http_requests_in_progress") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = _probe(limited, flooder)
        assert refused.status_code == 429, refused.text
        assert refused.headers["Retry-After"] == "1"
        assert "already has 2 requests in progress" in refused.json()["detail"]
        assert _metric(limited, 'runnerctl_http_client_limited_total{limit="in_flight"}') == 1
        other = _probe(limited, limited.admin_token)
        assert other.status_code == 200, "another client is served while the flooder waits"
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 30
    again = _probe(limited, flooder)
    while again.status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
        again = _probe(limited, flooder)
    assert again.status_code == 200, "the flooder is served again once its requests are gone"


def test_an_agent_over_its_rate_is_told_when_to_come_back(limited: Controller) -> None:
    agent = limited.token("agent", "linux-01")
    answers = [_report(limited, agent, "linux-01", seq) for seq in range(1, 4)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert int(answers[2].headers["Retry-After"]) >= 1
    assert limited.count("reports") == 2, "nothing is stored from a refused report"
    other = _report(limited, limited.token("agent", "linux-02"), "linux-02", 1)
    assert other.status_code == 200, "another agent has its own rate"


def _metric(controller: Controller, series: str) -> float:
    text = requests.get(f"{controller.url}/metrics", timeout=10).text
    return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(series + " "))


def _probe(controller: Controller, token: str) -> requests.Response:
    """A request an ingest token may make, cheap to answer: a batch of no results."""
    return requests.post(f"{controller.url}/v1/results", json=[], headers=_bearer(token), timeout=10)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _report(controller: Controller, token: str, runner: str, seq: int) -> requests.Response:
    body = {
        "reports": [
            {
                "agent_id": f"agent-{runner}",
                "boot_id": "boot-1",
                "seq": seq,
                "observed_at": "2026-09-21T10:00:00Z",
                "runner": {"id": runner},
                "readings": [],
            }
        ]
    }
    return requests.post(f"{controller.url}/v1/reports", json=body, headers=_bearer(token), timeout=10)
