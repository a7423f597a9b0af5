"""The agent's configuration: `/etc/runner-agent/config.toml` (or `--config` / `RUNNER_AGENT_CONFIG`),
overridden by `RUNNER_AGENT_*` environment variables (nested with `__`, e.g. `RUNNER_AGENT_DISK__PATHS`).

Unknown keys are a startup error that names them: a typo must never silently mean "default".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from agent.checks.base import CheckConfig
from agent.checks.cache import CacheConfig
from agent.checks.clock import ClockConfig
from agent.checks.disk import DiskConfig
from agent.checks.memory import MemoryConfig
from agent.directives import DirectiveSettings

DEFAULT_CONFIG = Path("/etc/runner-agent/config.toml")
CONFIG_ENV = "RUNNER_AGENT_CONFIG"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class IdentitySettings(_Section):
    """Explicit values win over everything discovered."""

    id: str | None = None
    name: str | None = None
    machine: str | None = None
    pool: str | None = None
    image: str | None = None
    shard: str | None = None
    labels: tuple[str, ...] = ()
    provider: str | None = None
    ephemeral: bool | None = None
    discover: bool = Field(default=True, description="read hostname, machine-id, os-release, runner configs")
    runner_config: str | None = Field(
        default=None,
        description="a GitHub .runner, GitLab config.toml or buildkite-agent.cfg outside the usual paths",
    )


class SenderSettings(_Section):
    batch_size: int = Field(default=500, ge=1, le=500)
    connect_timeout_s: float = Field(default=3.0, gt=0)
    read_timeout_s: float = Field(default=10.0, gt=0)
    backoff_base_s: float = Field(default=1.0, gt=0)
    backoff_max_s: float = Field(default=60.0, gt=0)
    auth_backoff_s: float = Field(default=300.0, gt=0, description="wait after a 401/403")
    idle_poll_s: float = Field(default=5.0, gt=0)


class SpoolSettings(_Section):
    max_bytes: int = Field(default=64 << 20, ge=4096)
    max_age_s: float = Field(default=7 * 86400.0, gt=0)
    max_disk_used_ratio: float = Field(default=0.90, gt=0, le=1)


class AgentSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="RUNNER_AGENT_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    server: str = Field(
        default="http://127.0.0.1:8080", pattern=r"^https?://[^\s/]+", description="controller URL"
    )
    token: SecretStr | None = None
    agent_id: str | None = Field(default=None, description="defaults to the runner id")
    state_dir: Path = Path("/var/lib/runner-agent")
    work_dir: Path | None = Field(default=None, description="the CI runner's work directory")
    boot_id_file: Path = Path("/proc/sys/kernel/random/boot_id")
    log_level: str = Field(default="INFO", pattern="^(DEBUG|INFO|WARNING|ERROR)$")
    speedup: float = Field(default=1.0, gt=0, description="divide every interval: for tests and benchmarks")
    identity: IdentitySettings = IdentitySettings()
    sender: SenderSettings = SenderSettings()
    spool: SpoolSettings = SpoolSettings()
    cache: CacheConfig = CacheConfig()
    clock: ClockConfig = ClockConfig()
    disk: DiskConfig = DiskConfig()
    memory: MemoryConfig = MemoryConfig()
    directives: DirectiveSettings = DirectiveSettings()

    def check_config(self, name: str) -> CheckConfig:
        """A check's config with the agent-wide defaults (state dir, work dir) filled in."""
        config: CheckConfig = getattr(self, name)
        update: dict[str, Any] = {}
        if isinstance(config, CacheConfig | MemoryConfig) and config.state_dir is None:
            update["state_dir"] = str(self.state_dir)
        if isinstance(config, DiskConfig):
            if not config.paths:
                work = [str(self.work_dir)] if self.work_dir else []
                update["paths"] = tuple(dict.fromkeys(["/", *work, "/tmp"]))  # noqa: S108 - measured only
            if config.probe_dir is None and self.work_dir is not None:
                update["probe_dir"] = str(self.work_dir)
        return config.model_copy(update=update) if update else config


class ConfigError(Exception):
    """The configuration cannot be used; the message says which key and why."""


def config_path(explicit: str | Path | None = None) -> tuple[Path, bool]:
    """The file to read and whether someone asked for it (then it must exist)."""
    if explicit:
        return Path(explicit), True
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env), True
    return DEFAULT_CONFIG, False


def load(explicit: str | Path | None = None) -> AgentSettings:
    path, required = config_path(explicit)
    if required and not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    toml_file = path if path.is_file() else None

    class _FromFile(AgentSettings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if toml_file is not None:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
            return tuple(sources)

    try:
        loaded = _FromFile()
    except ValidationError as exc:
        raise ConfigError(describe(exc, path if toml_file else None)) from None
    except ValueError as exc:  # a TOML syntax error or a malformed JSON list in an env variable
        raise ConfigError(f"cannot read the configuration ({path}): {exc}") from None
    return AgentSettings.model_validate(loaded.model_dump())


def describe(exc: ValidationError, path: Path | None) -> str:
    where = f" in {path} or RUNNER_AGENT_* environment" if path else " in RUNNER_AGENT_* environment"
    lines = []
    for error in exc.errors():
        key = ".".join(str(p) for p in error["loc"])
        if error["type"] == "extra_forbidden":
            lines.append(f"unknown config key '{key}'{where}")
        else:
            lines.append(f"invalid value for '{key}'{where}: {error['msg']}")
    return "; ".join(lines)


def redacted(settings: AgentSettings) -> dict[str, Any]:
    data = settings.model_dump(mode="json")
    data["token"] = "<redacted>" if settings.token is not None else None
    return data
