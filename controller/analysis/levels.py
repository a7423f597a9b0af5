"""The entities judged at each level, coarsest first: pool → image → machine → runner.

An entity only stands as its own level where it means something: a machine that hosts one
persistent runner *is* that runner; an image on one host is that host, and the only image of its pool
is that pool; a lone pool has no peers, and a pool is not judged on its platform's tests (tests it
fails from their first runs in the window on, while the other pools pass them).
Ephemeral runners are never judged by their single-use id, only by machine, image and pool.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.analysis.baseline import grouped, unique_pairs
from controller.analysis.config import AnalysisConfig
from controller.analysis.frame import NONE, Frame

LEVELS = ("pool", "image", "machine", "runner")
CHILD = {"pool": "machine", "image": "machine", "machine": "runner", "runner": ""}


@dataclass(frozen=True)
class Level:
    name: str
    entity: np.ndarray  # code per row, NONE where the row is not judged at this level
    peers: np.ndarray  # comparison group per row
    child: np.ndarray | None  # finer entity per row, for the leave-one-child-out check


def build_levels(frame: Frame, rows: np.ndarray, config: AnalysisConfig) -> dict[str, Level]:
    """Entity codes for the rows selected by the boolean mask `rows`."""
    c = frame.cols
    runner = np.where(frame.ephemeral, NONE, c["runner"])
    pool, machine, image = c["pool"], c["machine"], c["image"]

    hosts = _distinct_per(machine[rows], c["runner"][rows])
    has_ephemeral = set(np.unique(machine[rows & frame.ephemeral]).tolist())
    shared_machines = {m for m, count in hosts.items() if count >= 2} | has_ephemeral
    machine_entity = np.where(np.isin(machine, list(shared_machines)), machine, NONE)

    image_hosts = _distinct_per(image[rows & (image >= 0)], machine[rows & (image >= 0)])
    # An image is judged on its own only beside other images in its pool: the only image a pool ever
    # ran *is* the pool, judged against the fleet at the pool level, and comparing it with its own
    # past would blame it for anything that starts on several of its hosts (a test that broke).
    imaged = rows & (image >= 0)
    span = int(image.max()) + 2 if image.size else 1
    pairs = np.unique(pool[imaged].astype(np.int64) * span + image[imaged])
    pair_pool, pair_image = pairs // span, pairs % span
    pool_codes, images_per_pool = np.unique(pair_pool, return_counts=True)
    pools_with_several = pool_codes[images_per_pool >= 2]
    beside_others = set(pair_image[np.isin(pair_pool, pools_with_several)].tolist())
    shared_images = [i for i, count in image_hosts.items() if count >= 2 and i in beside_others]
    image_entity = np.where(np.isin(image, shared_images), image, NONE)

    pools = np.unique(pool[rows])
    if pools.size >= 2:
        pool_entity = np.where(_platforms_tests(frame, rows, config), NONE, pool)
    else:
        pool_entity = np.full_like(pool, NONE)
    whole_fleet = np.zeros_like(pool)

    machine_child = np.where(frame.ephemeral, NONE, c["runner"])
    return {
        "pool": Level("pool", pool_entity, whole_fleet, machine),
        "image": Level("image", image_entity, pool, machine),
        "machine": Level("machine", machine_entity, pool, machine_child),
        "runner": Level("runner", runner, pool, None),
    }


def _distinct_per(group: np.ndarray, member: np.ndarray) -> dict[int, int]:
    if group.size == 0:
        return {}
    span = int(member.max()) + 2
    pairs = np.unique(group.astype(np.int64) * span + (member.astype(np.int64) + 1))
    owners, counts = np.unique(pairs // span, return_counts=True)
    return dict(zip(owners.tolist(), counts.tolist(), strict=True))


def _platforms_tests(frame: Frame, rows: np.ndarray, config: AnalysisConfig) -> np.ndarray:
    """Per row: whether it is a run of a test its pool fails from its first runs in the window on
    (most of its first `broken_min_runs` there, and most of them all) while the other pools pass it
    (at most `platform_max_elsewhere`, over twice `broken_min_runs` runs or more).

    Such a test is the platform's (it fails only on arm), not a sign of the pool's health: three of them
    on one pool would otherwise make that pool a sick one. A pool falling sick in the window fails its
    tests from its onset on, not from their first runs; one sick since before the window started cannot
    be told from its platform, and its tests get the platform verdict instead."""
    idx = np.flatnonzero(rows & (frame.cols["pool"] >= 0))
    found = np.zeros(rows.size, bool)
    if idx.size == 0:
        return found
    pool, test, fail = frame.cols["pool"][idx], frame.cols["test"][idx], frame.fail[idx]
    pairs, pair_of = unique_pairs(pool, test)
    runs = np.bincount(pair_of, minlength=pairs.shape[1])
    failures = np.bincount(pair_of, weights=fail.astype(float), minlength=pairs.shape[1])
    tests, test_of_pair = np.unique(pairs[1], return_inverse=True)
    elsewhere_runs = np.bincount(test_of_pair, weights=runs, minlength=tests.size)[test_of_pair] - runs
    elsewhere_fail = (
        np.bincount(test_of_pair, weights=failures, minlength=tests.size)[test_of_pair] - failures
    )
    candidate = (
        (runs >= config.broken_min_runs)
        & (failures >= config.platform_min_rate * runs)
        & (elsewhere_runs >= 2 * config.broken_min_runs)
        & (elsewhere_fail <= config.platform_max_elsewhere * np.maximum(elsewhere_runs, 1))
    )
    if not candidate.any():
        return found
    # Each pair's runs in time order; the first few of each pair are its opening.
    order = grouped(pair_of, frame.time_ms[idx])
    starts = np.concatenate([[0], np.cumsum(runs)[:-1]])
    position = np.empty(idx.size, np.int64)
    position[order] = np.arange(idx.size) - np.repeat(starts, runs)
    opening = position < config.broken_min_runs
    opening_fail = np.bincount(
        pair_of[opening], weights=fail[opening].astype(float), minlength=pairs.shape[1]
    )
    platform = candidate & (opening_fail >= config.platform_min_rate * config.broken_min_runs)
    found[idx] = platform[pair_of]
    return found
