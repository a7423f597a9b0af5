"""Sends spooled reports to the controller in batches and removes them once acknowledged.

Failures are sorted by what can fix them: connection errors, timeouts and 5xx go away by themselves
(retry with exponential backoff and full jitter); 401/403/404 need an operator (log clearly, keep
spooling, back off long); 413 means the batch is too large (split it); 422 and other 4xx mean a report
is malformed (bisect to it and dead-letter it, so one bad report never blocks the queue).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from agent.settings import SenderSettings
from agent.spool import Spool, Spooled
from common.plural import counted

log = logging.getLogger(__name__)

USER_AGENT = "runner-agent"


@dataclass
class Result:
    """What one send round did, for the loop's pacing and for tests."""

    acked: int = 0
    dead: int = 0
    retry: bool = False
    config_error: bool = False


class Sender:
    def __init__(
        self,
        server: str,
        token: str | None,
        spool: Spool,
        settings: SenderSettings,
        stop: threading.Event | None = None,
        on_answer: Callable[[Any], None] | None = None,
    ) -> None:
        self.url = server.rstrip("/") + "/v1/reports"
        self.spool = spool
        self.settings = settings
        self.stop = stop or threading.Event()
        self.on_answer = on_answer  # the controller's directives ride on its acknowledgements
        self.wake = threading.Event()
        self._batch_limit = settings.batch_size
        self._failures = 0
        self.session = requests.Session()
        # urllib3 retries only what never reached the server (refused, DNS); everything after the request
        # left is our own loop's business, where backoff and the stop event are under control.
        retry = Retry(
            total=3,
            connect=3,
            read=0,
            status=0,
            other=0,
            redirect=0,
            backoff_factor=0.2,
            allowed_methods=None,
            raise_on_status=False,
        )
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session.mount("https://", HTTPAdapter(max_retries=retry))
        self.session.headers["User-Agent"] = USER_AGENT
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self.session.close()

    def run(self) -> None:
        """Until `stop` is set: send, then wait for new reports or for the backoff to pass."""
        while not self.stop.is_set():
            try:
                result = self.send_once()
            except Exception:  # never let the sender thread die: the spool keeps everything
                log.exception("sender: unexpected error")
                result = Result(retry=True)
            if result.config_error:
                self._failures += 1
                delay = self.settings.auth_backoff_s
            elif result.retry:
                self._failures += 1
                delay = self.backoff()
            elif result.acked or result.dead:
                self._failures = 0
                continue  # there may be more in the spool
            else:
                self._failures = 0
                delay = self.settings.idle_poll_s
            self.wake.clear()
            if result.retry or result.config_error:
                self.stop.wait(delay)  # a new report must not cut a backoff short
            else:
                self.wake.wait(delay)

    def backoff(self) -> float:
        cap = min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** min(self._failures, 30))
        return random.uniform(0, cap)  # full jitter: a fleet that lost its controller does not return in step

    def send_once(self) -> Result:
        batch = self.spool.peek(self._batch_limit)
        if not batch:
            return Result()
        return self._send(batch)

    def _send(self, batch: list[Spooled]) -> Result:
        try:
            # The spooled JSON goes out as stored, never decoded and re-encoded: less memory and CPU, and
            # a resend is byte-identical to the first attempt.
            body = '{"reports":[' + ",".join(item.body for item in batch) + "]}"
            response = self.session.post(
                self.url,
                data=body.encode("utf-8"),
                headers={"Content-Type": "application/json"},
                timeout=(self.settings.connect_timeout_s, self.settings.read_timeout_s),
            )
        except requests.RequestException as exc:
            log.warning(
                "sender: %s unreachable (%s); %s stay spooled",
                self.url,
                type(exc).__name__,
                counted(len(batch), "report"),
            )
            return Result(retry=True)
        status = response.status_code
        if status == 200:
            return self._acknowledge(batch, response)
        if status in (401, 403):
            log.error(
                "sender: the controller refused the agent's token (HTTP %d): check `token` in the "
                "config; reports stay spooled",
                status,
            )
            return Result(config_error=True)
        if status in (404, 405):
            log.error(
                "sender: %s answered HTTP %d: check `server` in the config; reports stay spooled",
                self.url,
                status,
            )
            return Result(config_error=True)
        if status == 413:
            if len(batch) == 1:
                self.spool.dead_letter(batch[0], "larger than the controller accepts (HTTP 413)")
                return Result(dead=1)
            self._batch_limit = max(1, len(batch) // 2)
            log.warning(
                "sender: batch of %d too large (HTTP 413); sending %d at a time",
                len(batch),
                self._batch_limit,
            )
            return self._send(batch[: self._batch_limit])
        if 400 <= status < 500 and status not in (408, 429):
            return self._isolate_malformed(batch, status, _detail(response))
        log.warning(
            "sender: controller answered HTTP %d; %s stay spooled", status, counted(len(batch), "report")
        )
        return Result(retry=True)

    def _acknowledge(self, batch: list[Spooled], response: requests.Response) -> Result:
        try:
            body = response.json()
            seqs = [int(s) for s in [*body.get("new", []), *body.get("duplicate", [])]]
        except (ValueError, TypeError, AttributeError):
            log.warning("sender: unreadable acknowledgement; will resend (the controller dedupes)")
            return Result(retry=True)
        if self.on_answer is not None:
            try:
                self.on_answer(body)
            except Exception:  # a directive gone wrong must not stop reports
                log.exception("sender: cannot act on the controller's answer")
        # A batch that went through lets the size limit a 413 imposed grow back, one doubling at a time.
        self._batch_limit = min(self.settings.batch_size, max(self._batch_limit, len(batch) * 2))
        sent = {item.seq for item in batch}
        acked = self.spool.ack(batch[0].agent_id, batch[0].boot_id, [s for s in seqs if s in sent])
        if acked < len(batch):
            log.warning(
                "sender: %d of %s not acknowledged; will resend",
                len(batch) - acked,
                counted(len(batch), "report"),
            )
            return Result(acked=acked, retry=acked == 0)
        return Result(acked=acked)

    def _isolate_malformed(self, batch: list[Spooled], status: int, detail: str) -> Result:
        """Bisect to the reports the controller rejects; the good ones are sent and acknowledged."""
        if len(batch) == 1:
            self.spool.dead_letter(batch[0], f"HTTP {status}: {detail}")
            return Result(dead=1)
        half = len(batch) // 2
        total = Result()
        for part in (batch[:half], batch[half:]):
            r = self._send(part)
            total.acked += r.acked
            total.dead += r.dead
            if r.retry or r.config_error:
                total.retry, total.config_error = r.retry, r.config_error
                break
        return total


def _detail(response: requests.Response) -> str:
    try:
        body: Any = response.json()
        return str(body.get("detail", body))[:500] if isinstance(body, dict) else str(body)[:500]
    except ValueError:
        return response.text[:500]
