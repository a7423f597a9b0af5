"""Token lifecycle: `runner-controller token create --expires-in`, `token list`, `token revoke`, and the
auth check that refuses a token past its expiry or revoked, over a real server."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import requests

from common.auth import Role
from controller.tokens import create_token, lookup
from tests.servers import REPO, controller_cmd, database, migrate_db, running_controller


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'controller.db'}"
    migrate_db(url)
    return url


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        controller_cmd("token", *args, "--db", db.removeprefix("sqlite:///")),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_create_list_and_revoke(db: str) -> None:
    created = cli(db, "create", "--role", "read", "--name", "alice", "--expires-in", "90d")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    forever = cli(db, "create", "--role", "agent", "--runner", "linux-03")
    assert forever.returncode == 0, forever.stderr

    listed = cli(db, "list")
    assert listed.returncode == 0, listed.stderr
    header, alice, agent = listed.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "ROLE", "RUNNER", "CREATED", "EXPIRES", "STATE"]
    assert alice.split()[:4] == ["1", "alice", "read", "-"] and alice.split()[-1] == "active"
    expires = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 90 * 86400))
    assert alice.split()[5].startswith(expires)
    assert agent.split()[:4] == ["2", "agent-token", "agent", "linux-03"] and agent.split()[5] == "never"
    assert token not in listed.stdout and token[4:] not in listed.stdout

    revoked = cli(db, "revoke", "1")
    assert (revoked.returncode, revoked.stdout) == (0, "token/1 revoked\n")
    again = cli(db, "revoke", "1")
    assert (again.returncode, again.stdout) == (0, "token/1 already revoked\n")
    assert cli(db, "list").stdout.splitlines()[1].split()[-1] == "revoked"
    with database(db) as conn:
        assert lookup(conn, token) is None

    missing = cli(db, "revoke", "99")
    assert missing.returncode == 1
    assert missing.stderr == "error: no token with id 99: see `runner-controller token list`\n"


@pytest.mark.parametrize(
    "given", ["5y", "d", "0d", "-3h", "3651d"], ids=["unit", "no-number", "zero", "negative", "too-long"]
)
def test_a_bad_expiry_is_a_usage_error(db: str, given: str) -> None:
    done = cli(db, "create", "--role", "read", "--expires-in", given)
    assert done.returncode == 2 and "--expires-in" in done.stderr
    assert done.stdout == ""


def test_an_empty_list_says_so(db: str) -> None:
    done = cli(db, "list")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "No resources found\n")


def test_an_expired_token_is_refused(tmp_path: Path) -> None:
    with running_controller(tmp_path) as controller:
        with database(controller.db) as conn:
            now_ms = int(time.time() * 1000)
            token = create_token(conn, Role.read, "short", None, now_ms, expires_ms=now_ms + 2000)
        before = requests.get(controller.url + "/v1/runners", headers=controller.headers(token), timeout=30)
        assert before.status_code == 200, before.text
        time.sleep(2.2)
        after = requests.get(controller.url + "/v1/runners", headers=controller.headers(token), timeout=30)
        assert (after.status_code, after.json()["detail"]) == (401, "unknown or revoked token")
