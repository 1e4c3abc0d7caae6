"""``mirror failover`` and ``mirror failback``: a planned cutover of consumer groups (DR drills, migrations).

``mirror failover mm2.properties --source A --target B --group G [--group H] [--execute]`` waits until
the groups' topics are replicated to the source's end (or ``--max-wait`` passes), translates each
group's committed offsets on A through the exact offset map, and with ``--execute`` writes them as
final checkpoints and into the groups on B (never into a group that has members there), then has every
node running the A->B flow's source tasks commit their source offsets at once, instead of at the flow's
next offset.flush.interval.ms (a forced commit over each node's REST API: the nodes are found in the
flow's status topic; credentials from MIRROR_REST_USER / MIRROR_REST_PASSWORD when the nodes use basic
auth). A node that cannot be reached is a note, not a failure: the offsets are exact through the offset
map either way. Each written group is read back, and one the flow's own group sync wrote an older
offset over is written again. The report says what was not replicated at cutover (RPO), how many
records consumers will read again (0 when exact), when the lag drained, when the offsets were exact,
when each node's source offsets were committed, and how long it all took. ``mirror failback`` moves the
groups' positions on B back onto A (no forced commit: no flow copies what it moves).

Dry run by default. Exit codes: 0 done (or planned), 1 a group could not be written (members on the
cluster) or the lag did not drain within ``--max-wait`` under ``--require-drained``, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.cli.process import print_error


def add_parser(subparsers: Any) -> None:
    for name, help_text in (("failover", "move consumer groups from --source onto --target (cutover)"),
                            ("failback", "move consumer groups from --target back onto --source")):
        parser = subparsers.add_parser(name, help=help_text, description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.add_argument("config", metavar="mm2.properties", help="MirrorMaker 2 configuration file")
        parser.add_argument("--source", required=True, metavar="ALIAS", help="the cluster the flow copies from")
        parser.add_argument("--target", required=True, metavar="ALIAS", help="the cluster the flow copies to")
        parser.add_argument("--group", action="append", required=True, help="consumer group (repeatable)")
        parser.add_argument("--execute", action="store_true",
                            help="write the offsets (default: dry run)" + (
                                "; then commit the flow's source offsets on every node running its source "
                                "tasks (REST; MIRROR_REST_USER / MIRROR_REST_PASSWORD for basic auth)"
                                if name == "failover" else ""))
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                            help="per read or write, and per node for the forced commit (default 30)")
        if name == "failover":
            parser.add_argument("--max-wait", type=float, default=60.0, metavar="SECONDS",
                                help="how long to wait for the lag to drain (default 60)")
            parser.add_argument("--require-drained", action="store_true",
                                help="write nothing and exit 1 unless the lag drained within --max-wait")
        parser.set_defaults(func=run, cutover=name)


def run(args: argparse.Namespace) -> int:
    from mirror.cli.offsets import _load, mirror_client_config
    from mirror.client.cutover import cutover, failback
    from mirror.client.replication_policy import policy_from_config
    from mirror.config.connector_base import OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT
    from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS, SourceAndTarget
    from mirror.maker.flow_commit import force_flow_commit

    if args.timeout <= 0 or getattr(args, "max_wait", 0) < 0:
        raise ConfigError("--timeout must be > 0 and --max-wait >= 0")
    config = _load(args.config, args.source, args.target)
    target_config = mirror_client_config(config.client_config(args.target))
    source_config = mirror_client_config(config.client_config(args.source))
    if args.cutover == "failback":
        report = failback(target_config, source_config, args.source, args.target, args.group,
                          execute=args.execute, timeout_s=args.timeout)
    else:
        location = config.connector_base_config(SourceAndTarget(args.source, args.target), SOURCE_CONNECTOR_CLASS).get(
            OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT).strip().lower()
        on_source = location != "target"
        syncs_topic = policy_from_config(target_config).offset_syncs_topic(args.target) if on_source else None
        pair = SourceAndTarget(args.source, args.target)
        report = cutover(target_config, source_config, args.source, args.target, args.group, execute=args.execute,
                         max_wait_s=args.max_wait, timeout_s=args.timeout, require_drained=args.require_drained,
                         offset_syncs_config=source_config if on_source else None, offset_syncs_topic=syncs_topic,
                         force_commit=lambda began: force_flow_commit(config, pair, began, args.timeout))
    sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n" if args.json else report.render())
    if getattr(args, "require_drained", False) and not report.drained:
        print_error(f"the lag did not drain within {args.max_wait:g}s: nothing written")
        return 1
    return 1 if any(g.error for g in report.groups) else 0
