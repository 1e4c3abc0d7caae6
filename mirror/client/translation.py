"""Batch offset translation between a source cluster and its replica, both ways, from Python.

One :class:`OffsetTranslator` reads the flow's state on the target once (the exact offset map, the
checkpoints and, when reachable, the offset syncs) and then answers many questions without further
reads of those topics::

    with OffsetTranslator(target_config, source_alias="A") as t:
        t.to_target({("orders", 0): 777, ("orders", 1): 12})      # failover: positions on A -> on B
        t.to_source({("A.orders", 0): 760})                       # failback: positions on B -> on A
        t.groups_to_target(["billing", "audit"], source_config=a) # committed on A (or checkpointed)
        t.groups_to_source(["billing"])                           # committed on B, for records of A
        t.at_time(1_700_000_000_000, ["A.orders"])                # first record at or after a time

Every answer is a :class:`Translation` that says how it was obtained (``basis``): ``offset-map``
(exact: the position of the very record the consumer reads next), ``offset-sync`` (MM2's rule, only
where the map has no entry: no later than the true position, so records are replayed, never skipped)
or ``none`` (untranslatable). Topic names follow the replication policy: source-side names for
positions on the source, remote names (``A.orders``) for positions on the target.

Configs are MirrorClient configs (see :mod:`mirror.client.mirror_client`).
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from connect_runtime.clients.factory import new_admin, new_consumer
from connect_runtime.clients.log_reader import end_offsets, ignore_error, read_to_end
from mirror.client.mirror_client import ADMIN_CLIENT_PREFIX, CONSUMER_CLIENT_PREFIX, DEFAULT_TIMEOUT_S, client_config
from mirror.client.models import Checkpoint, MalformedRecordError, OffsetSync
from mirror.client.offset_map import OffsetMap, offset_map_topic
from mirror.client.replication_policy import ReplicationPolicy, policy_from_config

logger = logging.getLogger(__name__)

TP = tuple[str, int]


def committed_offsets(admin: AdminClient, group: str, partitions: list[TP] | None,
                      timeout_s: float) -> dict[TP, int]:
    """``group``'s committed offsets of ``partitions`` (None: of every partition it committed).

    The runtime's ``TopicAdmin.list_consumer_group_offsets`` reads the same for the runtime and the health
    probe; ``mirror.client`` may import only confluent-kafka, so the failover and translation APIs read
    through this one copy."""
    request = ConsumerGroupTopicPartitions(
        group, None if partitions is None else [KafkaTopicPartition(t, p) for t, p in partitions])
    answer = admin.list_consumer_group_offsets([request], request_timeout=timeout_s)[group].result(timeout=timeout_s)
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or []
            if tp.error is None and tp.offset >= 0}


@dataclass(frozen=True)
class Translation:
    """One position on both clusters: ``upstream`` on ``source_topic``, ``downstream`` on ``remote_topic``."""

    source_topic: str
    remote_topic: str
    partition: int
    upstream: int | None
    downstream: int | None
    basis: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reader_consumer(config: Mapping[str, str], group_id: str = "mirror-translation-reader") -> Consumer:
    """An assign-only consumer for reading internal topics to their end (joins no group, commits nothing)."""
    conf = dict(config)
    conf.setdefault("group.id", group_id)
    conf.update({"enable.auto.commit": "false", "enable.partition.eof": "true", "auto.offset.reset": "earliest",
                 "fetch.wait.max.ms": "50"})
    return new_consumer(conf)


def read_topic(config: Mapping[str, str], topic: str, timeout_s: float,
               group_id: str = "mirror-translation-reader") -> list[Any]:
    """Every record of ``topic`` up to its end (fetch high watermark); [] when it does not exist."""
    consumer = reader_consumer(config, group_id)
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []
        records: list[Any] = []
        reached = read_to_end(consumer, dict.fromkeys(((topic, p) for p in metadata.partitions), OFFSET_BEGINNING),
                              records.extend, timeout_s, on_error=_raise_fatal, missing_ok=True)
        if not reached.complete:
            logger.warning("Timed out reading %s; using what was read", topic)
        return records
    finally:
        consumer.close()


def _raise_fatal(err: KafkaError) -> None:
    """Only a fatal error ends a read early; librdkafka recovers from the others by itself."""
    if err.fatal():
        raise KafkaException(err)


def load_offset_map(target_config: Mapping[str, str], policy: ReplicationPolicy, source_alias: str,
                    timeout_s: float = DEFAULT_TIMEOUT_S) -> OffsetMap:
    """The flow's exact offset map, read from the target (empty when the topic does not exist)."""
    return _read_offset_map(target_config, policy, source_alias, timeout_s)[0]


def _read_offset_map(target_config: Mapping[str, str], policy: ReplicationPolicy, source_alias: str,
                     timeout_s: float) -> tuple[OffsetMap, int]:
    """The map and the offset after the last record read (where following it goes on)."""
    offset_map, position = OffsetMap(), 0
    for msg in read_topic(client_config(target_config, CONSUMER_CLIENT_PREFIX),
                          offset_map_topic(policy, source_alias), timeout_s):
        offset_map.add_record(msg.key(), msg.value())
        position = (msg.offset() or 0) + 1
    return offset_map, position


def mm2_rule(syncs: list[tuple[int, int]], upstream: int) -> int | None:
    """MM2's translation with every sync known: one past the newest sync at or before ``upstream``."""
    index = bisect.bisect_right(syncs, (upstream, 2**63)) - 1
    if index < 0:
        return None
    sync_up, sync_down = syncs[index]
    return sync_down + (0 if sync_up == upstream else 1)


class OffsetTranslator:
    """Reads a flow's translation state once; translates positions, groups and times in batches."""

    def __init__(self, target_config: Mapping[str, str], source_alias: str, *,
                 offset_syncs_config: Mapping[str, str] | None = None, offset_syncs_topic: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """``offset_syncs_config``/``offset_syncs_topic``: where MM2's offset syncs are (for the fallback);
        by default ``mm2-offset-syncs.<source>.internal`` on the target (location ``target``)."""
        self.policy = policy_from_config(target_config)
        self.source_alias = source_alias
        self._target_config = dict(target_config)
        self._timeout_s = timeout_s
        self.offset_map, self._map_position = _read_offset_map(target_config, self.policy, source_alias, timeout_s)
        self._map_follower: Consumer | None = None
        self._syncs: dict[TP, list[tuple[int, int]]] = {}
        syncs_config = offset_syncs_config if offset_syncs_config is not None else target_config
        topic = offset_syncs_topic or self.policy.offset_syncs_topic(source_alias)
        try:
            for msg in read_topic(client_config(syncs_config, CONSUMER_CLIENT_PREFIX), topic, timeout_s):
                try:
                    sync = OffsetSync.from_record(msg.key(), msg.value())
                except MalformedRecordError:
                    continue
                self._syncs.setdefault(tuple(sync.topic_partition), []).append(  # type: ignore[arg-type]
                    (sync.upstream_offset, sync.downstream_offset))
        except (KafkaException, TimeoutError) as exc:
            logger.warning("Offset syncs in %s unreadable (%s): translating through the offset map only", topic, exc)
        for syncs in self._syncs.values():
            syncs.sort()
        self._admin: AdminClient | None = None

    def __enter__(self) -> OffsetTranslator:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._admin = None
        follower, self._map_follower = self._map_follower, None
        if follower is not None:
            follower.close()

    def follow_offset_map(self, wait_s: float) -> int:
        """Add the map runs written since the last read, waiting up to ``wait_s`` for the first of them;
        returns how many were read. Returns as soon as any arrived (within the reader's fetch wait, 50 ms),
        which is how ``mirror failover`` sees the lag drain at once, without reading the map again."""
        follower = self._map_follower
        if follower is None:
            follower = self._map_follower = reader_consumer(client_config(self._target_config,
                                                                          CONSUMER_CLIENT_PREFIX))
            follower.assign([KafkaTopicPartition(offset_map_topic(self.policy, self.source_alias), 0,
                                                 self._map_position)])
        deadline = time.monotonic() + wait_s
        added = 0
        while not added:
            batch = follower.consume(1000, 0)
            if not batch:  # consume(n, timeout) waits for n messages: wait for one, take what came with it
                first = follower.poll(max(0.0, deadline - time.monotonic()))
                batch = [] if first is None else [first, *follower.consume(999, 0)]
            for message in batch:  # events (end of partition, topic not there yet) are no runs: wait on
                error = message.error()
                if error is None:
                    self.offset_map.add_record(message.key(), message.value())
                    self._map_position = (message.offset() or 0) + 1
                    added += 1
                elif error.fatal():
                    raise KafkaException(error)
            if time.monotonic() >= deadline:
                break
        return added

    def _remote(self, source_topic: str) -> str:
        return self.policy.format_remote_topic(self.source_alias, source_topic)

    def _upstream_topic(self, remote_topic: str) -> str:
        return self.policy.upstream_topic(remote_topic) or remote_topic

    # ---- positions ----

    def to_target(self, positions: Mapping[TP, int]) -> dict[TP, Translation]:
        """Upstream positions (source-side topic names) -> downstream positions, keyed like the input."""
        result = {}
        for (topic, partition), upstream in positions.items():
            exact = self.offset_map.downstream((topic, partition), upstream)
            fallback = mm2_rule(self._syncs.get((topic, partition), []), upstream)
            if exact is not None and (fallback is None or exact >= fallback):
                downstream, basis = exact, "offset-map"
            elif fallback is not None:
                downstream, basis = fallback, "offset-sync"
            else:
                downstream, basis = None, "none"
            result[(topic, partition)] = Translation(topic, self._remote(topic), partition, upstream, downstream,
                                                     basis)
        return result

    def to_source(self, positions: Mapping[TP, int]) -> dict[TP, Translation]:
        """Downstream positions (remote topic names) -> upstream positions, keyed like the input."""
        result = {}
        for (remote, partition), downstream in positions.items():
            source_topic = self._upstream_topic(remote)
            upstream = self.offset_map.upstream((source_topic, partition), downstream)
            basis = "offset-map"
            if upstream is None:  # MM2's syncs reversed: the newest sync at or before the position
                syncs = sorted((d, u) for u, d in self._syncs.get((source_topic, partition), []))
                index = bisect.bisect_right(syncs, (downstream, 2**63)) - 1
                if index >= 0:
                    sync_down, sync_up = syncs[index]
                    upstream, basis = sync_up + (0 if sync_down == downstream else 1), "offset-sync"
                else:
                    basis = "none"
            result[(remote, partition)] = Translation(source_topic, remote, partition, upstream, downstream, basis)
        return result

    # ---- groups ----

    def _admin_of(self, config: Mapping[str, str]) -> AdminClient:
        return new_admin(client_config(config, ADMIN_CLIENT_PREFIX))

    def committed(self, config: Mapping[str, str], groups: Iterable[str]) -> dict[str, dict[TP, int]]:
        """Each group's committed offsets on the cluster of ``config`` (one request per group)."""
        admin = self._admin_of(config)
        return {group: committed_offsets(admin, group, None, self._timeout_s) for group in groups}

    def checkpointed(self, groups: Iterable[str]) -> dict[str, dict[TP, Checkpoint]]:
        """The newest checkpoint per (group, remote partition) in ``<source>.checkpoints.internal``."""
        wanted = set(groups)
        result: dict[str, dict[TP, Checkpoint]] = {g: {} for g in wanted}
        for msg in read_topic(client_config(self._target_config, CONSUMER_CLIENT_PREFIX),
                              self.policy.checkpoints_topic(self.source_alias), self._timeout_s):
            try:
                cp = Checkpoint.from_record(msg.key(), msg.value())
            except MalformedRecordError:
                continue
            if cp.consumer_group_id in wanted:
                result[cp.consumer_group_id][(cp.topic, cp.partition)] = cp
        return result

    def groups_to_target(self, groups: Iterable[str], source_config: Mapping[str, str] | None = None
                         ) -> dict[str, dict[TP, Translation]]:
        """Each group's position on the target (keyed by remote partition), for a failover.

        From the offsets the group committed on the source when ``source_config`` is given and the
        source answers; else from the upstream offsets of its newest checkpoints.
        """
        groups = list(groups)
        upstream: dict[str, dict[TP, int]] = {}
        if source_config is not None:
            try:
                upstream = self.committed(source_config, groups)
            except (KafkaException, TimeoutError) as exc:
                logger.warning("Source unreachable (%s): translating the checkpoints' upstream offsets", exc)
        if not upstream:
            upstream = {g: {(self._upstream_topic(t), p): cp.upstream_offset for (t, p), cp in cps.items()}
                        for g, cps in self.checkpointed(groups).items()}
        replicated = {t for t, _ in self.offset_map.partitions()} | {t for t, _ in self._syncs}
        return {g: {(tr.remote_topic, tr.partition): tr
                    for tr in self.to_target({tp: o for tp, o in offsets.items() if tp[0] in replicated}).values()}
                for g, offsets in upstream.items()}

    def groups_to_source(self, groups: Iterable[str]) -> dict[str, dict[TP, Translation]]:
        """Each group's position on the source (keyed by source partition), for a failback: the offsets
        it committed on the target for the remote topics of this source."""
        committed = self.committed(self._target_config, groups)
        result = {}
        for group, offsets in committed.items():
            mine = {tp: o for tp, o in offsets.items() if self.policy.topic_source(tp[0]) == self.source_alias}
            result[group] = {(tr.source_topic, tr.partition): tr for tr in self.to_source(mine).values()}
        return result

    # ---- time ----

    def at_time(self, timestamp_ms: int, remote_topics: Iterable[str]) -> dict[TP, Translation]:
        """Per partition of ``remote_topics``: the first record with a timestamp at or after
        ``timestamp_ms`` on the target, and its position on the source.

        Found by a binary search over the records themselves (about log2(N) one-record fetches), not
        the broker's time index, so it does not depend on the broker's ``offsets_for_times``; it assumes
        timestamps do not decrease within a partition (CreateTime from one producer, LogAppendTime).
        """
        consumer = reader_consumer(client_config(self._target_config, CONSUMER_CLIENT_PREFIX))
        try:
            metadata = consumer.list_topics(timeout=self._timeout_s).topics
            positions = {(t, p): OFFSET_BEGINNING for t in remote_topics if t in metadata
                         for p in metadata[t].partitions}
            firsts: dict[TP, int] = {}

            def first(message: Any) -> None:
                firsts[(message.topic() or "", message.partition() or 0)] = message.offset() or 0

            ends = end_offsets(consumer, positions, self._timeout_s, on_first=first, on_error=ignore_error,
                               missing_ok=True)
            consumer.unassign()
            found = {tp: self._search(consumer, tp, firsts.get(tp, end), end, timestamp_ms)
                     for tp, end in ends.items()}
        finally:
            consumer.close()
        return self.to_source(found)

    def _search(self, consumer: Consumer, tp: TP, low: int, high: int, timestamp_ms: int) -> int:
        """The first offset in ``[low, high]`` whose record's timestamp is >= ``timestamp_ms`` (``high``: none)."""
        while low < high:
            middle = (low + high) // 2
            record = self._record_at(consumer, tp, middle)
            if record is None:
                high = middle
                continue
            offset, ts = record
            if ts >= timestamp_ms:
                high = middle
            else:
                low = offset + 1
        return low

    def _record_at(self, consumer: Consumer, tp: TP, offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``offset``, None at the end."""
        consumer.assign([KafkaTopicPartition(tp[0], tp[1], offset)])
        try:
            while True:
                messages = consumer.consume(1, self._timeout_s)
                if not messages:
                    raise TimeoutError(f"no answer reading {tp[0]}-{tp[1]} at {offset}")
                message = messages[0]
                error = message.error()
                if error is None:
                    return message.offset() or 0, message.timestamp()[1]
                if error.code() == KafkaError._PARTITION_EOF:
                    return None
                if error.fatal():
                    raise KafkaException(error)
        finally:
            consumer.unassign()
