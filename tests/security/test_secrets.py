"""No secret reaches a log line, an error message or an answer: a real controller logs at debug level
while tokens are created, used, refused and misused, a provider is called with a password and fails,
and bad database URLs are refused; then every byte it and the CLIs wrote is searched for each secret."""

from __future__ import annotations

import base64
import http.server
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.servers import REPO, controller_cmd, free_port, runnerctl_cmd, running_controller

PROVIDER_PASSWORD = "bb-pass-7Qz9Lk2Wm4"
DB_PASSWORD = "db-pass-Xk8Vn3Rt6"


class FailingBuildbot(http.server.BaseHTTPRequestHandler):
    """Answers every call 500, and keeps the Authorization headers it was sent."""

    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization", ""))
        self.send_response(500)
        self.end_headers()
        self.wfile.write(b"internal error")

    do_POST = do_GET
    do_PUT = do_GET

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture(scope="module")
def buildbot() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FailingBuildbot)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class Transcript:
    """Everything a user or an operator could read: answers and CLI output."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def response(self, response: requests.Response) -> requests.Response:
        self.parts.append(f"{response.status_code} {dict(response.headers)} {response.text}")
        return response

    def run(self, *command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=REPO, env=os.environ | (env or {}), timeout=60
        )
        self.parts.append(done.stderr)
        return done


def test_secrets_stay_out_of_logs_errors_and_answers(tmp_path: Path, buildbot: str) -> None:
    transcript = Transcript()
    env = {
        "RUNNER_CONTROLLER_LOG_LEVEL": "debug",
        "RUNNER_CONTROLLER_PROVIDERS": json.dumps(
            {"buildbot": {"url": buildbot, "username": "controller", "password": PROVIDER_PASSWORD}}
        ),
        "RUNNER_CONTROLLER_REMEDIATION_MODE": "auto",
    }
    with running_controller(tmp_path, env=env) as controller:
        # Token creation: printed once on stdout, alone, and nowhere else.
        created = transcript.run(
            *controller_cmd("token", "create", "--role", "ingest", "--db", controller.db)
        )
        assert created.returncode == 0
        ingest = created.stdout.strip()
        assert ingest.startswith("rct_") and created.stdout == ingest + "\n"
        admin, agent = controller.admin_token, controller.token("agent", runner="bb-1")
        unknown = "rct_" + "Z" * 43
        secrets = [ingest, admin, agent, unknown, PROVIDER_PASSWORD]

        def call(method: str, path: str, token: str | None, **kwargs: Any) -> requests.Response:
            headers = ({"Authorization": f"Bearer {token}"} if token else {}) | kwargs.pop("headers", {})
            return transcript.response(
                requests.request(method, controller.url + path, headers=headers, timeout=30, **kwargs)
            )

        # Good calls, so that debug logging has requests to talk about.
        result = {
            "test_id": "t",
            "outcome": "failed",
            "time": "2026-09-21T10:00:00Z",
            "runner": {"id": "bb-1", "provider": "buildbot", "pool": "linux"},
        }
        assert call("POST", "/v1/results", ingest, json=[result]).status_code == 200
        assert call("GET", "/v1/runners", admin).status_code == 200
        # Refusals of every kind.
        assert call("GET", "/v1/runners", unknown).status_code == 401
        assert (
            call("GET", "/v1/runners", None, headers={"Authorization": f"Basic {admin}"}).status_code == 401
        )
        assert call("GET", "/v1/runners", f"{unknown} {admin}").status_code == 401
        assert call("POST", "/v1/results", agent, json=[result]).status_code == 403
        report = {
            "agent_id": "a",
            "boot_id": "b",
            "seq": 1,
            "observed_at": "2026-09-21T10:00:00Z",
            "runner": {"id": "someone-else"},
        }
        assert call("POST", "/v1/reports", agent, json={"reports": [report]}).status_code == 403
        assert call("POST", "/v1/results", ingest, json=[{"test_id": ingest}]).status_code == 422
        assert call("POST", "/v1/results", ingest, data=b"x" * (17 * 1024 * 1024)).status_code == 413
        assert call("POST", "/v1/webhooks/buildbot", unknown, json={"buildid": 1}).status_code == 401
        # The provider is called with its password and fails: the operator hears why, not the password.
        cordon = call("POST", "/v1/runners/bb-1/cordon", admin, json={"reason": "test"})
        assert cordon.status_code == 503, cordon.text
        assert FailingBuildbot.seen, "the provider was never called"
        basic = base64.b64decode(FailingBuildbot.seen[0].removeprefix("Basic ")).decode()
        assert basic == f"controller:{PROVIDER_PASSWORD}"
        # runnerctl refused by the controller.
        refused = transcript.run(
            *runnerctl_cmd("--server", controller.url, "--token", unknown, "get", "runners")
        )
        assert refused.returncode == 1
        controller.stop()  # flush and close the log before reading it
        log = controller.log.read_text()

    # Database URLs with a password, unreachable: the error names the database without it.
    db_url = f"postgresql://runner:{DB_PASSWORD}@127.0.0.1:{free_port()}/runnerctl"
    for command in (("serve",), ("migrate",), ("token", "create", "--role", "read")):
        failed = transcript.run(*controller_cmd(*command, "--db", db_url))
        assert failed.returncode == 1 and "cannot open database" in failed.stderr, failed.stderr
        assert "postgresql://runner:***@127.0.0.1" in failed.stderr
    secrets.append(DB_PASSWORD)

    assert " DEBUG " in log, "the controller did not log at debug level"
    assert '"GET /v1/runners HTTP/1.1" 401' in log
    everything = log + "\n".join(transcript.parts)
    for secret in secrets:
        assert secret not in everything, f"a secret leaked: {secret[:6]}…"
        # Nor any long piece of one (a token cut short is still most of a token).
        assert secret[4:20] not in everything, f"part of a secret leaked: {secret[:6]}…"
