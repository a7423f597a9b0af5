"""Outages: a failure spike across most of the fleet at once (network, an external service).

Found first and taken out of every per-entity comparison and every flake score: when the whole
fleet fails together, no runner is sick for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from controller.analysis.baseline import WindowIndex, combine
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

    A bin is an outage when the fleet fails far beyond its tests' usual rates and most active hosts
    burst at once. Hosts, not runner ids: a sick host with fifty ephemeral runners is one host.
    """
    idx = np.flatnonzero(rows)
    if idx.size == 0:
        return []
    t, f = time_ms[idx], fail[idx].astype(float)
    tst, host = frame_cols["test"][idx], frame_cols["machine"][idx]
    fine = t // (config.outage_bin_s * 1000)
    radius = max(1, 3600 // config.outage_bin_s)
    by_test = WindowIndex(tst, fine, radius)
    ones = np.ones_like(f)
    near_f, near_n = by_test.near(f), by_test.near(ones)
    overall = (f.sum() + 1) / (f.size + 2)
    strength = config.history_prior_strength
    expected = (by_test.total(f) - near_f + strength * overall) / (by_test.total(ones) - near_n + strength)

    bins, inverse = np.unique(fine, return_inverse=True)
    observed = np.bincount(inverse, weights=f)
    executions = np.bincount(inverse).astype(float)
    expect = np.bincount(inverse, weights=expected)

    # Per host within each bin: is it failing well beyond its tests' usual rates *and* beyond its own
    # rate just before and after (15 min to 2 h away)? An outage is a burst on most hosts at once; the
    # onset of a sustained sickness has no "normal after", and a host already sick bursts only if it
    # gets worse still.
    key = combine(inverse.astype(np.int64), host)
    unique_hosts, hinv = np.unique(key, return_inverse=True)
    h_obs = np.bincount(hinv, weights=f)
    h_exp = np.bincount(hinv, weights=expected)
    h_n = np.bincount(hinv).astype(float)
    h_bin = np.zeros(unique_hosts.size, np.int64)
    h_bin[hinv] = inverse
    h_host = np.zeros(unique_hosts.size, np.int64)
    h_host[hinv] = host
    # Jobs report when they end, so one 5-minute bin sees only the hosts that happened to finish a job
    # in it: judge each host over the bin and its neighbours (± 1 bin) instead.
    active, failing = _hosts_bursting(bins, h_bin, h_host, h_obs, h_exp, h_n, radius, config)
    # The fleet's own rate before and after (15 min to 2 h away): a burst stands out from both.
    fleet_around = np.maximum(
        _rate_between(bins, observed, executions, -2 * radius, -3),
        _rate_between(bins, observed, executions, 3, 2 * radius),
    )

    failed_pairs = np.unique(np.stack([inverse[f > 0], tst[f > 0]]), axis=1)
    distinct = np.bincount(failed_pairs[0], minlength=bins.size)

    p = stats.binom.sf(observed - 1, executions, np.clip(expect / np.maximum(executions, 1), 1e-9, 1))
    p_own = np.minimum(p, stats.binom.sf(observed - 1, executions, np.clip(fleet_around, 1e-9, 1)))
    # Beyond the tests' usual rates, or (where hosts already fail a lot) beyond the fleet's own rate.
    beyond = (observed >= config.outage_min_ratio * expect) | _beyond_own_rate(
        observed, executions, fleet_around, config, config.outage_p
    )
    flagged = (
        beyond
        & (p_own < config.outage_p)
        & (
            (
                (failing >= config.outage_min_runners)
                & (failing >= config.outage_min_share * np.maximum(active, 1))
            )
            # Or the whole fleet bursts above its own rate on either side, on more than one host:
            # on as many as above where that many are active, on most of them in a smaller fleet.
            | (
                (observed >= config.outage_min_ratio * fleet_around * executions)
                & (
                    failing
                    >= np.maximum(2, np.minimum(config.outage_min_runners, config.outage_min_share * active))
                )
            )
        )
        & (distinct >= 3)
    )
    # An outage's edges are weaker than its core: grow each core over neighbouring bins that are
    # still clearly elevated on more than one host.
    edge = (observed >= 1.5 * expect) & (p < 0.05) & (failing >= 1)
    for _ in range(4):
        grown = flagged.copy()
        grown[1:] |= flagged[:-1] & edge[1:] & (np.diff(bins) <= 2)
        grown[:-1] |= flagged[1:] & edge[:-1] & (np.diff(bins) <= 2)
        flagged = grown
    # A lull of one bin inside a burst is still the burst.
    holes = ~flagged[1:-1] & flagged[:-2] & flagged[2:] & (bins[2:] - bins[:-2] <= 3)
    flagged[1:-1] |= holes
    return _spans(bins, flagged, observed, executions, expect, failing, active, "fleet", config)


def _beyond_own_rate(
    observed: np.ndarray,
    executions: np.ndarray,
    rate: np.ndarray,
    config: AnalysisConfig,
    p_max: float = 1e-3,
) -> np.ndarray:
    """Failing far beyond its own rate on either side, measured among the executions that would have
    passed: a host already failing a quarter of its tests that fails half of them in an outage lost a
    third of its passes. A ratio of failures cannot show that (it is capped by 1/rate); the share
    of lost passes can, and it is what an outage takes from every host alike."""
    n = np.maximum(executions, 1)
    lost = (observed / n - rate) / np.maximum(1 - rate, 1e-9)
    p = stats.binom.sf(observed - 1, executions, np.clip(rate, 1e-9, 1 - 1e-9))
    beyond: np.ndarray = (observed >= 2) & (rate < 1) & (lost >= config.outage_min_lost_passes) & (p < p_max)
    return beyond


def _rate_between(
    bins: np.ndarray, observed: np.ndarray, executions: np.ndarray, lo: int, hi: int
) -> np.ndarray:
    """The fleet's failure rate over the bins from `lo` to `hi` bins away (1 where there is too little
    data to say, so that no burst is seen against nothing)."""
    cum_o = np.concatenate([[0.0], np.cumsum(observed)])
    cum_n = np.concatenate([[0.0], np.cumsum(executions)])
    start = np.searchsorted(bins, bins + lo, side="left")
    stop = np.searchsorted(bins, bins + hi, side="right")
    o, n = cum_o[stop] - cum_o[start], cum_n[stop] - cum_n[start]
    return np.where(n >= 50, (o + 1) / (n + 2), 1.0)


def _hosts_bursting(
    bins: np.ndarray,
    h_bin: np.ndarray,
    h_host: np.ndarray,
    h_obs: np.ndarray,
    h_exp: np.ndarray,
    h_n: np.ndarray,
    radius: int,
    config: AnalysisConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """Per bin: how many hosts were active in it or next to it, and how many of those burst."""
    absolute = bins[h_bin].astype(np.int64)
    order = np.lexsort((absolute, h_host))
    host_sorted, bin_sorted = h_host[order].astype(np.int64), absolute[order]
    span = int(bins.max()) + 4 * radius + 10
    key = host_sorted * span + bin_sorted
    cum = {
        name: np.concatenate([[0.0], np.cumsum(values[order])])
        for name, values in (("o", h_obs), ("e", h_exp), ("n", h_n))
    }
    around = _host_rate_around(absolute, h_host, h_obs, h_n, radius)[order]
    # Every (host, bin) pair with data speaks for the bins next to it too.
    centers = np.unique(np.concatenate([key + d for d in (-1, 0, 1)]))
    start = np.searchsorted(key, centers - 1, side="left")
    stop = np.searchsorted(key, centers + 1, side="right")
    w = {name: c[stop] - c[start] for name, c in cum.items()}
    nearest = np.clip(np.searchsorted(key, centers), 0, key.size - 1)
    rate_around = around[nearest]
    active_hosts = w["n"] >= 3
    beyond_tests = (w["o"] >= np.maximum(2, config.outage_min_ratio * w["e"])) & (
        w["o"] >= 2 * rate_around * w["n"]
    )
    bursting = active_hosts & (beyond_tests | _beyond_own_rate(w["o"], w["n"], rate_around, config))
    # A host already failing a good share of its tests (a sick one) can hardly show a burst with a
    # job or two: it counts among the active only when it does, so an outage over a fleet with
    # several sick hosts still needs most of the others, not most of all.
    active_hosts &= (rate_around < config.outage_saturated_rate) | bursting
    center_bin = centers % span
    position = np.searchsorted(bins, center_bin)
    known = (position < bins.size) & (bins[np.clip(position, 0, bins.size - 1)] == center_bin)
    active = np.bincount(position[known], weights=active_hosts[known].astype(float), minlength=bins.size)
    failing = np.bincount(position[known], weights=bursting[known].astype(float), minlength=bins.size)
    return active[: bins.size], failing[: bins.size]


def _host_rate_around(
    bin_of: np.ndarray, host: np.ndarray, observed: np.ndarray, executions: np.ndarray, radius: int
) -> np.ndarray:
    """Each (host, bin)'s own failure rate before and after it (3 to 2·radius bins away), the larger of
    the two; 0 where the host has too little data there."""
    order = np.lexsort((bin_of, host))
    h, b = host[order].astype(np.int64), bin_of[order].astype(np.int64)
    key = h * (int(b.max()) + 4 * radius + 10) + b
    cum_o = np.concatenate([[0.0], np.cumsum(observed[order])])
    cum_n = np.concatenate([[0.0], np.cumsum(executions[order])])
    rates = []
    for lo, hi in ((-2 * radius, -3), (3, 2 * radius)):
        start = np.searchsorted(key, key + lo, side="left")
        stop = np.searchsorted(key, key + hi, side="right")
        o, n = cum_o[stop] - cum_o[start], cum_n[stop] - cum_n[start]
        rates.append(np.where(n >= 10, (o + 1) / (n + 2), 0.0))
    around = np.empty(order.size)
    around[order] = np.maximum(rates[0], rates[1])
    return around


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
                # Results carry their own times, not the moment the outage hit them: pad the edges.
                pad = config.outage_pad_bins * width
                spans.append(
                    Outage(
                        start_ms=int(bins[start]) * width - pad,
                        end_ms=int(bins[stop - 1] + 1) * width + pad,
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
    return _merged(spans)


def _merged(spans: list[Outage]) -> list[Outage]:
    """One outage, not two, when a quiet gap (no job finished) splits it but the padded edges meet."""
    merged: list[Outage] = []
    for span in spans:
        last = merged[-1] if merged else None
        if last is None or span.start_ms > last.end_ms:
            merged.append(span)
            continue
        merged[-1] = Outage(
            start_ms=last.start_ms,
            end_ms=max(last.end_ms, span.end_ms),
            scope=last.scope,
            failures=last.failures + span.failures,
            executions=last.executions + span.executions,
            expected=last.expected + span.expected,
            runners_failing=max(last.runners_failing, span.runners_failing),
            runners_active=max(last.runners_active, span.runners_active),
        )
    return merged


def outage_mask(time_ms: np.ndarray, outages: list[Outage]) -> np.ndarray:
    mask = np.zeros(time_ms.size, bool)
    for outage in outages:
        mask |= (time_ms >= outage.start_ms) & (time_ms < outage.end_ms)
    return mask
