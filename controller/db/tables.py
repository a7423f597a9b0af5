"""Tables. Event times are integer epoch milliseconds (`*_ms`), never the arrival time alone, so
history can be backfilled and replayed."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL wants BIGINT for big tables.
BigId = BigInteger().with_variant(Integer(), "sqlite")

tokens = Table(
    "tokens",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False),
    Column("role", String(20), nullable=False),
    Column("runner_id", String(200)),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_ms", BigInteger, nullable=False),
    Column("revoked_ms", BigInteger),
    Column("expires_ms", BigInteger),  # 0008; None: never
)

runners = Table(
    "runners",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("name", String(200)),
    Column("machine", String(200)),
    Column("pool", String(200)),
    Column("image", String(200)),
    Column("shard", String(200)),
    Column("labels", Text, nullable=False, default="[]"),
    Column("provider", String(200)),
    Column("ephemeral", Boolean, nullable=False, default=False),
    Column("first_seen_ms", BigInteger),
    Column("last_seen_ms", BigInteger),
    Column("last_report_ms", BigInteger),
)

results = Table(
    "results",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("dedup_key", String(32), nullable=False, unique=True),
    Column("test_id", String(2000), nullable=False),
    Column("outcome", String(8), nullable=False),
    Column("time_ms", BigInteger, nullable=False),
    Column("duration_s", Float),
    Column("job_id", String(500)),
    Column("run_id", String(500)),
    Column("attempt", Integer),
    Column("commit", String(200)),
    Column("message", Text),
    Column("runner_id", String(200), nullable=False),
    Column("machine", String(200), nullable=False),
    Column("pool", String(200), nullable=False),
    Column("image", String(200)),
    Column("shard", String(200)),
    Column("ephemeral", Boolean, nullable=False, default=False),
    Column("ingested_ms", BigInteger, nullable=False),
    # Few indexes on purpose: each one costs every insert, and the analysis reads results in id order.
    Index("ix_results_runner_time", "runner_id", "time_ms"),
)

reports = Table(
    "reports",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("agent_id", String(200), nullable=False),
    Column("boot_id", String(200), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("runner_id", String(200), nullable=False),
    Column("observed_ms", BigInteger, nullable=False),
    Column("dropped", Integer, nullable=False, default=0),
    Column("agent_version", String(100)),
    Column("ingested_ms", BigInteger, nullable=False),
    UniqueConstraint("agent_id", "boot_id", "seq", name="uq_reports_agent_boot_seq"),
    Index("ix_reports_runner_observed", "runner_id", "observed_ms"),
)

readings = Table(
    "readings",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("report_id", BigId, ForeignKey("reports.id", ondelete="CASCADE"), nullable=False),
    Column("runner_id", String(200), nullable=False),
    Column("machine", String(200), nullable=False),
    Column("pool", String(200), nullable=False),
    Column("image", String(200)),
    Column("observed_ms", BigInteger, nullable=False),
    Column("check", String(40), nullable=False),
    Column("status", String(10), nullable=False),
    Column("reason", String(100)),
    Column("data", Text, nullable=False),
    Index("ix_readings_runner_observed", "runner_id", "observed_ms"),
    Index("ix_readings_check_observed", "check", "observed_ms"),
    Index("ix_readings_report", "report_id"),  # 0005: retention deletes reports, which cascades here
)

# One finished CI job attempt (0009): what tells a black-hole runner, whose jobs die before any test.
jobs = Table(
    "jobs",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("dedup_key", String(32), nullable=False, unique=True),
    Column("job_id", String(500), nullable=False),
    Column("run_id", String(500)),
    Column("attempt", Integer),
    Column("name", String(500), nullable=False),
    Column("conclusion", String(20), nullable=False),
    Column("failed_step", String(500)),
    Column("failure_reason", String(200)),
    Column("started_ms", BigInteger),
    Column("finished_ms", BigInteger, nullable=False),
    Column("tests", Integer),
    Column("commit", String(200)),
    Column("runner_id", String(200), nullable=False),
    Column("machine", String(200), nullable=False),
    Column("pool", String(200), nullable=False),
    Column("image", String(200)),
    Column("shard", String(200)),
    Column("ephemeral", Boolean, nullable=False, default=False),
    Column("provider", String(200)),
    Column("ingested_ms", BigInteger, nullable=False),
    Index("ix_jobs_finished", "finished_ms"),
    Index("ix_jobs_runner_finished", "runner_id", "finished_ms"),
    Index("ix_jobs_job", "job_id"),
)

incidents = Table(
    "incidents",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("kind", String(20), nullable=False),
    Column("entity", String(200), nullable=False),
    Column("state", String(20), nullable=False),
    Column("dimension", String(20), nullable=False),
    Column("body", Text, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
)

# -- remediation (0003) ------------------------------------------------------------------------------

# The audit log. A row is written *before* the action it names is attempted and finished after; the
# unique idempotency key (`cordon:<incident>:<runner>`, `rerun:<incident>:<job>`) is what keeps a crash
# or a provider timeout from cordoning or rerunning twice.
actions = Table(
    "actions",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("key", String(300), nullable=False, unique=True),
    Column("action", String(30), nullable=False),
    Column("status", String(20), nullable=False),  # intended | done | failed | refused | skipped | dry-run
    Column("runner_id", String(200)),
    Column("incident_id", String(40)),
    Column("job_id", String(500)),
    Column("actor", String(200), nullable=False),
    Column("mode", String(10)),
    Column("reason", Text),
    Column("detail", Text),
    Column("created_ms", BigInteger, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
    Index("ix_actions_runner_created", "runner_id", "created_ms"),
)

# One row per runner that is, or was, out of rotation: active | cordoned | draining | drained.
runner_states = Table(
    "runner_states",
    metadata,
    Column("runner_id", String(200), primary_key=True),
    Column("state", String(20), nullable=False),
    Column("source", String(20)),  # controller | operator | provider
    Column("by", String(200)),
    Column("reason", Text),
    Column("incident_id", String(40)),
    Column("at_ms", BigInteger),
    Column("expires_ms", BigInteger),
    Column("updated_ms", BigInteger, nullable=False),
)

# The reruns of an incident's affected jobs: pending | submitted | passed | failed | unknown.
reruns = Table(
    "reruns",
    metadata,
    Column("key", String(300), primary_key=True),
    Column("incident_id", String(40), nullable=False),
    Column("runner_id", String(200), nullable=False),
    Column("job_id", String(500), nullable=False),
    Column("run_id", String(500)),
    Column("new_job_id", String(500)),
    Column("state", String(20), nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
    Index("ix_reruns_job", "job_id"),
)

# A test's failures inside an incident, cleared once the incident's jobs reran green elsewhere.
clearances = Table(
    "clearances",
    metadata,
    Column("incident_id", String(40), primary_key=True),
    Column("runner_id", String(200)),
    Column("test_ids", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("at_ms", BigInteger, nullable=False),
)

# -- provider ingest (0004) -------------------------------------------------------------------------

# Provider webhook deliveries already taken in: a redelivery (same provider, same id) stores nothing.
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("provider", String(40), primary_key=True),
    Column("delivery_id", String(200), primary_key=True),
    Column("event", String(100)),
    Column("received_ms", BigInteger, nullable=False),
    Index("ix_webhook_deliveries_received", "received_ms"),
)

# Where each polled provider's last poll ended (Jenkins: the newest build seen per job).
poll_cursors = Table(
    "poll_cursors",
    metadata,
    Column("provider", String(40), primary_key=True),
    Column("cursor", Text),
    Column("updated_ms", BigInteger, nullable=False),
)

# -- leadership and retention (0005) -----------------------------------------------------------------

# One row per lease (`leader`): who holds it, until when by the database's clock, and the term, which
# grows by one at every change of holder so a stale leader's term never matches again.
leases = Table(
    "leases",
    metadata,
    Column("name", String(50), primary_key=True),
    Column("holder", String(200)),
    Column("term", BigInteger, nullable=False),
    Column("expires_ms", BigInteger, nullable=False),
    Column("renewed_ms", BigInteger),
)

# The leader's latest analysis (outages, runner health, test scores; incidents live in `incidents`),
# one row, for followers to serve; the ids say which stored rows it covers.
analysis_snapshot = Table(
    "analysis_snapshot",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("term", BigInteger, nullable=False),
    Column("as_of_ms", BigInteger, nullable=False),
    Column("last_result_id", BigInteger, nullable=False),
    Column("last_reading_id", BigInteger, nullable=False),
    Column("body", Text, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
)

# Results pruned by retention, rolled up per test, pool and UTC day: a test's flake history outlives
# the raw rows, which the analysis no longer reads.
result_days = Table(
    "result_days",
    metadata,
    Column("test_id", String(2000), primary_key=True),
    Column("pool", String(200), primary_key=True),
    Column("day_ms", BigInteger, primary_key=True),
    Column("executions", BigInteger, nullable=False),
    Column("failures", BigInteger, nullable=False),
)

# -- provider memory (0006) --------------------------------------------------------------------------

# What a provider must remember about a runner between a cordon and its uncordon (GitHub: the custom
# labels it took off, to put back exactly). One JSON document per (provider, runner).
provider_memory = Table(
    "provider_memory",
    metadata,
    Column("provider", String(40), primary_key=True),
    Column("runner_id", String(200), primary_key=True),
    Column("data", Text, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
)

# -- probation (0007) --------------------------------------------------------------------------------

# A runner the controller uncordoned after its dwell, on trial until its next jobs pass: one row per
# probation, kept after it ends. `jobs` is what the last look saw (job id -> its failed tests);
# `known_incidents` the runner's open incidents when it began, so only a new verdict fails it.
probations = Table(
    "probations",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("runner_id", String(200), nullable=False),
    Column("incident_id", String(40)),
    # running | probing | failing | passed | failed | idle | ended | passed-by-operator
    Column("state", String(20), nullable=False),
    Column("started_ms", BigInteger, nullable=False),
    Column("known_incidents", Text, nullable=False),
    Column("jobs", Text, nullable=False),
    Column("outcome", Text),
    Column("ended_ms", BigInteger),
    Column("updated_ms", BigInteger, nullable=False),
    # A probe before return (remediation/probe.py, 0010): the failed job rerun as the probe, and the probe.
    Column("probe_of", String(200)),
    Column("probe_job", String(200)),
    Index("ix_probations_runner", "runner_id"),
)
