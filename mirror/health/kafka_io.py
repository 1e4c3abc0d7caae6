"""The few Kafka reads the health probe needs, done the way that is exact on every broker.

A partition's end comes from two places. :meth:`ClusterIO.latest_offsets` asks ListOffsets "latest" for
thousands of partitions in a few requests per broker: that is what Kafka calls the end (the high
watermark), and at thousands of partitions it is the only read that stays cheap. :meth:`ClusterIO.probe` takes the end
from a **fetch response high watermark** (``enable.partition.eof`` and
``get_watermark_offsets(cached=True)`` after a fetch, through :mod:`connect_runtime.clients.log_reader`),
and the same fetch returns the first unread record, whose timestamp is the lag in seconds. The probe asks
ListOffsets first and fetches only the partitions whose answer does not settle their lag
(:func:`mirror.health.probe.doubtful_partitions` says which): a fetch is exact also on brokers whose ListOffsets
"latest" is not (Tansu answers the base offset of the last batch + 1, below the end when that batch holds
several records), so those answers are never the last word where they disagree with what was replicated.

Three consumers per cluster, one for :meth:`ClusterIO.read` (whole logs, full-size fetches), one for
:meth:`ClusterIO.probe` (one small fetch per partition) and one for :meth:`ClusterIO.latest_offsets` (which
neither assigns nor fetches), are reused for every read (``assign`` replaces the assignment and restarts the
fetch state, so each read ends with a fresh end-of-partition event).
Nothing here joins a group or commits: the group id only satisfies librdkafka. Group states and
committed offsets are read through the runtime's :class:`~connect_runtime.clients.admin.TopicAdmin`, as
every other admin read is.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.clients.factory import new_admin, new_consumer
from connect_runtime.clients.log_reader import end_offsets, ignore_error, read_to_end

logger = logging.getLogger(__name__)

TP = tuple[str, int]
#: librdkafka's default max.partition.fetch.bytes, the reads' fetch size unless the user sets one
READ_FETCH_BYTES = 1_048_576
#: partitions per ListOffsets call (:meth:`ClusterIO.latest_offsets`)
LIST_OFFSETS_CHUNK = 1000
#: ListOffsets calls of one cluster under way at once (:meth:`ClusterIO.latest_offsets`)
LIST_OFFSETS_PARALLEL = 2
#: ListOffsets' timestamp for "latest": the answer is the partition's end
LATEST_TIMESTAMP = OFFSET_END
#: where :meth:`ClusterIO.read` starts a partition not read yet (an offset, not the logical OFFSET_BEGINNING)
FIRST_OFFSET = 0


@dataclass(frozen=True)
class PartitionProbe:
    """What one fetch told about a partition: its end and the first record at or after the position."""

    end_offset: int
    first_offset: int | None
    first_timestamp_ms: int | None
    #: the log start offset the fetch response carried (None when the client had none): records below it
    #: are gone (retention, DeleteRecords)
    start_offset: int | None = None


class LatestOffsets:
    """ListOffsets answers on their way (:meth:`ClusterIO.latest_offsets`): one per call."""

    def __init__(self, calls: list[Future[dict[TP, int]]]) -> None:
        self._calls = calls

    def result(self) -> dict[TP, int]:
        """Each partition's end. A partition the cluster answered with an error (it does not exist, no leader),
        or not within the timeout, is left out: the caller fetches it. Raises nothing a broker answers."""
        result: dict[TP, int] = {}
        for call in self._calls:
            result.update(call.result())
        return result


class ClusterIO:
    """Lazily built consumer + admin client of one cluster, for read-only probing. Not thread-safe."""

    def __init__(self, alias: str, consumer_config: Mapping[str, str], admin_config: Mapping[str, str]) -> None:
        self.alias = alias
        self._consumer_config = {
            **consumer_config,
            "group.id": f"mirror-health-{uuid.uuid4().hex[:8]}",  # never joined, never committed
            "enable.auto.commit": "false",
            "enable.partition.eof": "true",
            "auto.offset.reset": "earliest",
            "allow.auto.create.topics": "false",
            "fetch.wait.max.ms": "50",  # an empty fetch answers quickly: reads end at EOF sooner
            "max.partition.fetch.bytes": "65536",  # only the first record of a lagging partition matters
            "isolation.level": "read_uncommitted",
        }
        #: :meth:`read` hands over whole logs: a fetch of the user's size (librdkafka's 1 MiB by default), as
        #: at 64 KiB an internal topic of thousands of records took one fetch and one consume() wait per 64 KiB
        self._reader_config = {**self._consumer_config, "max.partition.fetch.bytes":
                               consumer_config.get("max.partition.fetch.bytes", str(READ_FETCH_BYTES))}
        self._admin_config = {**admin_config, "allow.auto.create.topics": "false"}
        self._consumer: Consumer | None = None
        self._reader: Consumer | None = None
        #: the consumer of :meth:`latest_offsets`, never assigned: its ListOffsets calls (and the metadata of
        #: their leaders) go on a connection of their own, and a :meth:`probe` that shared the probe consumer's
        #: waited behind them (0.7 s for one partition, Kafka 4.4, 2,000 topics x 4 partitions)
        self._ends_consumer: Consumer | None = None
        self._admin: AdminClient | None = None
        self._ends: ThreadPoolExecutor | None = None

    @property
    def consumer(self) -> Consumer:
        """The consumer of :meth:`probe`: one small fetch per partition."""
        if self._consumer is None:
            self._consumer = new_consumer(self._consumer_config)
        return self._consumer

    @property
    def reader(self) -> Consumer:
        """The consumer of :meth:`read`: every record to the end."""
        if self._reader is None:
            self._reader = new_consumer(self._reader_config)
        return self._reader

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = new_admin(self._admin_config)
        return self._admin

    def close(self) -> None:
        if self._ends is not None:
            self._ends.shutdown()  # its ListOffsets calls use the ends consumer
            self._ends = None
        for consumer in (self._consumer, self._reader, self._ends_consumer):
            if consumer is not None:
                consumer.close()
        self._consumer = self._reader = self._ends_consumer = None
        self._admin = None

    def topics(self, timeout_s: float, names: Iterable[str] | None = None) -> dict[str, int]:
        """Topic name -> partition count of every topic, or of those of ``names`` that exist, asked one by one:
        a cluster's whole metadata is thousands of partitions to build objects for (raises KafkaException when
        the cluster cannot be reached)."""
        if names is None:
            metadatas = [self.admin.list_topics(timeout=timeout_s)]
        else:
            metadatas = [self.admin.list_topics(topic=name, timeout=timeout_s) for name in dict.fromkeys(names)]
        return {name: len(t.partitions) for metadata in metadatas for name, t in metadata.topics.items()
                if t.error is None}

    def latest_offsets(self, partitions: Iterable[TP], timeout_s: float) -> LatestOffsets:
        """Ask each partition's end by ListOffsets "latest" (read_uncommitted, the high watermark), on a thread
        of this cluster's own, so other reads go on until :meth:`LatestOffsets.result` is called.

        The ends are asked through a consumer's ``offsets_for_times`` with ListOffsets' timestamp for
        "latest" (-1, librdkafka's ``OFFSET_END``): one blocking call answers a list of plain partitions,
        built in C with the GIL released while it waits. The admin client's ``list_offsets`` answers a
        Future and a result object per partition, each set from librdkafka's thread with the GIL held (at
        2,000 topics x 4 partitions, 0.21-0.24 CPU-seconds per cluster against 0.04-0.08 for the same
        answers, librdkafka mock cluster). librdkafka fails such a call as a whole
        when one of its partitions is answered with an error: its partitions are then asked again through
        the admin client, which answers each on its own.

        The partitions go in calls of at most :data:`LIST_OFFSETS_CHUNK`: librdkafka's time for one call grows
        faster than its partitions (8,000 in one call took 0.77 s against a local broker, 8 calls of 1,000
        0.27 s), so a flow of thousands of partitions costs a few requests per broker, never one per
        partition. :data:`LIST_OFFSETS_PARALLEL` calls are under way at once, and at most that many calls'
        answers are alive at a time: each call waits for its leaders' metadata and then for its answer, and
        the 8 calls of 2,000 topics x 4 partitions one after the other end after ``mirror status`` has
        read everything else.
        """
        if self._ends_consumer is None:  # built here, on the caller's thread
            self._ends_consumer = new_consumer(self._consumer_config)
        consumer = self._ends_consumer
        if self._ends is None:
            self._ends = ThreadPoolExecutor(max_workers=LIST_OFFSETS_PARALLEL,
                                            thread_name_prefix=f"mirror-health-ends-{self.alias}")
        wanted = list(dict.fromkeys(partitions))
        deadline = time.monotonic() + timeout_s
        return LatestOffsets([self._ends.submit(self._ask_latest, consumer, wanted[start:start + LIST_OFFSETS_CHUNK],
                                                deadline)
                              for start in range(0, len(wanted), LIST_OFFSETS_CHUNK)])

    def _ask_latest(self, consumer: Consumer, chunk: list[TP], deadline: float) -> dict[TP, int]:
        """The answered ends of one call; a partition answered with an error, or not answered by ``deadline``
        (one for all calls of a :meth:`latest_offsets`), is left out."""
        result: dict[TP, int] = {}
        left = deadline - time.monotonic()
        if left <= 0:
            logger.debug("%s: no time left to ask %d partitions' ends by ListOffsets", self.alias, len(chunk))
            return result
        try:
            answered = consumer.offsets_for_times([TopicPartition(topic, partition, LATEST_TIMESTAMP)
                                                   for topic, partition in chunk], timeout=left)
        except KafkaException as exc:
            # librdkafka fails the whole call when one partition is answered with an error (a topic deleted
            # since its metadata was read), or when the call is not answered in time
            logger.debug("%s: ListOffsets of %d partitions failed: %s", self.alias, len(chunk), exc)
            self._ask_latest_by_admin(chunk, deadline, result)
            return result
        for tp in answered:
            if tp.error is None and tp.offset >= 0:
                result[(tp.topic, tp.partition)] = tp.offset
        return result

    def _ask_latest_by_admin(self, chunk: list[TP], deadline: float, result: dict[TP, int]) -> None:
        """The ends of a call that failed, asked again through the admin client, whose answer is a Future per
        partition: a partition answered with an error is left out alone."""
        left = deadline - time.monotonic()
        if left <= 0:
            return
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        try:
            futures = self.admin.list_offsets({TopicPartition(topic, partition): latest for topic, partition in chunk},
                                              isolation_level=IsolationLevel.READ_UNCOMMITTED, request_timeout=left)
        except KafkaException as exc:
            logger.debug("%s: ListOffsets refused: %s", self.alias, exc)
            return
        for tp, future in futures.items():
            try:
                offset = future.result(timeout=max(0.0, deadline - time.monotonic())).offset
            except (KafkaException, FutureTimeout) as exc:
                logger.debug("%s: no end for %s-%s by ListOffsets: %s", self.alias, tp.topic, tp.partition, exc)
                continue
            if offset >= 0:
                result[(tp.topic, tp.partition)] = offset

    def read(self, positions: dict[TP, int], timeout_s: float) -> tuple[list[Message], bool]:
        """Every record from ``positions`` to each partition's current end; ``positions`` advance in place.

        A position may be ``OFFSET_BEGINNING``: such a partition is read from offset 0, which a broker whose
        log starts later answers as out of range and the consumer then reads from the log start
        (``auto.offset.reset=earliest``). A logical offset would make the consumer look it up by ListOffsets
        first, and librdkafka retries that lookup only 500 ms later when it does not know the partition's
        leader yet, as on a fresh consumer's first assignment: half a second of waiting in every ``mirror
        status``, whose clients are all fresh. Returns the records and whether every partition reached its
        end (or does not exist) before the timeout (a partial read is still used: the next read continues
        from it).
        """
        if not positions:
            return [], True
        starts = {tp: FIRST_OFFSET if offset == OFFSET_BEGINNING else offset for tp, offset in positions.items()}
        records: list[Message] = []

        def collect(batch: list[Message]) -> None:
            records.extend(batch)
            for msg in batch:
                positions[(msg.topic() or "", msg.partition() or 0)] = (msg.offset() or 0) + 1

        try:
            reached = read_to_end(self.reader, starts, collect, timeout_s, on_error=self._retry,
                                  missing_ok=True)
        finally:
            self.reader.unassign()
        for key, end in reached.ends.items():
            if end >= 0:
                positions[key] = max(positions[key], end)
        return records, reached.complete

    def probe(self, positions: Mapping[TP, int], timeout_s: float) -> dict[TP, PartitionProbe]:
        """For each partition: its end offset and the first record at or after the given position.

        The end offset is the high watermark of the fetch response. Partitions that did not answer
        before the timeout, or do not exist, are missing from the result.
        """
        if not positions:
            return {}
        first: dict[TP, Message] = {}

        def keep_first(msg: Message) -> None:
            first[(msg.topic() or "", msg.partition() or 0)] = msg

        starts: dict[TP, int] = {}
        try:
            ends = end_offsets(self.consumer, {tp: o if o >= 0 else OFFSET_BEGINNING for tp, o in positions.items()},
                               timeout_s, on_first=keep_first, on_error=ignore_error, missing_ok=True)
            for key in ends:  # cached: the fetch responses above carried each partition's log start
                low, _ = self.consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
                if low >= 0:
                    starts[key] = low
        finally:
            self.consumer.unassign()
        result: dict[TP, PartitionProbe] = {}
        for key, end in ends.items():
            msg = first.get(key)
            result[key] = (PartitionProbe(end, None, None, starts.get(key)) if msg is None
                           else PartitionProbe(end, msg.offset() or 0, _timestamp(msg), starts.get(key)))
        return result

    def _retry(self, error: KafkaError) -> None:
        logger.debug("%s: read error (retrying until the deadline): %s", self.alias, error)

    def _topic_admin(self, timeout_s: float) -> TopicAdmin:
        """The runtime's admin operations over this cluster's admin client, each bounded by ``timeout_s``."""
        return TopicAdmin(self._admin_config, client=self.admin, timeout_s=timeout_s)

    def group_states(self, groups: list[str], timeout_s: float) -> dict[str, str]:
        """Each group's state name on this cluster (``EMPTY``, ``STABLE``, ``DEAD``...); a group the cluster
        answers with an error reads as ``DEAD``. Raises ConnectError when the cluster does not answer."""
        return self._topic_admin(timeout_s).describe_consumer_groups(groups, refused_state="DEAD")

    def committed_offsets(self, timeout_s: float) -> dict[str, dict[TP, int]]:
        """Every consumer group's committed offsets (group -> (topic, partition) -> offset); raises
        ConnectError when they cannot be read."""
        admin = self._topic_admin(timeout_s)
        committed = admin.list_consumer_group_offsets(admin.list_consumer_groups())
        return {group: {tp: offset for tp, (offset, _) in offsets.items()} for group, offsets in committed.items()}


def _timestamp(msg: Message) -> int | None:
    kind, value = msg.timestamp()
    from confluent_kafka import TIMESTAMP_NOT_AVAILABLE

    return None if kind == TIMESTAMP_NOT_AVAILABLE or value < 0 else int(value)
