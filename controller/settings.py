"""Controller settings: flags first, then `RUNNER_CONTROLLER_*` environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ControllerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RUNNER_CONTROLLER_", extra="forbid")

    db: str = Field(default="", description="database URL; empty means runnerctl.db in the working directory")
    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    max_results_per_request: int = Field(default=200_000, ge=1)
    analysis_interval_s: float = Field(default=10.0, ge=0, description="0 disables the background loop")
    log_level: str = "info"
