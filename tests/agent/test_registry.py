"""Every check, CLI verb and config key has a test and a docs entry."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from agent.checks import CHECKS
from agent.commands import app
from agent.settings import AgentSettings

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "agent.md").read_text()


def test_checks_are_sorted_and_named() -> None:
    names = [module.NAME for module in CHECKS]
    assert names == sorted(names) and len(set(names)) == len(names)


@pytest.mark.parametrize("name", [module.NAME for module in CHECKS])
def test_every_check_has_a_test_and_docs(name: str) -> None:
    assert (ROOT / "tests" / "agent" / "checks" / f"test_{name}.py").is_file()
    assert f"\n### {name}\n" in DOCS


@pytest.mark.parametrize(
    "verb", [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
)
def test_every_cli_verb_is_documented(verb: str) -> None:
    assert f"`runner-agent {verb}" in DOCS


def keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    out = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out.extend(keys(annotation, f"{prefix}{name}."))
        else:
            out.append(prefix + name)
    return out


@pytest.mark.parametrize("key", keys(AgentSettings))
def test_every_config_key_is_documented(key: str) -> None:
    leaf = key.rsplit(".", 1)[-1]
    assert re.search(rf"`[^`]*\b{re.escape(leaf)}\b", DOCS), key


def test_example_config_is_valid() -> None:
    data = tomllib.loads((ROOT / "packaging" / "runner-agent.example.toml").read_text())

    settings = AgentSettings.model_validate(data)

    assert settings.spool.max_disk_used_ratio == 0.90 and settings.disk.min_free_bytes == 1 << 30


def test_systemd_unit_hardening() -> None:
    unit = (ROOT / "packaging" / "systemd" / "runner-agent.service").read_text()

    for line in (
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/runner-agent",
        "NoNewPrivileges=yes",
        "PrivateTmp=no",
        "Restart=on-failure",
        "Nice=19",
        "IOSchedulingClass=idle",
    ):
        assert f"\n{line}\n" in unit
