"""Writing checkpointed offsets into the target's consumer groups (``sync.group.offsets.enabled``).

MM2 splits this into two jobs (list the idle groups, later write them), so a group that became active
in between still gets a write attempt, and it only ever writes EMPTY groups. Here one job, every
``sync.group.offsets.interval.seconds`` (1 s works), does it in one pass per group:

1. Describe the group on the target. A group with members (``STABLE`` or rebalancing) is never
   written: its consumers would overwrite the offsets at their next commit, or be rewound under them.
   Any other state (``EMPTY``; ``DEAD`` for a group that does not exist there yet) may be written.
   The pass describes all its groups in one call, then reads the committed offsets of the ones that may
   be written in one call (their requests in flight together): a thousand groups cost a few round trips.
2. Per checkpointed partition, the wanted offset is the checkpoint's downstream offset, kept inside
   the target partition's log: never past its end (a recreated or truncated remote topic), never
   before its first record (retention deleted the rest); the bounds of the partitions of every group to
   write are read once per pass, in one fetch. An existing target offset at or past the wanted one is
   left alone: offsets only move forward, as in MM2, so a group whose consumers already ran on the target
   is not rewound.
3. Right before writing, the group's offsets are read again and every partition now at or past its
   wanted offset is dropped from the write: someone else may have written the group since step 2 (a
   ``mirror failover``, an operator's reset, consumers that came and went), and the sync never moves a
   group back over such a write. Kafka has no conditional offset commit, so what remains is the one round
   trip between that read's answer and the write's arrival (docs/failover.md, "The flow's group sync and a failover").
4. One ``AlterConsumerGroupOffsets`` per group carries the changes; the broker still refuses it with
   ``UNKNOWN_MEMBER_ID`` if a member joined in the meantime (counted as ``active``).

Each group's outcome is kept (:meth:`GroupOffsetSync.status`) and counted in
``mirror_group_offset_syncs_total``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.errors import kafka_error_of
from connect_runtime.clients.factory import new_consumer
from connect_runtime.clients.log_reader import end_offsets, ignore_error
from mirror.checkpoint.topic_tail import read_only_consumer_config
from mirror.client.models import OffsetAndMetadata, TopicPartition

logger = logging.getLogger(__name__)

#: Group states with members: never written.
ACTIVE_STATES = frozenset({"STABLE", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "ASSIGNING", "RECONCILING"})

Offsets = Mapping[tuple[str, int], tuple[int, str | None]]


@dataclass(frozen=True)
class GroupSyncStatus:
    """The last sync outcome of one group: ``synced``, ``written``, ``active`` or ``failed``, and why."""

    group: str
    outcome: str
    reason: str
    at: float


def plan_group_sync(checkpointed: Mapping[TopicPartition, OffsetAndMetadata], target: Offsets,
                    bounds: Mapping[tuple[str, int], tuple[int, int]]
                    ) -> tuple[dict[tuple[str, int], tuple[int, str | None]], int]:
    """What to write for one inactive group, and how many offsets were moved inside the log (pure).

    ``bounds`` gives (first offset, end offset) of target partitions; a partition without bounds is
    written as checkpointed.
    """
    changes: dict[tuple[str, int], tuple[int, str | None]] = {}
    clamped = 0
    for tp, (offset, metadata) in checkpointed.items():
        key = (tp[0], tp[1])
        wanted = offset
        if key in bounds:
            first, end = bounds[key]
            wanted = max(min(offset, end), min(first, end))
        clamped += wanted != offset
        current = target.get(key)
        if current is not None and current[0] >= wanted:
            continue
        changes[key] = (wanted, metadata)
    return changes, clamped


def forward_only(changes: Offsets, target: Offsets) -> dict[tuple[str, int], tuple[int, str | None]]:
    """The ``changes`` that move the group forward from ``target`` (its offsets as just read)."""
    return {tp: change for tp, change in changes.items() if tp not in target or target[tp][0] < change[0]}


class GroupOffsetSync:
    """One pass over the task's groups per call of :meth:`run` (on the task's scheduler thread)."""

    def __init__(self, target_admin: Any, consumer_config: Mapping[str, Any],
                 checkpointed: Callable[[], dict[str, dict[TopicPartition, OffsetAndMetadata]]],
                 groups: Iterable[str], *, on_outcome: Callable[[str, int], None] | None = None,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer,
                 bounds: Callable[[list[tuple[str, int]]], dict[tuple[str, int], tuple[int, int]]] | None = None,
                 timeout_s: float = 30.0, clock: Callable[[], float] = time.time) -> None:
        self._admin = target_admin
        self._consumer_config = read_only_consumer_config(consumer_config, "group-sync-bounds")
        self._checkpointed = checkpointed
        self._groups = list(groups)
        self._on_outcome = on_outcome or (lambda _outcome, _count: None)
        self._consumer_factory = consumer_factory
        self._bounds = bounds or self._fetch_bounds
        self._timeout_s = timeout_s
        self._clock = clock
        self._status: dict[str, GroupSyncStatus] = {}

    def status(self) -> dict[str, GroupSyncStatus]:
        return dict(self._status)

    def _set(self, group: str, outcome: str, reason: str, count: int = 1) -> None:
        self._status[group] = GroupSyncStatus(group, outcome, reason, self._clock())
        self._on_outcome(outcome, count)

    def run(self) -> dict[str, dict[tuple[str, int], tuple[int, str | None]]]:
        """Sync every checkpointed group once; returns what was written per group."""
        checkpointed = {g: cps for g, cps in self._checkpointed().items() if g in self._groups and cps}
        written: dict[str, dict[tuple[str, int], tuple[int, str | None]]] = {}
        if not checkpointed:
            return written
        states = self._admin.describe_consumer_groups(list(checkpointed))
        idle = [g for g in checkpointed if states.get(g, "UNKNOWN") not in ACTIVE_STATES]
        unread: dict[str, ConnectError] = {}
        current = self._admin.list_consumer_group_offsets([g for g in idle if states.get(g) != "DEAD"],
                                                          errors=unread)
        behind: dict[str, set[tuple[str, int]]] = {}  # idle groups with a partition behind its checkpoint
        for group, offsets in checkpointed.items():
            state = states.get(group, "UNKNOWN")
            if state in ACTIVE_STATES:
                self._set(group, "active", f"group is {state} on the target: consumers are running there")
            elif group in unread:
                self._failed(group, unread[group])
            elif changes := plan_group_sync(offsets, current.get(group, {}), {})[0]:
                behind[group] = set(changes)
            else:
                self._set(group, "synced", f"{len(offsets)} partition(s) at or past their checkpoints")
        if not behind:
            return written
        try:  # one read of the partitions of every group to write, not one per group
            bounds = self._bounds(sorted(set().union(*behind.values())))
        except ConnectError as exc:
            for group in behind:
                self._failed(group, exc)
            return written
        for group in behind:
            offsets = checkpointed[group]
            try:
                changes, clamped = plan_group_sync(offsets, current.get(group, {}), bounds)
                if clamped:
                    self._on_outcome("clamped", clamped)
                if changes:  # read again: a write since the first read (a failover) is never moved back
                    changes = forward_only(changes, self._admin.list_consumer_group_offsets([group]).get(group, {}))
                if not changes:
                    self._set(group, "synced", f"{len(offsets)} partition(s) at or past their checkpoints")
                    continue
                self._admin.alter_consumer_group_offsets(group, changes)
            except ConnectError as exc:
                self._failed(group, exc)
                continue
            written[group] = changes
            self._set(group, "written", f"wrote {len(changes)} offset(s)")
        return written

    def _failed(self, group: str, exc: ConnectError) -> None:
        """A group's read or write failed: ``active`` when the target refused it for the group's members."""
        error = kafka_error_of(exc.__cause__) if exc.__cause__ is not None else None
        if "UNKNOWN_MEMBER_ID" in (error.name() if error is not None else str(exc)):
            self._set(group, "active", "the target refused the write: the group has members there")
        else:
            logger.error("Unable to sync offsets for consumer group %s: %s", group, exc)
            self._set(group, "failed", str(exc))

    def _fetch_bounds(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(first record offset, end offset) of each target partition; one fetch each, from the start."""
        first: dict[tuple[str, int], int] = {}

        def keep(message: Message) -> None:
            first[(message.topic() or "", message.partition() or 0)] = message.offset() or 0

        try:
            consumer = self._consumer_factory(self._consumer_config)
        except (KafkaException, ValueError) as exc:
            logger.warning("Cannot read the target partition bounds: %s", exc)
            return {}
        try:
            ends = end_offsets(consumer, dict.fromkeys(partitions, OFFSET_BEGINNING), self._timeout_s,
                               on_first=keep, on_error=ignore_error, missing_ok=True)
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError):
                pass
        return {tp: (first.get(tp, end), end) for tp, end in ends.items()}
