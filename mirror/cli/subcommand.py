"""What every ``mirror`` subcommand shares: one-line errors, exit codes, logging setup.

A command-line tool must never answer a typo in a config file with a Python traceback: every
subcommand runs through :func:`invoke`, which turns a :class:`ConfigError` into one ``error: ...`` line
and exit code 2, and any other exception into one line and exit code 1 (the traceback is logged at
DEBUG level for whoever needs it). The exit codes and the error line are the runtime's
(:mod:`connect_runtime.cli.process`), shared with ``connect-distributed``.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from connect_runtime import logging_setup as setup
from connect_runtime.api.errors import ConfigError
from connect_runtime.cli.process import ExitCode
from connect_runtime.cli.process import parse_args as parse_args  # re-exported for the subcommands
from connect_runtime.cli.process import print_error as print_error
from connect_runtime.logging_setup import log_level as log_level

logger = logging.getLogger(__name__)

DEFAULT_LOG_CONFIG = Path("etc/logging.yaml")

Command = Callable[[argparse.Namespace], int]


def invoke(func: Command, args: argparse.Namespace) -> int:
    """Run a subcommand; map exceptions to one line on stderr and an exit code."""
    try:
        return int(func(args))
    except ConfigError as exc:
        # a refused file: one line per finding (split on line feeds only: a typed value may hold any
        # other control character, which print_error escapes)
        for line in str(exc).split("\n"):
            print_error(line)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print_error("interrupted")
        return ExitCode.FAILURE
    except BrokenPipeError:  # e.g. `mirror config show ... | head`
        return ExitCode.OK
    except Exception as exc:
        if getattr(exc, "unsupported_client_library", False):  # a client library outside its tested releases
            print_error(f"failed to start: {exc}")
            return ExitCode.START_FAILURE
        logger.debug("%s failed", getattr(args, "command", "command"), exc_info=True)
        print_error(f"{type(exc).__name__}: {exc} (run with --log-level DEBUG for details)")
        return ExitCode.FAILURE


def split_clusters(values: Sequence[str] | None) -> list[str] | None:
    """``--clusters A B`` and ``--clusters A,B`` both mean [A, B]; ``None`` means every cluster."""
    if not values:
        return None
    aliases = [a.strip() for v in values for a in v.split(",") if a.strip()]
    return aliases or None


def port(value: str) -> int:
    """argparse type for a TCP port (0 picks a free one)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {value!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number between 0 and 65535, got {number}")
    return number


def positive_seconds(value: str) -> float:
    """argparse type for a duration in seconds above 0 (``--timeout``, ``--interval``)."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {value}")
    return seconds


def configure_logging(level: str | None, config_path: str | None) -> None:
    """``--log-config``, else ``etc/logging.yaml`` when it exists in the working directory, else basic."""
    setup.configure_logging(level, config_path, DEFAULT_LOG_CONFIG)
