"""The clock check: this runner's offset against NTP servers, by default the ones the system syncs to.

A skewed clock breaks TLS, token expiry and build caches long before anyone looks at `date`.
"""

from __future__ import annotations

import glob
import statistics
from pathlib import Path

import ntplib
from pydantic import Field

from agent.checks.base import CheckConfig
from common.readings import ClockReading, NtpServerReading, Status

NAME = "clock"

DEFAULT_CONFIG_FILES = (
    "/etc/chrony/chrony.conf",
    "/etc/chrony.conf",
    "/etc/ntp.conf",
    "/etc/systemd/timesyncd.conf",
)


class ClockConfig(CheckConfig):
    interval_s: float = Field(default=60.0, gt=0)
    timeout_s: float = Field(default=30.0, gt=0)
    servers: tuple[str, ...] = Field(default=(), description="host or host:port; empty: the system's own")
    config_files: tuple[str, ...] = DEFAULT_CONFIG_FILES
    max_offset_s: float = Field(default=1.0, gt=0)
    query_timeout_s: float = Field(default=2.0, gt=0)
    max_servers: int = Field(default=8, ge=1, le=32)


def collect(config: ClockConfig) -> ClockReading:
    servers = list(config.servers) or system_servers(config.config_files)
    if not servers:
        return ClockReading(
            status=Status.unknown,
            reason="NoNtpServers",
            message="no NTP servers configured and none found in " + ", ".join(config.config_files),
        )
    answers = [_query(server, config.query_timeout_s) for server in servers[: config.max_servers]]
    offsets = [a.offset_s for a in answers if a.offset_s is not None]
    failed = [a for a in answers if a.error is not None]
    if not offsets:
        return ClockReading(
            status=Status.unknown,
            reason="NtpUnreachable",
            servers=answers,
            message="no NTP server answered: " + "; ".join(f"{a.server}: {a.error}" for a in failed),
        )
    median = statistics.median(offsets)
    reading = ClockReading(offset_s=median, servers=answers)
    notes = [f"{a.server} failed: {a.error}" for a in failed]
    if abs(median) > config.max_offset_s:
        reading.status = Status.problem
        reading.reason = "ClockSkew"
        notes.insert(0, f"clock off by {median:+.3f} s (limit {config.max_offset_s} s)")
    reading.message = "; ".join(notes)[:2000] or None
    return reading


def _query(server: str, timeout_s: float) -> NtpServerReading:
    host, port = split_server(server)
    try:
        response = ntplib.NTPClient().request(host, version=3, port=port, timeout=timeout_s)
    except (ntplib.NTPException, OSError, ValueError) as exc:
        return NtpServerReading(server=server, error=(str(exc) or type(exc).__name__)[:200])
    if response.stratum == 0 or response.leap == 3:
        # Kiss-o'-death or an unsynchronised server: its time is no evidence about ours.
        return NtpServerReading(server=server, stratum=response.stratum, error="server unsynchronised")
    return NtpServerReading(
        server=server, offset_s=response.offset, delay_s=response.delay, stratum=response.stratum
    )


def split_server(server: str) -> tuple[str, int | str]:
    if server.startswith("["):  # [::1]:123
        host, _, rest = server[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else "ntp"
    host, sep, port = server.rpartition(":")
    if sep and port.isdigit() and ":" not in host:
        return host, int(port)
    return server, "ntp"


def system_servers(config_files: tuple[str, ...]) -> list[str]:
    """The servers of the first config file that names any (chrony, ntpd, systemd-timesyncd)."""
    for name in config_files:
        path = Path(name)
        if not path.is_file():
            continue
        servers = _timesyncd(path) if path.name == "timesyncd.conf" else _ntp_style(path, depth=0)
        if servers:
            return list(dict.fromkeys(servers))
    return []


def _ntp_style(path: Path, depth: int) -> list[str]:
    """`server|pool|peer HOST [port N] ...` lines; chrony's confdir/sourcedir/include followed one level."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    out: list[str] = []
    for raw in lines:
        words = raw.split("#", 1)[0].split("!", 1)[0].split()
        if not words:
            continue
        keyword = words[0].lower()
        if keyword in ("server", "pool", "peer") and len(words) > 1:
            host = words[1]
            port = words[words.index("port") + 1] if "port" in words[:-1] else None
            out.append(f"{host}:{port}" if port and port.isdigit() else host)
        elif keyword in ("include", "confdir", "sourcedir") and len(words) > 1 and depth < 2:
            patterns = (
                [words[1]]
                if keyword == "include"
                else [f"{d}/*.conf" if keyword == "confdir" else f"{d}/*.sources" for d in words[1:]]
            )
            for pattern in patterns:
                # Relative paths are read against the including file's directory, as a test fixture needs.
                for included in sorted(glob.glob(str(path.parent / pattern))):
                    out.extend(_ntp_style(Path(included), depth + 1))
    return out


def _timesyncd(path: Path) -> list[str]:
    out: list[str] = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for raw in lines:
        key, sep, value = raw.partition("=")
        if sep and key.strip() == "NTP" and not raw.lstrip().startswith("#"):
            out.extend(value.split())
    return out
