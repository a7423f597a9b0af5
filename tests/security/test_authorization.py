"""Every operation the controller serves, taken from its own OpenAPI description, refuses callers
without a valid token (401) and roles docs/api.md does not grant (403), before reading their body."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import update

from common.auth import Role, hash_token
from controller.api.gate import gated
from controller.db import tables
from tests.servers import REPO, Controller, database

API_DOC = REPO / "docs" / "api.md"
ROLES = tuple(role.value for role in Role)
# Served but outside the OpenAPI description: FastAPI's own documentation pages.
UNDESCRIBED = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")
_ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) ([^`?]+)[^`]*` \| ([^|]+) \|", re.MULTILINE)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    has_body: bool
    required_query: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str]:
        return self.method, _shape(self.path)

    def url(self, base: str) -> str:
        path = re.sub(r"\{[^}]+\}", "r1", self.path)
        query = "&".join(f"{name}=x" for name in self.required_query)
        return f"{base}{path}{'?' + query if query else ''}"

    def call(self, base: str, headers: dict[str, str], body: bytes | None = None) -> requests.Response:
        if body is None and self.has_body:
            body = b"{}"
        return requests.request(
            self.method,
            self.url(base),
            data=body,
            headers={"Content-Type": "application/json"} | headers,
            timeout=30,
        )


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


SIGNED = frozenset({"signed"})


def documented_roles() -> dict[tuple[str, str], frozenset[str]]:
    """docs/api.md's tables: method and path → the roles allowed (empty for `anyone`, SIGNED for a
    webhook authenticated by its signature)."""
    found: dict[tuple[str, str], frozenset[str]] = {}
    for method, path, roles in _ROW.findall(API_DOC.read_text()):
        words = set(re.findall(r"[a-z]+", roles))
        found[(method, _shape(path.strip()))] = SIGNED if "signed" in words else frozenset(words & set(ROLES))
    return found


def operations(spec: dict[str, Any]) -> list[Operation]:
    found = []
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            query = tuple(
                p["name"] for p in operation.get("parameters", []) if p["in"] == "query" and p.get("required")
            )
            found.append(Operation(method.upper(), path, "requestBody" in operation, query))
    return sorted(found, key=lambda o: o.key)


@pytest.fixture(scope="module")
def served(sqlite_controller: Controller) -> list[Operation]:
    spec = requests.get(sqlite_controller.url + "/openapi.json", timeout=30).json()
    return operations(spec)


@pytest.fixture(scope="module")
def tokens(sqlite_controller: Controller) -> dict[str, str]:
    return {role: sqlite_controller.token(role, runner="r1" if role == "agent" else None) for role in ROLES}


def test_every_operation_is_documented_with_its_roles(served: list[Operation]) -> None:
    documented = documented_roles()
    assert len(served) >= 20, "the OpenAPI description lost operations"
    missing = sorted({o.key for o in served} - set(documented))
    assert missing == [], f"add these to docs/api.md with the roles they allow: {missing}"
    stale = sorted(set(documented) - {o.key for o in served})
    assert stale == [], f"docs/api.md lists operations the controller does not serve: {stale}"


def test_public_operations_need_no_token(sqlite_controller: Controller, served: list[Operation]) -> None:
    documented = documented_roles()
    public = [o for o in served if not documented[o.key]]
    signed = [o for o in served if documented[o.key] == SIGNED]
    for operation in signed:
        # No provider is configured here: refused before any signature could be checked, token or not.
        for headers in ({}, {"Authorization": f"Bearer {sqlite_controller.admin_token}"}):
            response = operation.call(sqlite_controller.url, headers)
            assert response.status_code in (401, 404), (operation.key, response.text)
    assert {o.path for o in public} == {"/healthz", "/readyz", "/metrics"}
    for operation in public:
        assert operation.call(sqlite_controller.url, {}).status_code == 200, operation.key
    for path in UNDESCRIBED:
        assert requests.get(sqlite_controller.url + path, timeout=30).status_code == 200, path


def test_protected_operations_refuse_anonymous_callers(
    sqlite_controller: Controller, served: list[Operation]
) -> None:
    documented = documented_roles()
    revoked = sqlite_controller.token("admin")
    with database(sqlite_controller.db) as conn:
        conn.execute(
            update(tables.tokens)
            .where(tables.tokens.c.token_hash == hash_token(revoked))
            .values(revoked_ms=int(time.time() * 1000))
        )
    callers = {
        "no header": ({}, "missing bearer token"),
        "basic auth": ({"Authorization": "Basic YWRtaW46YWRtaW4="}, "malformed Authorization header"),
        "empty bearer": ({"Authorization": "Bearer "}, "malformed Authorization header"),
        "unknown token": ({"Authorization": "Bearer rct_" + "A" * 43}, "unknown or revoked token"),
        "revoked token": ({"Authorization": f"Bearer {revoked}"}, "unknown or revoked token"),
    }
    protected = [o for o in served if documented[o.key] and documented[o.key] != SIGNED]
    for operation in protected:
        for name, (headers, message) in callers.items():
            # A malformed body too: it must not be parsed (and answered 422) before the caller is known,
            # unless the endpoint is one that checks a signature over its body instead of a token.
            bodies = (None, b'{"not json') if gated(operation.path) else (None,)
            for body in bodies:
                response = operation.call(sqlite_controller.url, headers, body)
                where = f"{operation.key} with {name}, body {body!r}"
                assert response.status_code == 401, f"{where}: {response.status_code} {response.text}"
                assert response.headers["WWW-Authenticate"] == "Bearer", where
                assert message in response.json()["detail"], where


def test_roles_get_exactly_what_docs_grant(
    sqlite_controller: Controller, served: list[Operation], tokens: dict[str, str]
) -> None:
    documented = documented_roles()
    for operation in (o for o in served if documented[o.key] and documented[o.key] != SIGNED):
        for role, token in tokens.items():
            response = operation.call(sqlite_controller.url, {"Authorization": f"Bearer {token}"})
            where = f"{operation.key} as {role}: {response.status_code} {response.text[:200]}"
            if role in documented[operation.key]:
                assert response.status_code not in (401, 403), where
            else:
                assert response.status_code == 403, where
                assert f"role '{role}' may not do this" in response.json()["detail"], where


def _report(runner: str, agent_id: str, seq: int, boot: str = "boot-1") -> dict[str, Any]:
    return {
        "agent_id": agent_id,
        "boot_id": boot,
        "seq": seq,
        "observed_at": "2026-09-21T10:00:00Z",
        "runner": {"id": runner, "pool": "linux"},
        "readings": [{"check": "disk", "status": "ok", "paths": [{"path": "/", "free_ratio": 0.5}]}],
    }


def test_an_agent_token_speaks_for_its_own_runner_only(tmp_path: Path) -> None:
    from tests.servers import running_controller

    with running_controller(tmp_path) as controller:
        mine, theirs = controller.token("agent", runner="lin-1"), controller.token("agent", runner="lin-2")
        ok = controller.post(
            "/v1/reports", token=mine, json={"reports": [_report("lin-1", "agent-lin-1", 1)]}
        )
        assert ok.status_code == 200 and ok.json()["new"] == [1]

        other = controller.post("/v1/reports", token=mine, json={"reports": [_report("lin-2", "a", 1)]})
        assert other.status_code == 403
        assert "belongs to runner 'lin-1' and may not report for: lin-2" in other.json()["detail"]
        mixed = [_report("lin-1", "agent-lin-1", 2), _report("lin-2", "agent-lin-2", 1)]
        assert controller.post("/v1/reports", token=mine, json={"reports": mixed}).status_code == 403

        # Results and JUnit are the CI's to send (ingest tokens), not an agent's, even for its own runner.
        result = {
            "test_id": "t",
            "outcome": "failed",
            "time": "2026-09-21T10:00:00Z",
            "runner": {"id": "lin-1"},
        }
        assert controller.post("/v1/results", token=mine, json=[result]).status_code == 403
        junit = controller.post(
            "/v1/results/junit?runner_id=lin-1",
            token=mine,
            data=b'<testsuite><testcase name="t"/></testsuite>',
            headers={"Content-Type": "application/xml"},
        )
        assert junit.status_code == 403

        # Claiming another runner's report key would make its real report look like a resend.
        assert (
            controller.post(
                "/v1/reports", token=theirs, json={"reports": [_report("lin-2", "agent-lin-2", 1)]}
            ).status_code
            == 200
        )
        hijack = controller.post(
            "/v1/reports", token=mine, json={"reports": [_report("lin-1", "agent-lin-2", 1)]}
        )
        assert hijack.status_code == 409
        assert "already stored for runner 'lin-2', not 'lin-1'" in hijack.json()["detail"]
        # A real resend is still a duplicate.
        again = controller.post(
            "/v1/reports", token=mine, json={"reports": [_report("lin-1", "agent-lin-1", 1)]}
        )
        assert again.status_code == 200 and again.json()["duplicate"] == [1]
        assert controller.count("reports") == 2
        with database(controller.db) as conn:
            owners = set(
                conn.execute(tables.reports.select().with_only_columns(tables.reports.c.runner_id)).scalars()
            )
        assert owners == {"lin-1", "lin-2"}


def test_agent_tokens_must_name_their_runner(tmp_path: Path) -> None:
    import subprocess

    from tests.servers import controller_cmd, migrate_db

    db = f"sqlite:///{tmp_path / 'c.db'}"
    migrate_db(db)
    refused = subprocess.run(
        controller_cmd("token", "create", "--role", "agent", "--db", db),
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert refused.returncode == 1
    assert refused.stderr == "error: an agent token must name its runner: add --runner ID\n"
    assert refused.stdout == ""
