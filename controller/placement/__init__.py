"""Placements the controller can drain a sick machine through when its runners are pods; one module each.

A CI provider reruns jobs; a placement keeps them off a sick node (base.py). Only Kubernetes so far.
"""

from __future__ import annotations

from typing import Any

from controller.placement.base import Placement

PLACEMENTS = ("kubernetes",)


def build_placements(config: dict[str, dict[str, Any]]) -> dict[str, Placement]:
    """Placements by name from settings (`{"kubernetes": {"fleets": {...}}}`); unknown names are an error.

    Imported only when configured: lightkube is an optional extra (`runnerctl[kubernetes]`)."""
    unknown = sorted(set(config) - set(PLACEMENTS))
    if unknown:
        raise ValueError(f"unknown placement(s) {unknown}; known: {', '.join(PLACEMENTS)}")
    built: dict[str, Placement] = {}
    if "kubernetes" in config:
        from controller.placement.kubernetes import KubernetesPlacement

        try:
            built["kubernetes"] = KubernetesPlacement(**config["kubernetes"])
        except TypeError as error:
            raise ValueError(f"placement kubernetes: {error}") from None
    return built
