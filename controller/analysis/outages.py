"""Outages: a failure spike across most of the fleet at once (network, an external service).

Found first and taken out of every per-entity comparison and every flake score: when the whole
fleet fails together, no runner is sick for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from controller.analysis.baseline import combine, group_totals, window_sums
from controller.analysis.config import AnalysisConfig


@dataclass(frozen=True)
class Outage:
    start_ms: int
    end_ms: int
    scope: str  # "fleet"
    failures: int
    executions: int
    expected: float
    runners_failing: int
    runners_active: int


def find_outages(
    frame_cols: dict[str, np.ndarray],
    time_ms: np.ndarray,
    fail: np.ndarray,
    rows: np.ndarray,
    config: AnalysisConfig,
) -> list[Outage]:
    """Outage spans among the rows selected by the boolean mask `rows`.

    A bin is an outage when the fleet fails far beyond its tests' usual rates *and* beyond the fleet's
    own rate just before and after (a burst, not a sustained sickness), on most active hosts. Hosts,
    not runner ids: a sick host with fifty ephemeral runners is one host.
    """
    idx = np.flatnonzero(rows)
    if idx.size == 0:
        return []
    t, f = time_ms[idx], fail[idx].astype(float)
    tst, host = frame_cols["test"][idx], frame_cols["machine"][idx]
    fine = t // (config.outage_bin_s * 1000)
    radius = max(1, 3600 // config.outage_bin_s)
    near_f = window_sums(tst.astype(np.int64), fine, f, radius)
    near_n = window_sums(tst.astype(np.int64), fine, np.ones_like(f), radius)
    overall = (f.sum() + 1) / (f.size + 2)
    strength = config.history_prior_strength
    expected = (group_totals(tst, f) - near_f + strength * overall) / (
        group_totals(tst, np.ones_like(f)) - near_n + strength
    )

    bins, inverse = np.unique(fine, return_inverse=True)
    observed = np.bincount(inverse, weights=f)
    executions = np.bincount(inverse).astype(float)
    expect = np.bincount(inverse, weights=expected)

    # The fleet's own rate before and after each bin (15 min to 2 h away): an outage is a burst that
    # stands out from both; the onset of a sustained sickness has no "normal after" and is not one.
    around_rate = np.maximum(
        _rate_between(bins, observed, executions, -2 * radius, -3),
        _rate_between(bins, observed, executions, 3, 2 * radius),
    )

    # Per host within each bin: is this host failing well beyond its own expectation?
    key = combine(inverse.astype(np.int64), host)
    unique_hosts, hinv = np.unique(key, return_inverse=True)
    h_obs = np.bincount(hinv, weights=f)
    h_exp = np.bincount(hinv, weights=expected)
    h_n = np.bincount(hinv)
    h_bin = np.zeros(unique_hosts.size, np.int64)
    h_bin[hinv] = inverse
    active_hosts = h_n >= 3
    elevated = (h_obs >= np.maximum(2, config.outage_min_ratio * h_exp)) & active_hosts
    active = np.bincount(h_bin, weights=active_hosts.astype(float), minlength=bins.size)
    failing = np.bincount(h_bin, weights=elevated.astype(float), minlength=bins.size)

    failed_pairs = np.unique(np.stack([inverse[f > 0], tst[f > 0]]), axis=1)
    distinct = np.bincount(failed_pairs[0], minlength=bins.size)

    p = stats.binom.sf(observed - 1, executions, np.clip(expect / np.maximum(executions, 1), 1e-9, 1))
    flagged = (
        (observed >= config.outage_min_ratio * expect)
        & (observed >= config.outage_min_ratio * around_rate * executions)
        & (p < config.outage_p)
        & (failing >= config.outage_min_runners)
        & (failing >= config.outage_min_share * np.maximum(active, 1))
        & (distinct >= 3)
    )
    # An outage's edges are weaker than its core: grow each core over neighbouring bins that are
    # still clearly elevated on more than one host.
    edge = (observed >= 2 * expect) & (p < 0.01) & (failing >= 2)
    for _ in range(3):
        grown = flagged.copy()
        grown[1:] |= flagged[:-1] & edge[1:] & (np.diff(bins) <= 2)
        grown[:-1] |= flagged[1:] & edge[:-1] & (np.diff(bins) <= 2)
        flagged = grown
    return _spans(bins, flagged, observed, executions, expect, failing, active, "fleet", config)


def _rate_between(
    bins: np.ndarray, observed: np.ndarray, executions: np.ndarray, lo: int, hi: int
) -> np.ndarray:
    """Fleet failure rate over the bins from `lo` to `hi` bins away; 0 where there is too little data."""
    cum_o = np.concatenate([[0.0], np.cumsum(observed)])
    cum_n = np.concatenate([[0.0], np.cumsum(executions)])
    start = np.searchsorted(bins, bins + lo, side="left")
    stop = np.searchsorted(bins, bins + hi, side="right")
    o, n = cum_o[stop] - cum_o[start], cum_n[stop] - cum_n[start]
    return np.where(n >= 50, (o + 1) / (n + 2), 0.0)


def _spans(
    bins: np.ndarray,
    flagged: np.ndarray,
    observed: np.ndarray,
    executions: np.ndarray,
    expect: np.ndarray,
    failing: np.ndarray,
    active: np.ndarray,
    scope: str,
    config: AnalysisConfig,
) -> list[Outage]:
    width = config.outage_bin_s * 1000
    spans: list[Outage] = []
    start = None
    for i in range(bins.size + 1):
        ends = i == bins.size or not flagged[i] or (start is not None and bins[i] - bins[i - 1] > 3)
        if start is not None and ends:
            stop = i  # exclusive
            if (bins[stop - 1] - bins[start] + 1) * config.outage_bin_s <= config.outage_max_s:
                sl = slice(start, stop)
                spans.append(
                    Outage(
                        start_ms=int(bins[start]) * width,
                        end_ms=int(bins[stop - 1] + 1) * width,
                        scope=scope,
                        failures=int(observed[sl].sum()),
                        executions=int(executions[sl].sum()),
                        expected=float(expect[sl].sum()),
                        runners_failing=int(failing[sl].max()),
                        runners_active=int(active[sl].max()),
                    )
                )
            start = None
        if i < bins.size and flagged[i] and start is None:
            start = i
    return spans


def outage_mask(time_ms: np.ndarray, outages: list[Outage]) -> np.ndarray:
    mask = np.zeros(time_ms.size, bool)
    for outage in outages:
        mask |= (time_ms >= outage.start_ms) & (time_ms < outage.end_ms)
    return mask
