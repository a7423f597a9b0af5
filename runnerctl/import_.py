"""`runnerctl import FILE...`: backfill history — NDJSON results, job records and reports, or JUnit XML.

Streams in batches with a progress bar; resumable (the offset of the last acknowledged batch is kept
under the state directory) and idempotent (the controller deduplicates), so an interrupted import is
simply run again. Returns once the analysis covers what was imported, unless --no-wait.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from common.plural import counted
from runnerctl.client import ApiError, Client
from runnerctl.context import client_of
from runnerctl.examples import examples
from runnerctl.output import stderr
from runnerctl.times import shown_time

RESULT_BATCH = 5000
JOB_BATCH = 5000
REPORT_BATCH = 500


@dataclass
class Tally:
    results: int = 0
    new_results: int = 0
    reports: int = 0
    new_reports: int = 0
    jobs: int = 0
    new_jobs: int = 0
    files: list[str] = field(default_factory=list)


EPILOG = examples(
    "runnerctl import history.ndjson",
    "runnerctl import --no-wait part-1.ndjson part-2.ndjson",
    "runnerctl import --runner-id linux-03 --pool linux --job-id 17 report.xml",
)


def import_files(
    ctx: typer.Context,
    files: Annotated[
        list[Path],
        typer.Argument(
            help='NDJSON files (results; job records with "kind": "job"; reports with "kind": "report") '
            "or JUnit XML"
        ),
    ],
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="return before the analysis has caught up")
    ] = False,
    restart: Annotated[
        bool, typer.Option("--restart", help="ignore saved progress and start from the top")
    ] = False,
    runner_id: Annotated[
        str | None, typer.Option("--runner-id", help="JUnit: the runner that ran the tests")
    ] = None,
    pool: Annotated[str | None, typer.Option("--pool", help="JUnit: the runner's pool")] = None,
    machine: Annotated[str | None, typer.Option("--machine", help="JUnit: the runner's host")] = None,
    image: Annotated[str | None, typer.Option("--image", help="JUnit: the runner's image")] = None,
    job_id: Annotated[str | None, typer.Option("--job-id", help="JUnit: the CI job")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="JUnit: the CI run")] = None,
    time: Annotated[
        str | None, typer.Option("--time", help="JUnit: event time when the XML has none")
    ] = None,
) -> None:
    """Import history and wait for its verdicts."""
    client = client_of(ctx)
    tally = Tally()
    for path in files:
        if not path.is_file():
            raise ApiError(None, f"{path}: no such file")
        if path.suffix.lower() == ".xml":
            if not runner_id:
                raise typer.BadParameter("JUnit files need --runner-id", param_hint="--runner-id")
            params = {
                "runner_id": runner_id,
                "pool": pool,
                "machine": machine,
                "image": image,
                "job_id": job_id,
                "run_id": run_id,
                "time": time,
            }
            answer = client.post(
                "/v1/results/junit",
                params={k: v for k, v in params.items() if v},
                data=path.read_bytes(),
                headers={"Content-Type": "application/xml"},
            )
            tally.results += answer["accepted"]
            tally.new_results += answer["new"]
        else:
            _import_ndjson(client, path, tally, restart)
    stderr.print(
        f"imported {counted(tally.results, 'result')} ({tally.new_results} new), "
        f"{counted(tally.jobs, 'job')} ({tally.new_jobs} new) and "
        f"{counted(tally.reports, 'report')} ({tally.new_reports} new)",
        markup=False,
    )
    if no_wait:
        return
    # The run's answer carries the incident counts, so an ingest token (which may not read incidents)
    # imports and waits without a 403 at the end.
    status = client.post("/v1/analysis/run", timeout=1800)
    counts: dict[str, int] = status["incidents"]
    typer.echo(
        f"analysis as of {shown_time(status['as_of'])}: {counted(sum(counts.values()), 'incident')} ({counts['sick']} sick, "
        f"{counts['suspect']} suspect); see `runnerctl get incidents` (a read token)"
    )


def _import_ndjson(client: Client, path: Path, tally: Tally, restart: bool) -> None:
    state = _state_file(path)
    start = 0 if restart else _saved_offset(state)
    size = path.stat().st_size
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    ) as progress:
        task = progress.add_task(f"importing {path.name}", total=size, completed=start)
        for batch in _batches(path, start):
            _send(client, path, batch, tally)
            _save_offset(state, batch.end)
            progress.update(task, completed=batch.end)
    state.unlink(missing_ok=True)


@dataclass
class Batch:
    end: int  # byte offset just after the batch's last line
    results: list[tuple[int, bytes]] = field(default_factory=list)  # (line number, raw line)
    jobs: list[tuple[int, bytes]] = field(default_factory=list)
    reports: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def _batches(path: Path, start: int) -> Iterator[Batch]:
    with path.open("rb") as handle:
        handle.seek(start)
        offset = start
        number = _line_number(path, start)
        batch = Batch(end=start)
        for raw in handle:
            offset += len(raw)
            number += 1
            line = raw.strip()
            if line:
                _classify(path, number, line, batch)
            batch.end = offset
            if (
                len(batch.results) >= RESULT_BATCH
                or len(batch.jobs) >= JOB_BATCH
                or len(batch.reports) >= REPORT_BATCH
            ):
                yield batch
                batch = Batch(end=offset)
        if batch.results or batch.jobs or batch.reports or batch.end > start:
            yield batch


def _classify(path: Path, number: int, line: bytes, batch: Batch) -> None:
    if b'"kind"' not in line:
        batch.results.append((number, line))
        return
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ApiError(None, f"{path}:{number}: not valid JSON ({error.msg})") from error
    kind = record.pop("kind", "result") if isinstance(record, dict) else None
    if kind == "report":
        batch.reports.append((number, record))
    elif kind == "result":
        batch.results.append((number, json.dumps(record).encode()))
    elif kind == "job":
        batch.jobs.append((number, json.dumps(record).encode()))
    else:
        raise ApiError(None, f'{path}:{number}: unknown kind {kind!r}; expected "result", "job" or "report"')


def _send(client: Client, path: Path, batch: Batch, tally: Tally) -> None:
    if batch.results:
        answer = _post_lines(client, "/v1/results", path, batch.results)
        tally.results += answer["accepted"]
        tally.new_results += answer["new"]
    if batch.jobs:
        answer = _post_lines(client, "/v1/jobs", path, batch.jobs)
        tally.jobs += answer["accepted"]
        tally.new_jobs += answer["new"]
    if batch.reports:
        try:
            answer = client.post("/v1/reports", json={"reports": [r for _, r in batch.reports]}, timeout=600)
        except ApiError as error:
            raise ApiError(
                error.status, f"{path}: reports near line {batch.reports[0][0]}: {error.message}"
            ) from error
        tally.reports += answer["accepted"]
        tally.new_reports += len(answer["new"])


def _post_lines(client: Client, endpoint: str, path: Path, lines: list[tuple[int, bytes]]) -> Any:
    body = b"\n".join(line for _, line in lines)
    try:
        return client.post(endpoint, data=body, headers={"Content-Type": "application/x-ndjson"}, timeout=600)
    except ApiError as error:
        raise ApiError(error.status, _locate(path, error.message, [n for n, _ in lines])) from error


def _locate(path: Path, message: str, numbers: list[int]) -> str:
    """Turn the server's `line K:` (within the batch) into the file's own line number."""
    if message.startswith("line "):
        head, _, rest = message.partition(":")
        index = int(head.split()[1]) - 1
        if 0 <= index < len(numbers):
            return f"{path}:{numbers[index]}:{rest}"
    return f"{path}: {message}"


def _state_file(path: Path) -> Path:
    base = (
        Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "runnerctl" / "imports"
    )
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}".encode()).hexdigest()[
        :24
    ]
    return base / f"{key}.json"


def _saved_offset(state: Path) -> int:
    try:
        return int(json.loads(state.read_text())["offset"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _save_offset(state: Path, offset: int) -> None:
    state.parent.mkdir(parents=True, exist_ok=True)
    temporary = state.with_suffix(".tmp")
    temporary.write_text(json.dumps({"offset": offset}))
    temporary.replace(state)


def _line_number(path: Path, offset: int) -> int:
    if offset == 0:
        return 0
    with path.open("rb") as handle:
        return handle.read(offset).count(b"\n")
