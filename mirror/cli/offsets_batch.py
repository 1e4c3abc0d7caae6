"""``mirror offsets translate`` for many groups, explicit positions, a point in time, and failback.

Forms (all read-only unless ``--apply``):

* ``--group G [--group H ...]``: each group's position on the target (a failover plan per group).
* ``--reverse --group G ...``: each group's position *committed on the target* translated back onto
  the source (failback); ``--apply`` commits it into the group on the source while it has no members.
* ``--offset TOPIC:PARTITION:OFFSET ...``: explicit positions; source-side topic names, or remote names
  (``A.orders``) with ``--reverse``.
* ``--at TIME --topic T ...``: per partition of the source topics ``T``, the first record at or after
  ``TIME`` (epoch ms or ISO-8601) on the target and the same record's position on the source.

Answers come from :class:`mirror.client.translation.OffsetTranslator`; ``BASIS`` says how each was
obtained (``offset-map``: exact; ``offset-sync``: MM2's rule; ``none``).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from connect_runtime.api.errors import ConfigError
from connect_runtime.cli.process import print_error

if TYPE_CHECKING:
    from mirror.client.translation import Translation


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--offset", action="append", type=parse_position, default=[], metavar="TOPIC:PARTITION:OFFSET",
                        help="translate this position (repeatable); remote topic names with --reverse")
    parser.add_argument("--reverse", action="store_true",
                        help="target -> source (failback): positions committed on the target, back onto the source")
    parser.add_argument("--at", type=parse_time, metavar="TIME",
                        help="the first record at or after TIME (epoch ms or ISO-8601) on both clusters; needs --topic")
    parser.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                        help="source topic for --at (repeatable)")


def is_batch(args: argparse.Namespace) -> bool:
    """Whether the arguments ask for more than the single-group failover plan of ``offsets translate``."""
    return bool(args.offset or args.reverse or args.at is not None or len(args.group) > 1)


def _rows(translations: dict[Any, Translation], group: str | None = None) -> list[dict[str, Any]]:
    return [{"group": group, **t.to_dict()} for _, t in sorted(translations.items())]


def _table(rows: list[dict[str, Any]]) -> str:
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
            rows += _rows(translator.at_time(args.at, remote))
        for topic, partition, offset in args.offset:  # one at a time: a partition may be asked about twice
            position = {(topic, partition): offset}
            rows += _rows(translator.to_source(position) if args.reverse else translator.to_target(position))
        if args.group and args.reverse:
            for group, translations in translator.groups_to_source(args.group).items():
                rows += _rows(translations, group)
        elif args.group:
            for group, translations in translator.groups_to_target(args.group, source_config).items():
                rows += _rows(translations, group)
    sys.stdout.write(json.dumps({"translations": rows}, indent=2) + "\n" if args.json else _table(rows))
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
