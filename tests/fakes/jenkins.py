"""A fake Jenkins on loopback: nodes that can be taken temporarily offline, freestyle jobs whose builds
run on the nodes that may take them and publish a JUnit report, the queue, and CSRF crumbs.

Built from the sources, since Jenkins publishes no JSON examples; repo jenkinsci/jenkins at
ff9430ee1dc6e319349a488650d914444fe141f3:
- core/src/main/java/hudson/model/Computer.java: `doChangeOfflineCause` (@RequirePOST, always sets a
  UserCause, redirect to `.`), `doToggleOffline` (flips), exported `offline, temporarilyOffline, idle,
  offlineCause, offlineCauseReason, numExecutors, ...`; jenkins/model/IComputer.java and
  jenkins/agents/IOfflineCause.java: `offlineCauseReason` is the message given; the built-in node's
  URL name is `(built-in)`.
- core/src/main/java/hudson/model/{Run,AbstractBuild,Job}.java: build fields `number, result, building,
  timestamp, duration, queueId, url`, `builtOn` (node name, "" for the built-in node); the job's
  `builds` are the newest 100; `tree=` filtering with `{from,to}` ranges (Stapler).
- core/src/main/java/jenkins/model/ParameterizedJobMixIn.java `doBuild`: 201 with `Location:` the
  queue item's URL; core/src/main/java/hudson/model/Queue.java: `queue/item/{id}/`, a `LeftItem`
  exports `executable {number, url}` and `cancelled`, and left items are forgotten after a while.
- core/src/main/java/hudson/security/csrf/{CrumbFilter,DefaultCrumbIssuer}.java: a POST without a valid
  crumb is 403 "No valid crumb was included in the request"; the crumb is bound to the HTTP session;
  jenkins/security/ApiCrumbExclusion.java: API-token basic auth needs none.
Repo jenkinsci/junit-plugin at c64aedde777764477e8a1885bcc8ae5d0b2eb29b,
src/main/java/hudson/tasks/junit/{TestResult,SuiteResult,CaseResult}.java: the `testReport/api/json`
shape, case `status` PASSED|SKIPPED|FAILED|FIXED|REGRESSION.
Object shapes start from tests/fixtures/providers/jenkins/, which are built from those exported fields.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.fakes.server import FakeServer, Request, Response, json_response

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers" / "jenkins"
JOB = r"(?P<job>(?:/job/[^/]+)+)"
NO_CRUMB = b"<html><body><h2>HTTP ERROR 403 No valid crumb was included in the request</h2></body></html>"


def fixture(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return found


@dataclass
class Node:
    name: str  # "" is the built-in node
    executors: int = 1
    sick: bool = False
    connected: bool = True
    offline_message: str | None = None
    temporarily_offline: bool = False
    building: tuple[str, int] | None = None


@dataclass
class Build:
    number: int
    queue_id: int
    node: str
    started_ms: int
    duration_ms: int = 0
    result: str | None = None
    cases: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Job:
    name: str
    tests: list[str]
    builds: dict[int, Build] = field(default_factory=dict)
    next_number: int = 1


@dataclass
class QueueItem:
    id: int
    job: str
    since_ms: int
    build: int | None = None  # set when it left the queue for an executor


class FakeJenkins(FakeServer):
    def __init__(self, username: str, api_token: str, password: str, run_s: float = 0.05) -> None:
        super().__init__()
        self.username, self.api_token, self.password = username, api_token, password
        self.run_s = run_s
        self.nodes: dict[str, Node] = {}
        self.jobs: dict[str, Job] = {}
        self.queue: dict[int, QueueItem] = {}
        self.sessions: dict[str, str] = {}  # session id -> crumb
        self._queue_ids = itertools.count(100)
        self._turn = 0
        self._stop = threading.Event()
        self.route("GET", rf"{JOB}/api/json", self._get_job)
        self.route("POST", rf"{JOB}/build", self._build)
        self.route("GET", rf"{JOB}/(?P<n>\d+)/api/json", self._get_build)
        self.route("GET", rf"{JOB}/(?P<n>\d+)/testReport/api/json", self._get_tests)
        self.route("GET", r"/queue/item/(?P<id>\d+)/api/json", self._get_item)
        self.route("GET", r"/computer/(?P<node>[^/]+)/api/json", self._get_computer)
        self.route("POST", r"/computer/(?P<node>[^/]+)/changeOfflineCause", self._change_offline_cause)
        self.route("POST", r"/computer/(?P<node>[^/]+)/toggleOffline", self._toggle_offline)
        self.route("GET", r"/crumbIssuer/api/json", self._crumb)

    # -- the world ------------------------------------------------------------------------------------

    def start(self) -> None:
        super().start()
        threading.Thread(target=self._executor_loop, name="fake-jenkins-executors", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        super().stop()

    def add_node(self, name: str, sick: bool = False, executors: int = 1) -> Node:
        with self.lock:
            self.nodes[name] = Node(name, executors, sick)
            return self.nodes[name]

    def add_job(self, name: str, tests: list[str]) -> Job:
        with self.lock:
            self.jobs[name] = Job(name, tests)
            return self.jobs[name]

    def add_finished_build(
        self, job: str, node: str, started_ms: int, duration_ms: int, result: str, cases: list[dict[str, Any]]
    ) -> Build:
        """A build that has already run (`cases` its JUnit report's, empty for none published), as if an
        executor had taken it at `started_ms`: what a story needs whose builds run minutes."""
        with self.lock:
            found = self.jobs[job]
            build = Build(
                found.next_number, next(self._queue_ids), node, started_ms, duration_ms, result, cases
            )
            found.builds[build.number] = build
            found.next_number += 1
            return build

    def enqueue(self, job: str) -> int:
        with self.lock:
            item = QueueItem(next(self._queue_ids), job, int(time.time() * 1000))
            self.queue[item.id] = item
            return item.id

    def forget_left_items(self) -> None:
        """What Queue does to left items after a few minutes."""
        with self.lock:
            self.queue = {i: q for i, q in self.queue.items() if q.build is None}

    def idle(self) -> bool:
        with self.lock:
            waiting = any(q.build is None for q in self.queue.values())
            return not waiting and all(n.building is None for n in self.nodes.values())

    def builds_on(self, node: str) -> list[tuple[str, Build]]:
        with self.lock:
            return [(j.name, b) for j in self.jobs.values() for b in j.builds.values() if b.node == node]

    # -- executors: one build at a time, round robin over the nodes that may take it ---------------------

    def _executor_loop(self) -> None:
        while not self._stop.wait(0.02):
            started = self._start_next()
            if started is None:
                continue
            time.sleep(self.run_s)
            self._finish(*started)

    def _start_next(self) -> tuple[str, Build] | None:
        with self.lock:
            free = [
                n
                for n in sorted(self.nodes.values(), key=lambda n: n.name)
                if n.connected and not n.temporarily_offline and n.executors > 0 and n.building is None
            ]
            waiting = sorted((q for q in self.queue.values() if q.build is None), key=lambda q: q.id)
            if not free or not waiting:
                return None
            item, node = waiting[0], free[self._turn % len(free)]
            self._turn += 1
            job = self.jobs[item.job]
            build = Build(job.next_number, item.id, node.name, int(time.time() * 1000))
            job.builds[build.number] = build
            job.next_number += 1
            item.build = build.number
            node.building = (job.name, build.number)
            return job.name, build

    def _finish(self, job_name: str, build: Build) -> None:
        with self.lock:
            node = self.nodes[build.node]
            job = self.jobs[job_name]
            for test in job.tests:
                classname, _, name = test.rpartition(".")
                failed = node.sick
                build.cases.append(
                    {
                        "testActions": [],
                        "age": 1 if failed else 0,
                        "className": classname,
                        "duration": 0.01,
                        "errorDetails": "OSError: [Errno 28] No space left on device" if failed else None,
                        "errorStackTrace": None,
                        "failedSince": build.number if failed else 0,
                        "name": name,
                        "skipped": False,
                        "skippedMessage": None,
                        "status": "FAILED" if failed else "PASSED",
                        "stderr": None,
                        "stdout": None,
                    }
                )
            # The JUnit publisher marks a build with failed tests UNSTABLE.
            build.result = "UNSTABLE" if node.sick else "SUCCESS"
            build.duration_ms = max(1, int(time.time() * 1000) - build.started_ms)
            node.building = None

    # -- auth -----------------------------------------------------------------------------------------

    def authenticate(self, request: Request) -> Response | None:
        header = request.headers.get("authorization", "")
        if not header.startswith("Basic "):
            return Response(401, b"Authentication required", {"WWW-Authenticate": 'Basic realm="Jenkins"'})
        user, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        if user != self.username or secret not in (self.api_token, self.password):
            return Response(
                401, b"Invalid password/token for user", {"WWW-Authenticate": 'Basic realm="Jenkins"'}
            )
        if request.method == "POST" and secret == self.password:  # ApiCrumbExclusion spares tokens only
            crumb = self.sessions.get(_session(request) or "")
            if crumb is None or request.headers.get("jenkins-crumb") != crumb:
                return Response(403, NO_CRUMB, {"Content-Type": "text/html;charset=utf-8"})
        return None

    def _crumb(self, request: Request, _m: re.Match[str]) -> Response:
        sid = _session(request)
        headers = {}
        if sid is None or sid not in self.sessions:
            sid = secrets.token_hex(8)
            headers["Set-Cookie"] = f"JSESSIONID.fake={sid}; Path=/; HttpOnly"
            self.sessions[sid] = hashlib.sha256(f"crumb-{sid}".encode()).hexdigest()
        return json_response(200, fixture("crumb.json") | {"crumb": self.sessions[sid]}, headers)

    # -- JSON -----------------------------------------------------------------------------------------

    def _job_of(self, m: re.Match[str]) -> Job | None:
        name = "/".join(m["job"].split("/")[2::2])
        return self.jobs.get(name)

    def _build_json(self, job: Job, build: Build) -> dict[str, Any]:
        return fixture("build.json") | {
            "building": build.result is None,
            "displayName": f"#{build.number}",
            "duration": build.duration_ms,
            "fullDisplayName": f"{job.name} #{build.number}",
            "id": str(build.number),
            "number": build.number,
            "queueId": build.queue_id,
            "result": build.result,
            "timestamp": build.started_ms,
            "url": f"{self.url}/{_job_path(job.name)}/{build.number}/",
            "builtOn": build.node,
        }

    def _get_job(self, request: Request, m: re.Match[str]) -> Response:
        job = self._job_of(m)
        if job is None:
            return self.not_found(request)
        newest = sorted(job.builds.values(), key=lambda b: -b.number)[:100]
        body = {
            "_class": "hudson.model.FreeStyleProject",
            "name": job.name.rpartition("/")[2],
            "fullName": job.name,
            "url": f"{self.url}/{_job_path(job.name)}/",
            "builds": [self._build_json(job, b) for b in newest],
            "nextBuildNumber": job.next_number,
        }
        return json_response(200, apply_tree(body, request.arg("tree")))

    def _get_build(self, request: Request, m: re.Match[str]) -> Response:
        job = self._job_of(m)
        build = job.builds.get(int(m["n"])) if job else None
        if job is None or build is None:
            return self.not_found(request)
        return json_response(200, apply_tree(self._build_json(job, build), request.arg("tree")))

    def _get_tests(self, request: Request, m: re.Match[str]) -> Response:
        job = self._job_of(m)
        build = job.builds.get(int(m["n"])) if job else None
        if build is None or not build.cases:  # no TestResultAction (yet): no testReport URL
            return self.not_found(request)
        failed = sum(c["status"] in ("FAILED", "REGRESSION") for c in build.cases)
        skipped = sum(c["status"] == "SKIPPED" for c in build.cases)
        report = copy.deepcopy(fixture("test_report.json"))
        suite = report["suites"][0] | {"cases": build.cases, "name": job.name if job else ""}
        report.update(
            failCount=failed,
            skipCount=skipped,
            passCount=len(build.cases) - failed - skipped,
            duration=0.01 * len(build.cases),
            suites=[suite],
        )
        return json_response(200, apply_tree(report, request.arg("tree")))

    def _build(self, request: Request, m: re.Match[str]) -> Response:
        job = self._job_of(m)
        if job is None:
            return self.not_found(request)
        # Queue.schedule2 merges a request into an identical one still waiting, and doBuild answers
        # that item's URL with 201 all the same (the TODO JENKINS-66105 in ParameterizedJobMixIn).
        waiting = [q.id for q in self.queue.values() if q.job == job.name and q.build is None]
        item = waiting[0] if waiting else self.enqueue(job.name)
        # ParameterizedJobMixIn.doBuild: rsp.sendRedirect(SC_CREATED, contextPath + '/' + item.getUrl())
        return Response(201, b"", {"Location": f"{self.url}/queue/item/{item}/"})

    def _get_item(self, request: Request, m: re.Match[str]) -> Response:
        item = self.queue.get(int(m["id"]))
        if item is None:
            return self.not_found(request)
        task = {
            "_class": "hudson.model.FreeStyleProject",
            "name": item.job,
            "url": f"{self.url}/{_job_path(item.job)}/",
        }
        if item.build is None:
            body = fixture("queue_item_waiting.json") | {
                "id": item.id,
                "url": f"queue/item/{item.id}/",
                "task": task,
            }
        else:
            executable = {
                "_class": "hudson.model.FreeStyleBuild",
                "number": item.build,
                "url": f"{self.url}/{_job_path(item.job)}/{item.build}/",
            }
            body = fixture("queue_item_left.json") | {
                "id": item.id,
                "url": f"queue/item/{item.id}/",
                "task": task,
                "executable": executable,
            }
        body["inQueueSince"] = item.since_ms
        return json_response(200, apply_tree(body, request.arg("tree")))

    def _node_of(self, m: re.Match[str]) -> Node | None:
        name = m["node"]
        return self.nodes.get("" if name in ("(built-in)", "(master)") else name)

    def _get_computer(self, request: Request, m: re.Match[str]) -> Response:
        node = self._node_of(m)
        if node is None:
            return self.not_found(request)
        offline = node.temporarily_offline or not node.connected
        body = fixture("computer.json") | {
            "_class": "hudson.model.Hudson$MasterComputer"
            if node.name == ""
            else "hudson.slaves.SlaveComputer",
            "displayName": node.name or "Built-In Node",
            "idle": node.building is None,
            "numExecutors": node.executors,
            "offline": offline,
            "temporarilyOffline": node.temporarily_offline,
            "offlineCause": {"_class": "hudson.slaves.OfflineCause$UserCause"}
            if node.temporarily_offline
            else None,
            "offlineCauseReason": (node.offline_message or "") if node.temporarily_offline else "",
        }
        return json_response(200, apply_tree(body, request.arg("tree")))

    def _change_offline_cause(self, request: Request, m: re.Match[str]) -> Response:
        node = self._node_of(m)
        if node is None:
            return self.not_found(request)
        node.temporarily_offline = True
        node.offline_message = (request.arg("offlineMessage") or "").strip() or None
        return Response(302, b"", {"Location": "."})

    def _toggle_offline(self, request: Request, m: re.Match[str]) -> Response:
        node = self._node_of(m)
        if node is None:
            return self.not_found(request)
        if node.temporarily_offline:
            node.temporarily_offline, node.offline_message = False, None
            return Response(302, b"", {"Location": "."})
        return self._change_offline_cause(request, m)

    def not_found(self, request: Request) -> Response:
        return Response(
            404, b"<html><body><h2>HTTP ERROR 404 Not Found</h2></body></html>", {"Content-Type": "text/html"}
        )


def _session(request: Request) -> str | None:
    for part in request.headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == "JSESSIONID.fake":
            return value
    return None


def _job_path(name: str) -> str:
    return "/".join(f"job/{quote(p, safe='')}" for p in name.split("/"))


def apply_tree(value: Any, tree: str | None) -> Any:
    """Stapler's `tree=` filter: `a,b[c,d]{0,5}` keeps a, and b's c and d in b's items 0 to 4."""
    if tree is None:
        return value
    if isinstance(value, list):
        return [apply_tree(v, tree) for v in value]
    if not isinstance(value, dict):
        return value
    kept: dict[str, Any] = {"_class": value["_class"]} if "_class" in value else {}
    for name, sub, span in _parse_tree(tree):
        if name not in value:
            continue
        found = value[name]
        if span is not None and isinstance(found, list):
            found = found[span[0] : span[1]]
        kept[name] = apply_tree(found, sub) if sub else found
    return kept


def _parse_tree(tree: str) -> list[tuple[str, str | None, tuple[int, int] | None]]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(tree + ","):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0 and not _in_braces(tree, i):
            parts.append(tree[start:i])
            start = i + 1
    parsed = []
    for part in parts:
        found = re.fullmatch(
            r"(?P<name>[^\[{]+)(?:\[(?P<sub>.*)\])?(?:\{(?P<a>\d*),?(?P<b>\d*)\})?", part.strip()
        )
        if found is None:
            continue
        span = None
        if found["a"] is not None or found["b"] is not None:
            span = (int(found["a"] or 0), int(found["b"]) if found["b"] else 1 << 30)
        parsed.append((found["name"], found["sub"], span))
    return parsed


def _in_braces(text: str, at: int) -> bool:
    return text.rfind("{", 0, at) > text.rfind("}", 0, at)
