"""What a test's failure rate *should* be for each execution, judged from everything but the entity
under test.

Tests are not placed at random (static sharding, label routing), so an entity is compared with what
the very tests it ran did elsewhere: the same test in the same pool, within ± a few bins, on other
entities. Where a test has no peers (it only ever runs there), its own rate at other times stands in.
"""

from __future__ import annotations

import numpy as np


def combine(*codes: np.ndarray) -> np.ndarray:
    """One int64 key per row from several small non-negative integer codes."""
    key = np.zeros(codes[0].shape, np.int64)
    for code in codes:
        span = int(code.max()) + 2 if code.size else 1
        key = key * span + (code.astype(np.int64) + 1)
    return key


def window_sums(group: np.ndarray, bins: np.ndarray, values: np.ndarray, radius: int) -> np.ndarray:
    """For each row, the sum of `values` over rows of the same group whose bin is within ± radius."""
    if group.size == 0:
        return np.zeros(0)
    lo_bin = int(bins.min())
    span = int(bins.max()) - lo_bin + 2 * radius + 2
    key = group.astype(np.int64) * span + (bins - lo_bin + radius)
    unique, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=unique.size)
    cumulative = np.concatenate([[0.0], np.cumsum(sums)])
    lo = np.searchsorted(unique, unique - radius, side="left")
    hi = np.searchsorted(unique, unique + radius, side="right")
    sums_near: np.ndarray = (cumulative[hi] - cumulative[lo])[inverse]
    return sums_near


def group_totals(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    unique, inverse = np.unique(group, return_inverse=True)
    return np.bincount(inverse, weights=values, minlength=unique.size)[inverse]


def expected_failure(
    *,
    test: np.ndarray,
    entity: np.ndarray,
    peers: np.ndarray,
    bins: np.ndarray,
    fail: np.ndarray,
    radius: int,
    peer_strength: float,
    history_strength: float,
    reference: np.ndarray | None = None,
    shared: dict[str, np.ndarray] | None = None,
    peer_name: str = "",
) -> np.ndarray:
    """Probability each execution fails if its entity is as healthy as its peers.

    `entity` and `peers` are codes per row: peers are the rows' comparison group (the pool for a
    runner, machine or image; the whole fleet for a pool). Only `reference` rows (default: all) feed
    the rates, so executions already known to be inside a cluster do not inflate their peers'
    expectations. `shared` caches what does not depend on the entity (the test's history, the peer
    group's sums) between levels of one pass; `peer_name` names the peer grouping. Returns a
    probability per row.
    """
    cache = {} if shared is None else shared
    ones = np.ones(fail.size) if reference is None else reference.astype(float)
    f = fail.astype(float) * ones
    overall = (f.sum() + 1.0) / (ones.sum() + 2.0)

    # The test's own rate at other times, over the whole fleet: the prior where peers are thin.
    if "history" not in cache:
        test_key = test.astype(np.int64)
        near_f = window_sums(test_key, bins, f, radius)
        near_n = window_sums(test_key, bins, ones, radius)
        other_f = group_totals(test_key, f) - near_f
        other_n = group_totals(test_key, ones) - near_n
        cache["history"] = (other_f + history_strength * overall) / (other_n + history_strength)
    history = cache["history"]

    # The same test among the entity's peers, near in time, with the entity itself left out.
    if f"peer_f:{peer_name}" not in cache or not peer_name:
        peer_key = combine(peers, test)
        cache[f"peer_f:{peer_name}"] = window_sums(peer_key, bins, f, radius)
        cache[f"peer_n:{peer_name}"] = window_sums(peer_key, bins, ones, radius)
    own_key = combine(peers, entity, test)
    peer_f = cache[f"peer_f:{peer_name}"] - window_sums(own_key, bins, f, radius)
    peer_n = cache[f"peer_n:{peer_name}"] - window_sums(own_key, bins, ones, radius)
    probability = (peer_f + peer_strength * history) / (peer_n + peer_strength)
    clipped: np.ndarray = np.clip(probability, 1e-6, 1 - 1e-6)
    return clipped
