"""Wire formats of MM2's internal topics (Java's, docs/migration.md): golden vectors, round trips, malformed input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.client.models import (
    Checkpoint,
    Heartbeat,
    MalformedRecordError,
    OffsetAndMetadata,
    OffsetSync,
    TopicPartition,
)

HEARTBEAT_KEY = bytes.fromhex("0007 7072696d617279 0006 6261636b7570")
HEARTBEAT_VALUE = bytes.fromhex("0000 0000018bcfe56800")
CHECKPOINT_KEY = bytes.fromhex("0008 6d792d67726f7570 000e 7072696d6172792e6f7264657273 00000003")
CHECKPOINT_VALUE = bytes.fromhex("0000 00000000000004d2 00000000000004b0 0000")
OFFSET_SYNC_KEY = bytes.fromhex("0006 6f7264657273 00000003")
OFFSET_SYNC_VALUE = bytes.fromhex("00000000000004d2 00000000000004b0")


# ------------------------------------------------------------------------------------------ golden vectors


def test_heartbeat_golden_vector() -> None:
    heartbeat = Heartbeat("primary", "backup", 1700000000000)
    assert heartbeat.key_bytes() == HEARTBEAT_KEY
    assert heartbeat.value_bytes() == HEARTBEAT_VALUE
    assert len(heartbeat.value_bytes()) == 10
    assert Heartbeat.from_record(HEARTBEAT_KEY, HEARTBEAT_VALUE) == heartbeat


def test_checkpoint_golden_vector() -> None:
    checkpoint = Checkpoint("my-group", TopicPartition("primary.orders", 3), 1234, 1200, "")
    assert checkpoint.key_bytes() == CHECKPOINT_KEY
    assert checkpoint.value_bytes() == CHECKPOINT_VALUE
    assert Checkpoint.from_record(CHECKPOINT_KEY, CHECKPOINT_VALUE) == checkpoint
    assert checkpoint.offset_and_metadata() == OffsetAndMetadata(1200, "")


def test_offset_sync_golden_vector_has_no_version_header() -> None:
    sync = OffsetSync(TopicPartition("orders", 3), 1234, 1200)
    assert sync.key_bytes() == OFFSET_SYNC_KEY
    assert sync.value_bytes() == OFFSET_SYNC_VALUE
    assert len(sync.value_bytes()) == 16
    assert OffsetSync.from_record(OFFSET_SYNC_KEY, OFFSET_SYNC_VALUE) == sync


def test_checkpoint_metadata_none_becomes_empty_string() -> None:
    checkpoint = Checkpoint("g", ("t", 0), 1, 2, None)  # type: ignore[arg-type]
    assert checkpoint.metadata == ""
    assert checkpoint.value_bytes().endswith(b"\x00\x00")
    assert isinstance(checkpoint.topic_partition, TopicPartition)


def test_checkpoint_metadata_is_encoded() -> None:
    checkpoint = Checkpoint("g", TopicPartition("t", 0), 1, 2, "héllo")
    assert checkpoint.value_bytes()[18:] == struct.pack(">h", 6) + "héllo".encode()
    assert Checkpoint.from_record(checkpoint.key_bytes(), checkpoint.value_bytes()).metadata == "héllo"


# ------------------------------------------------------------------------------------------ formatters


def test_console_formatter_strings() -> None:
    assert str(Heartbeat("primary", "backup", 1700000000000)) == (
        "Heartbeat{sourceClusterAlias=primary, targetClusterAlias=backup, timestamp=1700000000000}"
    )
    assert str(Checkpoint("my-group", TopicPartition("primary.orders", 3), 1234, 1200, "m")) == (
        "Checkpoint{consumerGroupId=my-group, topicPartition=primary.orders-3, upstreamOffset=1234, "
        "downstreamOffset=1200, metadata=m}"
    )
    assert str(OffsetSync(TopicPartition("orders", 3), 1234, 1200)) == (
        "OffsetSync{topicPartition=orders-3, upstreamOffset=1234, downstreamOffset=1200}"
    )
    assert str(TopicPartition("a.b", 7)) == "a.b-7"


def test_connect_partitions_in_java_key_order() -> None:
    assert list(Heartbeat("a", "b", 0).connect_partition().items()) == [
        ("sourceClusterAlias", "a"),
        ("targetClusterAlias", "b"),
    ]
    assert list(Checkpoint("g", TopicPartition("t", 1), 0, 0).connect_partition().items()) == [
        ("partition", 1),
        ("topic", "t"),
        ("group", "g"),
    ]


def test_topic_partition_is_a_plain_tuple() -> None:
    assert TopicPartition("t", 1) == ("t", 1)
    assert {("t", 1): 5}[TopicPartition("t", 1)] == 5


# ------------------------------------------------------------------------------------------ trailing bytes


def test_trailing_bytes_are_ignored() -> None:
    assert Heartbeat.from_record(HEARTBEAT_KEY + b"xx", HEARTBEAT_VALUE + b"\x00\x01") == Heartbeat(
        "primary", "backup", 1700000000000
    )
    assert (
        Checkpoint.from_record(CHECKPOINT_KEY + b"\x01", CHECKPOINT_VALUE + b"future").downstream_offset
        == 1200
    )
    assert (
        OffsetSync.from_record(OFFSET_SYNC_KEY + b"\x00", OFFSET_SYNC_VALUE + b"\x00").upstream_offset == 1234
    )


# ------------------------------------------------------------------------------------------ malformed input


@pytest.mark.parametrize("cut", range(len(CHECKPOINT_VALUE)))
def test_truncated_checkpoint_value_is_malformed(cut: int) -> None:
    with pytest.raises(MalformedRecordError):
        Checkpoint.from_record(CHECKPOINT_KEY, CHECKPOINT_VALUE[:cut])


@pytest.mark.parametrize("cut", range(len(CHECKPOINT_KEY)))
def test_truncated_checkpoint_key_is_malformed(cut: int) -> None:
    with pytest.raises(MalformedRecordError):
        Checkpoint.from_record(CHECKPOINT_KEY[:cut], CHECKPOINT_VALUE)


@pytest.mark.parametrize("cut", range(len(HEARTBEAT_KEY)))
def test_truncated_heartbeat_key_is_malformed(cut: int) -> None:
    with pytest.raises(MalformedRecordError):
        Heartbeat.from_record(HEARTBEAT_KEY[:cut], HEARTBEAT_VALUE)


@pytest.mark.parametrize("cut", range(len(OFFSET_SYNC_VALUE)))
def test_truncated_offset_sync_value_is_malformed(cut: int) -> None:
    with pytest.raises(MalformedRecordError):
        OffsetSync.from_record(OFFSET_SYNC_KEY, OFFSET_SYNC_VALUE[:cut])


def test_negative_string_length_is_malformed() -> None:
    with pytest.raises(MalformedRecordError, match="negative"):
        OffsetSync.from_record(b"\xff\xff" + b"\x00" * 10, OFFSET_SYNC_VALUE)


@pytest.mark.parametrize("version", [1, -1, 0x7FFF])
def test_unknown_value_version_is_malformed(version: int) -> None:
    value = struct.pack(">h", version) + CHECKPOINT_VALUE[2:]
    with pytest.raises(MalformedRecordError, match="version"):
        Checkpoint.from_record(CHECKPOINT_KEY, value)
    with pytest.raises(MalformedRecordError, match="version"):
        Heartbeat.from_record(HEARTBEAT_KEY, struct.pack(">h", version) + HEARTBEAT_VALUE[2:])


def test_null_key_or_value_is_malformed() -> None:
    with pytest.raises(MalformedRecordError):
        Checkpoint.from_record(None, CHECKPOINT_VALUE)
    with pytest.raises(MalformedRecordError):
        OffsetSync.from_record(OFFSET_SYNC_KEY, None)


def test_invalid_utf8_is_malformed() -> None:
    with pytest.raises(MalformedRecordError, match="UTF-8"):
        OffsetSync.from_record(b"\x00\x02\xff\xfe\x00\x00\x00\x01", OFFSET_SYNC_VALUE)


def test_malformed_record_error_is_a_value_error() -> None:
    assert issubclass(MalformedRecordError, ValueError)


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_arbitrary_bytes_never_raise_anything_but_malformed(key: bytes, value: bytes) -> None:
    for cls in (Heartbeat, Checkpoint, OffsetSync):
        try:
            cls.from_record(key, value)
        except MalformedRecordError:
            pass


# ------------------------------------------------------------------------------------------ encoding limits


def test_strings_longer_than_32767_bytes_are_refused() -> None:
    Checkpoint("g" * 32767, TopicPartition("t", 0), 0, 0)
    with pytest.raises(ValueError, match="32767"):
        Checkpoint("g" * 32768, TopicPartition("t", 0), 0, 0)
    with pytest.raises(ValueError, match="32767"):
        Heartbeat("é" * 16384, "b", 0)  # 32768 UTF-8 bytes


def test_null_strings_are_refused() -> None:
    with pytest.raises(TypeError):
        Heartbeat(None, "b", 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("offset", [2**63, -(2**63) - 1])
def test_offsets_outside_int64_are_refused(offset: int) -> None:
    with pytest.raises(ValueError, match="does not fit"):
        OffsetSync(TopicPartition("t", 0), offset, 0)


def test_partition_outside_int32_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        OffsetSync(TopicPartition("t", 2**31), 0, 0)


# ------------------------------------------------------------------------------------------ round trips

names = st.text(max_size=40)
int64 = st.integers(-(2**63), 2**63 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)


@given(names, names, int64)
def test_heartbeat_round_trip(source: str, target: str, timestamp: int) -> None:
    heartbeat = Heartbeat(source, target, timestamp)
    assert Heartbeat.from_record(heartbeat.key_bytes(), heartbeat.value_bytes()) == heartbeat


@given(names, names, int32, int64, int64, names)
def test_checkpoint_round_trip(group: str, topic: str, partition: int, up: int, down: int, meta: str) -> None:
    checkpoint = Checkpoint(group, TopicPartition(topic, partition), up, down, meta)
    assert Checkpoint.from_record(checkpoint.key_bytes(), checkpoint.value_bytes()) == checkpoint


@given(names, int32, int64, int64)
def test_offset_sync_round_trip(topic: str, partition: int, up: int, down: int) -> None:
    sync = OffsetSync(TopicPartition(topic, partition), up, down)
    assert OffsetSync.from_record(sync.key_bytes(), sync.value_bytes()) == sync
