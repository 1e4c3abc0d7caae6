"""The exact offset map is sent on its own clock, not only at the source-offset commits.

MirrorSourceTask runs in WorkerSourceTask with an offset flush interval of 600 s (no offset commit happens
unless the test asks for one) and the shared fake clients; the map writer's clock is injected, so "a
second later" is a step of the test, not a sleep. The replication producer's broker acknowledges only when
the test releases its records, and the map producer's broker acknowledges only when the test releases
its records too (its ``flush`` delivers nothing), which stands for a map topic that did not acknowledge
yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import Message
from prometheus_client import CollectorRegistry

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.task.exactly_once_task import ExactlyOnceWorkerSourceTask
from connect_runtime.runtime.task.source_task_settings import TransactionSettings
from connect_runtime.runtime.task.worker_source_task import SourceTaskSettings, WorkerSourceTask
from connect_runtime.storage.memory import MemoryOffsetStore
from mirror.client.models import TopicPartition
from mirror.client.offset_map import OffsetRun
from mirror.source.offset_map_writer import MAP_FLUSH_INTERVAL_S, OffsetMapWriter
from mirror.source.task import MirrorSourceTask
from tests.support.fakes import FakeConsumer, FakeProducer
from tests.support.kafka import wait_until
from tests.support.mm2 import flow_config
from tests.unit.connect_runtime.test_exactly_once_task import Offsets, TxnProducer

TASK = ConnectorTaskId("MirrorSourceConnector", 0)
PARTITION = {"cluster": "src", "partition": 0, "topic": "my-topic"}


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = MAP_FLUSH_INTERVAL_S) -> None:
        self.now += seconds


class HeldProducer(FakeProducer):
    """A producer whose broker has not acknowledged: ``flush`` serves released reports only."""

    def flush(self, timeout: float | None = None) -> int:
        self.poll(0)
        return len(self)


def runs_of(producer: FakeProducer) -> list[tuple[int, int, int]]:
    runs = [OffsetRun.from_record(r.key, r.value) for r in producer.delivery.produced]
    return [(run.upstream, run.downstream, run.count) for run in runs]


class Replication:
    """One task copying ``batches`` (one consumer poll each) with a hand-moved map clock."""

    def __init__(self, batches: list[list[int]], producer_config: Mapping[str, str]) -> None:
        self.clock = Clock()
        self.consumer = FakeConsumer({}, [[Message(topic="my-topic", partition=0, offset=o, value=b"x",
                                                   timestamp=(1, 1_000)) for o in batch] for batch in batches])
        self.producers: list[FakeProducer] = []
        self.map_producer = HeldProducer({})
        self.store = MemoryOffsetStore()

        def map_factory(topic: str, config: Mapping[str, Any]) -> OffsetMapWriter:
            return OffsetMapWriter(topic, config, producer_factory=lambda _c: self.map_producer, clock=self.clock)

        def producer_factory(config: Mapping[str, Any]) -> Any:
            self.producers.append(FakeProducer(config))
            return self.producers[-1]

        task = MirrorSourceTask(consumer_factory=lambda _c: self.consumer, offset_map_factory=map_factory)
        config = flow_config("src", "tgt", "a:1", "b:1", overrides={
            "task.assigned.partitions": "my-topic-0", "task.index": "0", "emit.offset-syncs.enabled": "false"})
        registry = CollectorRegistry()
        self.worker_task = WorkerSourceTask(
            TASK, task, config,
            SourceTaskSettings("w", offset_flush_interval_s=600.0, offset_flush_timeout_s=0.2),
            offset_store=self.store, producer_config=producer_config, status_listener=RecordingStatusListener(),
            metrics=ConnectMetrics.create(registry).for_task(TASK.connector, 0), producer_factory=producer_factory,
            metrics_registry=registry)
        self.worker_task.start()
        self.records = sum(len(b) for b in batches)
        wait_until(lambda: self.producers and len(self.producers[0].delivery.produced) == self.records, 10,
                   "the records replicated")

    def acknowledge(self, indexes: list[int] | None = None) -> None:
        """The target acknowledges these replicated records (all if None)."""
        delivery = self.producers[0].delivery
        delivery.release(indexes)
        wait_until(lambda: self.worker_task.outstanding == delivery.unreleased(), 10, "the acknowledgements")

    def commit(self) -> None:
        before = self.worker_task.commit_cycles
        self.worker_task.request_commit()
        wait_until(lambda: self.worker_task.commit_cycles > before, 10, "an offset commit")

    def stop(self) -> None:
        self.worker_task.stop()
        assert self.worker_task.join(10)


PATHS = [pytest.param({}, True, id="bulk"), pytest.param({"enable.idempotence": "false"}, False, id="per-record")]


@pytest.mark.parametrize(("producer_config", "bulk"), PATHS)
def test_acknowledged_runs_are_sent_once_the_interval_passed_without_any_offset_commit(
        producer_config: dict[str, str], bulk: bool) -> None:
    replication = Replication([[0, 1, 2, 3, 4]], producer_config)
    try:
        assert replication.worker_task.bulk is bulk
        replication.clock.advance()
        # Nothing acknowledged yet: the task polls (idle) past the interval and sends nothing.
        polls = len(replication.consumer.waits)
        wait_until(lambda: len(replication.consumer.waits) > polls + 2, 10, "idle polls")
        assert runs_of(replication.map_producer) == []
        replication.acknowledge()
        # The acknowledgement itself runs the clock: the run goes out without an offset commit.
        wait_until(lambda: runs_of(replication.map_producer) == [(0, 0, 5)], 10, "the run sent on the clock")
        assert replication.worker_task.commit_cycles == 0
        assert replication.store.get(TASK.connector, PARTITION) is None
    finally:
        replication.stop()


@pytest.mark.parametrize(("producer_config", "bulk"), PATHS)
def test_a_run_that_grew_before_the_interval_is_sent_by_an_idle_poll_once_it_passed(
        producer_config: dict[str, str], bulk: bool) -> None:
    replication = Replication([[0, 1, 2], [3, 4, 5, 6]], producer_config)
    try:
        assert replication.worker_task.bulk is bulk
        replication.clock.advance()
        replication.acknowledge([0, 1, 2])
        wait_until(lambda: runs_of(replication.map_producer) == [(0, 0, 3)], 10, "the first run")
        replication.acknowledge()  # within the interval: the grown run waits for the clock
        polls = len(replication.consumer.waits)
        wait_until(lambda: len(replication.consumer.waits) > polls + 2, 10, "idle polls")
        assert runs_of(replication.map_producer) == [(0, 0, 3)]
        replication.clock.advance()  # nothing more is acknowledged: the next idle poll sends it
        wait_until(lambda: runs_of(replication.map_producer) == [(0, 0, 3), (0, 0, 7)], 10, "the grown run")
        assert replication.worker_task.commit_cycles == 0
    finally:
        replication.stop()


def test_a_run_sent_on_the_clock_but_not_delivered_still_holds_the_offsets() -> None:
    replication = Replication([[0, 1, 2, 3]], {})
    try:
        replication.clock.advance()
        replication.acknowledge()
        wait_until(lambda: runs_of(replication.map_producer) == [(0, 0, 4)], 10, "the run sent on the clock")
        replication.commit()  # the map topic has not acknowledged the run: no offset may be stored
        assert replication.store.get(TASK.connector, PARTITION) is None
        replication.map_producer.delivery.release()
        replication.commit()
        assert replication.store.get(TASK.connector, PARTITION) == {"offset": 3}
        assert runs_of(replication.map_producer) == [(0, 0, 4)]  # nothing new to send: the run went once
    finally:
        replication.stop()


def test_the_writer_sends_on_its_clock_only_what_is_new_or_grown() -> None:
    clock = Clock()
    producer = HeldProducer({})
    writer = OffsetMapWriter("map", {}, producer_factory=lambda _c: producer, clock=clock)
    tp = TopicPartition("my-topic", 0)
    writer.record_run(tp, 0, 0, 5)
    assert writer.flush_if_due() == 0
    clock.advance(MAP_FLUSH_INTERVAL_S - 0.01)
    assert writer.flush_if_due() == 0
    clock.advance(0.01)
    assert writer.flush_if_due() == 1
    writer.record_run(tp, 5, 5, 2)
    assert writer.flush_if_due() == 0  # the interval restarts at each send
    clock.advance()
    assert writer.flush_if_due() == 1
    clock.advance()
    assert writer.flush_if_due() == 0  # nothing new
    assert runs_of(producer) == [(0, 0, 5), (0, 0, 7)]
    writer.record_run(tp, 7, 7, 1)
    assert writer.flush_if_due() == 1  # the last send is over an interval old: at once
    writer.record_run(tp, 8, 8, 1)
    clock.advance(MAP_FLUSH_INTERVAL_S / 2)
    writer.flush()  # an offset commit's flush restarts the clock too
    writer.record_run(tp, 9, 9, 1)
    clock.advance(MAP_FLUSH_INTERVAL_S / 2)
    assert writer.flush_if_due() == 0
    assert runs_of(producer)[-1] == (0, 0, 9)


class LoggingMapProducer(FakeProducer):
    """The map producer, logging each run it is handed in the transactional producer's log."""

    def __init__(self, log: list[Any]) -> None:
        super().__init__({})
        self.log = log

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                **kwargs: Any) -> None:
        run = OffsetRun.from_record(key, value)
        self.log.append(("map", run.upstream, run.downstream, run.count))
        super().produce(topic, value, key, partition, **kwargs)


class BulkTxnProducer(TxnProducer):
    """TxnProducer taking the bulk path's positional arguments, whose broker acknowledges each record at
    the next ``poll``, inside its open transaction, as a real broker does: the records are acknowledged
    before their transaction commits."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        self.log.append(("produce", topic))
        FakeProducer.produce(self, topic, *args, **kwargs)

    def poll(self, timeout: float | None = None) -> int:
        self.delivery.release()
        return super().poll(timeout)


def test_under_exactly_once_the_map_only_covers_committed_transactions() -> None:
    """The clock is far past due all along, so every chance to send is taken: still no run covers a record
    before the transaction holding it committed (the task hears of records only after the commit)."""
    log: list[Any] = []
    clock = Clock()
    batches = [[0, 1, 2], [3, 4], [5, 6, 7, 8]]
    consumer = FakeConsumer({}, [[Message(topic="my-topic", partition=0, offset=o, value=b"x", timestamp=(1, 1_000))
                                  for o in batch] for batch in batches])
    map_producer = LoggingMapProducer(log)
    task = MirrorSourceTask(consumer_factory=lambda _c: consumer, offset_map_factory=lambda topic, config: (
        OffsetMapWriter(topic, config, producer_factory=lambda _c: map_producer, clock=clock)))
    config = flow_config("src", "tgt", "a:1", "b:1", overrides={
        "task.assigned.partitions": "my-topic-0", "task.index": "0", "emit.offset-syncs.enabled": "false"})
    registry = CollectorRegistry()
    worker_task = ExactlyOnceWorkerSourceTask(
        TASK, task, config,
        SourceTaskSettings("w", offset_flush_interval_s=0.0, transactions=TransactionSettings("g-c-0", "poll")),
        offset_store=Offsets(), producer_config={"bootstrap.servers": "b:1"},
        status_listener=RecordingStatusListener(), metrics=ConnectMetrics.create(registry).for_task(TASK.connector, 0),
        producer_factory=lambda c: BulkTxnProducer(c, log), metrics_registry=registry)
    clock.advance(3600)
    worker_task.start()
    try:
        wait_until(lambda: any(e[0] == "map" and e[1] + e[3] == 9 for e in log if isinstance(e, tuple)), 10,
                   "the last transaction's records mapped")
    finally:
        worker_task.stop()
        assert worker_task.join(10)
    assert worker_task.failure is None
    committed = 0  # records of the replicated topic in committed transactions, at each point of the log
    produced = 0
    for entry in log:
        if entry == "commit":
            committed = produced
        elif isinstance(entry, tuple) and entry[0] == "produce" and entry[1] == "src.my-topic":
            produced += 1
        elif isinstance(entry, tuple) and entry[0] == "map":
            _, _, downstream, count = entry
            assert downstream + count <= committed, f"{entry} maps a record of an open transaction: {log}"
    assert log.count("commit") >= len(batches)
