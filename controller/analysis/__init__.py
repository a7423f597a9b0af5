"""Analysis: pure functions of stored data and an `as_of` event time.

frame → outages → baseline → clusters → attribution → evidence → verdicts → flake. `engine.py` runs
the steps in that order; each module owns one step.
"""
