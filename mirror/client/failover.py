"""Move a consumer group from a source cluster to its replica on the target (a failover), from Python.

Kafka's ``RemoteClusterUtils.translateOffsets`` is Java-only and only *reads*. Here::

    plan = plan_failover(target_config, source_alias="A", group="billing", source_config=a_config)
    print(plan.render())           # what would change, and how many records each partition may replay
    apply_failover(plan)           # commit the translated offsets into the group on the target

:func:`plan_failover` reads the group's newest checkpoints from ``A.checkpoints.internal`` on the target
(via the replication policy), the group's current offsets on the target and, when the source is still
reachable, the group's committed offsets there. :func:`apply_failover` commits the translated offsets,
only when the group has no active members on the target (state EMPTY, DEAD or UNKNOWN): rewriting the
offsets under running consumers would be overwritten by their next commit, or rewind them.

**Replay bound.** A checkpoint translates the group's upstream commit ``U`` to a downstream offset
``D`` that is never *after* the true position (MM2 rounds down to the previous offset sync), so a
consumer that resumes at ``D`` re-reads some records it already processed on the source. The bound
printed per partition is ``E - D`` where ``E`` is the downstream position equivalent to the group's
committed upstream offset ``C`` (``C`` from the source when reachable, else the checkpoint's ``U``):
``E = Ds + (C - Us)`` for the newest offset sync ``(Us, Ds)`` with ``Us <= C``, capped at the remote
partition's end. Upstream offset gaps (compaction, transaction markers) only make the true ``E``
smaller, so this is an upper bound. Without offset syncs ``E`` is the remote partition's end
(``basis = "remote-end"``), i.e. "everything after D".

Configs are MirrorClient configs (librdkafka connection keys, ``replication.policy.*``, ``consumer.*``
and ``admin.*`` overrides); see :mod:`mirror.client.mirror_client`.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from connect_runtime.clients.factory import new_admin
from connect_runtime.clients.log_reader import end_offsets, ignore_error
from mirror.client.mirror_client import (
    ADMIN_CLIENT_PREFIX,
    CONSUMER_CLIENT_PREFIX,
    DEFAULT_TIMEOUT_S,
    client_config,
)
from mirror.client.models import Checkpoint, MalformedRecordError, OffsetSync
from mirror.client.replication_policy import policy_from_config
from mirror.client.translation import committed_offsets, load_offset_map, read_topic, reader_consumer
from mirror.errors import MirrorError

logger = logging.getLogger(__name__)

#: How long to wait for the source cluster, which is often unreachable during a failover.
SOURCE_TIMEOUT_S = 5.0
#: Group states in which nobody consumes, so offsets may be rewritten.
INACTIVE_STATES = frozenset({ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN})


class GroupActiveError(MirrorError, RuntimeError):
    """The group has active members on the target: its offsets were not changed."""


@dataclass(frozen=True)
class PartitionMove:
    """One partition of a failover plan (``topic`` is the target-side, renamed topic)."""

    topic: str
    partition: int
    current_offset: int | None
    new_offset: int
    checkpoint_upstream: int | None
    committed_upstream: int | None
    equivalent_offset: int | None
    replay_bound: int | None
    basis: str
    action: str  # "commit", "unchanged" or "skip (would rewind)"


@dataclass
class FailoverPlan:
    """What :func:`apply_failover` will write; ``group_state`` is the group's state on the target."""

    group: str
    source_alias: str
    target_config: dict[str, str]
    group_state: str
    partitions: list[PartitionMove] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.group_state not in {s.name for s in INACTIVE_STATES}

    @property
    def changes(self) -> list[PartitionMove]:
        return [p for p in self.partitions if p.action == "commit"]

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "source": self.source_alias, "group_state": self.group_state,
                "active": self.active, "partitions": [asdict(p) for p in self.partitions], "notes": self.notes}

    def render(self) -> str:
        """A fixed-width table of the plan."""
        header = ("TOPIC", "PARTITION", "CURRENT", "NEW", "REPLAY<=", "ACTION")
        rows = [(p.topic, str(p.partition), "-" if p.current_offset is None else str(p.current_offset),
                 str(p.new_offset), "-" if p.replay_bound is None else str(p.replay_bound), p.action)
                for p in self.partitions]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
        lines.append(f"group {self.group} on the target: {self.group_state}"
                     + (" (active members: offsets cannot be applied)" if self.active else ""))
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines) + "\n"


def replay_bound(checkpoint_downstream: int, committed_upstream: int, syncs: list[tuple[int, int]],
                 remote_end: int | None) -> tuple[int | None, int | None, str]:
    """``(E, E - D, basis)`` for one partition (module docstring); ``syncs`` sorted by upstream offset."""
    equivalent: int | None = None
    basis = "remote-end"
    index = bisect.bisect_right(syncs, (committed_upstream, float("inf"))) - 1
    if index >= 0:
        upstream, downstream = syncs[index]
        equivalent = downstream + (committed_upstream - upstream)
        basis = "offset-sync"
    if remote_end is not None:
        equivalent = remote_end if equivalent is None else min(equivalent, remote_end)
    if equivalent is None:
        return None, None, "unknown"
    return equivalent, max(0, equivalent - checkpoint_downstream), basis


def plan_failover(target_config: Mapping[str, str], source_alias: str, group: str, *,
                  source_config: Mapping[str, str] | None = None, offset_syncs_location: str = "source",
                  target_alias: str | None = None, allow_rewind: bool = False,
                  timeout_s: float = DEFAULT_TIMEOUT_S) -> FailoverPlan:
    """Plan moving ``group`` of ``source_alias`` onto the cluster of ``target_config`` (reads only).

    ``source_config`` (optional: the source may be gone) gives the group's committed offsets and, with
    ``offset_syncs_location="source"`` (MM2's default) and ``target_alias``, the offset syncs that make
    the replay bound tight. Partitions whose current target offset is already ahead are skipped unless
    ``allow_rewind``.
    """
    policy = policy_from_config(target_config)
    target_consumer = client_config(target_config, CONSUMER_CLIENT_PREFIX)
    target_admin = new_admin(_admin_config(target_config, ADMIN_CLIENT_PREFIX))
    plan = FailoverPlan(group, source_alias, dict(target_config), _group_state(target_admin, group, timeout_s))
    checkpoints = _checkpoints(target_consumer, policy.checkpoints_topic(source_alias), group, timeout_s)
    offset_map = load_offset_map(target_config, policy, source_alias, timeout_s)
    committed: dict[tuple[str, int], int] = {}
    syncs: dict[tuple[str, int], list[tuple[int, int]]] = {}
    source_timeout_s = min(timeout_s, SOURCE_TIMEOUT_S)  # in a real failover the source is often gone
    if source_config is not None:
        source_admin = new_admin(_admin_config(source_config, ADMIN_CLIENT_PREFIX))
        try:  # every partition the group committed, also those not checkpointed yet
            committed = committed_offsets(source_admin, group, None, source_timeout_s)
        except (KafkaException, TimeoutError) as exc:
            plan.notes.append(f"source cluster unreachable ({exc}); translating the checkpoints' upstream offsets")
            source_config = None
    mapped_topics = {t for t, _ in offset_map.partitions()}
    positions: dict[tuple[str, int], int] = {}  # remote partition -> the group's upstream position
    for (topic, partition), offset in committed.items():
        if topic in mapped_topics:
            positions[(policy.format_remote_topic(source_alias, topic), partition)] = offset
    for tp, checkpoint in checkpoints.items():
        positions.setdefault(tp, checkpoint.upstream_offset)
    if not positions:
        plan.notes.append(f"no checkpoints for group {group!r} in {policy.checkpoints_topic(source_alias)}")
        return plan
    current = committed_offsets(target_admin, group, list(positions), timeout_s)
    syncs_config = source_config if offset_syncs_location == "source" else target_config
    syncs_alias = target_alias if offset_syncs_location == "source" else source_alias
    if syncs_config is not None and syncs_alias is not None:
        try:
            syncs = _syncs(client_config(syncs_config, CONSUMER_CLIENT_PREFIX), policy.offset_syncs_topic(syncs_alias),
                           source_timeout_s if syncs_config is source_config else timeout_s)
        except (KafkaException, TimeoutError) as exc:
            plan.notes.append(f"offset syncs unreadable ({exc}); replay bounds run to the partition ends")
    ends = _ends(target_consumer, {tp: c.downstream_offset for tp, c in checkpoints.items()}, timeout_s)
    for (topic, partition), c in sorted(positions.items()):
        upstream_topic = policy.upstream_topic(topic) or topic
        cp = checkpoints.get((topic, partition))
        exact = offset_map.downstream((upstream_topic, partition), c)
        equivalent: int | None
        bound: int | None
        if exact is not None:  # the very record the group reads next: nothing replayed, nothing skipped
            new, equivalent, bound, basis = exact, exact, 0, "offset-map"
        elif cp is not None:
            new = cp.downstream_offset
            equivalent, bound, basis = replay_bound(new, c, sorted(syncs.get((upstream_topic, partition), [])),
                                                    ends.get((topic, partition)))
        else:
            continue  # committed on the source, but neither mapped nor checkpointed there
        now = current.get((topic, partition))
        plan.partitions.append(PartitionMove(topic, partition, now, new, None if cp is None else cp.upstream_offset,
                                             committed.get((upstream_topic, partition)), equivalent, bound,
                                             basis, _action(now, new, allow_rewind)))
    return plan


def _action(current: int | None, new: int, allow_rewind: bool) -> str:
    if current == new:
        return "unchanged"
    if current is not None and current > new and not allow_rewind:
        return "skip (would rewind)"
    return "commit"


def _checkpoints(consumer_config: Mapping[str, str], topic: str, group: str,
                 timeout_s: float) -> dict[tuple[str, int], Checkpoint]:
    """The group's newest checkpoint per remote partition."""
    checkpoints: dict[tuple[str, int], Checkpoint] = {}
    for msg in _read_topic(consumer_config, topic, timeout_s):
        try:
            cp = Checkpoint.from_record(msg.key(), msg.value())
        except MalformedRecordError:
            continue
        if cp.consumer_group_id == group:
            checkpoints[(cp.topic, cp.partition)] = cp
    return checkpoints


def _syncs(consumer_config: Mapping[str, str], topic: str,
           timeout_s: float) -> dict[tuple[str, int], list[tuple[int, int]]]:
    syncs: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for msg in _read_topic(consumer_config, topic, timeout_s):
        try:
            sync = OffsetSync.from_record(msg.key(), msg.value())
        except MalformedRecordError:
            continue
        syncs.setdefault(sync.topic_partition, []).append((sync.upstream_offset, sync.downstream_offset))
    return syncs


def apply_failover(plan: FailoverPlan, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[PartitionMove]:
    """Commit the plan's changes into the group on the target; returns what was written.

    Raises :class:`GroupActiveError` when the group has active members (checked again right before
    writing, and reported by the broker too), leaving its offsets untouched.
    """
    changes = plan.changes
    commit_if_inactive(plan.target_config, plan.group, {(p.topic, p.partition): p.new_offset for p in changes},
                       timeout_s)
    if changes:
        logger.info("Committed %d translated offsets for group %s", len(changes), plan.group)
    return changes


def commit_if_inactive(config: Mapping[str, str], group: str, offsets: Mapping[tuple[str, int], int],
                       timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Commit ``offsets`` for ``group`` on the cluster of ``config`` (a MirrorClient config), only while
    the group has no members there; raises :class:`GroupActiveError` otherwise (nothing written)."""
    admin = new_admin(_admin_config(config, ADMIN_CLIENT_PREFIX))
    state = _group_state(admin, group, timeout_s)
    if state not in {s.name for s in INACTIVE_STATES}:
        raise GroupActiveError(f"group {group!r} is {state}: stop its consumers first")
    if not offsets:
        return
    request = ConsumerGroupTopicPartitions(group, [KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()])
    try:
        result = admin.alter_consumer_group_offsets([request], request_timeout=timeout_s)[group].result(
            timeout=timeout_s)
    except KafkaException as exc:
        code = exc.args[0].code() if exc.args and hasattr(exc.args[0], "code") else None
        if code in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS):
            raise GroupActiveError(f"group {group!r} has active members: {exc}") from exc
        raise
    failed = [tp for tp in result.topic_partitions if tp.error is not None]
    if failed:
        raise KafkaException(failed[0].error)


# ---- reads ------------------------------------------------------------------------------------------------


def _group_state(admin: AdminClient, group: str, timeout_s: float) -> str:
    """``group``'s state on the cluster of ``admin``; a group it does not know is ``DEAD``. Read here, not
    with the runtime's ``TopicAdmin.describe_consumer_groups``: ``mirror.client`` may import only confluent-kafka."""
    future = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
    try:
        description = future.result(timeout=timeout_s)
    except KafkaException as exc:
        if exc.args and getattr(exc.args[0], "code", lambda: None)() == KafkaError.GROUP_ID_NOT_FOUND:
            return ConsumerGroupState.DEAD.name
        raise
    return str(description.state.name)


def _admin_config(config: Mapping[str, str], prefix: str) -> dict[str, str | int | float | bool]:
    return dict(client_config(config, prefix))


_READER_GROUP = "mirror-failover-reader"  # never joined: assign() only, no commits


def _read_topic(config: Mapping[str, str], topic: str, timeout_s: float) -> list[Message]:
    """Every record of ``topic`` up to its end; [] when it does not exist."""
    return read_topic(config, topic, timeout_s, _READER_GROUP)


def _ends(config: Mapping[str, str], positions: Mapping[tuple[str, int], int],
          timeout_s: float) -> dict[tuple[str, int], int]:
    """Each partition's end from a fetch at the given position (never ListOffsets)."""
    if not positions:
        return {}
    consumer = reader_consumer({**config, "max.partition.fetch.bytes": "65536"}, _READER_GROUP)
    try:
        metadata = consumer.list_topics(timeout=timeout_s).topics
        positions = {(t, p): o for (t, p), o in positions.items()
                     if t in metadata and metadata[t].error is None and p in metadata[t].partitions}
        return end_offsets(consumer, positions, timeout_s, on_error=ignore_error, missing_ok=True)
    finally:
        consumer.close()
