"""The records of MM2's internal topics and their exact wire formats (Java's, docs/migration.md).

MM2 encodes these with Kafka's protocol ``Schema``/``Struct`` types, not JSON, and our records must be
byte-identical so that a Java MM2, a Java ``RemoteClusterUtils`` and this port can share the topics:

* ``INT16``/``INT32``/``INT64``: signed big-endian.
* ``STRING``: INT16 byte length, then UTF-8. Null is not allowed; at most 32767 bytes.
* ``Heartbeat`` and ``Checkpoint`` **values** start with an INT16 version (always 0). ``OffsetSync`` has
  **no** version header: its value is exactly two INT64s.
* Readers ignore trailing bytes, so that a later version may append fields.

Decoding never leaks ``IndexError`` / ``struct.error``: every malformed input raises
:class:`MalformedRecordError` so that readers can skip the record with one ``except``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import NamedTuple

from mirror.errors import MirrorError

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

MAX_STRING_BYTES = 32767
VERSION = 0
_INT32_RANGE = (-(2**31), 2**31 - 1)
_INT64_RANGE = (-(2**63), 2**63 - 1)


class MalformedRecordError(MirrorError, ValueError):
    """A key or value of an MM2 internal topic cannot be decoded (truncated, bad length, bad version)."""


class TopicPartition(NamedTuple):
    """A (topic, partition) pair. A plain tuple, so ``("t", 0)`` compares equal and hashes the same."""

    topic: str
    partition: int

    def __str__(self) -> str:
        # Kafka's TopicPartition.toString, used by the console formatters and in logs.
        return f"{self.topic}-{self.partition}"


class OffsetAndMetadata(NamedTuple):
    """A committed offset as ``MirrorClient.remote_consumer_offsets`` returns it."""

    offset: int
    metadata: str = ""


# ---------------------------------------------------------------------------------------------- encoding


def _check_range(name: str, value: int, bounds: tuple[int, int]) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{name} {value} does not fit the wire format ({bounds[0]}..{bounds[1]})")


def _check_string(name: str, value: str) -> None:
    if not isinstance(value, str):
        # Kafka's Type.STRING refuses null; so do we, at construction time rather than on send.
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if len(value.encode("utf-8")) > MAX_STRING_BYTES:
        raise ValueError(f"{name} is longer than {MAX_STRING_BYTES} UTF-8 bytes")


def _string(value: str) -> bytes:
    data = value.encode("utf-8")
    return _INT16.pack(len(data)) + data


class _Reader:
    """Sequential reader over one key or value; every failure is a MalformedRecordError."""

    def __init__(self, data: bytes | bytearray | memoryview | None, what: str) -> None:
        if data is None:
            raise MalformedRecordError(f"{what} is null")
        self._data = bytes(data)
        self._pos = 0
        self._what = what

    def _take(self, size: int, field_name: str) -> bytes:
        end = self._pos + size
        if end > len(self._data):
            raise MalformedRecordError(
                f"{self._what} truncated reading {field_name}: need {size} bytes at "
                f"position {self._pos}, have {len(self._data) - self._pos}"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int16(self, field_name: str) -> int:
        value: int = _INT16.unpack(self._take(2, field_name))[0]
        return value

    def int32(self, field_name: str) -> int:
        value: int = _INT32.unpack(self._take(4, field_name))[0]
        return value

    def int64(self, field_name: str) -> int:
        value: int = _INT64.unpack(self._take(8, field_name))[0]
        return value

    def string(self, field_name: str) -> str:
        length = self.int16(field_name)
        if length < 0:
            raise MalformedRecordError(
                f"{self._what} field {field_name}: string length {length} cannot be negative"
            )
        raw = self._take(length, field_name)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            # Java would substitute U+FFFD; we refuse, so a mangled group or topic name never gets used.
            raise MalformedRecordError(f"{self._what} field {field_name} is not valid UTF-8") from exc

    def version(self) -> int:
        version = self.int16("version")
        if version != VERSION:
            raise MalformedRecordError(
                f"{self._what} has unsupported version {version} (only {VERSION} is known)"
            )
        return version


# ----------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Heartbeat:
    """One heartbeat, written every ``emit.heartbeats.interval.seconds`` to ``heartbeats`` on the target.

    Key ``STRING source, STRING target``; value ``INT16 version=0, INT64 timestamp`` (10 bytes).
    """

    source_cluster_alias: str
    target_cluster_alias: str
    timestamp: int

    def __post_init__(self) -> None:
        _check_string("source_cluster_alias", self.source_cluster_alias)
        _check_string("target_cluster_alias", self.target_cluster_alias)
        _check_range("timestamp", self.timestamp, _INT64_RANGE)

    def key_bytes(self) -> bytes:
        """The record key: both aliases."""
        return _string(self.source_cluster_alias) + _string(self.target_cluster_alias)

    def value_bytes(self) -> bytes:
        """The record value: version header and timestamp (epoch ms)."""
        return _INT16.pack(VERSION) + _INT64.pack(self.timestamp)

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> Heartbeat:
        """Decode a heartbeats-topic record. Raises MalformedRecordError."""
        value_reader = _Reader(value, "heartbeat value")
        value_reader.version()
        timestamp = value_reader.int64("timestamp")
        key_reader = _Reader(key, "heartbeat key")
        source = key_reader.string("sourceClusterAlias")
        target = key_reader.string("targetClusterAlias")
        return cls(source, target, timestamp)

    def connect_partition(self) -> dict[str, str]:
        """The Connect source partition of this heartbeat, in Java's key order."""
        return {
            "sourceClusterAlias": self.source_cluster_alias,
            "targetClusterAlias": self.target_cluster_alias,
        }

    def __str__(self) -> str:
        return (
            f"Heartbeat{{sourceClusterAlias={self.source_cluster_alias}, "
            f"targetClusterAlias={self.target_cluster_alias}, timestamp={self.timestamp}}}"
        )


@dataclass(frozen=True)
class Checkpoint:
    """A consumer group's translated position, written to ``<source>.checkpoints.internal`` on the target.

    ``topic_partition`` is the **target-side** (renamed) topic. Key ``STRING group, STRING topic, INT32
    partition``; value ``INT16 version=0, INT64 upstream, INT64 downstream, STRING metadata``.
    A None ``metadata`` becomes ``""`` (the wire format has no null).
    """

    consumer_group_id: str
    topic_partition: TopicPartition
    upstream_offset: int
    downstream_offset: int
    metadata: str = field(default="")

    def __post_init__(self) -> None:
        if self.metadata is None:
            object.__setattr__(self, "metadata", "")
        if not isinstance(self.topic_partition, TopicPartition):
            topic, partition = self.topic_partition
            object.__setattr__(self, "topic_partition", TopicPartition(topic, partition))
        _check_string("consumer_group_id", self.consumer_group_id)
        _check_string("topic", self.topic_partition.topic)
        _check_range("partition", self.topic_partition.partition, _INT32_RANGE)
        _check_range("upstream_offset", self.upstream_offset, _INT64_RANGE)
        _check_range("downstream_offset", self.downstream_offset, _INT64_RANGE)
        _check_string("metadata", self.metadata)

    @property
    def topic(self) -> str:
        """The target-side topic name."""
        return self.topic_partition.topic

    @property
    def partition(self) -> int:
        """The partition number."""
        return self.topic_partition.partition

    def offset_and_metadata(self) -> OffsetAndMetadata:
        """What a consumer on the target should commit: the downstream offset and the metadata."""
        return OffsetAndMetadata(self.downstream_offset, self.metadata)

    def key_bytes(self) -> bytes:
        """The record key: group, target-side topic, partition. The topic is compacted on it."""
        return (
            _string(self.consumer_group_id)
            + _string(self.topic_partition.topic)
            + _INT32.pack(self.topic_partition.partition)
        )

    def value_bytes(self) -> bytes:
        """The record value: version header, upstream offset, downstream offset, metadata."""
        return (
            _INT16.pack(VERSION)
            + _INT64.pack(self.upstream_offset)
            + _INT64.pack(self.downstream_offset)
            + _string(self.metadata)
        )

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> Checkpoint:
        """Decode a checkpoints-topic record. Raises MalformedRecordError."""
        value_reader = _Reader(value, "checkpoint value")
        value_reader.version()
        upstream = value_reader.int64("upstreamOffset")
        downstream = value_reader.int64("offset")
        metadata = value_reader.string("metadata")
        key_reader = _Reader(key, "checkpoint key")
        group = key_reader.string("group")
        topic = key_reader.string("topic")
        partition = key_reader.int32("partition")
        return cls(group, TopicPartition(topic, partition), upstream, downstream, metadata)

    def connect_partition(self) -> dict[str, str | int]:
        """The Connect source partition of this checkpoint, in Java's key order."""
        return {
            "partition": self.topic_partition.partition,
            "topic": self.topic_partition.topic,
            "group": self.consumer_group_id,
        }

    def __str__(self) -> str:
        return (
            f"Checkpoint{{consumerGroupId={self.consumer_group_id}, topicPartition={self.topic_partition}, "
            f"upstreamOffset={self.upstream_offset}, downstreamOffset={self.downstream_offset}, "
            f"metadata={self.metadata}}}"
        )


@dataclass(frozen=True)
class OffsetSync:
    """ "Upstream offset U of a source partition was replicated to downstream offset D".

    ``topic_partition`` is the **source-side** topic. Key ``STRING topic, INT32 partition``; value
    ``INT64 upstream, INT64 downstream`` with **no** version header (16 bytes).

    Equality is by value, but the OffsetSyncStore's 64-slot array compares syncs by **identity**
    (``is``), as Java compares references: two equal syncs read at different times are distinct entries.
    """

    topic_partition: TopicPartition
    upstream_offset: int
    downstream_offset: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic_partition, TopicPartition):
            topic, partition = self.topic_partition
            object.__setattr__(self, "topic_partition", TopicPartition(topic, partition))
        _check_string("topic", self.topic_partition.topic)
        _check_range("partition", self.topic_partition.partition, _INT32_RANGE)
        _check_range("upstream_offset", self.upstream_offset, _INT64_RANGE)
        _check_range("downstream_offset", self.downstream_offset, _INT64_RANGE)

    def as_tuple(self) -> tuple[str, int, int, int]:
        """(topic, partition, upstream, downstream), for comparing syncs by value."""
        return (
            self.topic_partition.topic,
            self.topic_partition.partition,
            self.upstream_offset,
            self.downstream_offset,
        )

    def key_bytes(self) -> bytes:
        """The record key: source topic and partition."""
        return _string(self.topic_partition.topic) + _INT32.pack(self.topic_partition.partition)

    def value_bytes(self) -> bytes:
        """The record value: upstream and downstream offsets, no version header."""
        return _INT64.pack(self.upstream_offset) + _INT64.pack(self.downstream_offset)

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> OffsetSync:
        """Decode an offset-syncs-topic record. Raises MalformedRecordError."""
        value_reader = _Reader(value, "offset sync value")
        upstream = value_reader.int64("upstreamOffset")
        downstream = value_reader.int64("offset")
        key_reader = _Reader(key, "offset sync key")
        topic = key_reader.string("topic")
        partition = key_reader.int32("partition")
        return cls(TopicPartition(topic, partition), upstream, downstream)

    def __str__(self) -> str:
        return (
            f"OffsetSync{{topicPartition={self.topic_partition}, upstreamOffset={self.upstream_offset}, "
            f"downstreamOffset={self.downstream_offset}}}"
        )
