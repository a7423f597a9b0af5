"""Benjamini–Hochberg's bar, which runners judged again after a coarser verdict are held to."""

from __future__ import annotations

from controller.analysis.clusters import bh_cutoff


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
