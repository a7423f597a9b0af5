"""A local stand-in for a Buildbot master, for the demo only: a real HTTP server that speaks the part of
Buildbot 4's REST and JSON-RPC API the controller's Buildbot provider uses, and touches no real CI.

It holds the story's builds as its history. Workers can be paused and unpaused (with a reason), and a
`rebuild` queues a new build request that "runs" on the next unpaused worker: it posts that build's
JUnit results to the controller, as a real build's upload step would, then completes. Every call is
recorded, so the demo can show what the controller asked of its CI provider.
"""

from __future__ import annotations

import itertools
import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from runnerctl.demo.story import BUILDER_ID, TESTS, Story, rerun_junit

SUCCESS, FAILURE = 0, 2
API = "/api/v2/"


@dataclass(frozen=True)
class Call:
    """One thing the stand-in was asked to do, or did: what the demo shows and a test can check."""

    at: float
    what: str  # pause | unpause | rebuild | build
    target: str  # worker name, or build id
    detail: str


class BuildbotStandIn:
    def __init__(self, story: Story, run_s: float = 0.3) -> None:
        self.story = story
        self.run_s = run_s  # how long a rebuilt build "runs": long enough to be seen as busy
        self.lock = threading.Lock()
        self.calls: list[Call] = []
        self.workers: dict[str, dict[str, Any]] = {
            r.id: {
                "workerid": r.workerid,
                "name": r.id,
                "paused": False,
                "pause_reason": None,
                "graceful": False,
                "connected_to": [{"masterid": 1}],
                "configured_on": [{"builderid": BUILDER_ID, "masterid": 1}],
                "workerinfo": {"admin": "runnerctl demo stand-in"},
            }
            for r in story.runners
        }
        self.builds: dict[int, dict[str, Any]] = {}
        self.origin: dict[int, int] = {}  # rebuilt build id -> the build it rebuilds
        for index, build in enumerate(story.builds):
            self.builds[build.buildid] = {
                "buildid": build.buildid,
                "number": index + 1,
                "builderid": BUILDER_ID,
                "buildrequestid": build.buildrequestid,
                "workerid": story.runner(build.runner).workerid,
                "masterid": 1,
                "started_at": int(build.started.timestamp()),
                "complete_at": int(build.finished.timestamp()),
                "complete": True,
                "state_string": "build successful" if build.passed else "failed pytest",
                "results": SUCCESS if build.passed else FAILURE,
                "properties": {},
            }
        self.next_build = itertools.count(max(self.builds) + 1)
        self.next_request = itertools.count(max(b["buildrequestid"] for b in self.builds.values()) + 1)
        self.next_buildset = itertools.count(max(b.buildsetid for b in story.builds) + 1)
        self.rotation = itertools.count()
        self.results_url: str | None = None
        self.token: str | None = None
        self.queue: queue.Queue[tuple[int, int, int] | None] = queue.Queue()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.threads = [
            threading.Thread(target=self.server.serve_forever, name="standin-http", daemon=True),
            threading.Thread(target=self._run_requests, name="standin-builds", daemon=True),
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def connect(self, results_url: str, token: str) -> None:
        """Where rebuilt builds post their JUnit, and the (ingest) token they post it with."""
        self.results_url, self.token = results_url, token

    def stop(self) -> None:
        self.queue.put(None)
        self.server.shutdown()
        self.server.server_close()
        for thread in self.threads:
            thread.join(timeout=10)

    def recorded(self) -> list[Call]:
        with self.lock:
            return list(self.calls)

    def _record(self, what: str, target: str, detail: str) -> None:
        with self.lock:
            self.calls.append(Call(time.time(), what, target, detail))

    # -- the API --------------------------------------------------------------------------------------

    def get(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        parts = path.split("/")
        with self.lock:
            if parts == ["workers"]:
                return 200, _listing("workers", list(self.workers.values()))
            if len(parts) == 2 and parts[0] == "workers":
                worker = self.workers.get(parts[1])
                return (
                    (404, {"error": "not found"}) if worker is None else (200, _listing("workers", [worker]))
                )
            if parts == ["builds"]:
                return 200, _listing("builds", self._select(query))
            if len(parts) == 2 and parts[0] == "builds" and parts[1].isdigit():
                build = self.builds.get(int(parts[1]))
                return (404, {"error": "not found"}) if build is None else (200, _listing("builds", [build]))
        return 404, {"error": f"no such resource: {path}"}

    def control(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        method, params, rpc_id = body.get("method"), body.get("params") or {}, body.get("id")
        parts = path.split("/")
        if len(parts) == 2 and parts[0] == "workers" and method in ("pause", "unpause"):
            with self.lock:
                worker = self.workers.get(parts[1])
                if worker is None:
                    return 404, {"error": "not found"}
                worker["paused"] = method == "pause"
                worker["pause_reason"] = params.get("reason") if method == "pause" else None
            self._record(method, parts[1], str(params.get("reason") or ""))
            return 200, {"jsonrpc": "2.0", "id": rpc_id, "result": None}
        if len(parts) == 2 and parts[0] == "builds" and parts[1].isdigit() and method == "rebuild":
            with self.lock:
                if int(parts[1]) not in self.builds:
                    return 404, {"error": "not found"}
                request, buildset = next(self.next_request), next(self.next_buildset)
            self.queue.put((int(parts[1]), request, buildset))
            self._record("rebuild", parts[1], f"queued as build request {request}")
            return 200, {"jsonrpc": "2.0", "id": rpc_id, "result": [buildset, {str(BUILDER_ID): request}]}
        error = {"code": -32601, "message": f"action {method!r} is not supported on {path}"}
        return 501, {"jsonrpc": "2.0", "id": rpc_id, "error": error}

    def _select(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        found = list(self.builds.values())
        for key in ("workerid", "buildrequestid"):
            if key in query:
                found = [b for b in found if str(b[key]) == query[key][0]]
        if "complete" in query:
            found = [b for b in found if b["complete"] == (query["complete"][0] == "true")]
        found.sort(key=lambda b: b["buildid"], reverse=query.get("order") == ["-buildid"])
        if "limit" in query:
            found = found[: int(query["limit"][0])]
        if "workername" in query.get("property", []):
            names = {w["workerid"]: name for name, w in self.workers.items()}
            found = [b | {"properties": {"workername": [names[b["workerid"]], "Worker"]}} for b in found]
        return found

    # -- builds ---------------------------------------------------------------------------------------

    def _run_requests(self) -> None:
        while (item := self.queue.get()) is not None:
            self._run(*item)

    def _run(self, rebuilds: int, request: int, buildset: int) -> None:
        with self.lock:
            free = sorted((w for w in self.workers.values() if not w["paused"]), key=lambda w: w["workerid"])
            worker = free[next(self.rotation) % len(free)] if free else None
        if worker is None:  # a real master keeps the request waiting; so does this one, until unpaused
            time.sleep(0.5)
            self.queue.put((rebuilds, request, buildset))
            return
        with self.lock:
            buildid = next(self.next_build)
            self.origin[buildid] = rebuilds
            build = self.builds[rebuilds] | {
                "buildid": buildid,
                "number": len(self.builds) + 1,
                "buildrequestid": request,
                "workerid": worker["workerid"],
                "started_at": int(time.time()),
                "complete_at": None,
                "complete": False,
                "state_string": "building",
                "results": None,
            }
            self.builds[buildid] = build
        time.sleep(self.run_s)
        posted = self._post_results(rebuilds, buildid, buildset, worker["name"])
        with self.lock:
            build["complete"], build["complete_at"] = True, int(time.time())
            build["results"] = SUCCESS if posted.startswith("posted") else FAILURE
            build["state_string"] = "build successful" if build["results"] == SUCCESS else "failed upload"
        outcome = "success" if build["results"] == SUCCESS else "failure"
        self._record(
            "build", str(buildid), f"rebuild of {rebuilds} ran on {worker['name']}: {outcome}; {posted}"
        )

    def _post_results(self, rebuilds: int, buildid: int, buildset: int, worker: str) -> str:
        """The build's upload step: its JUnit XML through the controller's public API."""
        if self.results_url is None:
            return "results not posted: no controller connected"
        while rebuilds in self.origin:  # a rebuild of a rebuild runs the story's build again
            rebuilds = self.origin[rebuilds]
        original = next(b for b in self.story.builds if b.buildid == rebuilds)
        runner = self.story.runner(worker).identity()
        now = datetime.now(UTC)
        params = {
            "runner_id": runner["id"],
            "machine": runner["machine"],
            "pool": runner["pool"],
            "image": runner["image"],
            "labels": ",".join(runner["labels"]),
            "provider": runner["provider"],
            "job_id": str(buildid),
            "run_id": str(buildset),
            "commit": original.commit,
            "time": now.isoformat(),
        }
        try:
            answer = requests.post(
                self.results_url,
                params=params,
                data=rerun_junit(now),
                headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/xml"},
                timeout=30,
            )
        except requests.RequestException as error:
            return f"results not posted: {type(error).__name__}"
        if answer.status_code != 200:
            return f"results not posted: HTTP {answer.status_code}"
        return f"posted {len(TESTS)} passing results to the controller"


def _listing(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {kind: items, "meta": {"total": len(items)}}


def _handler(standin: BuildbotStandIn) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "runnerctl-demo-buildbot-standin"

        def do_GET(self) -> None:
            path, query = self._route()
            if path is None:
                return self._send(404, {"error": "not found"})
            self._send(*standin.get(path, query))

        def do_POST(self) -> None:
            path, _query = self._route()
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                return self._send(400, {"error": "body: not JSON"})
            if path is None or not isinstance(body, dict):
                return self._send(404, {"error": "not found"})
            self._send(*standin.control(path, body))

        def _route(self) -> tuple[str | None, dict[str, list[str]]]:
            split = urlsplit(self.path)
            if not split.path.startswith(API):
                return None, {}
            return split.path[len(API) :].strip("/"), parse_qs(split.query)

        def _send(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_args: object) -> None:
            pass  # the calls are recorded; the demo's terminal is for the story

    return Handler
