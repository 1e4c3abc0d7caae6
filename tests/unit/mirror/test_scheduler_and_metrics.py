"""The MM2 scheduler (Kafka ``Scheduler`` semantics) and the Prometheus metrics of docs/metrics.md."""

from __future__ import annotations

import logging
import threading

import pytest
from prometheus_client import REGISTRY, CollectorRegistry

from mirror.checkpoint.metrics import MirrorCheckpointMetrics
from mirror.metrics import TOPIC, MirrorSourceMetrics, replicated_records
from mirror.scheduler import Scheduler
from tests.support.kafka import wait_until


def test_repeating_job_runs_now_and_again() -> None:
    runs: list[int] = []
    scheduler = Scheduler("test", timeout_s=5)
    try:
        scheduler.schedule_repeating(lambda: runs.append(1), 0.05, "ticking")
        wait_until(lambda: len(runs) >= 3, 5, "three runs")
    finally:
        scheduler.close()


def test_delayed_job_waits_one_interval_and_negative_interval_means_never() -> None:
    runs: list[str] = []
    scheduler = Scheduler("test", timeout_s=5)
    try:
        scheduler.schedule_repeating_delayed(lambda: runs.append("delayed"), 3600, "hourly")
        scheduler.schedule_repeating(lambda: runs.append("never"), -1, "disabled")
        scheduler.execute(lambda: runs.append("now"), "once")  # runs after anything already due
        assert runs == ["now"]
    finally:
        scheduler.close()


def test_failing_job_is_logged_and_keeps_its_schedule(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise RuntimeError("boom")

    scheduler = Scheduler("test", timeout_s=5)
    try:
        with caplog.at_level(logging.ERROR):
            scheduler.schedule_repeating(failing, 0.05, "failing job")
            wait_until(lambda: len(calls) >= 2, 5, "a second run after a failure")
    finally:
        scheduler.close()
    assert any("failing job" in r.getMessage() for r in caplog.records)


def test_execute_gives_up_waiting_after_the_timeout(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    scheduler = Scheduler("test", timeout_s=0.1)
    try:
        with caplog.at_level(logging.ERROR):
            scheduler.execute(lambda: release.wait(5), "slow job")
        assert any("timed out running slow job" in r.getMessage() for r in caplog.records)
    finally:
        release.set()
        scheduler.close()


def test_nothing_runs_after_close() -> None:
    runs: list[int] = []
    scheduler = Scheduler("test", timeout_s=1)
    scheduler.close()
    scheduler.execute(lambda: runs.append(1), "late")
    assert runs == []


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_source_metrics_per_partition() -> None:
    registry = CollectorRegistry()
    metrics = MirrorSourceMetrics(registry, "a", "b")
    metrics.register("a.t", 0)
    labels = {"source": "a", "target": "b", "topic": "a.t", "partition": "0"}
    assert sample(registry, "mirror_source_record_count_total", **labels) == 0
    metrics.record_polled("a.t", 0, 100, 1500)
    metrics.record_polled("a.t", 0, 0, 500)  # a null value counts 0 bytes
    metrics.record_committed("a.t", 0, 2000)
    assert sample(registry, "mirror_source_byte_count_total", **labels) == 100
    assert sample(registry, "mirror_source_record_count_total", **labels) == 1
    assert sample(registry, "mirror_source_record_age_ms", **labels) == 500
    assert sample(registry, "mirror_source_record_age_seconds_count", **labels) == 2
    assert sample(registry, "mirror_source_replication_latency_ms", **labels) == 2000
    assert sample(registry, "mirror_source_replication_latency_seconds_sum", **labels) == 2.0
    # a second task in the same registry shares the families
    MirrorSourceMetrics(registry, "a", "b").record_committed("a.t", 1, 10)
    metrics.close()
    assert sample(registry, "mirror_source_record_count_total", **labels) is None


def test_replicated_records_sums_the_scraped_record_counts_of_every_live_task() -> None:
    """The start-up narration's reader: the same total as the scrape, without collecting the registry."""
    registry = CollectorRegistry()
    assert replicated_records(registry) == 0  # no source task yet
    first = MirrorSourceMetrics(registry, "a", "b", task=0, detail=TOPIC)
    second = MirrorSourceMetrics(registry, "a", "b", task=1)
    first.register("a.t", 0)
    assert replicated_records(registry) == 0
    first.stats("a.t", 0).committed_run(3, 10)
    first.record_committed("a.t", 1, 10)
    second.stats("a.u", 5).committed_run(7, 10)
    scraped = sum(s.value for family in registry.collect() if family.name == "mirror_source_record_count"
                  for s in family.samples if s.name == "mirror_source_record_count_total")
    assert replicated_records(registry) == scraped == 11
    second.close()
    assert replicated_records(registry) == 4
    assert replicated_records(CollectorRegistry()) == 0  # another registry's tasks are not counted


def test_checkpoint_metrics_are_per_group_and_partition() -> None:
    """MM2 shares one sensor across all groups (a bug); here each series moves on its own."""
    registry = CollectorRegistry()
    metrics = MirrorCheckpointMetrics(registry, "a", "b")
    metrics.checkpoint_latency("g1", "a.t", 0, 100)
    metrics.checkpoint_latency("g2", "a.t", 0, 300)
    g1 = {"source": "a", "target": "b", "group": "g1", "topic": "a.t", "partition": "0"}
    g2 = dict(g1, group="g2")
    assert sample(registry, "mirror_checkpoint_latency_ms", **g1) == 100
    assert sample(registry, "mirror_checkpoint_latency_ms", **g2) == 300
    assert sample(registry, "mirror_checkpoint_latency_seconds_count", **g1) == 1


def test_metrics_go_to_the_registry_given_and_only_there() -> None:
    """Two herders in one process: each task's series are in its herder's registry, families once each."""
    first, second = CollectorRegistry(), CollectorRegistry()
    tasks = [MirrorCheckpointMetrics(first, "a", "b"), MirrorCheckpointMetrics(first, "a", "b"),
             MirrorCheckpointMetrics(second, "c", "d")]  # a second task on one registry: no duplicate families
    for metrics in tasks:
        metrics.checkpoint_latency("g", "t", 0, 7)
    source = MirrorSourceMetrics(second, "c", "d")
    source.record_committed("c.t", 0, 5)
    labels = {"group": "g", "topic": "t", "partition": "0"}
    assert sample(first, "mirror_checkpoint_latency_ms", source="a", target="b", **labels) == 7
    assert sample(second, "mirror_checkpoint_latency_ms", source="c", target="d", **labels) == 7
    assert first.get_sample_value("mirror_checkpoint_latency_ms", {"source": "c", "target": "d", **labels}) is None
    assert first.get_sample_value("mirror_source_record_count_total",
                                  {"source": "c", "target": "d", "topic": "c.t", "partition": "0"}) is None
    assert sample(second, "mirror_source_record_count_total", source="c", target="d", topic="c.t", partition="0") == 1
    assert REGISTRY.get_sample_value("mirror_checkpoint_latency_ms", {"source": "a", "target": "b", **labels}) is None


@pytest.mark.parametrize("formats", [("legacy",), ("new",), ("legacy", "new")])
def test_kip_1280_names_follow_metric_names_formats(formats: tuple[str, ...]) -> None:
    registry = CollectorRegistry()
    source = MirrorSourceMetrics(registry, "a", "b", "MirrorSourceConnector", 3, formats)
    source.record_polled("a.t", 0, 100, 20)
    source.record_committed("a.t", 0, 30)
    checkpoint = MirrorCheckpointMetrics(registry, "a", "b", "MirrorCheckpointConnector", 1, formats)
    checkpoint.checkpoint_latency("g", "a.t", 0, 40)
    legacy = {"source": "a", "target": "b", "topic": "a.t", "partition": "0"}
    new = {"connector": "MirrorSourceConnector", "task": "3", **legacy}
    new_checkpoint = {"connector": "MirrorCheckpointConnector", "task": "1", "group": "g", **legacy}
    value = registry.get_sample_value
    old_values = (value("mirror_source_record_count_total", legacy), value("mirror_source_byte_count_total", legacy),
                  value("mirror_source_replication_latency_ms", legacy),
                  value("mirror_checkpoint_latency_ms", {**legacy, "group": "g"}))
    new_values = (value("kafka_connect_plugins_record_count_total", new),
                  value("kafka_connect_plugins_byte_count_total", new),
                  value("kafka_connect_plugins_replication_latency_ms", new),
                  value("kafka_connect_plugins_checkpoint_latency_ms", new_checkpoint))
    assert old_values == ((1, 100, 30, 40) if "legacy" in formats else (None, None, None, None))
    assert new_values == ((1, 100, 30, 40) if "new" in formats else (None, None, None, None))
    checkpoint.close()
    assert value("kafka_connect_plugins_checkpoint_latency_ms", new_checkpoint) is None


def test_metric_names_formats_accepts_legacy_and_new_only() -> None:
    from connect_runtime.api.errors import ConfigError
    from mirror.config.source import MirrorSourceConfig

    base = {"name": "MirrorSourceConnector", "connector.class": "MirrorSourceConnector", "source.cluster.alias": "a",
            "target.cluster.alias": "b"}
    assert MirrorSourceConfig(base).metric_names_formats == ["legacy", "new"]  # both by default
    assert MirrorSourceConfig({**base, "metric.names.formats": "new"}).metric_names_formats == ["new"]
    with pytest.raises(ConfigError, match=r"metric\.names\.formats: expected legacy, new or legacy,new"):
        MirrorSourceConfig({**base, "metric.names.formats": "legacy,newest"})


@pytest.mark.parametrize(("detail", "topic", "partition"), [("topic", "a.t", ""), ("none", "", "")])
def test_partition_series_can_be_summed_per_topic_or_per_flow(detail: str, topic: str, partition: str) -> None:
    registry = CollectorRegistry()
    metrics = MirrorSourceMetrics(registry, "a", "b", detail=detail)
    for p in range(3):
        metrics.register("a.t", p)
        metrics.record_polled("a.t", p, 100, 1500)
        metrics.record_committed("a.t", p, 2000 + p)
    series = {s.labels.get("partition") for m in registry.collect() for s in m.samples
              if s.name.startswith("mirror_source_")}
    assert series == {partition}
    labels = {"source": "a", "target": "b", "topic": topic, "partition": partition}
    assert sample(registry, "mirror_source_record_count_total", **labels) == 3
    assert sample(registry, "mirror_source_byte_count_total", **labels) == 300
    histogram = {**labels, "topic": ""}  # per topic, the histograms are summed per flow (per task: new names)
    assert sample(registry, "mirror_source_replication_latency_seconds_count", **histogram) == 3
    assert sample(registry, "mirror_source_replication_latency_seconds_sum", **histogram) == pytest.approx(6.003)
    checkpoints = MirrorCheckpointMetrics(registry, "a", "b", detail=detail)
    checkpoints.checkpoint_latency("g1", "a.t", 0, 100)
    checkpoints.checkpoint_latency("g1", "a.t", 1, 300)
    group = {"source": "a", "target": "b", "group": "g1", "topic": topic, "partition": partition}
    assert sample(registry, "mirror_checkpoint_latency_seconds_count", **group) == 2
    assert sample(registry, "mirror_checkpoint_latency_ms", **group) == 300


@pytest.mark.parametrize(("detail", "count_sets", "histogram_sets"), [
    ("partition", 800 + 800, 800 + 800),  # legacy: one per partition; new: one per (task, partition)
    # counters and gauges, legacy: one per topic; new: each of the four tasks holds a partition of each topic;
    # histograms: legacy one for the flow, new one per task
    ("topic", 200 + 4 * 200, 1 + 4),
    ("none", 1 + 4, 1 + 4),  # legacy: one for the flow; new: one per task
])
def test_the_series_a_scrape_exports_follow_metrics_partition_series(detail: str, count_sets: int,
                                                                     histogram_sets: int) -> None:
    """Four tasks, 200 topics of 4 partitions dealt round-robin as the connector does: the scrape's series
    (per label set 2 counters and 2 gauges, and 2 histograms of 17 buckets, count and sum) and the counts,
    which stay exact sums at every level."""
    registry = CollectorRegistry()
    tasks = [MirrorSourceMetrics(registry, "a", "b", task=t, detail=detail) for t in range(4)]
    partitions = [(f"a.t{i:03d}", p) for i in range(200) for p in range(4)]
    for index, (topic, p) in enumerate(partitions):
        task = tasks[index % 4]
        task.register(topic, p)
        task.record_committed(topic, p, 5)
    samples = [s for family in registry.collect() for s in family.samples]
    assert len(samples) == 4 * count_sets + 38 * histogram_sets
    histograms = [s for s in samples if s.name == "mirror_source_replication_latency_seconds_count"]
    assert sum(s.value for s in histograms) == len(partitions)
    assert sum(s.value for s in samples if s.name == "mirror_source_record_count_total") == len(partitions)
    assert sum(s.value for s in samples if s.name == "kafka_connect_plugins_record_count_total") == len(partitions)


def test_metrics_partition_series_takes_partition_topic_or_none() -> None:
    from connect_runtime.api.errors import ConfigError
    from mirror.config.checkpoint import MirrorCheckpointConfig
    from mirror.config.source import MirrorSourceConfig

    base = {"name": "MirrorSourceConnector", "connector.class": "MirrorSourceConnector", "source.cluster.alias": "a",
            "target.cluster.alias": "b"}
    assert MirrorSourceConfig(base).metrics_partition_series == "auto"
    assert MirrorSourceConfig({**base, "metrics.partition.series": "partition"}).metrics_partition_series == "partition"
    assert MirrorSourceConfig({**base, "metrics.partition.series": "Topic"}).metrics_partition_series == "topic"
    checkpoint = {**base, "name": "MirrorCheckpointConnector", "connector.class": "MirrorCheckpointConnector",
                  "metrics.partition.series": "none"}
    assert MirrorCheckpointConfig(checkpoint).metrics_partition_series == "none"
    with pytest.raises(ConfigError, match=r"metrics\.partition\.series"):
        MirrorSourceConfig({**base, "metrics.partition.series": "group"})


def test_auto_labels_per_partition_up_to_the_limit_and_per_topic_above() -> None:
    """``auto`` keeps MM2's per-partition tags for a flow of ordinary size and sums per topic for a flow whose
    per-partition series would outgrow a scrape; the explicit values are kept whatever the size."""
    from mirror.metrics import AUTO_PARTITION_LIMIT, resolve_detail

    assert resolve_detail("auto", 0) == "partition"
    assert resolve_detail("auto", AUTO_PARTITION_LIMIT) == "partition"
    assert resolve_detail("auto", AUTO_PARTITION_LIMIT + 1) == "topic"
    for detail in ("partition", "topic", "none"):
        assert resolve_detail(detail, 10 * AUTO_PARTITION_LIMIT) == detail
        assert resolve_detail(detail, 1) == detail
        assert resolve_detail(detail, 500, 4) == detail


@pytest.mark.parametrize("flow, tasks", [(2000, 4), (1004, 4), (1001, 1), (4000, 8), (1100, 100)])
def test_auto_bounds_the_flow_whatever_its_tasks_split_it_into(flow: int, tasks: int) -> None:
    """Every task of a flow above the limit labels per topic, however many tasks share it: four tasks of
    500 partitions export what one task of 2,000 would, so they must not each keep per-partition series."""
    from mirror.metrics import resolve_detail
    from mirror.source.topic_sync import assign_round_robin

    tps = [(f"t{i // 4}", i % 4) for i in range(flow)]
    for share in assign_round_robin(tps, tasks):
        assert resolve_detail("auto", len(share), tasks) == "topic"


@pytest.mark.parametrize("flow, tasks", [(1000, 4), (997, 4), (1000, 1), (3, 2000), (600, 600), (999, 500)])
def test_auto_keeps_mm2s_tags_for_a_flow_within_the_limit(flow: int, tasks: int) -> None:
    """A flow of at most the limit keeps MM2's per-partition tags in every task, also when ``tasks.max``
    exceeds the partitions (one partition a task)."""
    from mirror.metrics import resolve_detail
    from mirror.source.topic_sync import assign_round_robin

    tps = [(f"t{i // 4}", i % 4) for i in range(flow)]
    for share in assign_round_robin(tps, tasks):
        assert resolve_detail("auto", len(share), tasks) == "partition"
