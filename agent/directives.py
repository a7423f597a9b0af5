"""The controller's directives to this host, read from its answers to the agent's reports: when the
runner is cordoned (or no longer is), run the operator's `on_cordon` (`on_uncordon`) command once.

For providers that cannot stop a runner through their API (GitHub has no pause), this is what keeps a
cordoned runner from taking the next job; what the command does is the operator's choice, e.g. a script
that waits for the current job, then stops the runner service. The state applied last is kept in the
state directory, so a restarted agent neither repeats a command nor misses an uncordon.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)
STATE_FILE = "cordon-state.json"


class DirectiveSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    on_cordon: str | None = Field(
        default=None, description="command run once when the controller cordons this runner"
    )
    on_uncordon: str | None = Field(default=None, description="command run once when it is uncordoned")
    timeout_s: float = Field(default=3600.0, gt=0, description="a command running longer is killed")


class Directives:
    def __init__(self, runner_id: str, settings: DirectiveSettings, state_dir: Path) -> None:
        self.runner_id = runner_id
        self.settings = settings
        self.path = state_dir / STATE_FILE
        self.applied = self._load()
        self._busy = threading.Lock()

    def _load(self) -> bool | None:
        try:
            found = json.loads(self.path.read_text())
            return bool(found["cordoned"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # never told anything yet

    def handle(self, answer: Any) -> None:
        """Called with every acknowledgement body the controller sends."""
        if not isinstance(answer, dict):
            return
        for directive in answer.get("directives") or []:
            if isinstance(directive, dict) and directive.get("runner") == self.runner_id:
                self.apply(bool(directive.get("cordoned")), directive.get("reason"))

    def apply(self, cordoned: bool, reason: str | None) -> None:
        # Unknown before and not cordoned: nothing was stopped, so there is nothing to start again.
        if cordoned == self.applied or (self.applied is None and not cordoned):
            return
        command = self.settings.on_cordon if cordoned else self.settings.on_uncordon
        if not self._busy.acquire(blocking=False):
            return  # the previous command still runs; the next answer asks again
        threading.Thread(
            target=self._run, args=(command, cordoned, reason), name="directive", daemon=True
        ).start()

    def _run(self, command: str | None, cordoned: bool, reason: str | None) -> None:
        try:
            what = "cordoned" if cordoned else "uncordoned"
            if command:
                env = os.environ | {"RUNNER_AGENT_CORDONED": "1" if cordoned else "0"}
                env["RUNNER_AGENT_CORDON_REASON"] = reason or ""
                try:
                    done = subprocess.run(
                        shlex.split(command), env=env, timeout=self.settings.timeout_s, capture_output=True
                    )
                except (OSError, subprocess.TimeoutExpired) as error:
                    log.error("runner %s %s: %r failed: %s; will retry", self.runner_id, what, command, error)
                    return
                if done.returncode != 0:
                    log.error(
                        "runner %s %s: %r exited %d: %s; will retry",
                        self.runner_id,
                        what,
                        command,
                        done.returncode,
                        done.stderr.decode(errors="replace").strip()[-500:],
                    )
                    return
                log.info("runner %s %s by the controller (%s): ran %r", self.runner_id, what, reason, command)
            else:
                log.warning(
                    "runner %s %s by the controller; no command configured for it", self.runner_id, what
                )
            self.applied = cordoned
            try:
                self.path.write_text(json.dumps({"cordoned": cordoned, "reason": reason}))
            except OSError as error:
                log.warning("cannot record the cordon state in %s: %s", self.path, error)
        finally:
            self._busy.release()
