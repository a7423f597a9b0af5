"""Every threshold the analysis uses, with the default an operator would start from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AnalysisConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # How far back from as_of the analysis reads (controller/analysis/horizon.py); retention prunes
    # only what lies beyond, so pruning never changes a verdict.
    window_days: float = Field(default=90.0, ge=1, description="the analysis reads this many days back")

    # Time resolution.
    bin_s: int = Field(default=3600, ge=60, description="bin of an entity's failure series")
    baseline_radius_bins: int = Field(
        default=24, ge=1, description="a test's peers are read within ± this many bins"
    )
    outage_bin_s: int = Field(default=300, ge=30)
    outage_max_s: int = Field(
        default=6 * 3600, description="a fleet-wide spike longer than this is not an outage"
    )
    pool_outage_max_s: int = Field(
        default=3 * 3600,
        description="one pool's spike longer than this (padded) is the pool's trouble, not an outage",
    )

    # Clusters beyond chance.
    fdr_q: float = Field(default=0.01, gt=0, lt=1, description="Benjamini–Hochberg false discovery rate")
    alternative_ratio: float = Field(default=3.0, gt=1, description="rate ratio the segment scan looks for")
    min_ratio: float = Field(default=3.0, ge=1, description="observed/expected failures a cluster needs")
    reference_exclusion_ratio: float = Field(
        default=1.5, ge=1, description="a first-pass excess this large is left out of everyone's peers"
    )
    reference_exclusion_alternative: float = Field(
        default=2.0, gt=1, description="rate ratio the scan for what to leave out of the peers looks for"
    )
    reference_exclusion_rounds: int = Field(
        default=4, ge=1, description="passes of leaving excesses out of the peers before judging"
    )
    min_excess_rate: float = Field(
        default=0.01,
        description="failures beyond expected, per execution in the stretch, a cluster needs: healthy "
        "runners differ by a few tenths of a percent, a sick one fails a share of its work",
    )
    # A runner or host whose own readings name the sick dimension under its failures has independent
    # evidence: its effect may be smaller (a skewed clock failing one test in ten of the tests that
    # check time). Significance and breadth are never lowered.
    confirmed_min_ratio: float = Field(
        default=2.0, ge=1, description="min_ratio for a runner or host whose readings confirm a dimension"
    )
    under_image_min_ratio: float = Field(
        default=1.5,
        ge=1,
        description="min_ratio for a runner or host sick on its own under a bad image that already fails a share of its tests",
    )
    confirmed_min_excess_rate: float = Field(
        default=0.005, description="min_excess_rate for a runner or host whose readings confirm a dimension"
    )
    confirmed_min_failed_jobs: int = Field(
        default=1, ge=1, description="min_failed_jobs for a runner or host whose readings confirm a dimension"
    )
    without_top_test_p: float = Field(
        default=1e-3,
        description="p a cluster's failures must still reach without its most-failing test (or the BH cutoff, if higher)",
    )
    confirmed_without_top_test_p: float = Field(
        default=1e-2,
        description="without_top_test_p for a runner or host whose readings confirm a dimension and that "
        "fails min_ratio times its tests' rates: nine failures of eight tests hold less without the top one "
        "than their spread shows",
    )
    burst_max_s: int = Field(
        default=3600,
        description="an excess all within this long (about as long as outages last), followed by runs "
        "at the usual rate, is a passing burst",
    )
    burst_rest_p: float = Field(
        default=0.01,
        description="a passing burst's entity fails no more than chance outside its hour and after it "
        "(Poisson, this p or above)",
    )
    min_failures: int = 3
    min_distinct_tests: int = Field(
        default=3, description="distinct tests a cluster fails, tests that fail together counting as one"
    )
    # Tests that fail together (controller/analysis/cofailing.py).
    cofail_min_jobs: int = Field(default=4, description="attempts two tests failed together in, at least")
    cofail_min_lift: float = Field(default=5.0, description="times as often as their rates meet by chance")
    cofail_min_machines: int = Field(default=4, description="hosts they failed together on, at least")
    cofail_concentration_p: float = Field(
        default=1e-3, description="failing together on one host, pool or image beyond chance at this p"
    )
    cofail_recurring_days: int = Field(
        default=3, description="days a flaky fixture's tests failed together on, at least"
    )
    group_outage_p: float = Field(
        default=1e-4, description="an hour whose jobs failed a group's tests together this far beyond usual"
    )
    group_outage_min_hosts: int = Field(default=4, description="on this many hosts or more")
    dependency_min_rate: float = Field(
        default=0.5, description="a few hours in which one test failed this share of its runs fleet-wide"
    )
    dependency_outage_p: float = Field(
        default=1e-6, description="and this far beyond its usual rate: an outage of what it depends on"
    )
    companion_min_rate: float = Field(
        default=0.25,
        description="beside an outage found of what other tests use, a test failing this share of its runs "
        "over a few hours, far beyond its usual rate, shares that outage",
    )
    max_others_failing: float = Field(
        default=0.1,
        description="an outage of what some tests use fails them, not the rest of their jobs: where those "
        "jobs failed more than this share of their other tests too, it is a sick place",
    )
    cofail_max_attempt_failures: int = Field(
        default=30, description="attempts failing more tests than this are not a shared fixture"
    )
    min_failed_jobs: int = 2
    peer_prior_strength: float = 4.0
    history_prior_strength: float = 20.0
    max_segments_per_entity: int = 3

    # Outages.
    outage_min_ratio: float = 3.0
    outage_saturated_rate: float = Field(
        default=0.2, description="a host failing this share already counts toward an outage only if it bursts"
    )
    outage_min_lost_passes: float = Field(
        default=0.15, description="or, on a host already failing, this share of its usual passes lost"
    )
    outage_min_share: float = Field(default=0.5, description="share of active runners that must be failing")
    outage_min_runners: int = 3
    outage_p: float = 1e-6
    outage_pad_bins: int = 3
    outage_recent_runs: int = Field(
        default=10,
        description="an outage fails tests beyond what they failed on their pool in this many runs before it "
        "(within outage_recent_hours), or on their host in outage_recent_hours",
    )
    outage_recent_hours: float = 24.0

    # Evidence thresholds (from what operators already trust: Jenkins, etcd, Swarming).
    disk_min_free_bytes: int = 1 << 30
    disk_min_free_ratio: float = 0.05
    inode_min_free_ratio: float = 0.05
    memory_min_available_ratio: float = 0.05
    memory_max_psi_full_avg10: float = 10.0
    memory_max_psi_some_avg10: float = 50.0
    clock_max_offset_s: float = 1.0
    # Pressure: milder levels that make a runner a warning and a test resource-sensitive, never sick.
    disk_warn_free_bytes: int = 2 << 30
    disk_warn_free_ratio: float = 0.10
    memory_warn_available_ratio: float = 0.15
    memory_warn_psi_some_avg10: float = 20.0
    memory_warn_psi_full_avg10: float = 5.0
    reading_stale_s: int = Field(default=1800, description="a reading speaks for at most this long")
    evidence_lookback_s: int = 6 * 3600
    separating_gap_s: int = Field(
        default=12 * 3600,
        description="a coarse stretch that ran this long far cleaner than its cause would allow is two problems",
    )
    prior_lookback_s: int = Field(
        default=12 * 3600,
        description="a child failing beyond chance in this time before a coarse stretch is sick on its own",
    )
    chronic_lead_s: int = Field(
        default=12 * 3600,
        description="a test failing steadily this long before the rest of a stretch is not its onset",
    )
    evidence_min_coverage: float = Field(
        default=0.5, description="share of the cluster's failures under bad readings"
    )
    resolve_after_executions: int = 20
    resolve_after_jobs: int = Field(default=3, description="clean jobs before a verdict is resolved")
    resolve_after_jobs_healed: int = Field(
        default=2,
        description="the same where the readings that named its dimension have read healthy since",
    )
    resolve_after_s: int = Field(
        default=1800, description="how long after its last failure an entity must run cleanly to be resolved"
    )
    retired_silence_s: int = Field(
        default=12 * 3600,
        description="how long every host a bad image ran on must have run nothing at all (autoscaled VMs "
        "gone with it) for the image to count as retired while its pool works on",
    )

    # Job outcomes (controller/analysis/jobs.py): a runner whose jobs die before any test ran (a full
    # disk before checkout, a dead container daemon) sends no result, so only its job records show it.
    # One sequential test per runner (per host for ephemeral runners) on an "early death" per judged
    # job, against its pool's peers' rate of the same, with the false discovery rate over runners at
    # `fdr_q`. Resolution reuses `resolve_after_jobs`.
    jobs_sick_rate: float = Field(
        default=0.9,
        gt=0,
        lt=1,
        description="the early-death rate the test's alternative assumes: a black hole fails nearly every job",
    )
    jobs_short_ratio: float = Field(
        default=0.2,
        gt=0,
        lt=1,
        description="a failed job that ended within this share of its peers' median duration (same pool and "
        "job name) died early",
    )
    jobs_tests_usual_share: float = Field(
        default=0.5,
        description="a failed job with no test result died early only where its peers' jobs of that name "
        "usually (this share or more) report tests: a lint job never does",
    )
    jobs_timed_out_weight: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="a timed-out job counts as this much of an early death (a hung runner, or a slow test)",
    )
    jobs_peer_radius_s: int = Field(
        default=3600, ge=60, description="peers' jobs finishing within about this long of a job set its rate"
    )
    jobs_prior_rate: float = Field(
        default=0.01, gt=0, lt=1, description="a peer's early-death rate before its jobs say otherwise"
    )
    jobs_prior_strength: float = Field(default=10.0, gt=0, description="that prior, in jobs")
    jobs_min_peer_rate: float = Field(
        default=0.005,
        gt=0,
        lt=1,
        description="the peers' rate is never taken below this: a few clean peer jobs do not prove a rate of zero",
    )
    jobs_min_early_deaths: int = Field(
        default=2, ge=1, description="early deaths a verdict on job outcomes needs, at least"
    )

    # Flake scoring.
    flake_min_executions: int = 10
    flake_min_failures: int = 2
    # 2.5%, or 2% where five or more failures count: a test failing one run in fifty on its own, on
    # many runners and passing on retry, is flaky to those who rerun it, but two failures in
    # twenty-five runs also reach a 2% bound, and thousands of tests are scored. Spread thinly over
    # many runners, 1%: what an incident leaves past its edges sits on the few sick machines.
    # Our own simulator lets healthy tests fail up to ~2% (times a slow machine's factor) and calls
    # them healthy; two fleet simulators written apart from this code keep healthy tests below 0.5%
    # and call 1.5-4% flaky. A test failing 2% of its runs on its own is flaky by any measure.
    flake_floor: float = Field(
        default=0.025, description="a flaky test's failure probability, conservative bound"
    )
    flake_floor_with_evidence: float = Field(
        default=0.02, description="the same bound where at least flake_evidence_failures failures count"
    )
    flake_evidence_failures: int = 5
    flake_floor_widespread: float = Field(
        default=0.01,
        description="the bound for a test whose failures are spread thinly: on flake_widespread_runners "
        "or more, none holding more than flake_widespread_top_share of them or more than its share of "
        "the runs predicts (binomial, p below flake_widespread_p)",
    )
    flake_widespread_runners: int = 5
    flake_widespread_top_share: float = 0.5
    flake_widespread_p: float = 0.01
    flake_half_life_days: float = 14.0
    flake_own_failure_p: float = Field(
        default=0.05,
        description="a test's runs inside an incident count for it again where it failed there no more "
        "than its counted rate elsewhere predicts (one-sided binomial, p at or above this)",
    )
    flake_own_failure_min_failures: int = Field(
        default=3, description="counted failures a test needs before its rate is trusted to give runs back"
    )
    flake_beyond_noise_rate: float = Field(
        default=0.0125,
        description="below the floor, a test scored this high (its rate's posterior mean), with "
        "flake_beyond_noise_failures counted failures or more on two runners or more, not bunched in time, and "
        "far beyond what the tests called healthy fail (binomial, p below flake_beyond_noise_p) is flaky",
    )
    flake_beyond_noise_p: float = 1e-4
    flake_beyond_noise_failures: int = 3
    flake_burst_p: float = Field(
        default=1e-3,
        description="failures bunched into outage_max_s this far beyond the test's other runs (Fisher) are "
        "something that was down then, not a flaky test",
    )
    flake_pool_contrast_p: float = Field(
        default=1e-4,
        description="a test flaky on one pool only: its failures there against the others' (Fisher, one-sided)",
    )
    flake_max_top_share: float = Field(
        default=0.8, description="share of failures on one runner above which it is an interaction"
    )
    broken_min_runs: int = 5
    broken_code_p: float = Field(
        default=1e-6,
        description="commits failing in every job they ran in, this unlikely at the test's rate: broken on "
        "that code (a release branch), not flaky",
    )
    broken_min_rate: float = 0.95
    broken_long_min_rate: float = Field(
        default=0.8,
        description="over twice broken_min_runs runs or more, this share failing is broken too: a test "
        "that fails nine runs in ten on one platform is that platform's, not flaky",
    )
    platform_min_rate: float = Field(
        default=0.5,
        description="a pool failing most of a test's runs (this share of four times broken_min_runs or "
        "more) while every other pool passes nearly all of them: that platform's, not flaky",
    )
    platform_max_elsewhere: float = Field(
        default=0.05, description="the most the other pools may fail it then, for that platform verdict"
    )
    resource_p: float = 0.01
    interaction_p: float = Field(
        default=0.001,
        description="a test failing on one runner this far beyond the others (Fisher) is a test × runner "
        "interaction, not flaky; every flaky test is asked, so chance imbalances must stay rare",
    )
    resource_min_share: float = 0.6


_NICE_BINS_S = (60, 120, 300, 600, 900, 1800, 3600)


def scaled_to(config: AnalysisConfig, span_ms: int) -> AnalysisConfig:
    """Finer bins for a short history (a replay, a young fleet): at least ~48 bins over what is there.

    A long history keeps the configured bins, so live verdicts do not shift as the history grows past
    two days."""
    wanted = span_ms / 1000 / 48
    if wanted >= config.bin_s:
        return config
    bin_s = next((b for b in _NICE_BINS_S if b >= wanted), _NICE_BINS_S[-1])
    bin_s = min(bin_s, config.bin_s)
    return config.model_copy(
        update={"bin_s": bin_s, "outage_bin_s": min(config.outage_bin_s, max(60, bin_s // 2))}
    )
