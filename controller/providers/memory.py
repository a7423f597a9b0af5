"""What a provider must remember about a runner between cordon and uncordon, kept in the database so a
controller restart forgets nothing (GitHub has no pause: the custom labels a cordon takes off are kept
here and put back exactly by the uncordon)."""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Engine

from controller.db import tables


class RunnerMemory:
    """One provider's notes, one JSON object per runner."""

    def __init__(self, engine: Engine, provider: str) -> None:
        self.engine = engine
        self.provider = provider

    def __repr__(self) -> str:
        return f"RunnerMemory({self.provider!r})"

    def get(self, runner: str) -> dict[str, Any] | None:
        t = tables.provider_memory
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.c.data).where(t.c.provider == self.provider, t.c.runner_id == runner)
            ).first()
        if row is None:
            return None
        found: dict[str, Any] = json.loads(row.data)
        return found

    def put(self, runner: str, data: dict[str, Any]) -> None:
        t = tables.provider_memory
        with self.engine.begin() as conn:
            conn.execute(delete(t).where(t.c.provider == self.provider, t.c.runner_id == runner))
            conn.execute(
                t.insert().values(
                    provider=self.provider,
                    runner_id=runner,
                    data=json.dumps(data, sort_keys=True),
                    updated_ms=int(time.time() * 1000),
                )
            )

    def forget(self, runner: str) -> None:
        t = tables.provider_memory
        with self.engine.begin() as conn:
            conn.execute(delete(t).where(t.c.provider == self.provider, t.c.runner_id == runner))
