"""The test catalogue: ids, suites, kinds, typical durations and each pool's shards.

It depends on the scenario and `catalog_seed` only, never on the simulation seed, so events can name tests
and the same test ids mean the same tests under every seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tests.sim.events import Dimension, TestRef
from tests.sim.scenario import Scenario

CATEGORIES = ("plain", "io", "build", "network", "time", "memory")
PLAIN, IO, BUILD, NETWORK, TIME, MEMORY = range(len(CATEGORIES))

# What a resource failure breaks: a full disk breaks what writes, a skewed clock what checks validity.
DIMENSION_CATEGORIES: dict[Dimension, tuple[int, ...]] = {
    "disk": (IO, BUILD),
    "memory": (MEMORY, BUILD),
    "clock": (TIME, NETWORK),
    "cache": (BUILD,),
    "unknown": (),
}

_DEFAULT_MIX = (0.35, 0.18, 0.12, 0.12, 0.13, 0.10)
_SUITE_MIX = {
    "unit": (0.6, 0.1, 0.0, 0.0, 0.2, 0.1),
    "api": (0.4, 0.1, 0.0, 0.3, 0.2, 0.0),
    "storage": (0.2, 0.6, 0.1, 0.0, 0.0, 0.1),
    "build": (0.2, 0.2, 0.6, 0.0, 0.0, 0.0),
    "net": (0.2, 0.0, 0.0, 0.6, 0.2, 0.0),
    "ui": (0.6, 0.1, 0.0, 0.0, 0.1, 0.2),
}
_MODULES = {
    PLAIN: ("models", "utils", "views", "forms", "serializers", "parser", "config", "cli", "render", "math"),
    IO: ("fs", "blob_io", "archive", "upload", "tmpdir", "export", "logs", "sqlite_store", "snapshot"),
    BUILD: ("build", "wheel", "compile", "deps", "bundle", "codegen", "toolchain", "link"),
    NETWORK: ("http_client", "grpc", "dns", "download", "webhooks", "proxy", "registry", "s3"),
    TIME: ("tokens", "scheduler", "expiry", "tls", "cron", "rate_limit", "session", "retry_backoff"),
    MEMORY: ("large_sort", "image_resize", "parser_big", "dataframe", "cache_lru", "compress"),
}
_VERBS = (
    "reads",
    "writes",
    "handles",
    "rejects",
    "returns",
    "parses",
    "creates",
    "updates",
    "retries",
    "expires",
    "streams",
    "merges",
    "renders",
    "validates",
    "resolves",
    "loads",
    "rotates",
)
_NOUNS = (
    "empty_input",
    "large_file",
    "unicode",
    "timeout",
    "missing_key",
    "defaults",
    "nested",
    "batch",
    "headers",
    "redirect",
    "symlink",
    "permissions",
    "partial",
    "config",
    "token",
    "snapshot",
    "utf8_path",
    "zero_length",
    "many_workers",
    "cancel",
)
_DURATION_MEDIAN = {PLAIN: 0.08, IO: 0.8, BUILD: 6.0, NETWORK: 1.2, TIME: 0.4, MEMORY: 3.0}


@dataclass
class Catalog:
    ids: list[str]
    suite: np.ndarray  # int index into Scenario.suites
    category: np.ndarray  # int index into CATEGORIES
    duration_median: np.ndarray  # seconds
    shards: dict[str, list[np.ndarray]]  # pool -> shard k -> test indices, in run order
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {t: i for i, t in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def index(self, ref: TestRef) -> int:
        if isinstance(ref, int):
            if not 0 <= ref < len(self.ids):
                raise ValueError(f"test index {ref} out of range 0..{len(self.ids) - 1}")
            return ref
        try:
            return self._index[ref]
        except KeyError:
            raise ValueError(f"unknown test {ref!r}: use an id from build_catalog(scenario).ids") from None

    def shard_tests(self, pool: str, shard: int) -> list[str]:
        return [self.ids[i] for i in self.shards[pool][shard]]

    def of_category(self, name: str) -> list[str]:
        code = CATEGORIES.index(name)
        return [t for t, c in zip(self.ids, self.category.tolist(), strict=True) if c == code]

    def pool_tests(self, pool: str) -> np.ndarray:
        return np.sort(np.concatenate(self.shards[pool]))


def build_catalog(scenario: Scenario) -> Catalog:
    rng = np.random.default_rng([scenario.catalog_seed, 7_919])
    n, suites = scenario.n_tests, scenario.suites
    if n < 1 or not suites:
        raise ValueError("a scenario needs at least one test and one suite")
    suite_of = np.sort(rng.integers(0, len(suites), size=n))
    suite_of[: len(suites)] = np.arange(min(len(suites), n))  # every suite has a test
    suite_of = np.sort(suite_of)
    ids: list[str] = []
    category = np.empty(n, dtype=np.int64)
    used_modules: set[str] = set()
    i = 0
    while i < n:
        s = int(suite_of[i])
        mix = np.asarray(_SUITE_MIX.get(suites[s], _DEFAULT_MIX))
        cat = int(rng.choice(len(CATEGORIES), p=mix / mix.sum()))
        base = str(rng.choice(_MODULES[cat]))
        module, k = base, 2
        while f"{suites[s]}/{module}" in used_modules:
            module, k = f"{base}_{k}", k + 1
        used_modules.add(f"{suites[s]}/{module}")
        size = int(rng.integers(3, 13))
        names: set[str] = set()
        while size > 0 and i < n and int(suite_of[i]) == s:
            name = f"test_{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
            if rng.random() < 0.15:
                name += f"[{rng.choice(['small', 'large', 'utf8', 'py311', 'sqlite', '4096'])}]"
            if name in names:
                continue
            names.add(name)
            ids.append(f"tests/{suites[s]}/test_{module}.py::{name}")
            category[i] = cat
            i += 1
            size -= 1
    medians = np.array([_DURATION_MEDIAN[int(c)] for c in category]) * rng.lognormal(0.0, 0.6, size=n)
    shards: dict[str, list[np.ndarray]] = {}
    for pool in scenario.pools:
        routes = pool.suites if pool.suites is not None else suites
        unknown = [s for s in routes if s not in suites]
        if unknown:
            raise ValueError(f"pool {pool.name!r} routes unknown suites {unknown}; suites: {list(suites)}")
        allowed = [suites.index(s) for s in routes]
        routed = np.flatnonzero(np.isin(suite_of, allowed))
        count = pool.shard_count()
        if count < 1 or len(routed) < count:
            raise ValueError(f"pool {pool.name!r}: {len(routed)} tests cannot fill {count} shards")
        # Round-robin over the file order, as Bazel and pytest-split do when durations are unknown.
        shards[pool.name] = [routed[k::count] for k in range(count)]
    return Catalog(ids=ids, suite=suite_of, category=category, duration_median=medians, shards=shards)
