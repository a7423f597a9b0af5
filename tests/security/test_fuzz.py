"""Property-based fuzzing of every operation in the controller's own OpenAPI description with
schemathesis, against a real `runner-controller serve`: no 5xx, and answers that conform to the
description (status codes, content types, schemas).

Bounded for the suite: 12 examples per operation, and no "coverage" phase (its boundary and negative
cases are built while pytest collects, ~35 s on a busy machine). The long run: set
RUNNERCTL_FUZZ_EXAMPLES to a few hundred, which also turns the coverage phase on (docs/reliability.md,
"Security", says how long it takes).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance
from sqlalchemy import create_engine

from controller.api.app import create_app
from controller.selectors import (
    SELECTOR_PATTERN,
    RecordFields,
    parse_selector,
    record_selector_pattern,
    select_records,
)
from controller.settings import ControllerSettings
from tests.servers import Controller, running_controller

LONG_RUN = "RUNNERCTL_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("RUNNERCTL_FUZZ_EXAMPLES", "12"))


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, shared_database_url: str) -> Iterator[Controller]:
    """On SQLite and on PostgreSQL: the stricter database turns different inputs into errors."""
    with running_controller(tmp_path_factory.mktemp("fuzz"), shared_database_url) as controller:
        yield controller


def served_description() -> dict[str, Any]:
    """The description the app serves at /openapi.json, built in process so that pytest can collect
    one test per operation (schemathesis' lazy from_fixture loader does not work with pytest 9)."""
    app = create_app(create_engine("sqlite://"), ControllerSettings())
    return app.openapi()


# Event times are accepted from 2000 to a few minutes ahead of the controller's clock
# (common/timeutil.py): a bound relative to now, which a JSON schema cannot state, so the generated
# times keep to it rather than every record being "schema-valid but refused".
schemathesis.openapi.format(
    "date-time",
    st.datetimes(min_value=datetime(2000, 1, 2), max_value=datetime.now(), timezones=st.just(UTC)).map(
        datetime.isoformat
    ),
)
schema = schemathesis.openapi.from_dict(served_description())
schema.config.phases.update(
    phases=["examples", "coverage", "fuzzing"] if LONG_RUN else ["examples", "fuzzing"]
)


def test_the_fuzzed_description_is_the_served_one(fuzzed: Controller) -> None:
    assert requests.get(fuzzed.url + "/openapi.json", timeout=30).json() == served_description()


@schemathesis.serializer("application/x-ndjson")
def _ndjson(_context: schemathesis.SerializationContext, value: Any) -> bytes:
    """The NDJSON body is described as its records; on the wire it is one JSON record per line."""
    records = value if isinstance(value, list) else [value]
    return "\n".join(json.dumps(record) for record in records).encode()


# What a JSON schema cannot say, so a schema-valid request refused there is right:
# what a valid JUnit document is ("type": "string"), that a Buildbot push must carry a buildid
# (the body is "any object"; the provider webhooks are being rebuilt, their description with them),
# and that a job record's start is not after its finish (a rule across two fields).
UNDESCRIBABLE = {("POST", "/v1/results/junit"), ("POST", "/v1/webhooks/buildbot"), ("POST", "/v1/jobs")}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_operation(case: schemathesis.Case, fuzzed: Controller) -> None:
    # Not checked: that every schema-violating request is refused. pydantic coerces on purpose
    # (false → 0, "5" → 5, epoch seconds → a time), so the API is more lenient than its description.
    excluded = [negative_data_rejection]
    if (case.method.upper(), case.path) in UNDESCRIBABLE:
        excluded.append(positive_data_acceptance)
    case.call_and_validate(
        base_url=fuzzed.url, headers=fuzzed.headers(), timeout=30, excluded_checks=excluded
    )


@given(
    st.text(alphabet=st.sampled_from(list("ab=!, \t-/.\n\xa0\u00e9\x00")), max_size=12) | st.text(max_size=10)
)
@settings(max_examples=500, deadline=None)
def test_the_selector_pattern_is_what_the_parser_accepts(text: str) -> None:
    try:
        parse_selector(text)
    except ValueError:
        accepted = False
    else:
        accepted = True
    assert (accepted and "\x00" not in text) == bool(re.search(SELECTOR_PATTERN, text))


# Requests the fuzzer once turned into a 500, kept as they were found.
FOUND = {
    "unhashable check name": (
        "/v1/reports",
        {
            "reports": [
                {
                    "agent_id": "0",
                    "boot_id": "0",
                    "seq": 0,
                    "observed_at": "2000-01-01T00:00:00Z",
                    "runner": {"id": "0"},
                    "readings": [{"check": {}, "status": "ok"}],
                }
            ]
        },
        "reports[0].readings[0].other.check: Input should be a valid string",
    ),
    "sequence number beyond BIGINT": (
        "/v1/reports",
        {
            "reports": [
                {
                    "agent_id": "0",
                    "boot_id": "0",
                    "seq": 10**34,
                    "observed_at": "2000-01-01T00:00:00Z",
                    "runner": {"id": "0"},
                }
            ]
        },
        "reports[0].seq: Input should be less than or equal to 9007199254740991",
    ),
    "cordon expiry past year 9999": (
        "/v1/runners/fuzz-1/cordon",
        {"expires_in_s": 1e12},
        "expires_in_s: Input should be less than or equal to 315360000",
    ),
}


@pytest.mark.parametrize("name", list(FOUND))
def test_what_the_fuzzer_found_is_a_clear_422(fuzzed: Controller, name: str) -> None:
    path, body, detail = FOUND[name]
    known = {"test_id": "t", "outcome": "passed", "time": "2026-01-01T00:00:00Z", "runner": {"id": "fuzz-1"}}
    assert fuzzed.post("/v1/results", json=[known]).status_code == 200
    response = fuzzed.post(path, json=body)
    assert response.status_code == 422, response.text
    assert detail in response.json()["detail"]


def test_nul_is_refused_where_stored_and_ignored_where_not(fuzzed: Controller) -> None:
    record = {"test_id": "t", "outcome": "passed", "time": "2026-01-01T00:00:00Z", "runner": {"id": "nul-1"}}
    stored = fuzzed.post("/v1/results", json=[record, record | {"message": "a\x00b"}])
    assert stored.status_code == 422
    assert (
        stored.json()["detail"]
        == "record 1: message: contains NUL (\\u0000), which cannot be stored: remove it"
    )
    ignored = fuzzed.post("/v1/results", json=[record | {"extra": {"k\x00": "v\x00"}}])
    assert ignored.status_code == 200, ignored.text
    url = fuzzed.get("/v1/runners/nul%00-1")
    assert (url.status_code, url.json()["detail"]) == (
        400,
        "the URL contains a NUL character (%00): remove it",
    )


@given(st.text(alphabet=st.sampled_from(list("testvrdic-by=!, \t\n\xa0x\x00")), max_size=14))
@settings(max_examples=500, deadline=None)
def test_the_record_selector_pattern_is_what_select_records_accepts(text: str) -> None:
    fields: RecordFields = {"discounted-by": str, "test": str, "verdict": str}
    try:
        select_records(text, [], fields)
    except ValueError:
        accepted = False
    else:
        accepted = True
    assert (accepted and "\x00" not in text) == bool(re.search(record_selector_pattern(fields), text))
