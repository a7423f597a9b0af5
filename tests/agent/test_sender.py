from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.sender import Sender
from agent.settings import SenderSettings, SpoolSettings
from agent.spool import Spool
from common.identity import RunnerIdentity
from common.reports import AgentReport
from tests.agent.sink import Sink


def fill(spool: Spool, n: int, labels: dict[int, tuple[str, ...]] | None = None) -> None:
    for _ in range(n):

        def build(seq: int, dropped: int) -> AgentReport:
            runner = RunnerIdentity(id="r1", labels=(labels or {}).get(seq, ()))
            return AgentReport(
                agent_id="r1",
                boot_id="b1",
                seq=seq,
                observed_at=datetime.now(UTC),
                runner=runner,
                dropped=dropped,
            )

        spool.append("r1", "b1", build)


@pytest.fixture
def spool(tmp_path: Path) -> Spool:
    return Spool(tmp_path, SpoolSettings(), disk_used_ratio=lambda _: 0.0)


def sender(sink: Sink, spool: Spool, token: str | None = None) -> Sender:
    return Sender(sink.url, token or sink.token, spool, SenderSettings(read_timeout_s=2.0))


def test_batch_sent_and_acknowledged(sink: Sink, spool: Spool) -> None:
    fill(spool, 5)

    result = sender(sink, spool).send_once()

    assert (result.acked, result.retry) == (5, False)
    assert sink.store.seqs() == [1, 2, 3, 4, 5] and spool.stats()["reports"] == 0


@pytest.mark.parametrize("status", [401, 403], ids=["401", "403"])
def test_refused_token_is_a_config_error_and_keeps_the_spool(
    status: int, sink: Sink, spool: Spool, caplog: pytest.LogCaptureFixture
) -> None:
    fill(spool, 3)
    sink.faults.status = status

    with caplog.at_level(logging.DEBUG):
        result = sender(sink, spool).send_once()

    assert result.config_error and spool.stats()["reports"] == 3
    assert f"HTTP {status}" in caplog.text and "token" in caplog.text
    assert sink.token not in caplog.text


def test_wrong_token_answers_401_from_the_sink(sink: Sink, spool: Spool) -> None:
    fill(spool, 1)

    assert sender(sink, spool, token="wrong").send_once().config_error


def test_413_splits_the_batch(sink: Sink, spool: Spool) -> None:
    fill(spool, 10)
    sink.faults.max_batch = 3
    s = sender(sink, spool)

    while spool.stats()["reports"]:
        assert not s.send_once().retry

    assert sink.store.seqs() == list(range(1, 11))
    assert 413 in sink.store.statuses and spool.stats()["dead_letter"] == 0


def test_422_dead_letters_only_the_malformed_report(sink: Sink, spool: Spool) -> None:
    fill(spool, 8, labels={5: ("poison",)})
    sink.faults.reject_marker = "poison"
    s = sender(sink, spool)

    while spool.stats()["reports"]:
        s.send_once()

    assert sink.store.seqs() == [1, 2, 3, 4, 6, 7, 8]
    assert spool.stats()["dead_letter"] == 1
    assert spool.stats()["pending_dropped"] == 1  # the next report says one was lost


@pytest.mark.parametrize("status", [500, 502, 503], ids=["500", "502", "503"])
def test_server_errors_are_retried_later(status: int, sink: Sink, spool: Spool) -> None:
    fill(spool, 2)
    sink.faults.status = status
    s = sender(sink, spool)

    assert s.send_once().retry and spool.stats()["reports"] == 2
    sink.faults.status = None
    assert s.send_once().acked == 2


def test_controller_down_is_retried(sink: Sink, spool: Spool) -> None:
    fill(spool, 2)
    sink.stop()

    assert sender(sink, spool).send_once().retry
    assert spool.stats()["reports"] == 2


def test_backoff_grows_with_failures_and_is_capped(spool: Spool) -> None:
    s = Sender("http://127.0.0.1:9", None, spool, SenderSettings(backoff_base_s=1, backoff_max_s=8))
    caps = []
    for failures in (0, 1, 2, 3, 10):
        s._failures = failures
        caps.append(max(s.backoff() for _ in range(200)))

    assert caps[0] <= 1 and caps[1] <= 2 and caps[2] <= 4 and caps[4] <= 8
    assert caps[4] > 4  # jittered over the whole range up to the cap


def test_reports_of_an_earlier_boot_are_sent_in_their_own_batch(sink: Sink, spool: Spool) -> None:
    for boot in ("old-boot", "new-boot"):
        spool.append(
            "r1",
            boot,
            lambda seq, dropped, boot=boot: AgentReport(  # type: ignore[misc]
                agent_id="r1",
                boot_id=boot,
                seq=seq,
                observed_at=datetime.now(UTC),
                runner=RunnerIdentity(id="r1"),
            ),
        )
    s = sender(sink, spool)

    assert s.send_once().acked == 1 and s.send_once().acked == 1
    assert sorted(sink.store.reports) == [("r1", "new-boot", 1), ("r1", "old-boot", 1)]


def test_batch_size_grows_back_after_a_413(sink: Sink, spool: Spool) -> None:
    fill(spool, 40)
    sink.faults.max_batch = 4
    s = Sender(sink.url, sink.token, spool, SenderSettings(batch_size=32))
    s.send_once()  # 413 at 32, then 16, 8, 4: four sent
    sink.faults.max_batch = None

    sizes = []
    while spool.stats()["reports"]:
        sizes.append(min(s._batch_limit, spool.stats()["reports"]))
        assert s.send_once().acked

    assert sizes[0] == 8 and max(sizes) > 8 and sink.store.seqs() == list(range(1, 41))
