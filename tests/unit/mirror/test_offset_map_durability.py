"""The exact offset map is durable before the source offsets that cover it are written.

MirrorSourceTask runs in WorkerSourceTask on the bulk path and on the per-record path (idempotence off),
with the shared fake clients: the replication producer's broker acknowledges on demand, and the offset
map's producer is held (its ``flush`` delivers nothing), which stands for a map topic that did not
acknowledge yet, a state a real broker cannot be held in on demand. A kill -9 in that state would lose
the runs, so no offset past them may be stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message
from prometheus_client import CollectorRegistry

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.task.worker_source_task import SourceTaskSettings, WorkerSourceTask
from connect_runtime.storage.memory import MemoryOffsetStore
from mirror.client.models import TopicPartition
from mirror.client.offset_map import OffsetRun
from mirror.source.offset_map_writer import OffsetMapWriter
from mirror.source.offset_sync_writer import OffsetSyncProducer, OffsetSyncWriter
from mirror.source.task import MirrorSourceTask
from tests.support.fakes import FakeConsumer, FakeProducer
from tests.support.kafka import wait_until
from tests.support.mm2 import flow_config

TASK = ConnectorTaskId("MirrorSourceConnector", 0)
PARTITION = {"cluster": "src", "partition": 0, "topic": "my-topic"}


class HeldProducer(FakeProducer):
    """A producer whose broker has not acknowledged: ``flush`` serves released reports only."""

    def flush(self, timeout: float | None = None) -> int:
        self.poll(0)
        return len(self)


class ClosingMapWriter(OffsetMapWriter):
    """Counts its closes (the task's own producers must be released once it stopped)."""

    closes = 0

    def close(self, timeout_s: float = 10.0) -> None:
        self.closes += 1
        super().close(timeout_s)


class ClosingSyncProducer(OffsetSyncProducer):
    closes = 0

    def close(self, timeout_s: float = 10.0) -> None:
        self.closes += 1
        super().close(timeout_s)


class Replication:
    """MirrorSourceTask in WorkerSourceTask with fake clients; offsets in memory."""

    def __init__(self, records: int, producer_config: Mapping[str, str], flush_timeout_ms: int = 200,
                 offset_syncs: bool = False, map_producer: FakeProducer | None = None) -> None:
        self.consumer = FakeConsumer({}, [[Message(topic="my-topic", partition=0, offset=o, value=b"x",
                                                   timestamp=(1, 1_000)) for o in range(records)]])
        self.producers: list[FakeProducer] = []
        self.map_producer = HeldProducer({}) if map_producer is None else map_producer
        self.store = MemoryOffsetStore()
        self.map_writers: list[ClosingMapWriter] = []
        self.sync_producers: list[ClosingSyncProducer] = []

        def map_factory(topic: str, config: Mapping[str, Any]) -> OffsetMapWriter:
            self.map_writers.append(ClosingMapWriter(topic, config, producer_factory=lambda _c: self.map_producer))
            return self.map_writers[-1]

        def sync_factory(topic: str, config: Mapping[str, Any], writer: OffsetSyncWriter) -> OffsetSyncProducer:
            self.sync_producers.append(ClosingSyncProducer(topic, config, writer,
                                                           producer_factory=lambda _c: FakeProducer(_c)))
            return self.sync_producers[-1]

        def producer_factory(config: Mapping[str, Any]) -> Any:
            self.producers.append(FakeProducer(config))
            return self.producers[-1]

        task = MirrorSourceTask(consumer_factory=lambda _c: self.consumer, offset_map_factory=map_factory,
                                offset_sync_factory=sync_factory)
        config = flow_config("src", "tgt", "a:1", "b:1", overrides={
            "task.assigned.partitions": "my-topic-0", "task.index": "0",
            "emit.offset-syncs.enabled": str(offset_syncs).lower()})
        self.registry = registry = CollectorRegistry()
        self.worker_task = WorkerSourceTask(
            TASK, task, config,
            SourceTaskSettings("w", offset_flush_interval_s=600.0, offset_flush_timeout_s=flush_timeout_ms / 1000),
            offset_store=self.store, producer_config=producer_config, status_listener=RecordingStatusListener(),
            metrics=ConnectMetrics.create(registry).for_task(TASK.connector, 0), producer_factory=producer_factory,
            metrics_registry=registry)
        self.worker_task.start()
        wait_until(lambda: self.producers and len(self.producers[0].delivery.produced) == records, 10,
                   "the records replicated")
        self.producers[0].delivery.release()  # the target acknowledged every replicated record
        wait_until(lambda: self.worker_task.outstanding == 0, 10, "the records acknowledged")

    def commit(self) -> None:
        before = self.worker_task.commit_cycles
        self.worker_task.request_commit()
        wait_until(lambda: self.worker_task.commit_cycles > before, 10, "an offset commit")

    def map_runs(self) -> list[tuple[int, int, int]]:
        runs = [OffsetRun.from_record(r.key, r.value) for r in self.map_producer.delivery.produced]
        return [(run.upstream, run.downstream, run.count) for run in runs]


PATHS = [pytest.param({}, True, id="bulk"), pytest.param({"enable.idempotence": "false"}, False, id="per-record")]


@pytest.mark.parametrize(("producer_config", "bulk"), PATHS)
def test_offsets_wait_until_the_map_runs_covering_them_are_delivered(producer_config: dict[str, str],
                                                                     bulk: bool) -> None:
    replication = Replication(5, producer_config)
    try:
        assert replication.worker_task.bulk is bulk
        replication.commit()
        assert replication.map_runs() == [(0, 0, 5)]  # the run was sent before the offsets were taken
        assert replication.store.get(TASK.connector, PARTITION) is None  # but is not delivered yet
        replication.map_producer.delivery.release()
        replication.commit()
        assert replication.store.get(TASK.connector, PARTITION) == {"offset": 4}
    finally:
        replication.worker_task.stop()
        assert replication.worker_task.join(10)


def test_a_map_run_the_broker_refused_holds_the_offsets_until_it_is_resent_and_delivered() -> None:
    replication = Replication(3, {})
    try:
        replication.commit()
        replication.map_producer.delivery.release(error=KafkaError(KafkaError._MSG_TIMED_OUT))
        replication.commit()  # the refusal is reported while the commit waits: nothing written
        assert replication.store.get(TASK.connector, PARTITION) is None
        replication.commit()  # the run is sent again; its delivery is still outstanding
        assert replication.map_runs() == [(0, 0, 3), (0, 0, 3)]
        assert replication.store.get(TASK.connector, PARTITION) is None
        replication.map_producer.delivery.release()
        replication.commit()
        assert replication.store.get(TASK.connector, PARTITION) == {"offset": 2}
    finally:
        replication.worker_task.stop()
        assert replication.worker_task.join(10)


def test_the_final_commit_at_stop_writes_no_offset_past_undelivered_map_runs() -> None:
    replication = Replication(4, {})
    replication.worker_task.stop()
    assert replication.worker_task.join(10)
    assert replication.map_runs() == [(0, 0, 4)]
    assert replication.store.get(TASK.connector, PARTITION) is None  # re-sent (and mapped anew) after a restart


def replication_series(registry: CollectorRegistry) -> list[str]:
    """The names of the task's per-partition replication samples (labelled with its remote topic)."""
    return [sample.name for family in registry.collect() for sample in family.samples
            if sample.labels.get("topic") == "src.my-topic"]


@pytest.mark.parametrize(("producer_config", "bulk"), PATHS)
def test_a_failed_final_commit_still_releases_the_producers_and_metrics(producer_config: dict[str, str],
                                                                        bulk: bool) -> None:
    replication = Replication(4, producer_config, offset_syncs=True)
    assert replication.worker_task.bulk is bulk
    assert replication_series(replication.registry)
    replication.worker_task.stop()
    assert replication.worker_task.join(10)
    assert replication.store.get(TASK.connector, PARTITION) is None  # the final commit failed (map held)
    assert [w.closes for w in replication.map_writers] == [1]
    assert [p.closes for p in replication.sync_producers] == [1]
    assert replication_series(replication.registry) == []


def test_a_successful_final_commit_releases_the_producers_once() -> None:
    replication = Replication(4, {}, offset_syncs=True, map_producer=FakeProducer({}))  # delivers on flush
    replication.worker_task.stop()
    assert replication.worker_task.join(10)
    assert replication.store.get(TASK.connector, PARTITION) == {"offset": 3}
    assert [w.closes for w in replication.map_writers] == [1]
    assert [p.closes for p in replication.sync_producers] == [1]
    assert replication_series(replication.registry) == []


class RefusingProducer(HeldProducer):
    """librdkafka's queue is full: ``produce`` raises BufferError until ``full`` is cleared."""

    full = True

    def produce(self, *args: Any, **kwargs: Any) -> None:
        if self.full:
            raise BufferError("Local: Queue full")
        super().produce(*args, **kwargs)


def test_a_barrier_waits_for_the_map_records_in_flight_when_it_was_made_and_no_later_ones() -> None:
    producer = HeldProducer({})
    writer = OffsetMapWriter("map", {}, producer_factory=lambda _c: producer)
    tp = TopicPartition("my-topic", 0)
    writer.record_run(tp, 0, 0, 5)
    barrier = writer.barrier()
    writer.record_run(tp, 7, 5, 2)  # a hole upstream: a second run, sent later
    writer.flush()
    assert len(producer.delivery.produced) == 2
    assert not barrier.wait(0)
    producer.delivery.release([0])  # only the record the barrier covers
    assert barrier.wait(0)


def test_a_run_the_producer_would_not_take_fails_the_barrier_at_once() -> None:
    producer = RefusingProducer({})
    writer = OffsetMapWriter("map", {}, producer_factory=lambda _c: producer)
    writer.record_run(TopicPartition("my-topic", 0), 0, 0, 5)
    assert not writer.barrier().wait(0)
    producer.full = False
    barrier = writer.barrier()  # resent
    producer.delivery.release()
    assert barrier.wait(0)
