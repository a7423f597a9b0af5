from __future__ import annotations

from pathlib import Path

import pytest

from agent.checks import clock
from common.readings import Status
from tests.chrony import Chrony

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "ntp"


@pytest.mark.needs_chrony
def test_true_time_is_ok(chrony: Chrony) -> None:
    reading = clock.collect(clock.ClockConfig(servers=(chrony.good,)))

    assert reading.status is Status.ok
    assert reading.offset_s is not None and abs(reading.offset_s) < 0.05
    assert reading.servers[0].stratum == 8 and reading.servers[0].delay_s is not None


@pytest.mark.needs_chrony
def test_skewed_server_reports_the_skew_within_50ms(chrony: Chrony) -> None:
    reading = clock.collect(clock.ClockConfig(servers=(chrony.skewed,)))

    assert (reading.status, reading.reason) == (Status.problem, "ClockSkew")
    # The server is 30 s ahead, so this machine's clock is 30 s behind it: ntplib's offset is +30.
    assert reading.offset_s == pytest.approx(chrony.skew_s, abs=0.05)


@pytest.mark.needs_chrony
def test_dead_server_is_named_not_fatal(chrony: Chrony) -> None:
    config = clock.ClockConfig(servers=(chrony.good, chrony.dead), query_timeout_s=0.5)

    reading = clock.collect(config)

    assert reading.status is Status.ok
    dead = next(s for s in reading.servers if s.server == chrony.dead)
    assert dead.error and dead.offset_s is None
    assert chrony.dead in (reading.message or "")


@pytest.mark.needs_chrony
def test_median_over_servers_that_answered(chrony: Chrony) -> None:
    config = clock.ClockConfig(servers=(chrony.good, chrony.good, chrony.skewed), max_offset_s=1.0)

    reading = clock.collect(config)

    assert reading.status is Status.ok  # one skewed server out of three is outvoted
    assert reading.offset_s is not None and abs(reading.offset_s) < 0.05


def test_only_dead_servers_is_unknown() -> None:
    from tests.chrony import free_udp_port

    dead = f"127.0.0.1:{free_udp_port()}"
    reading = clock.collect(clock.ClockConfig(servers=(dead,), query_timeout_s=0.3))

    assert (reading.status, reading.reason) == (Status.unknown, "NtpUnreachable")
    assert dead in (reading.message or "")


def test_no_servers_anywhere_is_unknown(tmp_path: Path) -> None:
    reading = clock.collect(clock.ClockConfig(config_files=(str(tmp_path / "none.conf"),)))

    assert (reading.status, reading.reason) == (Status.unknown, "NoNtpServers")


@pytest.mark.parametrize(
    ("files", "servers"),
    [
        (("chrony.conf",), ["ntp1.example.net", "pool.example.org", "10.0.0.5:11123", "dhcp.example.net"]),
        (("ntp.conf",), ["0.debian.pool.ntp.org", "time.example.com"]),
        (("timesyncd.conf",), ["a.example.com", "b.example.com"]),
        (("missing.conf", "ntp.conf"), ["0.debian.pool.ntp.org", "time.example.com"]),
    ],
    ids=["chrony", "ntpd", "timesyncd", "first-existing-wins"],
)
def test_system_servers(files: tuple[str, ...], servers: list[str]) -> None:
    assert clock.system_servers(tuple(str(CONFIGS / f) for f in files)) == servers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("host", ("host", "ntp")),
        ("host:123", ("host", 123)),
        ("[::1]:11123", ("::1", 11123)),
        ("::1", ("::1", "ntp")),
    ],
    ids=["host", "host-port", "ipv6-port", "ipv6"],
)
def test_split_server(text: str, expected: tuple[str, int | str]) -> None:
    assert clock.split_server(text) == expected
