"""read_to_end / end_offsets over a scripted consumer."""

from __future__ import annotations

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_INVALID, KafkaError, KafkaException, Message, TopicPartition

from connect_runtime.clients import log_reader as reader


def record(topic: str, partition: int, offset: int, value: bytes = b"v") -> Message:
    return Message(topic=topic, partition=partition, offset=offset, value=value)


def eof(topic: str, partition: int, offset: int) -> Message:
    return Message(topic=topic, partition=partition, offset=offset, error=KafkaError(KafkaError._PARTITION_EOF))


def error(code: int, topic: str | None = None, partition: int = -1) -> Message:
    """An error event; partition -1 (reported as None) is librdkafka's "no partition"."""
    return Message(topic=topic, partition=partition, error=KafkaError(code))


class ScriptedConsumer:
    """Plays back one scripted batch per consume() call (then empty batches), like a real consumer
    whose fetches return those records and events; records assignment, pauses and resumes."""

    def __init__(self, batches: list[list[Message]], high_watermarks: dict[tuple[str, int], int] | None = None) -> None:
        self.batches = list(batches)
        self.high_watermarks = high_watermarks or {}
        self.assigned: list[tuple[str, int, int]] = []
        self.paused: list[tuple[str, int]] = []
        self.resumed: list[tuple[str, int]] = []
        self.consume_calls = 0

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self.consume_calls += 1
        return self.batches.pop(0) if self.batches else []

    def get_watermark_offsets(self, partition: TopicPartition, cached: bool = False) -> tuple[int, int]:
        assert cached, "the end must come from the fetch response, never from ListOffsets"
        return 0, self.high_watermarks.get((partition.topic, partition.partition), OFFSET_INVALID)

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused += [(tp.topic, tp.partition) for tp in partitions]

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.resumed += [(tp.topic, tp.partition) for tp in partitions]


class Collected:
    def __init__(self) -> None:
        self.batches: list[list[tuple[str, int, int]]] = []

    def __call__(self, records: list[Message]) -> None:
        assert all(m.error() is None for m in records) and records
        self.batches.append([(m.topic() or "", m.partition() or 0, m.offset() or 0) for m in records])

    @property
    def offsets(self) -> list[tuple[str, int, int]]:
        return [r for batch in self.batches for r in batch]


# --------------------------------------------------------------------------------------------- read_to_end


def test_reads_every_partition_to_its_first_end() -> None:
    consumer = ScriptedConsumer([
        [record("t", 0, 5), record("t", 1, 0), record("t", 0, 6)],
        [eof("t", 0, 7), record("t", 1, 1)],
        [record("t", 0, 7)],  # written after partition 0's end: handed over, not waited for
        [eof("t", 1, 2)],
        [record("t", 0, 8)],  # after the read: not consumed
    ])
    got = Collected()
    result = reader.read_to_end(consumer, {("t", 0): 5, ("t", 1): OFFSET_BEGINNING}, got, 5.0)
    assert result.complete and result.ends == {("t", 0): 7, ("t", 1): 2} and result.missing == frozenset()
    assert got.offsets == [("t", 0, 5), ("t", 1, 0), ("t", 0, 6), ("t", 1, 1), ("t", 0, 7)]
    assert consumer.assigned == [("t", 0, 5), ("t", 1, OFFSET_BEGINNING)]
    assert len(consumer.batches) == 1  # the record after the read was not consumed


def test_an_empty_partition_ends_at_its_log_start() -> None:
    """A partition whose log starts above 0 and holds nothing: its end is where the fetch stopped."""
    consumer = ScriptedConsumer([[eof("t", 0, 40)]])
    got = Collected()
    result = reader.read_to_end(consumer, {("t", 0): 0}, got, 5.0)
    assert result.complete and result.ends == {("t", 0): 40} and got.batches == []


def test_records_before_an_error_are_handed_over_before_it_is_raised() -> None:
    consumer = ScriptedConsumer([[record("t", 0, 0), record("t", 0, 1), error(KafkaError._TRANSPORT),
                                  record("t", 0, 2)]])
    got = Collected()
    with pytest.raises(KafkaException):
        reader.read_to_end(consumer, {("t", 0): 0}, got, 5.0)  # on_error defaults to raise_error
    assert got.offsets == [("t", 0, 0), ("t", 0, 1)]


def test_on_error_decides_and_the_read_goes_on() -> None:
    consumer = ScriptedConsumer([[record("t", 0, 0), error(KafkaError._TRANSPORT), record("t", 0, 1)],
                                 [eof("t", 0, 2)]])
    got, errors = Collected(), list[KafkaError]()
    result = reader.read_to_end(consumer, {("t", 0): 0}, got, 5.0, on_error=errors.append)
    assert result.complete and result.ends == {("t", 0): 2}
    assert got.batches == [[("t", 0, 0)], [("t", 0, 1)]]
    assert [e.code() for e in errors] == [KafkaError._TRANSPORT]


def test_timeout_returns_what_was_read() -> None:
    consumer = ScriptedConsumer([[record("t", 0, 0), eof("t", 1, 0)]])  # partition 0 never ends
    got = Collected()
    result = reader.read_to_end(consumer, {("t", 0): 0, ("t", 1): 0}, got, 0.2)
    assert not result.complete and result.ends == {("t", 1): 0}
    assert got.offsets == [("t", 0, 0)]


def test_stop_ends_a_read_without_deadline() -> None:
    consumer = ScriptedConsumer([[record("t", 0, 0)]])
    calls = iter([False, False, False, True])
    result = reader.read_to_end(consumer, {("t", 0): 0}, Collected(), None, stop=lambda: next(calls))
    assert not result.complete and consumer.consume_calls == 3


def test_missing_partitions_count_as_read_only_when_allowed() -> None:
    script = [[error(KafkaError.UNKNOWN_TOPIC_OR_PART, "gone", 0), eof("t", 0, 3)],
              [error(KafkaError._UNKNOWN_TOPIC, "also-gone")]]  # names no partition: the whole topic
    positions = {("t", 0): 0, ("gone", 0): 0, ("also-gone", 0): 0, ("also-gone", 1): 0}
    result = reader.read_to_end(ScriptedConsumer(script), positions, Collected(), 5.0, missing_ok=True)
    assert result.complete and result.ends == {("t", 0): 3}
    assert result.missing == {("gone", 0), ("also-gone", 0), ("also-gone", 1)}
    with pytest.raises(KafkaException):
        reader.read_to_end(ScriptedConsumer(script), positions, Collected(), 5.0)


def test_an_end_of_a_partition_not_asked_for_is_ignored() -> None:
    consumer = ScriptedConsumer([[eof("other", 0, 9)]])
    result = reader.read_to_end(consumer, {("t", 0): 0}, Collected(), 0.2)
    assert not result.complete and result.ends == {}


def test_a_log_written_faster_than_a_fetch_waits_ends_at_the_watermark_of_its_first_records() -> None:
    """No end-of-partition event ever comes (each fetch at the end brings the next few records): the read
    stops once it reached the high watermark that came with its first records, not at its deadline."""
    consumer = ScriptedConsumer([
        [record("t", 0, 0), record("t", 0, 1)],  # the fetch said the end is 4
        [record("t", 0, 2)],
        [record("t", 0, 3), record("t", 0, 4)],  # 4 was written after the read began: handed over
        [record("t", 0, 5)],  # not consumed
    ], high_watermarks={("t", 0): 4})
    got = Collected()
    result = reader.read_to_end(consumer, {("t", 0): 0}, got, 30.0)
    assert result.complete and result.ends == {("t", 0): 5}
    assert got.offsets == [("t", 0, o) for o in range(5)]
    assert len(consumer.batches) == 1


class GrowingLog(ScriptedConsumer):
    """Each fetch brings one record and a high watermark one past it: the log grows as it is read."""

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self.high_watermarks[("t", 0)] = self.consume_calls + 2
        return super().consume(num_messages, timeout)


def test_the_end_is_taken_once_per_read_and_only_from_a_partitions_own_records() -> None:
    """The watermark grows with every fetch, but the end is the one that came with the first record;
    partition 1 has a watermark but no record in this read, so only its end-of-partition event ends it."""
    consumer = GrowingLog([[record("t", 0, o)] for o in range(6)], high_watermarks={("t", 1): 7})
    consumer.batches.insert(3, [eof("t", 1, 0)])
    got = Collected()
    result = reader.read_to_end(consumer, {("t", 0): 0, ("t", 1): 0}, got, 30.0)
    assert result.complete and result.ends == {("t", 0): 2, ("t", 1): 0}
    # record 2 came after partition 0's end, while partition 1 was still read: handed over, not waited for
    assert got.offsets == [("t", 0, 0), ("t", 0, 1), ("t", 0, 2)]
    assert len(consumer.batches) == 3


# --------------------------------------------------------------------------------------------- end_offsets


def test_end_offsets_from_the_end_event_or_the_first_records_fetch() -> None:
    consumer = ScriptedConsumer(
        [[eof("t", 0, 12), record("t", 1, 3), record("t", 1, 4)],  # 1: behind, the rest is not wanted
         [record("t", 2, 7)]],  # its fetch response said 20
        high_watermarks={("t", 1): 9, ("t", 2): 20})
    first: list[tuple[int, int]] = []
    ends = reader.end_offsets(consumer, {("t", 0): 12, ("t", 1): 3, ("t", 2): 7}, 5.0,
                              on_first=lambda m: first.append((m.partition(), m.offset())))
    assert ends == {("t", 0): 12, ("t", 1): 9, ("t", 2): 20}
    assert first == [(1, 3), (2, 7)]
    # 1 is paused while 2 is still awaited; 2 answers last, and nothing is left to pause it for (each pause
    # holds the GIL while librdkafka waits for the partition's thread)
    assert consumer.paused == [("t", 1)] and consumer.resumed == consumer.paused


def test_end_offsets_is_never_below_the_record_it_saw() -> None:
    """A cached watermark older than the record (or unknown, -1001) cannot put the end behind it."""
    consumer = ScriptedConsumer([[record("t", 0, 41)]], high_watermarks={("t", 0): -1001})
    assert reader.end_offsets(consumer, {("t", 0): 41}, 5.0) == {("t", 0): 42}


def test_end_offsets_leaves_out_missing_and_silent_partitions() -> None:
    script = [[error(KafkaError.UNKNOWN_TOPIC_OR_PART, "gone", 0), error(KafkaError._TRANSPORT)]]
    ends = reader.end_offsets(ScriptedConsumer(script), {("gone", 0): 0, ("t", 0): 0}, 0.2,
                              on_error=reader.ignore_error, missing_ok=True)
    assert ends == {}
    with pytest.raises(KafkaException):
        reader.end_offsets(ScriptedConsumer(script), {("gone", 0): 0}, 5.0)
