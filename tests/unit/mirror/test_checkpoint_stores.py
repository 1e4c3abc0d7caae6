"""CheckpointStore, OffsetSyncReader and OffsetMapReader over a scripted fake consumer."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message

from mirror.checkpoint.checkpoint_store import CheckpointStore
from mirror.checkpoint.offset_sync_store import OffsetSyncReader, OffsetSyncStore
from mirror.checkpoint.task import OffsetMapReader
from mirror.client.models import Checkpoint, OffsetSync, TopicPartition
from mirror.client.offset_map import OffsetMap, OffsetRun
from tests.support.fakes import FakeConsumer, event, factory_of
from tests.support.kafka import wait_until

CHECKPOINTS, OFFSET_SYNCS = "a.checkpoints.internal", "mm2-offset-syncs.b.internal"


def eof(topic: str = CHECKPOINTS) -> Message:
    """The end of the topic's partition 0 (the reader ends partitions of the topic it assigned)."""
    return event(KafkaError._PARTITION_EOF, topic)


def record(checkpoint: Checkpoint) -> Message:
    return Message(topic=CHECKPOINTS, partition=0, offset=0, key=checkpoint.key_bytes(),
                   value=checkpoint.value_bytes())


def test_checkpoint_store_keeps_the_last_checkpoint_of_assigned_groups() -> None:
    tp = TopicPartition("a.t", 0)
    consumer = FakeConsumer(script=[
        record(Checkpoint("g", tp, 10, 9)),
        Message(topic=CHECKPOINTS, partition=0, offset=1, key=b"junk", value=b"junk"),  # undecodable: skipped
        record(Checkpoint("other", tp, 5, 5)),  # not assigned to this task
        None,
        record(Checkpoint("g", tp, 20, 19)),
        eof(),
        record(Checkpoint("g", tp, 99, 99)),  # after the end: not read
    ])
    store = CheckpointStore(CHECKPOINTS, {"bootstrap.servers": "x"}, ["g"],
                            consumer_factory=factory_of(consumer))
    assert not store.initialized
    assert store.start()
    assert store.initialized and consumer.closed
    assert consumer.config["enable.partition.eof"] == "true" and consumer.config["enable.auto.commit"] == "false"
    assert store.get("g", tp) == Checkpoint("g", tp, 20, 19)
    assert store.get("other", tp) is None
    store.update("g", {TopicPartition("a.t", 1): Checkpoint("g", TopicPartition("a.t", 1), 3, 3)})
    assert store.converted_upstream_offsets() == {"g": {tp: (19, ""), TopicPartition("a.t", 1): (3, "")}}


def test_checkpoint_store_that_cannot_read_starts_empty_and_says_so() -> None:
    denied = event(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    store = CheckpointStore(CHECKPOINTS, {}, ["g"],
                            consumer_factory=factory_of(FakeConsumer(script=[denied])))
    assert not store.start()
    assert store.initialized and store.converted_upstream_offsets() == {}
    silent = CheckpointStore(CHECKPOINTS, {}, ["g"], consumer_factory=factory_of(FakeConsumer(script=[])),
                             timeout_s=0.3)
    assert not silent.start()  # never reached the end in time


def sync_record(upstream: int, downstream: int) -> Message:
    sync = OffsetSync(TopicPartition("t", 0), upstream, downstream)
    return Message(topic=OFFSET_SYNCS, partition=0, offset=0, key=sync.key_bytes(), value=sync.value_bytes())


def test_offset_sync_reader_makes_translation_available_after_the_first_end() -> None:
    consumer = FakeConsumer(script=[sync_record(0, 0), sync_record(10, 10), eof(OFFSET_SYNCS), sync_record(20, 20)])
    store = OffsetSyncStore()
    reader = OffsetSyncReader(OFFSET_SYNCS, {}, store, consumer_factory=factory_of(consumer))
    reader.start(initialization_must_read_to_end=True)
    try:
        wait_until(lambda: reader.records_read == 3, 5, "the live sync read")
        assert store.ready
        # must-read-to-end: only the last historical sync (10) survives, then live syncs build history
        assert store.translate_downstream("g", TopicPartition("t", 0), 5) == -1
        assert store.translate_downstream("g", TopicPartition("t", 0), 15) == 11
        assert store.translate_downstream("g", TopicPartition("t", 0), 20) == 20
    finally:
        reader.stop()
    assert consumer.closed


OFFSET_MAP = "mm2-offset-map.a.internal"


def map_record(upstream: int, downstream: int, count: int) -> Message:
    run = OffsetRun(TopicPartition("t", 0), upstream, downstream, count)
    return Message(topic=OFFSET_MAP, partition=0, offset=0, key=run.key_bytes(), value=run.value_bytes())


def test_offset_map_reader_signals_an_advance_only_for_runs_after_the_first_end() -> None:
    consumer = FakeConsumer(script=[map_record(0, 0, 5), eof(OFFSET_MAP)])
    offset_map = OffsetMap()
    woken: list[bool] = []

    class Reader(OffsetMapReader):
        def _exists(self, consumer: FakeConsumer) -> bool:  # type: ignore[override]
            return True  # the fake consumer has no metadata

    reader = Reader(OFFSET_MAP, {}, offset_map, consumer_factory=factory_of(consumer),
                    on_advance=lambda: woken.append(reader.advanced.is_set()))
    reader.start()
    try:
        assert reader.wait_ready(5)
        assert offset_map.downstream(("t", 0), 3) == 3
        assert not reader.advanced.is_set() and woken == []  # the first read is no advance
        consumer.script.append(map_record(0, 0, 9))  # the run grew: the source task sent it again
        wait_until(lambda: offset_map.records_read == 2, 5, "the grown run")
        wait_until(lambda: woken == [True], 5, "the wake-up after the event was set")
        assert reader.advanced.is_set()
        assert offset_map.downstream(("t", 0), 8) == 8
    finally:
        reader.stop()
