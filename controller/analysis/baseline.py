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


def unique_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (first, second) pairs of non-negative codes, sorted, as a 2 × k array, and each
    row's pair. One sort of an int64 key: `np.unique(..., axis=1)` sorts rows of a structured view and
    is many times slower on a million rows."""
    span = int(second.max()) + 1 if second.size else 1
    keys, inverse = np.unique(first.astype(np.int64) * span + second, return_inverse=True)
    return np.stack([keys // span, keys % span]), inverse.ravel()


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
        key = group.astype(np.int64) * span + (bins - lo_bin + radius)
        unique, self.inverse = np.unique(key, return_inverse=True)
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

    def _index(self, name: str, *codes: np.ndarray) -> WindowIndex:
        found = self._indexes.get(name)
        if found is None:
            found = self._indexes[name] = WindowIndex(combine(*codes), self.bins, self.radius)
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
        ones = reference.astype(float)
        f = self.fail * ones
        overall = (f.sum() + 1.0) / (ones.sum() + 2.0)

        # Each estimate leans on a broader one where it is thin: the entity's peers near in time,
        # then the whole fleet near in time, then the test at other times.
        by_test = self._index("test", self.test)
        near_f, near_n = by_test.near(f), by_test.near(ones)
        other_f = by_test.total(f) - near_f
        other_n = by_test.total(ones) - near_n
        history = (other_f + self.history_strength * overall) / (other_n + self.history_strength)

        # The entity itself is always left out: its own failures must not explain themselves.
        among_peers = self._index(f"peers:{peer_name}", peers, self.test)
        own = self._index(f"own:{peer_name}:{entity_name}", peers, entity, self.test)
        own_f, own_n = own.near(f), own.near(ones)
        fleet = (near_f - own_f + self.history_strength * history) / (near_n - own_n + self.history_strength)
        peer_f = among_peers.near(f) - own_f
        peer_n = among_peers.near(ones) - own_n
        probability = (peer_f + self.peer_strength * fleet) / (peer_n + self.peer_strength)
        clipped: np.ndarray = np.clip(probability, 1e-6, 1 - 1e-6)
        return clipped
