"""How the Buildbot client maps HTTP failures to the provider error hierarchy, and which calls it repeats,
against a real HTTP server on loopback that answers what a struggling master would."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.providers.base import JobRef
from controller.providers.buildbot import BuildbotProvider
from tests.controller.providers.buildbot_master import Fault, Master, running_master


@pytest.fixture
def master() -> Iterator[Master]:
    with running_master(workers=("w1",)) as server:
        yield server


def provider(master: Master, timeout_s: float = 2) -> BuildbotProvider:
    return BuildbotProvider(master.url, timeout_s=timeout_s)


@pytest.mark.parametrize(
    ("status", "error"),
    [(503, ProviderUnavailable), (429, ProviderUnavailable), (404, RunnerNotFound), (400, ProviderRejected)],
    ids=["5xx", "429", "404", "400"],
)
def test_status_maps_to_error(master: Master, status: int, error: type[Exception]) -> None:
    retry_after = "0" if status == 429 else None
    master.state.faults.append(Fault("GET", "workers/w1", status, retry_after=retry_after, times=10))
    with pytest.raises(error):
        provider(master).state("w1")


def test_unavailable_is_retried_and_carries_retry_after(master: Master) -> None:
    master.state.faults.append(Fault("POST", "workers/w1", 429, retry_after="0", times=10))
    with pytest.raises(ProviderUnavailable) as caught:
        provider(master).cordon("w1", "sick")
    assert caught.value.retry_after == 0
    assert len(master.state.seen) == 4  # the first try and three retries: a pause is safe to repeat
    assert master.state.count("pause w1") == 0


def test_a_pause_whose_answer_was_lost_is_repeated_harmlessly(master: Master) -> None:
    master.state.faults.append(Fault("POST", "workers/w1", 200, delay_s=1.5, after=True))
    provider(master, timeout_s=1).cordon("w1", "sick")
    assert master.state.seen == ["POST workers/w1 pause", "POST workers/w1 pause"]
    assert master.state.effects == ["pause w1"]  # paused once; the repeat found it paused


def test_a_rebuild_is_never_retried(master: Master) -> None:
    master.state.faults.append(Fault("POST", "builds/7", 500, after=True))
    with pytest.raises(ProviderUnavailable):
        provider(master).rerun(JobRef("7"))
    assert master.state.seen == ["POST builds/7 rebuild"]
    assert master.state.effects == ["rebuild 7"]  # queued, though the answer said 500


def test_a_rebuild_whose_answer_times_out_is_not_repeated(master: Master) -> None:
    master.state.faults.append(Fault("POST", "builds/7", 200, delay_s=1.5, after=True))
    with pytest.raises(ProviderUnavailable, match="timed out"):
        provider(master, timeout_s=1).rerun(JobRef("7"))
    assert master.state.seen == ["POST builds/7 rebuild"]


def test_jsonrpc_error_is_a_rejection(master: Master) -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "action: nope"}}
    master.state.faults.append(Fault("POST", "workers/w1", 200, body=error))
    with pytest.raises(ProviderRejected):
        provider(master).cordon("w1", "sick")


def test_credentials_never_in_repr() -> None:
    found = BuildbotProvider("http://127.0.0.1:1/", username="bot", password="s3cret")
    assert "s3cret" not in repr(found) and "s3cret" not in str(vars(found).get("api"))
