"""`runnerctl explain runner ID | test TEST_ID`: the evidence chain behind a verdict."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from common.plural import counted, noun
from runnerctl import completion
from runnerctl.context import client_of
from runnerctl.examples import examples
from runnerctl.output import clean, stdout
from runnerctl.probes import probe_line
from runnerctl.times import shown_time

RunnerId = Annotated[str, typer.Argument(help="runner id", autocompletion=completion.runner_ids)]

app = typer.Typer(no_args_is_help=True, help="Show why the controller judged a runner or a test as it did.")

JsonOption = Annotated[bool, typer.Option("--json", help="print the raw explanation as JSON")]


def _line(text: str = "") -> None:
    stdout.print(clean(text).rstrip(), markup=False)


def _table(
    rows: list[dict[str, Any]], columns: list[str], highlight: str | None = None, key: str = ""
) -> None:
    if not rows:
        _line("  <none>")
        return
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    _line("  " + "  ".join(c.upper().ljust(widths[c]) for c in columns))
    for row in rows:
        mark = "→ " if highlight is not None and row.get(key) == highlight else "  "
        _line(mark + "  ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns))


@app.command(
    "runner",
    epilog=examples(
        "runnerctl explain runner linux-03",
        "runnerctl explain runner linux-03 --json | jq .incidents",
    ),
)
def runner(ctx: typer.Context, runner_id: RunnerId, as_json: JsonOption = False) -> None:
    """Why this runner is healthy, warning, suspect or sick: its failures against its peers, the test
    used and its numbers, the confirming readings, and what would flip the verdict.
    """
    data = client_of(ctx).get(f"/v1/runners/{runner_id}/explain")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    health = data["health"]
    _line(
        f"Runner:    {data['runner']}  (machine {data['machine']}, pool {data['pool']}, image {', '.join(data['images']) or '<none>'})"
    )
    _line(f"Health:    {health['health']}" + (f" ({health['dimension']})" if health.get("dimension") else ""))
    for warning in health.get("warnings") or []:
        _line(f"Warning:   {warning}")
    cordon = data.get("cordon")
    on_probation = bool((data.get("remediation") or {}).get("probation"))
    _line(
        f"Cordoned:  {'yes, by ' + str(cordon.get('by')) + ': ' + str(cordon.get('reason')) if cordon else 'no'}"
        + (" (on probation)" if on_probation else "")
    )
    _line(f"As of:     {shown_time(data['as_of'])}")
    for burst in data.get("bursts", []):
        _line()
        _line(
            f"Burst {burst['id']}: {burst['kind']}/{burst['entity']}, {counted(burst['failures'], 'failure')} in "
            f"{counted(burst['executions'], 'execution')}, most from {shown_time(burst['start'])} to {shown_time(burst['end'])}; outside that and after it, it "
            "failed no more than usual: no verdict, and the burst's failures are not charged to the tests"
        )
    for incident in data["incidents"]:
        stats = incident["statistics"]
        evidence = incident["evidence"]
        _line()
        _line(
            f"Incident {incident['id']}: {incident['kind']}/{incident['entity']} is {incident['state']} ({incident['dimension']})"
        )
        _line(
            f"  onset {shown_time(incident['onset'])}, decided at {shown_time(incident['decided_at'])}"
            + (f", ended {shown_time(incident['end'])}" if incident.get("end") else "")
        )
        _line(f"  test: {stats['test']}")
        if incident.get("jobs"):
            _jobs(incident["jobs"])
        if not incident["tests"] and incident.get("jobs"):
            _line(f"  affected jobs: {len(incident['affected_jobs'])}")
            continue  # judged by its job records alone: no test failures to show
        _line(
            f"  {counted(stats['failures'], 'failure')} in {counted(stats['executions'], 'execution')} where "
            f"{stats['expected']} {noun(stats['expected'], 'was', 'were')} expected (ratio {stats['ratio']}); "
            f"p = {stats['p_value']:.3g}, adjusted for {counted(stats['bins_scanned'], 'bin')} scanned "
            f"p = {stats['p_adjusted']:.3g}; q = {stats['q_value']:.3g} (Benjamini–Hochberg cutoff {stats['bh_cutoff']:.3g})"
        )
        passed = stats["passed_elsewhere"]
        _line(
            f"  breadth: {counted(stats['distinct_tests'], 'distinct test')} failed in {counted(stats['failed_jobs'], 'job')}; "
            f"{passed['passed_on_peers']} of {passed['failed_tests']} passed on peers in the same hours; "
            f"without its most-failing test p = {stats['without_top_test_p']:.3g}"
            + (
                f", beyond its two most-failing p = {stats['beyond_top_two_p']:.3g}"
                if "beyond_top_two_p" in stats
                else ""
            )
        )
        if stats.get("spread"):
            _line(f"  spread: {stats['spread']}")
        readable, examined = evidence.get("failures_readable"), evidence.get("failures_examined")
        among = (
            f"of the {counted(readable, 'failure')} (of {examined}) on runners that report"
            if readable is not None and examined is not None and readable < examined
            else "of the failures"
        )
        _line(
            f"  evidence: {evidence['dimension']} covers {evidence['coverage']:.0%} {among} "
            f"({counted(evidence['readings_seen'], 'reading')} from {counted(evidence['runners_reporting'], 'runner')}; per dimension: "
            + ", ".join(f"{k} {v:.0%}" for k, v in evidence["per_dimension"].items())
            + ")"
        )
        for reading in evidence["readings"]:
            values = ", ".join(f"{k}={v:.4g}" for k, v in reading["values"].items())
            _line(f"    {shown_time(reading['time'])}  {reading['runner']}  {reading['check']}: {values}")
        _line(
            "  most failing tests: "
            + ", ".join(f"{t['test_id']} ({t['failures']})" for t in incident["tests"][:8])
        )
        _line(f"  affected jobs: {len(incident['affected_jobs'])}")
    _line()
    _line(
        f"Pivot, pool {data['pool']}, {shown_time(data['window']['start'])} to {shown_time(data['window']['end'])}:"
    )
    _table(
        data["pivot"]["runner"],
        ["runner", "executions", "failures", "failure_rate", "distinct_failed_tests"],
        data["runner"],
        "runner",
    )
    if len(data["pivot"]["shard"]) > 1:
        _line("By shard:")
        _table(
            data["pivot"]["shard"],
            ["shard", "executions", "failures", "failure_rate", "distinct_failed_tests"],
        )
    _line()
    _line("What would flip the verdict:")
    for note in data["what_would_flip"]:
        _line(f"  - {note}")
    _remediation(data.get("remediation"))


def _jobs(jobs: dict[str, Any]) -> None:
    """The job evidence of a verdict on job outcomes (controller/analysis/job_verdict.py)."""
    _line(
        f"  jobs: {jobs['early_deaths']} of {counted(jobs['judged_jobs'], 'judged job')} died early "
        f"({jobs['system_failures']} system failures, {jobs['timed_out']} timed out, {jobs['without_tests']} "
        f"without tests, {jobs['short']} far shorter than peers'); peers' jobs die early at "
        f"{jobs['peer_rate']:.1%}, {jobs['expected']} expected"
    )
    _line(
        f"  statistic: log-likelihood ratio {jobs['llr']} (sick rate {jobs['sick_rate']:.0%}); p = "
        f"{jobs['p_value']:.3g}, adjusted {jobs['p_adjusted']:.3g} (Benjamini–Hochberg bar {jobs['bh_bar']:.3g})"
    )
    _line("  first jobs that died early:")
    for job in jobs["first_jobs"]:
        took = "?" if job["duration_s"] is None else f"{job['duration_s']:g} s"
        why = ", ".join(str(v) for v in (job["failed_step"], job["failure_reason"]) if v) or (
            "no tests" if not job["tests"] else ""
        )
        _line(
            f"    {shown_time(job['finished'])}  {job['job_id']}  {job['name']}: {job['conclusion']} after {took}"
            + (f" ({why})" if why else "")
        )


def _remediation(remediation: dict[str, Any] | None) -> None:
    if not remediation:
        return
    _line()
    _line(f"Remediation (mode {remediation['mode']}):")
    _line(f"  budget: {remediation['budget']['explanation']}")
    provider = remediation.get("provider") or {}
    if provider.get("cordon_limits"):
        _line(f"  cordon via {provider['name']}: {provider['cordon_limits']}")
    probation = remediation.get("probation")
    if probation:
        _line(
            f"  probation: since {shown_time(probation['since'])} ({probation['state']}), "
            f"{len(probation['passed_jobs'])} of {probation['probe_jobs']} {noun(probation['probe_jobs'], 'probe job')} passed"
            + "".join(
                f"; job {job} failed {counted(len(tests), 'test')}"
                for job, tests in probation["failed_jobs"].items()
            )
            + f"; ends idle at {shown_time(probation['ends_idle_at'])}"
        )
    if remediation.get("probe"):
        _line(f"  probe: {probe_line(remediation['probe'])}")
    for rerun in remediation.get("reruns") or []:
        _line(
            f"  rerun: job {rerun['job']} as {rerun['rerun_as'] or '-'}: {rerun['state']} ({rerun['incident']})"
        )
    for action in reversed(remediation.get("actions") or []):
        _line(
            f"  {shown_time(action['at'])}  {action['action']} {action['status']}"
            + (f" job {action['job']}" if action.get("job") else "")
            + f" by {action['actor']}: {action.get('detail') or action.get('reason') or ''}"
        )


@app.command(
    "test",
    epilog=examples(
        "runnerctl explain test 'tests/test_io.py::test_read'",
        "runnerctl explain test 'tests/test_io.py::test_read' --json",
    ),
)
def test(ctx: typer.Context, test_id: str, as_json: JsonOption = False) -> None:
    """Per runner: executions, failures, which failures were discounted and why, and what a
    failure-counting scorer would have said.
    """
    data = client_of(ctx).get("/v1/tests/explain", params={"test_id": test_id})
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    score = data["score"] or {}
    _line(f"Test:      {data['test_id']}")
    _line(
        f"Verdict:   {score.get('verdict', 'healthy')}"
        + (f" — {score['reason']}" if score.get("reason") else "")
    )
    if score:
        _line(
            f"Score:     {score['score']:.3f} (90% interval {score['lower']:.3f}–{score['upper']:.3f}), from {counted(score['counted_failures'], 'failure')} in {counted(score['counted_executions'], 'counted execution')}"
        )
    naive = data["naive"]
    _line(
        f"Naive:     {counted(naive['failures'], 'failure')} in {counted(naive['executions'], 'execution')} → a failure-counting scorer says {naive['verdict']}"
    )
    if data.get("cleared_by"):
        _line(
            f"Cleared:   failures inside {', '.join(data['cleared_by'])} were the runner's: reran green elsewhere"
        )
    _line(f"As of:     {shown_time(data['as_of'])}")
    _line()
    rows = [
        r | {"discounted_by": ", ".join(f"{k} ({v})" for k, v in r["discounted_by"].items()) or "-"}
        for r in data["per_runner"]
    ]
    _table(rows, ["runner", "executions", "failures", "discounted", "counted_failures", "discounted_by"])
    for incident_id, incident in data["incidents"].items():
        _line(
            f"  {incident_id}: {incident['kind']}/{incident['entity']} {incident['state']} ({incident['dimension']})"
        )
    for outage in data["outages"]:
        scope = {
            "fleet": "fleet outage",
            "pool": f"outage of pool {', '.join(outage.get('pools', []))}",
        }.get(outage.get("scope", "fleet"), "outage of what these tests use")
        _line(f"  {outage['id']}: {scope} {shown_time(outage['start'])} to {shown_time(outage['end'])}")
    for burst in data.get("bursts", []):
        _line(
            f"  {burst['id']}: burst on {burst['kind']}/{burst['entity']} {shown_time(burst['start'])} to {shown_time(burst['end'])}, "
            "many tests failing there at once, then runs as usual"
        )
