"""failures.tsv(.gz), where a simulator writes it (heldout3-8): every failure with its true cause, read only
to explain a false incident or outage (what really failed there). Never fed to the product."""

from __future__ import annotations

import gzip
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eval.adapters import ts

HELDOUT3_COLUMNS = ["time", "test", "runner", "machine", "pool", "image", "cause", "attempt"]


@dataclass(frozen=True)
class Failure:
    time: float
    test: str
    runner: str
    machine: str
    pool: str
    image: str
    cause: str


class Failures:
    def __init__(self, run: Path) -> None:
        if not any((run / n).exists() for n in ("failures.tsv.gz", "failures.tsv")):
            run = (run / "truth.json").resolve().parent  # a rescored run: the original beside its truth
        self.rows: list[Failure] = []
        packed, plain = run / "failures.tsv.gz", run / "failures.tsv"
        if packed.exists():
            with gzip.open(packed, "rt") as fh:
                self._read(fh.read().splitlines())
        elif plain.exists():
            self._read(plain.read_text().splitlines())
        self.rows.sort(key=lambda f: f.time)
        self.times = [f.time for f in self.rows]

    def _read(self, lines: list[str]) -> None:
        if not lines:
            return
        head = lines[0].split("\t")
        names = [{"test_id": "test"}.get(h, h) for h in head] if "time" in head else HELDOUT3_COLUMNS
        for line in lines[1:] if "time" in head else lines:
            row = dict(zip(names, line.split("\t"), strict=False))
            when = ts(float(row["time"]) if row["time"].replace(".", "", 1).isdigit() else row["time"])
            if when is None:
                continue
            get = row.get
            self.rows.append(
                Failure(
                    when,
                    get("test", ""),
                    get("runner", ""),
                    get("machine", ""),
                    get("pool", ""),
                    get("image", ""),
                    get("cause", ""),
                )
            )

    def causes(self, lo: float, hi: float, pred: Callable[[Failure], bool] = lambda f: True) -> Counter[str]:
        return Counter(
            f.cause for f in self.rows[bisect_left(self.times, lo) : bisect_right(self.times, hi)] if pred(f)
        )


def describe(c: Counter[str], names: dict[str, str]) -> str:
    if not c:
        return "no true failures there"
    return (
        "true causes "
        + ", ".join(f"{names.get(k, k)} {n}" for k, n in c.most_common(4))
        + f" (of {sum(c.values())})"
    )
