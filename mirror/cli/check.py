"""``mirror check mm2.properties [--clusters B] [--json]``: will these flows work with these clusters? Exit 0, 1 or 2.

A pre-flight against the real clusters, before a flow starts (or beside a running fleet, which it leaves
alone): it reaches every cluster the flows use (each within ``--timeout``), and checks, per flow, the rights
of the replication principal (docs/acls.md), the brokers' transactions and KIP-848 groups, the internal topics'
replication factors and cleanup policy, the source topics' configs against the target, and the exactly-once
prerequisites (:mod:`mirror.preflight`). It never produces to a topic, never initialises a transactional id
and never joins a group: rights are read through KIP-430's authorized operations and DescribeAcls, and tried
with ``validate_only`` requests where neither answers.

One line per finding, naming what failed and the fix (``--json`` for scripts); exit codes as ``mirror status``:
0 ready, 1 warnings, 2 will not work. A file the driver would refuse exits 2 with the driver's own one-line
errors. ``mirror config show`` is the offline view of the same file: what the driver builds from it, without
touching a cluster.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from connect_runtime.logging_setup import configure_logging
from mirror.cli.subcommand import log_level, positive_seconds, split_clusters


def add_parser(subparsers: Any) -> None:
    """Register ``mirror check``."""
    parser = subparsers.add_parser("check", help="pre-flight: will each flow work against its clusters? (exit 0/1/2)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", metavar="mm2.properties", help="MirrorMaker 2 configuration file")
    parser.add_argument("--clusters", nargs="+", metavar="ALIAS",
                        help="only the flows a node started with these --clusters would run (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of one line per finding")
    parser.add_argument("--timeout", type=positive_seconds, default=10.0, metavar="SECONDS",
                        help="how long each cluster may take to answer (default 10)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse the file (exit 2) on any warning about it, as connect-mirror-maker --strict")
    parser.add_argument("--log-level", type=log_level, metavar="LEVEL",
                        help="log level of the clients' own lines (default: none below CRITICAL; their errors are "
                             "findings)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the file as the driver does (its refusals exit 2), then check every flow against its clusters."""
    from mirror.config.mirror_maker_config import MirrorMakerConfig
    from mirror.maker.config_check import NOTICE, check_mm2_properties
    from mirror.preflight.findings import CONFIG, Report, Severity
    from mirror.preflight.runner import preflight

    # stderr only, never etc/logging.yaml: librdkafka's lines about an unreachable broker are findings here
    configure_logging(args.log_level or "CRITICAL", None)
    if args.log_level is None:
        logging.getLogger("librdkafka").setLevel(logging.CRITICAL)
    clusters = split_clusters(args.clusters)
    config = MirrorMakerConfig.from_file(args.config)
    checked = check_mm2_properties(config, clusters, strict=bool(args.strict))
    checked.raise_if_refused()
    report = Report()
    for finding in checked.findings:  # what is left once nothing refuses: warnings and notices
        report.add(Severity.NOTE if finding.severity is NOTICE else Severity.WARNING, CONFIG, None, None, str(finding))
    preflight(config, checked.pairs, report, timeout_s=args.timeout)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(report.render())
    return report.exit_code
