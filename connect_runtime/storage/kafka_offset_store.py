"""KafkaOffsetStore: source offsets in Connect's ``offset.storage.topic``, byte-compatible with Java.

Records are exactly Connect's (docs/migration.md): key ``[connector, partition]`` and value the
offset map, both compact JSON (``serialize_key`` / ``serialize_value``), a null value (tombstone)
forgets a partition. Writes use librdkafka's ``murmur2_random`` partitioner, which places a key on the
partition Java's default partitioner would, so that compaction sees Java's and our writes of one key
in the same partition.

Fast start. Java Connect decodes every record of the topic while reading it at start, which users
report takes minutes for millions of records. Here the log is read as raw bytes only: key bytes ->
value bytes, the last record wins and a tombstone removes the key. No JSON is parsed while loading. A
connector's keys are decoded the first time that connector is asked for (one pass over the distinct
keys to group them by connector, then a ``json.loads`` per key of that connector only), and a value
is decoded when it is read. Only distinct keys cost memory, not the records that were overwritten.

Partitions are matched by value, not by the byte order of their JSON (:func:`partition_id`), because
a Java worker's HashMap may order a map's fields differently from ours.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import Message

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.api.records import SourceMap
from connect_runtime.storage.kafka_log import LOG_IDLE_REST_S, KafkaBasedLog, LogRecord
from connect_runtime.storage.memory import partition_id
from connect_runtime.storage.offset_store import OffsetMap, OffsetStore, serialize_key, serialize_value

logger = logging.getLogger(__name__)


def connector_of(key: bytes) -> str | None:
    """The connector name of an offsets-topic key, without parsing the whole key when possible.

    ``["name",{...}]``: the name is the text up to the first ``",`` unless it holds an escape, in which
    case (and for anything unusual) the key is parsed as JSON. None if it is not a Connect key.
    """
    if key.startswith(b'["'):
        end = key.find(b'",', 2)
        if end > 0 and b"\\" not in key[2:end]:
            try:
                return key[2:end].decode()
            except UnicodeDecodeError:
                return None
    decoded = _decode_key(key)
    return decoded[0] if decoded is not None else None


def _decode_key(key: bytes) -> tuple[str, dict[str, Any]] | None:
    try:
        decoded = json.loads(key)
    except ValueError:
        return None
    if (isinstance(decoded, list) and len(decoded) == 2 and isinstance(decoded[0], str)
            and isinstance(decoded[1], dict)):
        return decoded[0], decoded[1]
    return None


def murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2`` (signed 32-bit result)."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4:i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail, rest = length & ~3, length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """The partition Java's producer (``BuiltInPartitioner.partitionForKey``) gives ``key``:
    ``toPositive(murmur2(key)) % partitions``.

    Why by hand: an exactly-once task writes its source offsets with its own transactional producer, whose
    partitioner is librdkafka's default (not Java's); the offsets must land on the partition Java's producer
    (and the store's own writer, whose librdkafka ``murmur2_random`` is this) would pick, so that compaction
    keeps one record per key (:meth:`KafkaOffsetStore.records_for`).
    """
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class KafkaOffsetStore:
    """The worker's :class:`~connect_runtime.storage.offset_store.OffsetStore` on a compacted topic.

    ``producer_config`` / ``consumer_config`` / ``admin_config`` are librdkafka configs (see
    ``connect_runtime.clients.factory``). ``partitions`` / ``replication_factor`` / ``topic_config``
    apply when the topic is created (Connect: ``offset.storage.partitions`` 25,
    ``offset.storage.replication.factor`` 3).
    """

    def __init__(self, topic: str, *, producer_config: Mapping[str, str], consumer_config: Mapping[str, str],
                 admin_config: Mapping[str, str], partitions: int = 25, replication_factor: int = 3,
                 topic_config: Mapping[str, str] | None = None) -> None:
        self.topic = topic
        producer = {**producer_config, "partitioner": "murmur2_random"}  # Java's default placement
        self._log = KafkaBasedLog(topic, producer_config=producer, consumer_config=consumer_config,
                                  admin_config=admin_config, consumed=self._apply_record,
                                  partitions=partitions, replication_factor=replication_factor,
                                  topic_config=topic_config, idle_rest_s=LOG_IDLE_REST_S)
        self._log.use_batch_callback(self._apply_batch)
        self._lock = threading.Lock()
        self._raw: dict[bytes, bytes] = {}
        #: connector -> its raw keys (a dict used as an ordered set); None until a connector is first
        #: asked for, so that loading only touches ``_raw``.
        self._keys_by_connector: dict[str, dict[bytes, None]] | None = None
        #: connector -> partition_id -> raw key, for connectors asked for at least once.
        self._decoded: dict[str, dict[str, bytes]] = {}

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, timeout_s: float = 120.0) -> None:
        began = time.monotonic()
        self._log.start(timeout_s)
        with self._lock:
            keys = len(self._raw)
        logger.info("Loaded %d source-partition offsets from topic %s in %.2fs", keys, self.topic,
                    time.monotonic() - began)

    def stop(self) -> None:
        self._log.stop()

    def refresh(self, timeout_s: float = 30.0) -> None:
        self._log.read_to_end(timeout_s)

    # -- reading the log (log thread) -----------------------------------------------------------

    def _apply_batch(self, messages: list[Message]) -> None:
        raw = self._raw
        with self._lock:
            if self._keys_by_connector is None:
                # Bulk load: nothing decoded yet, so only the raw map changes. This is the hot loop.
                for msg in messages:
                    if msg.error() is None:
                        key = msg.key()
                        if key is None:
                            continue
                        value = msg.value()
                        # pop first: the dict's order is then the order keys were last written,
                        # which decides between byte-different keys of one partition (see _partitions_of)
                        raw.pop(key, None)
                        if value is not None:
                            raw[key] = value
            else:
                for msg in messages:
                    if msg.error() is None:
                        key = msg.key()
                        if key is not None:
                            self._apply_indexed(key, msg.value())

    def _apply_record(self, record: LogRecord) -> None:
        """Per-record path (unused while the batch callback is installed; kept for completeness)."""
        if record.key is None:
            return
        with self._lock:
            if self._keys_by_connector is None:
                self._raw.pop(record.key, None)
                if record.value is not None:
                    self._raw[record.key] = record.value
            else:
                self._apply_indexed(record.key, record.value)

    def _apply_indexed(self, key: bytes, value: bytes | None) -> None:
        """Apply one record once indexes exist (caller holds the lock)."""
        assert self._keys_by_connector is not None
        connector = connector_of(key)
        if value is None:
            self._raw.pop(key, None)
            if connector is not None:
                self._keys_by_connector.get(connector, {}).pop(key, None)
                decoded = self._decoded.get(connector)
                parsed = _decode_key(key) if decoded is not None else None
                if decoded is not None and parsed is not None:
                    pid = partition_id(parsed[1])
                    if decoded.get(pid) == key:
                        del decoded[pid]
            return
        self._raw.pop(key, None)
        self._raw[key] = value
        if connector is None:
            return
        self._keys_by_connector.setdefault(connector, {})[key] = None
        decoded = self._decoded.get(connector)
        if decoded is not None:
            parsed = _decode_key(key)
            if parsed is not None:
                decoded[partition_id(parsed[1])] = key

    # -- lazy decoding --------------------------------------------------------------------------

    def _partitions_of(self, connector: str) -> dict[str, bytes]:
        """partition_id -> raw key for ``connector``, decoding its keys on first use (lock held).

        Two byte-different keys can name one partition (a Java worker orders the map differently).
        Keys are visited oldest write first, so the most recently written one wins.
        """
        decoded = self._decoded.get(connector)
        if decoded is not None:
            return decoded
        if self._keys_by_connector is None:
            began = time.monotonic()
            index: dict[str, dict[bytes, None]] = {}
            for key in self._raw:  # oldest write first
                owner = connector_of(key)
                if owner is not None:
                    index.setdefault(owner, {})[key] = None
            self._keys_by_connector = index
            logger.debug("Indexed %d offset keys of %d connectors in %.3fs", len(self._raw), len(index),
                         time.monotonic() - began)
        decoded = {}
        for key in self._keys_by_connector.get(connector, ()):
            parsed = _decode_key(key)
            if parsed is not None:
                decoded[partition_id(parsed[1])] = key
        self._decoded[connector] = decoded
        return decoded

    def _value(self, key: bytes) -> OffsetMap | None:
        raw = self._raw.get(key)
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            logger.warning("Ignoring an offset of topic %s that is not JSON", self.topic)
            return None
        return value if isinstance(value, dict) else None

    # -- OffsetStore ----------------------------------------------------------------------------

    def get(self, connector: str, partition: SourceMap) -> OffsetMap | None:
        with self._lock:
            key = self._partitions_of(connector).get(partition_id(partition))
            return self._value(key) if key is not None else None

    def connector_offsets(self, connector: str) -> list[tuple[SourceMap, OffsetMap]]:
        with self._lock:
            keys = list(self._partitions_of(connector).values())
            result: list[tuple[SourceMap, OffsetMap]] = []
            for key in keys:
                parsed = _decode_key(key)
                value = self._value(key)
                if parsed is not None and value is not None:
                    result.append((parsed[1], value))
            return result

    def connectors(self) -> list[str]:
        """Connectors with at least one stored offset."""
        with self._lock:
            if self._keys_by_connector is None:
                self._partitions_of("")  # builds the connector index
            assert self._keys_by_connector is not None
            return sorted(c for c, keys in self._keys_by_connector.items() if keys)

    def put(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]],
            timeout_s: float = 30.0) -> None:
        """Write offsets, wait for the acknowledgements, then until the log read them back, so that a
        ``get`` right after ``put`` answers with what was written (or something newer)."""
        if not offsets:
            return
        deadline = time.monotonic() + timeout_s
        with self._lock:
            stored = self._partitions_of(connector)
            # Re-use the stored key bytes of a partition (maybe written by Java with another field order)
            # so that the update or tombstone replaces that key under compaction instead of adding one.
            keys = [stored.get(partition_id(p)) or serialize_key(connector, p) for p, _ in offsets]
        futures: list[Future[LogRecord]] = []
        for key, (_, offset) in zip(keys, offsets, strict=True):
            future: Future[LogRecord] = Future()
            futures.append(future)
            self._log.send(key, serialize_value(offset), callback=_completer(future))
        written: dict[int, int] = {}
        try:
            for future in futures:
                record = future.result(timeout=max(0.0, deadline - time.monotonic()))
                written[record.partition] = max(written.get(record.partition, -1), record.offset)
        except FutureTimeout as exc:
            raise RetriableError(f"offsets of {connector} not acknowledged within {timeout_s}s") from exc
        self._log.wait_until_consumed(written, max(0.1, deadline - time.monotonic()))

    def records_for(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]]
                    ) -> list[tuple[str, int, bytes, bytes | None]]:
        """(topic, partition, key, value) of each offset, placed as :meth:`put` places them, for a writer
        that produces them itself: an exactly-once task writes them inside its own transaction."""
        partitions = len(self._log.partitions)
        with self._lock:
            stored = self._partitions_of(connector)
            keys = [stored.get(partition_id(p)) or serialize_key(connector, p) for p, _ in offsets]
        return [(self.topic, java_partition(key, partitions), key, serialize_value(offset))
                for key, (_, offset) in zip(keys, offsets, strict=True)]


def _completer(future: Future[LogRecord]) -> Any:
    def done(error: Exception | None, record: LogRecord | None) -> None:
        if error is not None:
            future.set_exception(error if isinstance(error, ConnectError) else ConnectError(str(error)))
        elif record is not None:
            future.set_result(record)
    return done


#: How long a task's offset read waits for the offsets topic's end.
REFRESH_TIMEOUT_S = 10.0


class OffsetStoreReader:
    """The :class:`~connect_runtime.api.offsets.OffsetStorageReader` of one connector over any store.

    Each read first reads the store to its end, as Java's ``KafkaOffsetBackingStore.get`` does: a task
    that starts right after another process wrote its offsets (the previous owner's final commit after a
    rebalance, a backfill's hand-over, an offsets reset) must see them, or it re-copies from older ones.
    Tasks read their offsets once, at start, so this costs one round trip per start.
    """

    __slots__ = ("_connector", "_store")

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offset(self, partition: SourceMap) -> Mapping[str, Any] | None:
        self._catch_up()
        return self._store.get(self._connector, partition)

    def offsets(self, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
        self._catch_up()
        return [(p, self._store.get(self._connector, p)) for p in partitions]

    def _catch_up(self) -> None:
        """Read the store to its end; when that takes too long, go on with what was read so far.

        Java fails the task's start instead. Older offsets only make records be copied again, never
        lost, and a replicator that does not start loses more than it duplicates.
        """
        try:
            self._store.refresh(REFRESH_TIMEOUT_S)
        except RetriableError as exc:
            logger.warning("%s: %s; starting from the offsets read so far (records after them may be copied "
                           "again)", self._connector, exc)
