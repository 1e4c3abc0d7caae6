"""Source records deleted before replication (DeleteRecords, retention): found through the consumer seam.

Tansu cannot delete records (DeleteRecords panics its broker task, retention never runs: docs/tansu.md),
so this case is played on a fake consumer: after librdkafka's OFFSET_OUT_OF_RANGE reset
(``auto.offset.reset=earliest``) it hands out records from the new log start, and its cached low
watermark is that log start. The other cases (a re-created source topic, a remote topic deleted on the
target) run against real brokers in tests/integration/test_loss_detection.py, and the deletions themselves
against Apache Kafka in tests/kafka/test_kafka_loss_detection.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Message
from prometheus_client import CollectorRegistry, Counter, generate_latest

from mirror.client.models import TopicPartition
from mirror.metrics import TOPIC, loss_counters
from mirror.source.loss_detector import CHECK_INTERVAL_MS, CHECK_SLICE, LossDetector, ReplicationLossError
from tests.unit.mirror.test_mirror_tasks import started_task


def batch(partition: int, offsets: range) -> list[Message]:
    return [Message(topic="my-topic", partition=partition, offset=o, value=b"x", timestamp=(1, 1)) for o in offsets]


def lost(registry: CollectorRegistry, reason: str, partition: int = 0) -> tuple[float | None, float | None]:
    labels = {"source": "src", "target": "tgt", "topic": "src.my-topic", "partition": str(partition),
              "reason": reason}
    return (registry.get_sample_value("mirror_source_records_lost_total", labels),
            registry.get_sample_value("mirror_source_loss_events_total", labels))


class Sink:
    """The runtime's side of ``poll_bulk``: records what was produced, acknowledges nothing."""

    each_record = False
    produce_span = None

    def __init__(self) -> None:
        self.produced: list[tuple[str, int]] = []

    def produce(self, topic: str, value: Any, key: Any, partition: int, *_: Any) -> None:
        self.produced.append((topic, partition))

    def open_run(self, source_partition: Mapping[str, Any], source_offset: Mapping[str, Any], count: int,
                 target_topic: str, target_partition: int, tag: Any) -> Any:
        return type("Run", (), {"on_only": None, "on_first": None, "on_last": None, "on_each": None})()


def test_records_deleted_before_replication_are_counted_once_and_the_task_goes_on() -> None:
    registry = CollectorRegistry()
    task, consumer, _ = started_task({0: 9}, registry)  # records up to 9 replicated: 10 is next
    consumer.watermarks[("my-topic", 0)] = (25, 40)  # DeleteRecords(before 25), then the consumer reset
    consumer.script.append(batch(0, range(25, 28)))
    records = task.poll()
    assert [r.source_offset for r in records or []] == [{"offset": 25}, {"offset": 26}, {"offset": 27}]
    assert lost(registry, "source-truncated") == (15.0, 1.0)  # offsets 10..24
    consumer.script.append(batch(0, range(28, 30)))
    assert task.poll() is not None
    assert lost(registry, "source-truncated") == (15.0, 1.0)  # logged and counted once
    task.stop()


def test_records_deleted_before_replication_fail_the_task_with_policy_fail() -> None:
    task, consumer, _ = started_task({0: 9}, **{"replication.loss.policy": "fail"})
    consumer.watermarks[("my-topic", 0)] = (25, 40)
    consumer.script.append(batch(0, range(25, 28)))
    with pytest.raises(ReplicationLossError, match=r"my-topic-0 \(source-truncated, 15 counted\): source records "
                                                   r"10\.\.24 were deleted"):
        task.poll()
    task.stop()


def test_an_idle_partition_reset_past_lost_records_is_found_by_its_watermarks() -> None:
    registry = CollectorRegistry()
    task, consumer, _ = started_task({1: 9}, registry)
    consumer.watermarks[("my-topic", 1)] = (30, 30)  # everything up to 30 deleted, nothing new since
    assert task.poll() is None
    assert lost(registry, "source-truncated", partition=1) == (20.0, 1.0)
    task.stop()


def test_an_offset_gap_above_the_log_start_is_no_loss() -> None:
    """Transaction markers and compaction leave gaps in the offsets: the log start says they lost nothing."""
    registry = CollectorRegistry()
    task, consumer, _ = started_task({0: 9}, registry)
    consumer.watermarks[("my-topic", 0)] = (0, 40)
    consumer.script.append(batch(0, range(11, 13)) + batch(0, range(20, 22)))
    assert task.poll() is not None
    assert lost(registry, "source-truncated") == (0.0, 0.0)
    task.stop()


def test_the_bulk_path_detects_the_same_loss() -> None:
    registry = CollectorRegistry()
    task, consumer, _ = started_task({2: 4}, registry)
    consumer.watermarks[("my-topic", 2)] = (8, 12)
    consumer.script.append(batch(2, range(8, 12)))
    sink = Sink()
    assert task.poll_bulk(sink) == 4  # type: ignore[arg-type]
    assert lost(registry, "source-truncated", partition=2) == (3.0, 1.0)  # offsets 5..7
    task.stop()


def test_the_bulk_path_stops_before_producing_past_a_loss_with_policy_fail() -> None:
    task, consumer, _ = started_task({2: 4}, **{"replication.loss.policy": "fail"})
    consumer.watermarks[("my-topic", 2)] = (8, 12)
    consumer.script.append(batch(2, range(8, 12)))
    sink = Sink()
    with pytest.raises(ReplicationLossError, match=r"source records 5\.\.7 were deleted"):
        task.poll_bulk(sink)  # type: ignore[arg-type]
    assert sink.produced == []
    task.stop()


def test_status_shows_a_partition_replicated_beyond_its_source_end() -> None:
    """`mirror status`: a re-created source topic not replicated again yet is a loss the clusters show."""
    from mirror.cli.status import render
    from mirror.health.flow_health import FlowHealth, HealthReport, PartitionLag, State, Thresholds, evaluate, loss_of

    assert loss_of(3, 20) == ("source ends at 3, below the replicated offset 20: the source topic was re-created "
                              "or truncated")
    assert loss_of(20, 20) == "" and loss_of(None, 20) == "" and loss_of(3, None) == ""
    flow = FlowHealth("A", "B", 1000.0, heartbeat_age_seconds=0.5, heartbeat_basis="replicated",
                      partitions=[PartitionLag("t", "A.t", 0, 3, 20, "connect-offsets", 0, 0.0, loss_of(3, 20)),
                                  PartitionLag("t", "A.t", 1, 9, 9, "connect-offsets", 0, 0.0, loss_of(9, 9))])
    flow.state, flow.reasons = evaluate(flow, Thresholds())
    assert flow.state is State.DEGRADED
    assert flow.reasons == ["1 partition(s) lost records (first t-0: source ends at 3, below the replicated "
                            "offset 20: the source topic was re-created or truncated)"]
    assert "! 1 partition(s) lost records (first t-0" in render(HealthReport(1000.0, [flow]))


def test_status_shows_records_deleted_at_the_source_before_they_were_replicated() -> None:
    """`mirror status`: a Connect offset below the source's log start (retention or DeleteRecords ran
    ahead of replication) is a loss of exactly the records in between. Tansu never moves a log start
    (docs/tansu.md: no DeleteRecords, no retention), so the rule is checked here, on the model."""
    from mirror.health.flow_health import FlowHealth, PartitionLag, State, Thresholds, evaluate, loss_of

    assert loss_of(50, 10, 25) == ("15 record(s) deleted at the source before they were replicated (offsets 10 "
                                   "to 24: retention or DeleteRecords)")
    assert loss_of(50, 25, 25) == "" and loss_of(50, 30, 25) == "" and loss_of(50, 10, None) == ""
    flow = FlowHealth("A", "B", 1000.0, heartbeat_age_seconds=0.5, heartbeat_basis="replicated",
                      partitions=[PartitionLag("t", "A.t", 0, 50, 10, "connect-offsets", 40, 3.0,
                                               loss_of(50, 10, 25))])
    flow.state, flow.reasons = evaluate(flow, Thresholds())
    assert flow.state is State.DEGRADED
    assert flow.reasons[-1].startswith("1 partition(s) lost records (first t-0: 15 record(s) deleted")


def test_the_minus_one_watermarks_of_a_failed_fetch_are_unknown_not_a_recreated_topic() -> None:
    """An OFFSET_OUT_OF_RANGE fetch (records deleted under the consumer) leaves librdkafka's cached
    watermarks at -1: found on Apache Kafka (tests/kafka/test_kafka_loss_detection.py), where they were
    read as "the partition ends at -1", a re-created topic, counted from 0 and rewound to 0."""
    registry = CollectorRegistry()
    task, consumer, _ = started_task({0: 9}, registry)
    consumer.watermarks[("my-topic", 0)] = (-1, -1)
    assert task.poll() is None
    assert lost(registry, "source-recreated") == (0.0, 0.0)
    assert consumer.seeks == []
    # the consumer's reset then hands out the new log start; the cache still says -1, the broker says 25
    consumer.broker_watermarks[("my-topic", 0)] = (25, 40)
    consumer.script.append(batch(0, range(25, 28)))
    assert task.poll() is not None
    assert lost(registry, "source-truncated") == (15.0, 1.0)  # offsets 10..24
    task.stop()


def test_every_assigned_partition_exports_zero_losses_from_the_start_and_only_losses_outlive_the_task() -> None:
    """The alert on losses reads ``increase()``, which needs the series before the first loss; a closed task
    leaves the series of its losses, not its zeros."""
    registry = CollectorRegistry()
    task, consumer, _ = started_task({0: 9, 2: 4}, registry)
    reasons = ("source-truncated", "source-recreated", "target-truncated")
    for partition in (0, 2):
        for reason in reasons:
            assert lost(registry, reason, partition) == (0.0, 0.0), (partition, reason)
    consumer.watermarks[("my-topic", 0)] = (25, 40)
    consumer.script.append(batch(0, range(25, 28)))
    assert task.poll()
    task.stop()
    task.close()
    assert lost(registry, "source-truncated", 0) == (15.0, 1.0)
    assert [lost(registry, reason, p) for p, reason in ((0, "source-recreated"), (0, "target-truncated"),
                                                       *((2, r) for r in reasons))] == [(None, None)] * 5


@dataclass
class Tracked:
    tp: TopicPartition
    remote: str
    partition: int
    next_offset: int
    seen_end: int = -1
    downstream_next: int = 0


class WatermarkConsumer:
    """Cached watermarks per partition, and which partitions were read."""

    def __init__(self) -> None:
        self.watermarks: dict[tuple[str, int], tuple[int, int]] = {}
        self.read: list[int] = []

    def get_watermark_offsets(self, tp: Any, **_: Any) -> tuple[int, int]:
        self.read.append(tp.partition)
        return self.watermarks.get((tp.topic, tp.partition), (0, 100))

    def seek(self, tp: Any) -> None:
        pass


def test_each_watermark_check_reads_a_bounded_slice_and_every_partition_within_a_pass() -> None:
    """A check reads at most CHECK_SLICE partitions' watermarks, round-robin: its cost does not grow with
    the assignment, and a loss no consumed record shows is still found within ceil(n / CHECK_SLICE)
    checks."""
    now = [0]
    registry = CollectorRegistry()
    detector = LossDetector("task", "src", "tgt", False, loss_counters(registry), lambda: now[0])
    n = 2 * CHECK_SLICE + 10
    states = {p: Tracked(TopicPartition("t", p), "src.t", p, next_offset=5) for p in range(n)}
    consumer = WatermarkConsumer()
    consumer.watermarks[("t", n - 1)] = (50, 60)  # the last partition lost 5..49 while idle
    slices = []
    for _ in range(3):
        consumer.read.clear()
        detector.check_watermarks(consumer, states.values())  # type: ignore[arg-type]
        detector.check_watermarks(consumer, states.values())  # type: ignore[arg-type]  # within the interval
        slices.append(list(consumer.read))
        now[0] += CHECK_INTERVAL_MS
    assert [len(s) for s in slices] == [CHECK_SLICE, CHECK_SLICE, 10]
    assert sorted(p for s in slices for p in s) == list(range(n))
    assert states[n - 1].next_offset == 50
    assert registry.get_sample_value("mirror_source_records_lost_total", {
        "source": "src", "target": "tgt", "topic": "src.t", "partition": str(n - 1),
        "reason": "source-truncated"}) == 45.0
    # the next pass starts at the first partition again; a partition added meanwhile restarts the pass
    detector.check_watermarks(consumer, states.values())  # type: ignore[arg-type]
    assert consumer.read[-CHECK_SLICE:] == list(range(CHECK_SLICE))
    now[0] += CHECK_INTERVAL_MS
    states[n] = Tracked(TopicPartition("t", n), "src.t", n, next_offset=5)
    consumer.read.clear()
    detector.check_watermarks(consumer, states.values())  # type: ignore[arg-type]
    assert consumer.read == list(range(CHECK_SLICE))


def test_a_closing_task_keeps_the_loss_series_another_task_counted_under_shared_labels() -> None:
    """At topic detail two tasks share a topic's series: the one that closes removes the zeros it
    created, never a series the other counted a loss on."""
    registry = CollectorRegistry()
    counters = loss_counters(registry)
    first = LossDetector("t0", "src", "tgt", False, counters, lambda: 0, detail=TOPIC)
    second = LossDetector("t1", "src", "tgt", False, counters, lambda: 0, detail=TOPIC)
    mine = [Tracked(TopicPartition("t", 0), "src.t", 0, 5), Tracked(TopicPartition("u", 0), "src.u", 0, 5)]
    theirs = [Tracked(TopicPartition("t", 1), "src.t", 1, 5)]
    first.zero_series(mine)
    second.zero_series(theirs)
    consumer = WatermarkConsumer()
    consumer.watermarks[("t", 1)] = (9, 9)
    second.check_watermarks(consumer, theirs)  # type: ignore[arg-type]
    first.release_zero_series()

    def sample(topic: str, reason: str) -> float | None:
        return registry.get_sample_value("mirror_source_records_lost_total", {
            "source": "src", "target": "tgt", "topic": topic, "partition": "", "reason": reason})

    assert sample("src.t", "source-truncated") == 4.0
    assert sample("src.t", "source-recreated") is None
    assert sample("src.u", "source-truncated") is None


def test_the_loss_counters_export_what_prometheus_client_counters_export() -> None:
    """The loss series are plain floats, not Counter children (12,000 series at 2,000 topics at 0 from a
    task's start): the exposition is a Counter's, the ``_created`` values aside."""
    labels = ("source", "target", "topic", "partition", "reason")
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    light = loss_counters(ours)[0]
    counter = Counter("mirror_source_records_lost", light.describe()[0].documentation, labels, registry=theirs)
    for family in (light, counter):
        family.labels("src", "tgt", "src.t", "", "source-truncated")
        family.labels("src", "tgt", "src.t", "0", "source-recreated").inc(5)
        family.labels("src", "tgt", "src.u", "", "target-truncated")
        family.remove("src", "tgt", "src.u", "", "target-truncated")
        family.remove("src", "tgt", "src.u", "", "target-truncated")  # gone already: nothing happens
        with pytest.raises(ValueError):
            family.labels("src", "tgt", "src.t", "", "source-truncated").inc(-1)

    def text(registry: CollectorRegistry) -> str:
        exposition = generate_latest(registry).decode()
        return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", exposition).replace("mirror_source_loss_events", "")

    assert "mirror_source_loss_events_total" in generate_latest(ours).decode()
    ours_text = "\n".join(line for line in text(ours).splitlines() if "_total{" not in line or "records_lost" in line)
    assert [line for line in ours_text.splitlines() if "records_lost" in line] == [
        line for line in text(theirs).splitlines() if "records_lost" in line]
