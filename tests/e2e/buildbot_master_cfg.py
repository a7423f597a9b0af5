"""master.cfg of the test fleet: one builder `tests` that runs the small suite in buildbot_project/.

The harness (tests/e2e/buildbot.py) copies this file to <master>/master.cfg and writes fleet.json
next to it; Buildbot runs it in its own venv, so it imports nothing from runnerctl.
"""

import json
import shutil
from pathlib import Path
from urllib.parse import urlencode

from buildbot.plugins import reporters, schedulers, secrets, steps, util
from runnerctl_probe import ProbeableWorker, can_start_build  # packaging/buildbot, copied beside this file
from twisted.internet import defer

BASEDIR = Path(basedir)  # type: ignore[name-defined]  # noqa: F821 - injected by Buildbot
FLEET = json.loads((BASEDIR / "fleet.json").read_text(encoding="utf-8"))
PYTHON = FLEET["python"]
SICK_DIR = Path(FLEET["sick_dir"])
RESULTS_URL = FLEET.get("results_url")

c = BuildmasterConfig = {}

c["buildbotNetUsageData"] = None
c["title"] = "runnerctl"
c["buildbotURL"] = FLEET["url"]
c["protocols"] = {"pb": {"port": f"tcp:{FLEET['pb_port']}:interface=127.0.0.1"}}
c["www"] = {"port": f"tcp:{FLEET['www_port']}:interface=127.0.0.1", "plugins": {}}
c["db"] = {"db_url": "sqlite:///state.sqlite"}
# Buildbot merges queued requests for the same source by default; each forced build must stay a build.
c["collapseRequests"] = False
c["secretsProviders"] = [secrets.SecretInAFile(dirname=str(BASEDIR / "secrets"))]

c["workers"] = [ProbeableWorker(name, FLEET["password"], max_builds=1) for name in FLEET["workers"]]


@util.renderer
def scratch_dir(props):
    # A sick worker's scratch space is a path below a regular file: every mkdir or open under it fails
    # with ENOTDIR, for root too (root ignores permission bits, so a chmod-ed directory would not do).
    name = props.getProperty("workername")
    marker = SICK_DIR / name
    if marker.is_file():
        return str(marker / "scratch")
    return str(Path(props.getProperty("builddir")) / "build" / "scratch")


@util.renderer
def results_upload_url(props):
    build = props.getBuild()
    name = props.getProperty("workername")
    query = urlencode(
        {
            "job_id": build.buildid,
            # A Buildbot "run" is the buildset: the builds one trigger asked for; a rebuild is a new one.
            "run_id": build.requests[0].bsid,
            "runner_id": name,
            "pool": "buildbot",
            "machine": name,
            "provider": "buildbot",
        }
    )
    return f"{RESULTS_URL}{'&' if '?' in RESULTS_URL else '?'}{query}"


def _pinned_worker_matches(builder, worker_for_builder, request):
    # force_build(worker="w2") pins a build to a worker so tests are deterministic. A rebuild copies
    # the buildset's properties, pin included; it must go wherever the scheduler sends it instead.
    pinned = request.properties.getProperty("worker")
    if not pinned or request.reason == "rebuild":
        return True
    return worker_for_builder.worker.workername == pinned


@defer.inlineCallbacks
def _can_start_build(builder, worker_for_builder, request):
    # The test pin first, then runnerctl's probe hook, as a production master.cfg would chain its own.
    if not _pinned_worker_matches(builder, worker_for_builder, request):
        return False
    allowed = yield can_start_build(builder, worker_for_builder, request)
    return allowed


factory = util.BuildFactory()
if FLEET.get("setup_step"):
    # A job's set-up before its tests, as CI jobs have (a checkout, a container, a workspace): where the
    # worker's scratch space is broken it fails here, before any test runs or any result is uploaded,
    # within a second — what a black-hole runner does. Off by default: each step costs the master time.
    factory.addStep(
        steps.ShellCommand(
            name="set up workspace",
            command=["sh", "-c", 'mkdir -p "$RUNNERCTL_SCRATCH"'],
            env={"RUNNERCTL_SCRATCH": scratch_dir},
            haltOnFailure=True,
            timeout=60,
        )
    )
# Each step costs the master a good fraction of a second, so the suite runs in place (pytest writes no
# bytecode or cache into it) instead of behind a checkout step, and "hold" is the suite's own sleep.
factory.addStep(
    steps.ShellCommand(
        name="pytest",
        command=[PYTHON, "-m", "pytest", FLEET["project_dir"], "-q", "--junitxml=junit.xml"],
        env={
            "RUNNERCTL_SCRATCH": scratch_dir,
            "RUNNERCTL_FLAKY": util.Interpolate("%(prop:flaky:-)s"),
            "RUNNERCTL_HOLD_SECONDS": util.Interpolate("%(prop:hold_seconds:-0)s"),
            "PYTHONDONTWRITEBYTECODE": "1",
            # The suite needs no third-party plugins; loading the venv's (anyio...) costs half a second.
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },
        timeout=600,
    )
)
if RESULTS_URL:
    # The token travels in the environment: the master's twistd.log records each command line as
    # rendered, secrets and all, but not the environment; step logs mask secrets either way. (The
    # worker's own twistd.log still records it: Buildbot workers log their commands' arguments.)
    uploader = FLEET.get("uploader", "auto")
    if uploader == "curl" or (uploader == "auto" and shutil.which("curl")):
        upload = [
            "sh",
            "-c",
            'exec curl --silent --show-error --fail --max-time 20 -H "Authorization: Bearer $RESULTS_TOKEN"'
            ' -H "Content-Type: application/xml" --data-binary @junit.xml "$1"',
            "upload-junit",
            results_upload_url,
        ]
    else:
        upload = [
            PYTHON,
            "-c",
            "import os, sys, urllib.request\n"
            "req = urllib.request.Request(sys.argv[1], data=open('junit.xml', 'rb').read(), method='POST',\n"
            "    headers={'Authorization': 'Bearer ' + os.environ['RESULTS_TOKEN'],\n"
            "             'Content-Type': 'application/xml'})\n"
            "urllib.request.urlopen(req, timeout=20).read()\n",
            results_upload_url,
        ]
    # The upload runs even after failed tests (those results matter most); a failed upload only warns,
    # so the build's result still says what the tests did.
    factory.addStep(
        steps.ShellCommand(
            name="upload junit",
            command=upload,
            env={"RESULTS_TOKEN": util.Interpolate("%(secret:results_token)s")},
            alwaysRun=True,
            flunkOnFailure=False,
            warnOnFailure=True,
            timeout=60,
        )
    )

c["builders"] = [
    util.BuilderConfig(
        name="tests",
        workernames=list(FLEET["workers"]),
        factory=factory,
        canStartBuild=_can_start_build,
    )
]

c["schedulers"] = [
    schedulers.ForceScheduler(
        name="force",
        builderNames=["tests"],
        # Free-form name/value slots: force_build(**props) fills them (worker, flaky, hold_seconds...).
        properties=[util.AnyPropertyParameter(f"property{i}") for i in range(FLEET["property_slots"])],
    )
]

c["services"] = []
if FLEET.get("status_push_url"):
    c["services"].append(
        reporters.HttpStatusPush(
            serverUrl=FLEET["status_push_url"],
            headers={"Authorization": f"Bearer {FLEET['token']}"},
            generators=[
                reporters.BuildStatusGenerator(
                    mode="all",
                    report_new=True,
                    # Steps too: a failed build's job record names the step it failed at.
                    message_formatter=reporters.MessageFormatterFunction(
                        lambda ctx: ctx["build"], "json", want_steps=True
                    ),
                )
            ],
        )
    )
