from __future__ import annotations

from pathlib import Path

import pytest

from agent import settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("RUNNER_AGENT_"):
            monkeypatch.delenv(key)


def test_file_then_environment_then_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.toml"
    path.write_text('server = "http://file:1"\n[disk]\ninterval_s = 5.0\n[sender]\nbatch_size = 50\n')
    monkeypatch.setenv("RUNNER_AGENT_SENDER__BATCH_SIZE", "7")
    monkeypatch.setenv("RUNNER_AGENT_CLOCK__SERVERS", '["127.0.0.1:11123"]')

    loaded = settings.load(path)

    assert loaded.server == "http://file:1"
    assert loaded.disk.interval_s == 5.0 and loaded.sender.batch_size == 7
    assert loaded.clock.servers == ("127.0.0.1:11123",)
    assert loaded.memory.interval_s == 30.0


def test_config_path_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.toml"
    path.write_text('agent_id = "from-env-path"\n')
    monkeypatch.setenv(settings.CONFIG_ENV, str(path))

    assert settings.load(None).agent_id == "from-env-path"


def test_missing_default_file_is_fine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(settings, "DEFAULT_CONFIG", tmp_path / "absent.toml")

    assert settings.load(None).server == "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[sender]\nbatch_size = 501\n", "invalid value for 'sender.batch_size'"),
        ('server = "ftp://x"\n', "invalid value for 'server'"),
        ("[disk\n", "cannot read the configuration"),
    ],
    ids=["batch-too-large", "not-http", "toml-syntax"],
)
def test_invalid(text: str, error: str, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)

    with pytest.raises(settings.ConfigError, match=error):
        settings.load(path)


def test_check_config_fills_agent_wide_defaults(tmp_path: Path) -> None:
    loaded = settings.AgentSettings(state_dir=tmp_path / "state", work_dir=tmp_path / "work")

    disk = loaded.check_config("disk")
    cache = loaded.check_config("cache")

    assert disk.paths == ("/", str(tmp_path / "work"), "/tmp")  # type: ignore[attr-defined]
    assert disk.probe_dir == str(tmp_path / "work")  # type: ignore[attr-defined]
    assert cache.state_dir == str(tmp_path / "state")  # type: ignore[attr-defined]


def test_token_is_secret_and_redacted() -> None:
    loaded = settings.AgentSettings(token="rct_abc")

    assert "rct_abc" not in repr(loaded)
    assert settings.redacted(loaded)["token"] == "<redacted>"
