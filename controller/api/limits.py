"""Per-client limits, keyed by the token a request carries: one client cannot take the controller from the
others.

- **In flight** (always on): at most `max_in_flight` of one token's requests are served at once. A
  client that opens many connections would otherwise hold every worker thread and database connection,
  and every other agent and uploader would queue behind it. A client that sends one request after
  another, however fast (a backfill, `runnerctl import`), is never refused by this limit.
- **Rate** (per role, off unless configured): a token bucket of `rate_per_s` requests a second and
  `burst` at once, for roles whose cadence is known — an agent reports every 30-60 s, so one sending
  many a second is broken. Off by default because a backfill through the same role is legitimately fast.

A refused request gets 429 with Retry-After: the agent keeps its reports spooled and sends them later,
runnerctl retries after the pause.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass(frozen=True)
class Refusal:
    limit: str  # in_flight | rate
    detail: str
    retry_after_s: int


class ClientLimits:
    """Admission per client key. Used from the event loop only, so it needs no lock."""

    def __init__(
        self,
        max_in_flight: int,
        rates: dict[str, float],
        burst: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_in_flight = max_in_flight
        self.rates = rates
        self.burst = burst
        self.clock = clock
        self._in_flight: dict[int, int] = {}
        self._buckets: dict[int, _Bucket] = {}

    def admit(self, key: int, name: str, role: str) -> Refusal | None:
        """None when the request may go on (then `release(key)` once it is answered), else why not."""
        held = self._in_flight.get(key, 0)
        if held >= self.max_in_flight:
            return Refusal(
                "in_flight",
                f"token '{name}' already has {held} requests in progress, the most one client may have "
                "at once: wait for their answers before sending more",
                1,
            )
        rate = self.rates.get(role, 0.0)
        if rate > 0:
            wait_s = self._take(key, rate)
            if wait_s > 0:
                return Refusal(
                    "rate",
                    f"token '{name}' sends more than {rate:g} requests a second, the most one {role} "
                    f"token may (bursts of {self.burst}): slow down",
                    max(1, math.ceil(wait_s)),
                )
        self._in_flight[key] = held + 1
        return None

    def release(self, key: int) -> None:
        held = self._in_flight.get(key, 0) - 1
        if held > 0:
            self._in_flight[key] = held
        else:
            self._in_flight.pop(key, None)

    def _take(self, key: int, rate: float) -> float:
        """Take one request from the key's bucket; the seconds until one is there if it is empty."""
        now = self.clock()
        bucket = self._buckets.setdefault(key, _Bucket(float(self.burst), now))
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / rate
