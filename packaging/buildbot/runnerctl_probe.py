"""runnerctl's probe hook for a Buildbot 4.x master: copy next to master.cfg and wire it in (see below).

Buildbot's REST API cannot pin a build to a worker, and a paused worker takes no build at all. With this
hook the controller can still send a worker it holds paused exactly one probe: it re-pauses the worker
with a reason naming a build (`runnerctl: probe of build 42: ...`) and then asks Buildbot to `rebuild`
that build. While a worker is paused that way:

- it is offered builds again (`ProbeableWorker`), but `can_start_build` lets it start only rebuilds
  of build 42 (the new buildset's `rebuilt_buildid`);
- every other worker of the builder refuses those rebuilds, so the probe runs on that worker or nowhere.

Any other pause keeps its usual meaning. Without the hook a rebuild runs wherever Buildbot sends it; the
controller checks which worker ran its probe and never counts one that ran elsewhere.

In master.cfg:

    from runnerctl_probe import ProbeableWorker, can_start_build
    c["workers"] = [ProbeableWorker(name, password) for name, password in ...]
    c["builders"] = [util.BuilderConfig(..., canStartBuild=can_start_build)]

(Chain it with a `canStartBuild` of your own by calling both.) Runs in the master's Python, so it imports
nothing from runnerctl; the prefix below is the controller's (controller/providers/buildbot.py).
"""

from __future__ import annotations

import re

from buildbot.plugins import worker
from twisted.internet import defer

PROBE = re.compile(r"runnerctl: probe of build (\d+)\b")


def probe_of(a_worker):
    """The build this worker is paused to probe, or None."""
    if not a_worker.isPaused():
        return None
    # Buildbot keeps the reason only in this attribute (and its database); there is no getter.
    found = PROBE.match(getattr(a_worker, "_pause_reason", None) or "")
    return int(found.group(1)) if found else None


class ProbeableWorker(worker.Worker):
    """A worker that, paused for a probe, is still offered builds; can_start_build picks the probe."""

    def canStartBuild(self):
        if probe_of(self) is None:
            return super().canStartBuild()
        # Every other check (graceful shutdown, quarantine, max_builds, locks) still applies.
        self._paused = False
        try:
            return super().canStartBuild()
        finally:
            self._paused = True


@defer.inlineCallbacks
def can_start_build(builder, worker_for_builder, request):
    """A builder's canStartBuild: a probing worker starts only its probe, which no other worker starts."""
    probes = {}
    for wfb in builder.workers:
        if wfb.worker is not None and probe_of(wfb.worker) is not None:
            probes[probe_of(wfb.worker)] = wfb.worker.workername
    if not probes:
        return True
    buildset = yield builder.master.data.get(("buildsets", request.bsid))
    rebuilt = buildset.get("rebuilt_buildid") if buildset else None
    mine = probe_of(worker_for_builder.worker)
    if mine is not None:
        return rebuilt == mine
    return rebuilt not in probes
