"""Source and heartbeat tasks and the connectors' KIP-875 / exactly-once answers, without a broker.

The consumer and the offset-syncs producer are replaced by fakes at their factories, so the seek
rules, record conversion and offset-sync sending (partition 0, at most 10 in flight)
are checked exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, Message
from prometheus_client import CollectorRegistry

from connect_runtime.api.connector import ExactlyOnceSupport
from connect_runtime.api.errors import BadRequestError
from connect_runtime.api.records import RecordMetadata, SourceMap, metadata_of
from mirror.checkpoint.connector import MirrorCheckpointConnector
from mirror.client.models import Heartbeat, OffsetSync
from mirror.heartbeat.connector import MirrorHeartbeatConnector
from mirror.heartbeat.task import MirrorHeartbeatTask
from mirror.source.connector import MirrorSourceConnector
from mirror.source.offset_map_writer import OffsetMapWriter
from mirror.source.offset_sync_writer import OffsetSyncProducer
from mirror.source.task import LONG_FETCH_WAIT_PARTITIONS, MirrorSourceTask, copier_consumer_config
from tests.support.fakes import FakeConsumer, FakeProducer
from tests.support.mm2 import flow_config


def sent(producer: FakeProducer) -> list[tuple[str, bytes | None, bytes | None, int]]:
    return [(r.topic, r.key, r.value, r.partition) for r in producer.delivery.produced]


def deliver(producer: FakeProducer) -> None:
    """The target acknowledges every offset sync sent so far; the producer's next poll reports it."""
    producer.delivery.release()
    producer.poll(0)


class Reader:
    def __init__(self, stored: dict[int, int]) -> None:
        self.stored = stored

    def offset(self, partition: SourceMap) -> Mapping[str, Any] | None:
        value = self.stored.get(partition["partition"])
        return None if value is None else {"offset": value}

    def offsets(self, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
        return [(p, self.offset(p)) for p in partitions]


class Context:
    def __init__(self, stored: dict[int, int], registry: CollectorRegistry | None = None) -> None:
        self.reader = Reader(stored)
        self.metrics_registry = registry if registry is not None else CollectorRegistry()

    @property
    def task_id(self) -> int:
        return 0

    @property
    def worker_id(self) -> str:
        return "w"

    def offset_storage_reader(self) -> Reader:
        return self.reader


def started_task(stored: dict[int, int], registry: CollectorRegistry | None = None,
                 markers: Any = None, **overrides: str) -> tuple[MirrorSourceTask, FakeConsumer, FakeProducer]:
    """A started source task over fakes; ``markers``: the flow's backfill marker log (None: the topic is absent)."""
    consumers: list[FakeConsumer] = []
    producers: list[FakeProducer] = []
    map_producers: list[FakeProducer] = []

    def consumer_factory(config: Mapping[str, Any]) -> Any:
        consumers.append(FakeConsumer(config))
        return consumers[-1]

    def sync_factory(topic: str, config: Mapping[str, Any], writer: Any) -> OffsetSyncProducer:
        def producer_factory(c: Mapping[str, Any]) -> Any:
            producers.append(FakeProducer(c))
            return producers[-1]
        return OffsetSyncProducer(topic, config, writer, producer_factory=producer_factory)

    def map_factory(topic: str, config: Mapping[str, Any]) -> OffsetMapWriter:
        return OffsetMapWriter(topic, config, producer_factory=lambda c: map_producers.append(FakeProducer(c))
                               or map_producers[-1])

    task = MirrorSourceTask(consumer_factory=consumer_factory, offset_sync_factory=sync_factory,
                            offset_map_factory=map_factory, clock_ms=lambda: 10_000,
                            marker_log_factory=lambda *_: markers)
    task.initialize(Context(stored, registry))
    config = flow_config("src", "tgt", "a:1", "b:1", overrides={
        "task.assigned.partitions": "my-topic-0,my-topic-1,my-topic-2", "task.index": "0", "offset.lag.max": "0",
        **overrides})
    task.start(config)
    return task, consumers[0], producers[0] if producers else FakeProducer({})


def test_task_seeks_after_stored_offsets_and_starts_the_rest_where_auto_offset_reset_says() -> None:
    """Never OFFSET_INVALID for a partition with nothing stored: librdkafka would ask the coordinator for
    the committed offset of a group that never commits, and a NOT_COORDINATOR answer left the partition
    unfetched (tests/kafka/test_kafka_chaos.py)."""
    task, consumer, _ = started_task({0: 4, 2: 0})
    assert [(tp.topic, tp.partition, tp.offset) for tp in consumer.assigned] == [
        ("my-topic", 0, 5), ("my-topic", 1, OFFSET_BEGINNING), ("my-topic", 2, 1)]
    assert consumer.config["enable.auto.commit"] == "false"
    assert consumer.config["auto.offset.reset"] == "earliest"
    assert consumer.config["isolation.level"] == "read_uncommitted"  # Java's default, not librdkafka's
    assert consumer.config["client.id"] == "src->tgt|MirrorSourceConnector-0|replication-consumer"
    task.stop()
    assert consumer.closed


def test_a_task_of_many_partitions_waits_two_seconds_on_an_idle_fetch_unless_the_user_says() -> None:
    """librdkafka's 500 ms made idle tasks of thousands of partitions the node's busiest threads; a task of at
    most 1,000 partitions keeps it; the user's Java key (``consumer.*`` or ``source.consumer.*``) or librdkafka's
    own name wins at any size."""
    task, consumer, _ = started_task({})
    assert "fetch.wait.max.ms" not in consumer.config  # a small task: librdkafka's default
    task.stop()
    big = LONG_FETCH_WAIT_PARTITIONS + 1
    assert copier_consumer_config({}, "t", big)["fetch.wait.max.ms"] == "2000"
    assert "fetch.wait.max.ms" not in copier_consumer_config({}, "t", LONG_FETCH_WAIT_PARTITIONS)
    for key, value in (("fetch.max.wait.ms", "500"), ("fetch.wait.max.ms", "250")):
        assert copier_consumer_config({key: value}, "t", big)["fetch.wait.max.ms"] == value, key
    for key, value in (("consumer.fetch.max.wait.ms", "500"), ("source.consumer.fetch.max.wait.ms", "100"),
                       ("source.consumer.fetch.wait.max.ms", "250")):
        task, consumer, _ = started_task({}, **{key: value})
        assert consumer.config["fetch.wait.max.ms"] == value, key
        task.stop()


def test_records_keep_key_value_headers_timestamp_and_partition() -> None:
    task, consumer, _ = started_task({})
    consumer.script.append([
        Message(topic="my-topic", partition=2, offset=7, key=b"k", value=None, headers=[("h", b"1"), ("n", None)],
                timestamp=(1, 1_600_000_000_000)),
        Message(topic="my-topic", partition=1, offset=0, key=None, value=b"v", timestamp=(0, -1)),
    ])
    records = task.poll()
    assert records is not None and len(records) == 2
    first, second = records
    assert (first.topic, first.partition, first.key, first.value, list(first.headers or []), first.timestamp) == (
        "src.my-topic", 2, b"k", None, [("h", b"1"), ("n", None)], 1_600_000_000_000)
    assert list(first.source_partition.items()) == [("cluster", "src"), ("partition", 2), ("topic", "my-topic")]
    assert first.source_offset == {"offset": 7}
    assert second.timestamp is None  # no timestamp available upstream: the producer stamps it
    assert task.poll() is None  # nothing more
    task.stop()


def test_poll_returns_what_is_there_and_waits_only_for_a_first_record() -> None:
    """Java's poll returns as soon as records are there; librdkafka's consume(n, t) would wait for n."""
    task, consumer, _ = started_task({}, **{"source.consumer.max.poll.records": "3"})
    consumer.script.append([Message(topic="my-topic", partition=0, offset=o, value=b"x", timestamp=(1, 1))
                             for o in range(5)])
    assert [r.source_offset for r in task.poll() or []] == [{"offset": 0}, {"offset": 1}, {"offset": 2}]
    assert [r.source_offset for r in task.poll() or []] == [{"offset": 3}, {"offset": 4}]
    assert consumer.waits == [0, 0]  # records were there: no wait at all
    assert task.poll() is None
    assert consumer.waits[2:] == [0, 1.0]  # nothing there: one wait (consumer.poll.timeout.ms) for a first one
    task.stop()


def test_commit_record_sends_offset_syncs_to_partition_0_at_most_10_in_flight() -> None:
    task, consumer, producer = started_task({})
    batch = [Message(topic="my-topic", partition=p, offset=o, key=None, value=b"x", timestamp=(1, 1))
             for p in range(3) for o in range(5)]
    consumer.script.append(batch)
    records = task.poll() or []
    for index, record in enumerate(records):  # offset.lag.max=0: every record is due
        task.commit_record(record, RecordMetadata(record.topic, record.partition or 0, 100 + index))
    assert len(sent(producer)) == 10  # the limit; the rest stays pending
    assert {(topic, partition) for topic, _, _, partition in sent(producer)} == {("mm2-offset-syncs.tgt.internal", 0)}
    deliver(producer)
    task.commit()  # frees the slots: the latest pending sync per partition goes out
    syncs = [OffsetSync.from_record(key, value) for _, key, value, _ in sent(producer)]
    assert syncs[0].as_tuple() == ("my-topic", 0, 0, 100)
    assert max(s.upstream_offset for s in syncs if s.topic_partition.partition == 2) == 4
    task.commit_record(records[0], None)  # filtered record: no sync, no error
    task.stop()


@pytest.mark.parametrize("lag_max", ["0", "3", "100"])
def test_commit_records_does_what_commit_record_does_for_each(lag_max: str) -> None:
    """The runtime acknowledges in batches (commit_records); the syncs and metrics must not change.

    The offset-syncs producer acknowledges at once here, so that no sync is replaced while waiting for
    a free slot: every sync that fires is sent. Batches are processed partition by partition, so only
    the order *within* a partition is compared.
    """
    results = []
    for batched in (False, True):
        registry = CollectorRegistry()
        task, consumer, producer = started_task({}, registry, **{"offset.lag.max": lag_max})
        produce = producer.produce

        def produce_and_deliver(*args: Any, _produce: Any = produce, _producer: Any = producer,
                                **kwargs: Any) -> None:
            _produce(*args, **kwargs)
            deliver(_producer)

        producer.produce = produce_and_deliver  # type: ignore[method-assign]
        # two polls; partition 1 skips upstream offset 3 (compaction) and partition 2 has no timestamp
        consumer.script.append([Message(topic="my-topic", partition=p, offset=o, value=b"x" * p,
                                         timestamp=(0, 0) if p == 2 else (1, 9_000 + o))
                                 for o in (0, 1, 2, 4, 5, 6) for p in range(3) if not (p != 1 and o == 4)])
        consumer.script.append([Message(topic="my-topic", partition=0, offset=o, value=b"y", timestamp=(1, 9_990))
                                 for o in range(7, 30)])
        downstream = {0: 500, 1: 0, 2: 70}
        for _ in range(2):
            records = task.poll() or []
            acknowledged = []
            for record in records:  # the target acknowledged them, partition by partition in order
                partition = record.partition or 0
                delivered = Message(topic=record.topic, partition=partition, offset=downstream[partition],
                                    timestamp=(1, 9_999))
                downstream[partition] += 1
                acknowledged.append((record, delivered))
            if batched:
                task.commit_records(acknowledged)
            else:
                for record, delivered in acknowledged:
                    task.commit_record(record, metadata_of(delivered))
            deliver(producer)
        task.commit()
        deliver(producer)
        syncs = sorted((OffsetSync.from_record(key, value).as_tuple() for _, key, value, _ in sent(producer)),
                       key=lambda sync: sync[1])  # stable: keeps each partition's order
        samples = sorted((m.name, tuple(sorted(s.labels.items())), s.value)
                         for m in registry.collect() for s in m.samples
                         if not s.name.endswith("_created"))  # when a counter was created: not behaviour
        results.append((syncs, samples))
        task.stop()
    (syncs, samples), (batched_syncs, batched_samples) = results
    assert syncs and samples
    assert batched_syncs == syncs
    assert batched_samples == samples


def test_offset_syncs_can_be_disabled() -> None:
    task, consumer, producer = started_task({}, **{"emit.offset-syncs.enabled": "false"})
    consumer.script.append([Message(topic="my-topic", partition=0, offset=0, value=b"x", timestamp=(1, 1))])
    [record] = task.poll() or []
    task.commit_record(record, RecordMetadata(record.topic, 0, 0))
    task.commit()
    assert sent(producer) == []
    task.stop()


def test_heartbeat_task_emits_one_record_per_poll() -> None:
    task = MirrorHeartbeatTask(clock_ms=lambda: 1_700_000_000_000)
    task.start(flow_config("primary", "backup", "a:1", "b:1", name="MirrorHeartbeatConnector",
                           overrides={"emit.heartbeats.interval.seconds": "0"}))
    [record] = task.poll() or []
    assert (record.topic, record.partition, record.timestamp) == ("heartbeats", 0, 1_700_000_000_000)
    assert record.key == bytes.fromhex("0007 7072696d617279 0006 6261636b7570")
    assert record.value == bytes.fromhex("0000 0000018bcfe56800")
    assert list(record.source_partition) == ["sourceClusterAlias", "targetClusterAlias"]
    assert record.source_offset == {"offset": 0}
    assert Heartbeat.from_record(record.key, record.value).timestamp == 1_700_000_000_000
    task.stop()
    assert task.poll() is None


# ---- KIP-875 offsets validation and exactly-once --------------------------------------------------


def offsets(*pairs: tuple[dict[str, Any], dict[str, Any] | None]) -> dict[str, tuple[SourceMap, Any]]:
    return {str(i): pair for i, pair in enumerate(pairs)}


def test_source_offsets_validation() -> None:
    connector = MirrorSourceConnector()
    good = {"cluster": "a", "topic": "t", "partition": 3}
    assert connector.alter_offsets({}, offsets((good, {"offset": 0}), ({"garbage": 1}, None)))
    for partition, offset in [
        ({"topic": "t", "partition": 0}, {"offset": 1}),  # no cluster
        ({"cluster": 1, "topic": "t", "partition": 0}, {"offset": 1}),
        ({"cluster": "a", "topic": "t", "partition": -1}, {"offset": 1}),
        ({"cluster": "a", "topic": "t", "partition": 2**31}, {"offset": 1}),
        ({"cluster": "a", "topic": "t", "partition": "0"}, {"offset": 1}),
        (good, {"offset": -1}),
        (good, {"offset": "5"}),
        (good, {"offset": True}),
        (good, {}),
    ]:
        with pytest.raises(BadRequestError):
            connector.alter_offsets({}, offsets((partition, offset)))


def test_checkpoint_and_heartbeat_offsets_must_be_zero() -> None:
    checkpoint = {"group": "g", "topic": "t", "partition": 0}
    assert MirrorCheckpointConnector().alter_offsets({}, offsets((checkpoint, {"offset": 0})))
    with pytest.raises(BadRequestError):
        MirrorCheckpointConnector().alter_offsets({}, offsets((checkpoint, {"offset": 1})))
    heartbeat = {"sourceClusterAlias": "a", "targetClusterAlias": "b"}
    assert MirrorHeartbeatConnector().alter_offsets({}, offsets((heartbeat, {"offset": 0}), (heartbeat, None)))
    with pytest.raises(BadRequestError):
        MirrorHeartbeatConnector().alter_offsets({}, offsets(({"sourceClusterAlias": "a"}, {"offset": 0})))


def test_source_exactly_once_needs_read_committed() -> None:
    base = flow_config("a", "b", "a:1", "b:1")
    assert MirrorSourceConnector().exactly_once_support(base) is ExactlyOnceSupport.UNSUPPORTED
    committed = {**base, "source.consumer.isolation.level": "read_committed"}
    assert MirrorSourceConnector().exactly_once_support(committed) is ExactlyOnceSupport.SUPPORTED
    errors = MirrorSourceConnector().validate({**base, "exactly.once.support": "required"})
    assert errors["exactly.once.support"].errors
    assert not MirrorSourceConnector().validate({**committed, "exactly.once.support": "required"})[
        "exactly.once.support"].errors


def test_source_validation_rejects_offset_sync_keys_without_offset_syncs() -> None:
    base = flow_config("a", "b", "a:1", "b:1")
    base.pop("offset-syncs.topic.replication.factor")
    assert not MirrorSourceConnector().validate({**base, "emit.offset-syncs.enabled": "false"})[
        "emit.offset-syncs.enabled"].errors
    invalid = {**base, "emit.offset-syncs.enabled": "false", "offset-syncs.topic.replication.factor": "1"}
    assert MirrorSourceConnector().validate(invalid)["emit.offset-syncs.enabled"].errors


def topic_series(registry: CollectorRegistry) -> list[Any]:
    """The metric samples of the replicated topic ``src.my-topic``."""
    return [s for m in registry.collect() for s in m.samples if s.labels.get("topic") == "src.my-topic"]


class AssignFailingConsumer(FakeConsumer):
    def assign(self, partitions: list[Any]) -> None:
        from confluent_kafka import KafkaError, KafkaException
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "assign refused"))


def test_source_task_stopped_and_closed_after_a_failed_start_releases_what_start_opened() -> None:
    """What the runtime does after a start that raised (stop, then close): the consumer start had already
    built is closed, and the offset-sync producer and the partition metrics are released."""
    from confluent_kafka import KafkaException

    consumers: list[FakeConsumer] = []
    sync_producers: list[OffsetSyncProducer] = []

    def consumer_factory(config: Mapping[str, Any]) -> Any:
        consumers.append(AssignFailingConsumer(config))
        return consumers[-1]

    def sync_factory(topic: str, config: Mapping[str, Any], writer: Any) -> OffsetSyncProducer:
        sync_producers.append(OffsetSyncProducer(topic, config, writer, producer_factory=FakeProducer))
        return sync_producers[-1]

    registry = CollectorRegistry()
    task = MirrorSourceTask(consumer_factory=consumer_factory, offset_sync_factory=sync_factory)
    task.initialize(Context({}, registry))
    config = flow_config("src", "tgt", "a:1", "b:1", overrides={"task.assigned.partitions": "my-topic-0"})
    with pytest.raises(KafkaException, match="assign refused"):
        task.start(config)
    assert topic_series(registry)
    task.stop()
    task.close()
    assert [c.closed for c in consumers] == [True]
    assert [p._closed for p in sync_producers] == [True]
    assert not topic_series(registry)


def test_source_task_close_releases_the_rest_when_one_release_raises() -> None:
    registry = CollectorRegistry()
    task, _, _ = started_task({}, registry)
    assert task._offset_syncs is not None

    def broken(timeout_s: float = 10.0) -> None:
        raise RuntimeError("flush failed")

    task._offset_syncs.close = broken  # type: ignore[method-assign]
    assert topic_series(registry)
    task.stop()
    task.close()
    # The metrics were released all the same.
    assert not topic_series(registry)


class RefusingTopicFilter:
    """A topic filter plugin whose configure raises (it could not reach what it needs)."""

    def configure(self, config: Mapping[str, str]) -> None:
        raise RuntimeError("filter service unreachable")

    def should_replicate_topic(self, topic: str) -> bool:
        return True


@pytest.mark.parametrize("connector_class", [MirrorSourceConnector, MirrorCheckpointConnector])
def test_connector_failing_in_start_opened_no_admin_client(connector_class: type[Any]) -> None:
    """The runtime does not stop a connector whose start raised (Java's WorkerConnector neither), so the
    connectors load their plugins before they open clients."""
    opened: list[Mapping[str, Any]] = []

    def admin_factory(config: Mapping[str, Any], timeout_s: float = 30.0) -> Any:
        opened.append(config)
        return object()

    connector = connector_class(admin_factory=admin_factory)
    config = flow_config("src", "tgt", "a:1", "b:1", name=connector_class.__name__,
                         overrides={"topic.filter.class": f"{__name__}.RefusingTopicFilter"})
    with pytest.raises(RuntimeError, match="filter service unreachable"):
        connector.start(config)
    assert opened == []


def test_checkpoint_task_failing_at_its_target_admin_holds_no_client_once_stopped_and_closed() -> None:
    """The target admin refuses its config after the source admin was built; the runtime's stop and close
    after that failed start leave nothing holding the source admin (a librdkafka handle)."""
    import gc
    import weakref

    from connect_runtime.api.errors import ConnectError
    from mirror.checkpoint.task import MirrorCheckpointTask

    class Admin:
        pass

    built: list[weakref.ref[Admin]] = []

    def admin_factory(config: Mapping[str, Any], timeout_s: float = 30.0) -> Admin:
        if built:
            raise ConnectError("Invalid value for configuration property socket.timeout.ms")
        admin = Admin()
        built.append(weakref.ref(admin))
        return admin

    task = MirrorCheckpointTask(admin_factory=admin_factory)
    task.initialize(Context({}))
    config = flow_config("src", "tgt", "a:1", "b:1", name="MirrorCheckpointConnector",
                         overrides={"task.assigned.groups": "g1"})
    with pytest.raises(ConnectError, match=r"socket\.timeout\.ms"):
        task.start(config)
    task.stop()
    task.close()
    gc.collect()
    assert len(built) == 1 and built[0]() is None


@pytest.mark.parametrize(("reset", "start"), [("earliest", OFFSET_BEGINNING), ("latest", OFFSET_END),
                                              ("none", OFFSET_INVALID)])
def test_a_partition_with_nothing_stored_starts_at_auto_offset_reset(reset: str, start: int) -> None:
    task, consumer, _ = started_task({}, **{"consumer.auto.offset.reset": reset})
    assert [tp.offset for tp in consumer.assigned] == [start, start, start]
    task.stop()


def test_stopped_marker_is_written_at_close_never_by_a_commit_after_stop() -> None:
    """A ``commit`` after ``stop`` may be a periodic one that finished while the task thread still
    copied; STOPPED tells a backfill that the task writes nothing more and its stored offsets are final,
    so only ``close`` (after the runtime's final flush and commit) writes it, with the closing positions."""
    task, consumer, _ = started_task({0: 4})
    events: list[str] = []

    class Recording:
        def note_positions(self, c: Any) -> None:
            events.append("positions")

        def stopped(self) -> None:
            events.append("stopped")

    task._events = Recording()  # type: ignore[assignment]
    task.stop()
    assert consumer.closed and events == ["positions"]
    task.commit()
    task.commit()
    assert events == ["positions"]
    task.close()
    task.close()  # once only
    assert events == ["positions", "stopped"]
