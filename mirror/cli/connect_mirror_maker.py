"""``connect-mirror-maker mm2.properties [--clusters B ...]``: run a dedicated MirrorMaker 2 node.

The same command line as Kafka's ``bin/connect-mirror-maker.sh``, plus process flags (each also settable
through an environment variable, for containers). ``mirror run`` is the same command.

Usage::

    connect-mirror-maker mm2.properties [--clusters ALIAS [ALIAS ...]]
                         [--log-level LEVEL] [--log-config FILE]
                         [--rest-port PORT] [--metrics-port PORT] [--strict]

    --clusters ALIAS ...   run only the flows whose *target* is one of these aliases (default: all)
    --log-level LEVEL      DEBUG, INFO, WARNING, ERROR or CRITICAL        env MIRROR_LOG_LEVEL
    --log-config FILE      logging config (YAML dictConfig or .ini);      env MIRROR_LOG_CONFIG
                           default etc/logging.yaml if present, else basic logging at INFO
    --rest-port PORT       port of the REST server                        env MIRROR_REST_PORT
    --metrics-port PORT    port of the Prometheus metrics endpoint        env MIRROR_METRICS_PORT
    --strict               refuse the file on any warning about it (as config.strict = true)

Exit codes::

    0  stopped cleanly (e.g. after SIGTERM)
    1  failed while running
    2  bad input: usage error, unreadable or invalid mm2.properties, no replication flow, a key whose
       loss weakens a guarantee written where MM2 does not read it (docs/configuration.md)
    3  failed to start (e.g. the replication driver could not start its herders)

Every error is reported as one line on stderr, ``error: <file>:<line>: <message>`` when the offending
key is in the file (a refused file: one such line per finding); there is never a Python traceback (use
``--log-level DEBUG`` to log one). The file's warnings are logged at start, one line each.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import configargparse

from mirror.cli.subcommand import (
    configure_logging,
    invoke,
    log_level,
    parse_args,
    port,
    split_clusters,
)

if TYPE_CHECKING:
    from mirror.config.mirror_maker_config import MirrorMakerConfig

logger = logging.getLogger(__name__)

PROG = "connect-mirror-maker"

DESCRIPTION = "Run a dedicated MirrorMaker 2 node: one herder per replication flow of mm2.properties."
EPILOG = "exit codes: 0 stopped cleanly, 1 failed while running, 2 bad input or usage, 3 failed to start"


def add_arguments(parser: Any) -> None:
    """The arguments of ``connect-mirror-maker`` / ``mirror run`` (``parser`` is a configargparse parser)."""
    parser.add_argument("config", metavar="mm2.properties", help="MirrorMaker 2 configuration file")
    parser.add_argument("--clusters", nargs="+", metavar="ALIAS",
                        help="target cluster aliases this node serves (default: every declared cluster)")
    parser.add_argument("--log-level", type=log_level, env_var="MIRROR_LOG_LEVEL", metavar="LEVEL",
                        help="root log level: DEBUG, INFO, WARNING, ERROR, CRITICAL (default INFO)")
    parser.add_argument("--log-config", env_var="MIRROR_LOG_CONFIG", metavar="FILE",
                        help="logging config file, YAML (dictConfig) or .ini (default: etc/logging.yaml "
                             "if present, else basic logging)")
    parser.add_argument("--rest-port", type=port, env_var="MIRROR_REST_PORT", metavar="PORT",
                        help="port of the REST server")
    parser.add_argument("--metrics-port", type=port, env_var="MIRROR_METRICS_PORT", metavar="PORT",
                        help="port of the Prometheus metrics endpoint")
    parser.add_argument("--strict", action="store_true",
                        help="refuse the file (exit 2) on any warning about it, as config.strict = true")


def add_parser(subparsers: Any) -> None:
    """Register ``mirror run``."""
    parser = subparsers.add_parser("run", help="run a MirrorMaker 2 node (same as connect-mirror-maker)",
                                   description=DESCRIPTION, epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.set_defaults(func=run)


def load_config(path: str, clusters: list[str] | None, strict: bool = False) -> MirrorMakerConfig:
    """Load and fully validate ``mm2.properties`` for the given ``--clusters`` (ConfigError if bad).

    Fully: every stage of :func:`mirror.maker.config_check.check_mm2_properties`, i.e. every line against
    the level MM2 reads it at, the file's structure, and what each herder would refuse (worker keys, the
    connectors' own validation, the client override policy). Its errors, or with ``strict`` its warnings,
    refuse the file, every one on its own line; the rest are logged.
    """
    from mirror.config.mirror_maker_config import MirrorMakerConfig  # imported by run() first, with the driver
    from mirror.maker.config_check import check_mm2_properties

    config = MirrorMakerConfig.from_file(path)
    report = check_mm2_properties(config, clusters, strict=strict)
    report.raise_if_refused()
    report.log(logger)
    return config


def run(args: argparse.Namespace) -> int:
    """Validate the configuration, then hand over to the replication driver.

    The driver and the config classes (the runtime, REST server, clients: most of the start-up import
    time) are imported here, not at module level: ``mirror <any command>`` imports this module to offer
    ``mirror run``, and ``--help`` or a usage error should not pay for them. They are imported before
    logging is configured, as a module-level import would be, so that a dictConfig which disables existing
    loggers applies to their loggers too.
    """
    from mirror.maker import mirror_maker

    configure_logging(args.log_level, args.log_config)
    clusters = split_clusters(args.clusters)
    args.clusters = clusters
    config = load_config(args.config, clusters, bool(getattr(args, "strict", False)))
    pairs = config.herder_pairs(clusters)
    logger.info("%s: %d herder(s): %s", args.config, len(pairs), ", ".join(str(p) for p in pairs))
    return int(mirror_maker.run(config, clusters, args))


def build_parser() -> configargparse.ArgumentParser:
    parser = configargparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``connect-mirror-maker``; returns the exit code."""
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    return invoke(run, args)


if __name__ == "__main__":
    raise SystemExit(main())
