"""What a test's failure rate *should* be for each execution, judged from everything but the entity
under test.

Tests are not placed at random (static sharding, label routing), so an entity is compared with what
the very tests it ran did elsewhere: the same test in the same pool, within ± a few bins, on other
entities. Where a test has no peers (it only ever runs there), its own rate at other times stands in.
"""

from __future__ import annotations

import hashlib

import numpy as np


def combine(*codes: np.ndarray) -> np.ndarray:
    """One int64 key per row from several small non-negative integer codes."""
    key = np.zeros(codes[0].shape, np.int64)
    for code in codes:
        span = int(code.max()) + 2 if code.size else 1
        key = key * span + (code.astype(np.int64) + 1)
    return key


def sorted_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What `np.unique(key, return_inverse=True)` gives for non-negative keys, without its sort where
    the keys span little more than their count: a presence table read in order gives each key's rank."""
    if key.size == 0:
        return key, np.zeros(0, np.int64)
    span = int(key.max()) + 1
    if span > 4 * key.size + 1024:
        unique, inverse = np.unique(key, return_inverse=True)
        return unique, inverse.ravel()
    present = np.zeros(span, bool)
    present[key] = True
    rank = np.cumsum(present, dtype=np.int32)
    rank -= 1
    return np.flatnonzero(present).astype(key.dtype), rank[key].astype(np.int64)


def grouped(codes: np.ndarray, within: np.ndarray) -> np.ndarray:
    """The order of `np.lexsort((within, codes))`: rows grouped by code, by `within` inside a group.
    Rows already in `within` order (the analysis keeps results in time order) only need a stable
    sort by code, which numpy does by radix for 16-bit codes, several times faster than lexsort."""
    in_order = within.size < 2 or bool((within[1:] >= within[:-1]).all())
    if not in_order or codes.size == 0:
        return np.lexsort((within, codes))
    small = int(codes.min()) >= -32768 and int(codes.max()) <= 32767
    order: np.ndarray = np.argsort(codes.astype(np.int16) if small else codes, kind="stable")
    return order


def unique_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (first, second) pairs of non-negative codes, sorted, as a 2 × k array, and each
    row's pair. One sort of an int64 key: `np.unique(..., axis=1)` sorts rows of a structured view and
    is many times slower on a million rows."""
    span = int(second.max()) + 1 if second.size else 1
    keys, inverse = sorted_codes(first.astype(np.int64) * span + second)
    return np.stack([keys // span, keys % span]), inverse


class WindowIndex:
    """For each row, where the rows of its group within ± radius bins lie.

    Built with one sort; afterwards a windowed or whole-group sum of any per-row weights costs a
    bincount and a cumulative sum. An analysis pass sums the same groupings many times over (failures
    and executions, first with every row as reference, then with clusters left out), so the sort is
    what must not repeat.
    """

    def __init__(self, group: np.ndarray, bins: np.ndarray, radius: int) -> None:
        self.size = int(group.size)
        if group.size == 0:
            self.inverse = np.zeros(0, np.int64)
            self.cells = 0
            return
        lo_bin = int(bins.min())
        span = int(bins.max()) - lo_bin + 2 * radius + 2
        _groups, group_rank = sorted_codes(group.astype(np.int64))
        key = group_rank * span + (bins - lo_bin + radius)
        unique, self.inverse = sorted_codes(key)
        self.cells = int(unique.size)
        self.lo = np.searchsorted(unique, unique - radius, side="left")
        self.hi = np.searchsorted(unique, unique + radius, side="right")
        # Cells are sorted by group first: a group's cells are one contiguous run.
        _groups, self.cell_group = np.unique(unique // span, return_inverse=True)

    def near(self, values: np.ndarray) -> np.ndarray:
        """Per row: the sum of `values` over rows of its group whose bin is within ± radius."""
        if self.size == 0:
            return np.zeros(0)
        sums = np.bincount(self.inverse, weights=values, minlength=self.cells)
        cumulative = np.concatenate([[0.0], np.cumsum(sums)])
        near: np.ndarray = (cumulative[self.hi] - cumulative[self.lo])[self.inverse]
        return near

    def total(self, values: np.ndarray) -> np.ndarray:
        """Per row: the sum of `values` over every row of its group."""
        if self.size == 0:
            return np.zeros(0)
        sums = np.bincount(self.inverse, weights=values, minlength=self.cells)
        totals = np.bincount(self.cell_group, weights=sums)
        total: np.ndarray = totals[self.cell_group][self.inverse]
        return total


def rate_elsewhere(
    index: WindowIndex, failed: np.ndarray, ran: np.ndarray, strength: float, *, own_prior: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: its group's failures and executions within ± radius bins, and the group's failure
    rate at other times, leaning (by `strength` executions' worth) where the group ran little then
    on the rate over every row — or, with `own_prior` and where it ran fewer than `strength` times
    then, on the group's own rate over all its rows, near ones too: a test that only ever ran in
    these hours tells nothing of what is usual for it. (Not where it ran a day's worth at other
    times: a static shard's runner sick for its last day has its own healthy days as reference.)"""
    overall = (failed.sum() + 1.0) / (ran.sum() + 2.0)
    near_f, near_n = index.near(failed), index.near(ran)
    total_f, total_n = index.total(failed), index.total(ran)
    prior = overall
    if own_prior:
        own = (total_f + strength * overall) / (total_n + strength)
        prior = np.where(total_n - near_n < strength, own, overall)
    rate = (total_f - near_f + strength * prior) / (total_n - near_n + strength)
    return near_f, near_n, rate


class Baseline:
    """Expected failure probabilities over one fixed set of rows, for any entity level and reference.

    `test`, `bins` and `fail` are per row of that set. Each grouping (the test; the test among a peer
    group; the test on one entity) is indexed once and reused by every call.
    """

    def __init__(
        self,
        test: np.ndarray,
        bins: np.ndarray,
        fail: np.ndarray,
        *,
        radius: int,
        peer_strength: float,
        history_strength: float,
    ) -> None:
        self.test, self.bins, self.fail = test, bins, fail.astype(float)
        self.radius = radius
        self.peer_strength, self.history_strength = peer_strength, history_strength
        self._indexes: dict[str, WindowIndex] = {}
        self._memo_key: bytes = b""
        self._memo: dict[str, tuple[np.ndarray, ...]] = {}

    def _index(self, name: str, *codes: np.ndarray) -> WindowIndex:
        found = self._indexes.get(name)
        if found is None:
            found = self._indexes[name] = WindowIndex(combine(*codes), self.bins, self.radius)
        return found

    def _reference_sums(
        self, peer_name: str, peers: np.ndarray, reference: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """The sums every level shares for one reference: the test near in time fleet-wide, at other
        times, and among the peers. Kept for the last reference asked, since one round judges every
        level against the same reference."""
        digest = hashlib.blake2b(np.packbits(reference).tobytes(), digest_size=16).digest()
        if self._memo_key != digest:
            self._memo_key, self._memo = digest, {}
        found = self._memo.get(peer_name)
        if found is not None:
            return found
        ones = reference.astype(float)
        f = self.fail * ones
        # Each estimate leans on a broader one where it is thin: the entity's peers near in time,
        # then the whole fleet near in time, then the test at other times.
        near_f, near_n, history = rate_elsewhere(
            self._index("test", self.test), f, ones, self.history_strength, own_prior=True
        )
        among_peers = self._index(f"peers:{peer_name}", peers, self.test)
        found = (near_f, near_n, history, among_peers.near(f), among_peers.near(ones))
        self._memo[peer_name] = found
        return found

    def expected(
        self,
        *,
        entity_name: str,
        entity: np.ndarray,
        peer_name: str,
        peers: np.ndarray,
        reference: np.ndarray,
    ) -> np.ndarray:
        """Probability each row fails if its entity is as healthy as its peers.

        `entity` and `peers` are codes per row: peers are the rows' comparison group (the pool for a
        runner, machine or image; the whole fleet for a pool). Only `reference` rows feed the rates,
        so executions already known to be inside a cluster do not inflate their peers' expectations.
        """
        near_f, near_n, history, peer_f, peer_n = self._reference_sums(peer_name, peers, reference)
        # The entity itself is always left out: its own failures must not explain themselves.
        ones = reference.astype(float)
        f = self.fail * ones
        own = self._index(f"own:{peer_name}:{entity_name}", peers, entity, self.test)
        own_f, own_n = own.near(f), own.near(ones)
        fleet = (near_f - own_f + self.history_strength * history) / (near_n - own_n + self.history_strength)
        probability = (peer_f - own_f + self.peer_strength * fleet) / (peer_n - own_n + self.peer_strength)
        clipped: np.ndarray = np.clip(probability, 1e-6, 1 - 1e-6)
        return clipped
