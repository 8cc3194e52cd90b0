"""Shared CLI pieces: exit codes, config loading, the 'not implemented yet' exit."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from agent.config import ConfigError, Settings, load_settings
from agent.logsetup import setup_logging

EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran and its check failed (e.g. a proof did not verify)
EXIT_USAGE = 2  # bad arguments or bad configuration
EXIT_NOT_IMPLEMENTED = 3  # the command is part of the contract but not built yet

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="TOML config file (default /etc/psagent/config.toml if present)."),
]


def fail(message: str, code: int = EXIT_FAILURE) -> NoReturn:
    typer.echo(f"psagent: {message}", err=True)
    raise typer.Exit(code)


def not_implemented(command: str, issue: str) -> NoReturn:
    """Commands of the contract that do not exist yet say so and exit non-zero: no fake output."""
    fail(f"'{command}' is not implemented yet ({issue}).", EXIT_NOT_IMPLEMENTED)


def settings_or_exit(config: Path | None) -> Settings:
    try:
        settings = load_settings(config)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    setup_logging(settings.logging.level, settings.logging.format)
    return settings
