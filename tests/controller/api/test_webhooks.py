"""POST /v1/webhooks/buildbot: HttpStatusPush bodies, authenticated by a header token."""

from __future__ import annotations

from tests.servers import Controller

# The top-level keys Buildbot 4.3's HttpStatusPush sends (tests/e2e checks the real thing).
FINISHED = {
    "buildid": 41,
    "number": 3,
    "builderid": 1,
    "buildrequestid": 977,
    "workerid": 2,
    "complete": True,
    "results": 0,
    "state_string": "build successful",
    "properties": {"workername": ["w2", "Worker"]},
}


def test_a_push_for_no_known_rerun_is_acknowledged(shared_controller: Controller) -> None:
    response = shared_controller.post(
        "/v1/webhooks/buildbot", json=FINISHED, token=shared_controller.token("ingest")
    )
    assert (response.status_code, response.json()) == (200, {"rerun": None, "outcome": None})
    started = FINISHED | {"complete": False, "results": None}
    assert shared_controller.post("/v1/webhooks/buildbot", json=started).json() == {
        "rerun": None,
        "outcome": None,
    }


def test_not_a_build_and_wrong_role(shared_controller: Controller) -> None:
    bad = shared_controller.post("/v1/webhooks/buildbot", json={"hello": 1})
    assert bad.status_code == 422 and "not a Buildbot build" in bad.json()["detail"]
    reader = shared_controller.post(
        "/v1/webhooks/buildbot", json=FINISHED, token=shared_controller.token("read")
    )
    assert reader.status_code == 403
    anonymous = shared_controller.post("/v1/webhooks/buildbot", json=FINISHED, headers={"Authorization": ""})
    assert anonymous.status_code == 401
