"""`runner-agent`, the console script. A plain `run` (no option but `--config`) starts the daemon
straight away; every other command line goes to the typer app in `agent.commands`.

The daemon stays resident on every runner for as long as the machine lives, and the command-line
framework (typer, click and what they import: about 1.5 MB resident) would be there only to read one
option. Anything beyond that option, `run --help` included, is typer's to parse, and its `run` calls the
same `run_daemon`, so both ways start the same daemon.
"""

from __future__ import annotations

import os
import sys
import warnings


def main() -> None:
    """Tracebacks only with RUNNER_AGENT_DEBUG=1; otherwise one `error:` line."""
    try:
        plain, config = plain_run(sys.argv[1:])
        if plain:
            sys.exit(run_daemon(config))
        from agent.commands import app

        app(prog_name="runner-agent")
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("RUNNER_AGENT_DEBUG"):
            raise
        print(
            f"error: {type(exc).__name__}: {exc} (RUNNER_AGENT_DEBUG=1 shows the traceback)", file=sys.stderr
        )
        sys.exit(1)


def plain_run(args: list[str]) -> tuple[bool, str | None]:
    """(True, config) for `run`, `run --config X`, `run -c X` and `run --config=X`; (False, None) else."""
    match args:
        case ["run"]:
            return True, None
        case ["run", "--config" | "-c", str(path)] if not path.startswith("-"):
            return True, path
        case ["run", str(option)] if option.startswith("--config="):
            return True, option.removeprefix("--config=")
    return False, None


def run_daemon(config: str | None) -> int:
    """Start the daemon and block until it stops; the exit status."""
    _without_charset_detection()
    from agent.daemon import serve  # the daemon's imports are not needed for `once` or `config`

    return serve(config)


def _without_charset_detection() -> None:
    """requests imports a charset detector (about 2.5 MB resident) only to guess the encoding of text
    bodies that declare none; the controller answers JSON, so the daemon never needs it. Done only in
    the daemon's own process, before requests is first imported."""
    if "requests" in sys.modules:
        return
    sys.modules.setdefault("charset_normalizer", None)  # type: ignore[arg-type]
    sys.modules.setdefault("chardet", None)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # requests warns that no detector is installed: intended
        import requests  # noqa: F401


if __name__ == "__main__":
    main()
