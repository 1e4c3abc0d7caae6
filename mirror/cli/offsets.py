"""``mirror offsets translate``: where should a consumer group resume after failing over? (RemoteClusterUtils)

``mirror offsets translate --group G --source A --target B mm2.properties`` reads the checkpoints that the
``A->B`` flow wrote to ``A.checkpoints.internal`` on cluster B and prints, per target-side
topic-partition, the group's current offset on B, the offset G should use on B and an upper bound of
the records a consumer resuming there would replay (see ``docs/failover.md``). By default it only
reads (a dry run).

With ``--apply`` it commits the translated offsets into group G on B, only when G has no active members
there (state EMPTY, or DEAD/UNKNOWN for a group that does not exist yet); otherwise it refuses and exits 1.
Partitions where G is already ahead on B are left alone unless ``--allow-rewind``.

With the exact offset map (``docs/failover.md``) the translated offset is the very record the group
reads next: ``REPLAY<=`` is 0.

Many groups, explicit positions, a point in time and failback are answered in one batch (all read-only
unless ``--apply``):

* ``--group G [--group H ...]``: each group's position on the target (a failover plan per group).
* ``--reverse --group G ...``: each group's position *committed on the target* translated back onto
  the source (failback); ``--apply`` commits it into the group on the source while it has no members.
* ``--offset TOPIC:PARTITION:OFFSET ...``: explicit positions; source-side topic names, or remote names
  (``A.orders``) with ``--reverse``.
* ``--at TIME --topic T ...``: per partition of the source topics ``T``, the first record at or after
  ``TIME`` (epoch ms or ISO-8601) on the target and the same record's position on the source.

Batch answers come from :class:`mirror.client.translation.OffsetTranslator`; ``BASIS`` says how each was
obtained (``offset-map``: exact; ``offset-sync``: MM2's rule; ``none``).

Python users have no other way to get this: Kafka's ``RemoteClusterUtils.translateOffsets`` is Java-only.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.cli.process import print_error
from mirror.client.models import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from mirror.client.translation import Translation

#: MirrorClient's ``DEFAULT_TIMEOUT_S``, repeated so that building the parser does not import MirrorClient
#: and confluent-kafka (tests/unit/mirror/test_startup_imports.py keeps the two equal).
DEFAULT_TIMEOUT_S = 30.0


def add_parser(subparsers: Any) -> None:
    """Register ``mirror offsets translate``."""
    parser = subparsers.add_parser("offsets", help="consumer-group offsets across clusters")
    commands = parser.add_subparsers(dest="offsets_command", metavar="{translate}", required=True)
    translate = commands.add_parser(
        "translate",
        help="translate a source consumer group's offsets to the target, from MM2 checkpoints",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    translate.add_argument("config", metavar="mm2.properties", help="MirrorMaker 2 configuration file")
    translate.add_argument("--group", action="append", default=[],
                           help="consumer group id (repeatable); on the source, or on the target with --reverse")
    translate.add_argument(
        "--source", required=True, metavar="ALIAS", help="alias of the cluster the group uses"
    )
    translate.add_argument(
        "--target", required=True, metavar="ALIAS", help="alias of the cluster to fail over to"
    )
    translate.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to read the checkpoints topic (default {DEFAULT_TIMEOUT_S:g})",
    )
    translate.add_argument("--json", action="store_true", help="print JSON instead of a table")
    translate.add_argument("--apply", action="store_true",
                           help="commit the translated offsets into the group on the target (default: dry run)")
    translate.add_argument("--allow-rewind", action="store_true",
                           help="also move partitions where the group is already ahead on the target")
    translate.add_argument("--offset", action="append", type=parse_position, default=[],
                           metavar="TOPIC:PARTITION:OFFSET",
                           help="translate this position (repeatable); remote topic names with --reverse")
    translate.add_argument("--reverse", action="store_true",
                           help="target -> source (failback): positions committed on the target, back onto the "
                                "source")
    translate.add_argument("--at", type=parse_time, metavar="TIME",
                           help="the first record at or after TIME (epoch ms or ISO-8601) on both clusters; "
                                "needs --topic")
    translate.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                           help="source topic for --at (repeatable)")
    translate.set_defaults(func=run)


def parse_position(text: str) -> tuple[str, int, int]:
    """``TOPIC:PARTITION:OFFSET`` (Kafka topic names cannot contain ``:``)."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise argparse.ArgumentTypeError(f"expected TOPIC:PARTITION:OFFSET, got {text!r}")
    try:
        partition, offset = int(parts[1]), int(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected TOPIC:PARTITION:OFFSET with integer numbers, "
                                         f"got {text!r}") from None
    if partition < 0 or offset < 0:
        raise argparse.ArgumentTypeError(f"partition and offset must be >= 0 in {text!r}")
    return parts[0], partition, offset


def parse_time(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (``2026-03-01T12:00:00Z``; no zone means UTC)."""
    if text.strip().isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected epoch milliseconds or an ISO-8601 time, got {text!r}") from None
    if moment.tzinfo is None:
        from datetime import UTC

        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _load(path: str, source: str, target: str) -> Any:
    # Imported here: mirror.maker pulls in the whole config machinery, which `offsets` only needs once.
    from mirror.config.mirror_maker_config import MirrorMakerConfig

    config = MirrorMakerConfig.from_file(path)
    for flag, alias in (("--source", source), ("--target", target)):
        if alias not in config.clusters:
            raise ConfigError(
                f"{flag} {alias!r} is not one of the clusters declared in {path}: "
                f"{', '.join(config.clusters)}",
                "clusters",
            )
    if source == target:
        raise ConfigError("--source and --target must be different clusters")
    return config


def _client_config(path: str, source: str, target: str) -> dict[str, Any]:
    return mirror_client_config(_load(path, source, target).client_config(target))


def mirror_client_config(raw: dict[str, str]) -> dict[str, Any]:
    """A MirrorClient config from ``MirrorMakerConfig.client_config``: Java client keys made librdkafka's
    (:func:`mirror.client.mirror_client.mirror_client_config`, imported on first use)."""
    # Imported here: the config machinery and the client translation, which `mirror <command> --help`
    # should not pay for.
    from mirror.client.mirror_client import mirror_client_config as convert_client_config

    return convert_client_config(raw)


def rows(offsets: dict[TopicPartition, OffsetAndMetadata]) -> list[dict[str, Any]]:
    """The translated offsets as plain data, sorted by topic and partition."""
    return [
        {"topic": tp.topic, "partition": tp.partition, "offset": om.offset, "metadata": om.metadata}
        for tp, om in sorted(offsets.items())
    ]


def render_table(data: list[dict[str, Any]]) -> str:
    """A fixed-width table with a header line."""
    header = ("TOPIC", "PARTITION", "OFFSET", "METADATA")
    lines = [(str(r["topic"]), str(r["partition"]), str(r["offset"]), str(r["metadata"])) for r in data]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n"
        for row in [header, *lines]
    )


def run(args: argparse.Namespace) -> int:
    """Plan (and with --apply, commit) the group's translated offsets on the target."""
    from mirror.client.failover import GroupActiveError, apply_failover, plan_failover
    from mirror.config.connector_base import OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT
    from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS, SourceAndTarget

    config = _load(args.config, args.source, args.target)
    location = config.connector_base_config(SourceAndTarget(args.source, args.target), SOURCE_CONNECTOR_CLASS).get(
        OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT).strip().lower()
    target_config = mirror_client_config(config.client_config(args.target))
    source_config = mirror_client_config(config.client_config(args.source))
    if is_batch(args):
        on_source = location != "target"
        from mirror.client.replication_policy import policy_from_config

        policy = policy_from_config(target_config)
        return run_batch(args, target_config, source_config, source_config if on_source else target_config,
                         policy.offset_syncs_topic(args.target if on_source else args.source))
    if not args.group:
        raise ConfigError("give --group, --offset or --at (see mirror offsets translate --help)")
    [group] = args.group
    plan = plan_failover(target_config, args.source, group,
                         source_config=source_config,
                         offset_syncs_location=location, target_alias=args.target,
                         allow_rewind=args.allow_rewind, timeout_s=args.timeout)
    if args.json:
        sys.stdout.write(json.dumps({**plan.to_dict(), "applied": False}, indent=2) + "\n")
    else:
        sys.stdout.write(plan.render())
    if not plan.partitions:
        print(
            f"note: no checkpoints for group {group!r} from {args.source} on {args.target} "
            f"(is the {args.source}->{args.target} flow running, and has the group committed offsets?)",
            file=sys.stderr,
        )
    if not args.apply:
        if plan.changes:
            print(f"dry run: {len(plan.changes)} partition(s) would change; add --apply to commit them",
                  file=sys.stderr)
        return 0
    try:
        written = apply_failover(plan, timeout_s=args.timeout)
    except GroupActiveError as exc:
        print_error(f"refused: {exc}")
        return 1
    print(f"applied: committed {len(written)} offset(s) for group {group} on {args.target}", file=sys.stderr)
    return 0


# ---- the batch forms ----


def is_batch(args: argparse.Namespace) -> bool:
    """Whether the arguments ask for more than the single-group failover plan of ``offsets translate``."""
    return bool(args.offset or args.reverse or args.at is not None or len(args.group) > 1)


def _translation_rows(translations: dict[Any, Translation], group: str | None = None) -> list[dict[str, Any]]:
    return [{"group": group, **t.to_dict()} for _, t in sorted(translations.items())]


def _batch_table(rows: list[dict[str, Any]]) -> str:
    header = ("GROUP", "SOURCE TOPIC", "TARGET TOPIC", "PARTITION", "UPSTREAM", "DOWNSTREAM", "BASIS")
    lines = [tuple("-" if r[k] is None else str(r[k]) for k in
                   ("group", "source_topic", "remote_topic", "partition", "upstream", "downstream", "basis"))
             for r in rows]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in [header, *lines])


def run_batch(args: argparse.Namespace, target_config: dict[str, str], source_config: dict[str, str],
              syncs_config: dict[str, str], syncs_topic: str) -> int:
    """Translate what the arguments ask for; print a table or JSON; with ``--reverse --apply`` commit."""
    if args.at is not None and not args.topic:
        raise ConfigError("--at needs at least one --topic (a source topic name)")
    if args.apply and not (args.reverse and args.group):
        raise ConfigError("--apply with several groups or positions is only for --reverse --group "
                          "(failback); fail one group over at a time without --reverse")
    # Imported here: it brings confluent-kafka, which `mirror <command> --help` should not pay for.
    from mirror.client.translation import OffsetTranslator

    rows: list[dict[str, Any]] = []
    with OffsetTranslator(target_config, args.source, offset_syncs_config=syncs_config,
                          offset_syncs_topic=syncs_topic, timeout_s=args.timeout) as translator:
        if args.at is not None:
            remote = [translator.policy.format_remote_topic(args.source, t) for t in args.topic]
            rows += _translation_rows(translator.at_time(args.at, remote))
        for topic, partition, offset in args.offset:  # one at a time: a partition may be asked about twice
            position = {(topic, partition): offset}
            rows += _translation_rows(translator.to_source(position) if args.reverse
                                      else translator.to_target(position))
        if args.group and args.reverse:
            for group, translations in translator.groups_to_source(args.group).items():
                rows += _translation_rows(translations, group)
        elif args.group:
            for group, translations in translator.groups_to_target(args.group, source_config).items():
                rows += _translation_rows(translations, group)
    sys.stdout.write(json.dumps({"translations": rows}, indent=2) + "\n" if args.json else _batch_table(rows))
    if not args.apply:
        return 0
    from mirror.client.failover import GroupActiveError, commit_if_inactive

    status = 0
    for group in args.group:
        offsets = {(r["source_topic"], r["partition"]): r["upstream"] for r in rows
                   if r["group"] == group and r["upstream"] is not None}
        try:
            commit_if_inactive(source_config, group, offsets, args.timeout)
        except GroupActiveError as exc:
            print_error(f"refused on {args.source}: {exc}")
            status = 1
            continue
        print(f"applied: committed {len(offsets)} offset(s) for group {group} on {args.source}", file=sys.stderr)
    return status
