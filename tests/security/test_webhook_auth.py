"""Provider webhooks against misuse: who may push, and what a replayed push can do.

Here: Buildbot's HttpStatusPush (POST /v1/webhooks/buildbot). Buildbot cannot sign it, so it carries
an ingest token as a header, and a push only settles a rerun the controller itself submitted and still
waits for. A replay (the same push again, or the same build with another result) changes nothing.

The signed provider webhooks (POST /v1/webhooks/{provider}) pass the gate unauthenticated
(controller/api/gate.py, `gated`): their signature is their only guard. Bad, missing, tampered and
stale signatures (401, nothing stored) and replayed deliveries (200, nothing stored twice) are tested
per provider in tests/controller/providers/test_{github,gitlab,buildkite}.py and
tests/e2e/test_provider_{github,gitlab,buildkite}.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select, update

from common.auth import hash_token
from controller.db import tables
from controller.remediation import store
from tests.controller.api.test_webhooks import FINISHED
from tests.servers import Controller, database, running_controller

PATH = "/v1/webhooks/buildbot"
FAILED = FINISHED | {"results": 2, "state_string": "failed test"}


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    """No remediation loop: only pushes move reruns here."""
    env = {"RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0"}
    with running_controller(tmp_path_factory.mktemp("webhooks"), env=env) as controller:
        yield controller


def submitted_rerun(controller: Controller, key: str, new_job: str) -> None:
    """A rerun as the controller records one it has submitted to Buildbot."""
    with database(controller.db) as conn:
        assert store.add_rerun(conn, key, "inc-1", "linux-03", "job-17", None)
        store.update_rerun(conn, key, state="submitted", new_job_id=new_job)


def rerun_state(controller: Controller, key: str) -> str:
    with database(controller.db) as conn:
        return str(conn.execute(select(tables.reruns.c.state).where(tables.reruns.c.key == key)).scalar_one())


def settlements(controller: Controller, key: str) -> int:
    with database(controller.db) as conn:
        rows = conn.execute(select(tables.actions.c.key).where(tables.actions.c.key == f"rerun-result:{key}"))
        return len(rows.all())


def test_who_may_push(quiet: Controller) -> None:
    revoked = quiet.token("ingest")
    with database(quiet.db) as conn:
        conn.execute(
            update(tables.tokens)
            .where(tables.tokens.c.token_hash == hash_token(revoked))
            .values(revoked_ms=int(time.time() * 1000))
        )
    for token, status in [
        ("", 401),
        ("rct_" + "Q" * 43, 401),
        (revoked, 401),
        (quiet.token("read"), 403),
        (quiet.token("operator"), 403),
        (quiet.token("agent", runner="linux-03"), 403),
        (quiet.token("ingest"), 200),
        (quiet.admin_token, 200),
    ]:
        headers = {"Authorization": f"Bearer {token}"} if token else {"Authorization": ""}
        response = quiet.post(PATH, json=FINISHED | {"buildrequestid": 1}, headers=headers)
        assert response.status_code == status, (token[:6], response.text)


def test_a_replayed_push_settles_nothing_twice(quiet: Controller) -> None:
    ingest = quiet.token("ingest")
    submitted_rerun(quiet, "rerun:replay", "buildrequest:977")
    first = quiet.post(PATH, json=FINISHED, token=ingest)
    assert first.json() == {"rerun": "rerun:replay", "outcome": "passed"}
    # The same push again, then the same build claiming another result: neither changes anything.
    for replay in (FINISHED, FAILED):
        again = quiet.post(PATH, json=replay, token=ingest)
        assert again.json() == {"rerun": None, "outcome": None}
    assert rerun_state(quiet, "rerun:replay") == "passed"
    assert settlements(quiet, "rerun:replay") == 1


def test_a_push_settles_only_what_the_controller_submitted(quiet: Controller) -> None:
    ingest = quiet.token("ingest")
    submitted_rerun(quiet, "rerun:waiting", "buildrequest:978")
    before = quiet.count("actions")
    # A build nobody asked for, an unfinished one, and a finished one of a request id given as a string.
    for push in (
        FINISHED | {"buildrequestid": 12345},
        FINISHED | {"buildrequestid": 978, "complete": False, "results": None},
        FINISHED | {"buildrequestid": "978"},
    ):
        assert quiet.post(PATH, json=push, token=ingest).json() == {"rerun": None, "outcome": None}
    assert rerun_state(quiet, "rerun:waiting") == "submitted"
    assert quiet.count("actions") == before
