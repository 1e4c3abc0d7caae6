"""``mirror backfill mm2.properties --flow A->B``: copy an existing backlog with Spark, then hand over.

Copies every selected source partition from where streaming replication would resume (or the log
start) up to its end at the time the command starts, in parallel on a Spark cluster (``--master``, any
Spark master URL; default ``local[*]``), and then hands each partition back to streaming replication
with no gap and no duplicate. Works whether or not connect-mirror-maker runs for the flow. Re-running
after an interruption resumes where the copy stopped. See docs/backfill.md.

pyspark is needed only by this command (``pip install '.[spark]'``) and imported only when it runs.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from connect_runtime.cli.process import ExitCode
from mirror.cli.subcommand import print_error

logger = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> None:
    """Register ``mirror backfill``."""
    parser = subparsers.add_parser("backfill", help="copy a large existing backlog with Spark, then hand over "
                                   "to streaming replication", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", metavar="mm2.properties", help="MirrorMaker 2 configuration file")
    parser.add_argument("--flow", required=True, metavar="SOURCE->TARGET", help="the replication flow, e.g. A->B")
    parser.add_argument("--topics", metavar="REGEX",
                        help="only source topics matching REGEX (whole name), within the flow's topic filter")
    parser.add_argument("--master", default="local[*]", metavar="URL",
                        help="Spark master URL (local[N], local-cluster[...], spark://host:port, yarn, ...)")
    parser.add_argument("--max-records-per-task", type=int, metavar="N",
                        help="split partitions into chunks of N records (copied in order, one wave per chunk)")
    parser.add_argument("--batch-records", type=int, default=20_000, metavar="N",
                        help="records per acknowledged batch; at most one batch per partition is copied twice "
                             "after a failure (default 20000)")
    parser.add_argument("--handover-timeout", type=float, default=120.0, metavar="SECONDS",
                        help="how long to wait for running source tasks to release the partitions (default 120)")
    parser.add_argument("--assume-stopped", action="store_true",
                        help="treat source tasks whose stop was never recorded (killed driver) as stopped")
    parser.add_argument("--no-progress", action="store_true", help="no live progress display")
    parser.add_argument("--verbose", action="store_true", help="show Spark's own logs")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark configuration (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from connect_runtime.api.config_provider import build_providers, resolve
    from connect_runtime.api.errors import ConfigError
    from mirror.backfill.command import BackfillOptions, run_backfill
    from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS, MirrorMakerConfig, SourceAndTarget

    mm = MirrorMakerConfig.from_file(args.config)
    flow = SourceAndTarget.parse(args.flow)
    for alias in (flow.source, flow.target):
        if alias not in mm.clusters:
            raise ConfigError(f"--flow names cluster {alias!r}, which is not declared in {mm.location('clusters')}")
    spark_conf = {}
    for item in args.spark_conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--spark-conf {item!r}: expected KEY=VALUE")
        spark_conf[key.strip()] = value.strip()
    connector_props = resolve(mm.connector_base_config(flow, SOURCE_CONNECTOR_CLASS),
                              build_providers(mm.raw_properties()))
    connector_props["enabled"] = "true"  # the flow may be disabled for streaming; the backfill is asked for
    worker_props = mm.worker_config(flow)
    options = BackfillOptions(source=flow.source, target=flow.target, topics=args.topics, master=args.master,
                              max_records_per_task=args.max_records_per_task, batch_records=args.batch_records,
                              handover_timeout_s=args.handover_timeout, assume_stopped=args.assume_stopped,
                              progress=not args.no_progress, verbose=args.verbose, spark_conf=spark_conf)
    try:
        summary = run_backfill(connector_props, worker_props, options)
    except Exception as exc:
        logger.debug("backfill failed", exc_info=True)
        print_error(f"backfill of {flow} failed: {exc}. Partitions not handed over stay claimed; re-run the same "
                    "command to resume.")
        return ExitCode.FAILURE
    for line in summary.lines():
        print(line)
    return ExitCode.OK
