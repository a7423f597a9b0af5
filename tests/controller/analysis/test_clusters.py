"""Benjamini–Hochberg's bar, which runners judged again after a coarser verdict are held to, and the
conditional test of a stretch against its tests' runs elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from controller.analysis.clusters import against_reference_p, bh_cutoff


def test_the_bar_is_the_critical_value_at_the_last_accepted_rank_not_the_largest_accepted_p() -> None:
    # Two overwhelming verdicts among ten hypotheses and noise: BH accepts two, so any p at or below
    # q·2/10 would be accepted in place of either. A runner judged again once a pool's verdict
    # explains part of its stretch (p = 1e-120) must not be held to the largest accepted p (1e-190).
    p_values = [1e-200, 1e-190, 0.4, 0.7]
    bar = bh_cutoff(p_values, 10, 0.01)
    assert bar == 0.01 * 2 / 10
    assert bar >= 1e-120


def test_nothing_accepted_is_a_bar_of_zero_and_every_accepted_p_is_under_the_bar() -> None:
    assert bh_cutoff([0.2, 0.5], 4, 0.01) == 0.0
    assert bh_cutoff([], 4, 0.01) == 0.0
    p_values = [1e-6, 2e-4, 2.6e-3, 0.03, 0.5]
    bar = bh_cutoff(p_values, 10, 0.05)
    # Ranks 1..3 pass (1e-6 <= .005, 2e-4 <= .01, 2.6e-3 <= .015); 0.03 > .02.
    assert bar == 0.05 * 3 / 10
    assert sorted(p for p in p_values if p <= bar) == [1e-6, 2e-4, 2.6e-3]


def test_a_stretch_is_judged_by_its_tests_runs_elsewhere_counted_as_they_ran() -> None:
    # One test: ten runs in the stretch, three failed; ten clean runs elsewhere. If both failed at one
    # rate, each of the three failures fell in the stretch with probability 1/2: (1/2)^3. Ten clean
    # runs more for the prior make it 1/3 each.
    test = np.zeros(20, np.int32)
    fail = np.zeros(20, bool)
    fail[:3] = True
    rows = np.arange(10)
    reference = np.ones(20, bool)
    assert against_reference_p(rows, reference, test, fail, 0) == pytest.approx(1 / 8)
    assert against_reference_p(rows, reference, test, fail, 10) == pytest.approx(1 / 27)
    # No more failures than the reference's share gives: nothing to tell.
    fail[10:14] = True
    assert against_reference_p(rows, reference, test, fail, 0) == 1.0


def test_many_tests_failing_where_they_pass_elsewhere_are_far_beyond_chance() -> None:
    # Twelve tests, each failing four of its ten runs in the stretch and none of its hundred elsewhere.
    test = np.repeat(np.arange(12), 110)
    fail = np.tile(np.r_[np.ones(4, bool), np.zeros(106, bool)], 12)
    rows = np.flatnonzero(np.tile(np.r_[np.ones(10, bool), np.zeros(100, bool)], 12))
    assert against_reference_p(rows, np.ones(test.size, bool), test, fail, 4) < 1e-30
