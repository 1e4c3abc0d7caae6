"""``mirror``: the command-line front end (``run``, ``config show|docs``, and plug-in subcommands).

Each subcommand is a module of its own, so that it is optional: a module that is not installed or
cannot be imported (for example ``backfill`` without pyspark) is simply not offered, and ``mirror run``
never depends on optional extras. A subcommand module exposes ``add_parser(subparsers) -> None``, which
adds its parser and sets ``func=run`` with ``run(args: argparse.Namespace) -> int``. Modules are imported
only when ``main`` runs, and import what their command needs (the runtime, the Kafka clients) inside
``run``, so that building the parser, ``--help`` included, stays fast.

Exit codes: 0 ok, 1 failure while running, 2 bad input or usage, 3 start failure (see
:mod:`mirror.cli.connect_mirror_maker`). Errors are one ``error: ...`` line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
from collections.abc import Sequence

import configargparse

from mirror.cli.subcommand import invoke, parse_args

logger = logging.getLogger(__name__)

#: Subcommand modules, in help order. Missing ones are skipped.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "mirror.cli.connect_mirror_maker",  # run
    "mirror.cli.config_command",  # config show | docs
    "mirror.cli.offsets",  # offsets translate
    "mirror.cli.cutover",  # failover, failback
    "mirror.cli.status",
    "mirror.cli.check",
    "mirror.cli.backfill",
    "mirror.cli.quickstart",
)


DESCRIPTION = """\
Python MirrorMaker 2: replicate topics, topic configs, consumer-group offsets and heartbeats
between Kafka clusters, compatible with Apache Kafka's MirrorMaker 2 (mm2.properties, internal topics).

exit codes: 0 ok, 1 failed while running, 2 bad input or usage, 3 failed to start
"""


def build_parser(modules: Sequence[str] | None = None) -> configargparse.ArgumentParser:
    """The ``mirror`` parser with every importable subcommand module registered."""
    parser = configargparse.ArgumentParser(
        prog="mirror", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES if modules is None else modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            if getattr(exc, "unsupported_client_library", False):
                raise  # not an optional extra that is missing: nothing would work (connect_runtime/cli/entry.py)
            logger.debug("subcommand module %s not registered: %s", name, exc)
            continue
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mirror``; returns the exit code."""
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    return invoke(args.func, args)
