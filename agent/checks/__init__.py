"""The agent's checks, listed explicitly so the whole set reads in one place (sorted by name)."""

from __future__ import annotations

from types import ModuleType

from agent.checks import cache, clock, disk, memory

CHECKS: tuple[ModuleType, ...] = (cache, clock, disk, memory)

BY_NAME: dict[str, ModuleType] = {module.NAME: module for module in CHECKS}
