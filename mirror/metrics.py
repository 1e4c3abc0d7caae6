"""Prometheus metrics of the MM2 source and checkpoint tasks (Kafka ``MirrorSourceMetrics`` and friends).

This module holds the source task's metrics and what both share (buckets, KIP-1280 names, labels); the
checkpoint task's are in :mod:`mirror.checkpoint.metrics`, next to the task that updates them.

MM2 publishes windowed JMX metrics (2 samples x 30 s). Prometheus derives rates, averages and
quantiles itself, so we export the raw material instead: counters for counts, histograms (seconds) for
the latency-like values, plus a last-value gauge in milliseconds that keeps MM2's unit for dashboards
ported from JMX. Mapping (docs/metrics.md):

=====================================================  =======================================================
MM2 JMX (``kafka.connect.mirror:type=...``)            Prometheus
=====================================================  =======================================================
MirrorSourceConnector ``record-count``                 ``mirror_source_record_count_total``
MirrorSourceConnector ``record-rate``                  ``rate(mirror_source_record_count_total[1m])``
MirrorSourceConnector ``byte-count``                   ``mirror_source_byte_count_total`` (value bytes only)
MirrorSourceConnector ``byte-rate``                    ``rate(mirror_source_byte_count_total[1m])``
MirrorSourceConnector ``record-age-ms``                ``mirror_source_record_age_ms`` (gauge, last value)
MirrorSourceConnector ``record-age-ms-{min,max,avg}``  ``mirror_source_record_age_seconds`` (histogram)
MirrorSourceConnector ``replication-latency-ms``       ``mirror_source_replication_latency_ms`` (gauge)
MirrorSourceConnector ``replication-latency-ms-*``     ``mirror_source_replication_latency_seconds`` (hist.)
MirrorCheckpointConnector ``checkpoint-latency-ms``    ``mirror_checkpoint_latency_ms`` (gauge)
MirrorCheckpointConnector ``checkpoint-latency-ms-*``  ``mirror_checkpoint_latency_seconds`` (histogram)
=====================================================  =======================================================

KIP-1280 (Kafka 4.3) moves these to ``kafka.connect:type=plugins`` with ``connector`` and ``task`` tags and
removes the old names in 5.0: with ``metric.names.formats`` (default here ``legacy,new``) each MM2 family is
also exported as ``kafka_connect_plugins_<name>`` (``mirror_source_`` / ``mirror_`` dropped, as the Java
attribute names are the same under both), with ``connector`` and ``task`` labels first. Both are produced
at scrape time from the same counts (source) or updated together per checkpoint, so the second name costs
the per-record path nothing.

Labels: ``source, target, topic, partition`` for the source metrics (MM2's tags), ``source, target, group,
topic, partition`` for the checkpoint metrics. ``metrics.partition.series`` (ours) coarsens them: ``topic``
sums each remote topic's partitions into one series (``partition=""``) for the counters and gauges and
the histograms per task and flow, ``none`` sums everything per task and flow (``topic=""`` too). Each
partition costs about 100 series with both name formats (six families, two of them histograms of 17
buckets), so 8,000 partitions make a scrape of most of a million lines: at that size a dashboard that
needs no partition breakdown chooses ``topic`` or ``none``, and the counts stay exact sums.
The per-record path is the same at every value: partitions are counted apart and summed at scrape time.

``topic`` is the remote (target) topic name for the source metrics and the target-side topic for the
checkpoint metrics, as in MM2. Deliberate divergence: MM2 registers every (group, partition) on ONE
shared ``checkpoint-latency`` sensor, so one recording moves every group's value; here each
(group, topic, partition) has its own series.

Source metrics are counted in plain ints by the task thread (:class:`PartitionStats`) and exported by
one collector per registry at scrape time: prometheus_client's metric objects take a lock per update,
which cost the source task a third of its time at one update per record and metric.

Registry: the one the runtime offers in the task's context (``context.metrics_registry``, the registry
of the herder running the task), never the process-global default (two herders in one process, or two
tests, would collide). Metric families (and the source collector) are created once per registry and
shared by the tasks using it; each task owns and removes its label sets.
"""

from __future__ import annotations

import threading
import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from connect_runtime.api.metrics_registry import MetricsRegistry

LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
                     3600.0)

_SOURCE_LABELS = ("source", "target", "topic", "partition")
#: KIP-1280's names: Java's ``kafka.connect:type=plugins`` group, tagged with the connector and task first.
NEW_PREFIX = "kafka_connect_plugins_"
TASK_LABELS = ("connector", "task")
LEGACY, NEW = "legacy", "new"
#: ``metrics.partition.series`` values: one series per partition (MM2's tags), per remote topic, or none;
#: ``auto`` is ``partition`` for a flow of at most :data:`AUTO_PARTITION_LIMIT` partitions, ``topic`` above.
PARTITION, TOPIC, NO_PARTITION_SERIES, AUTO = "partition", "topic", "none", "auto"
#: Above this many partitions in one flow, ``auto`` labels per topic: 1,000 partitions already make about
#: 90,000 series with both name formats, which is what a scrape can serve within its interval.
AUTO_PARTITION_LIMIT = 1000


def resolve_detail(detail: str, partitions: int, tasks: int = 1) -> str:
    """The labelling a task of ``partitions`` partitions, one of ``tasks`` (``tasks.max``), uses for
    ``metrics.partition.series = detail``.

    ``auto`` bounds the flow, not the task: every task of a flow usually runs on one node (one scrape), and
    the connector deals the flow's partitions evenly, so a flow of 4 tasks of 500 partitions exports what one
    task of 2,000 would. A task sees only its own share (its config is Java's, key for key, so it carries no
    total). Dealt evenly, a flow in which one task has ``p`` partitions has at least ``(p - 1) * tasks + 1``
    (every task has at least ``p - 1``, and this one more); that least flow is what is held to the bound,
    so a flow of one partition a task keeps MM2's tags, and within ``tasks`` partitions of the bound the
    tasks of one flow may answer differently.
    """
    if detail != AUTO:
        return detail
    least_flow = (partitions - 1) * max(tasks, 1) + 1 if partitions > 0 else 0
    return PARTITION if least_flow <= AUTO_PARTITION_LIMIT else TOPIC


def series_key(detail: str, topic: str, partition: int) -> tuple[str, str]:
    """The (topic, partition) label values of one partition's series at ``detail``."""
    if detail == PARTITION:
        return topic, str(partition)
    return (topic, "") if detail == TOPIC else ("", "")

#: Guards the per-registry families: two tasks of one registry may start at once.
_lock = threading.Lock()


#: Bucket bounds in whole ms, for ``bisect_left`` on an int age/latency (Prometheus buckets are ``le``).
_LATENCY_BOUNDS_MS = tuple(round(b * 1000) for b in LATENCY_BUCKETS_S)
_BUCKET_LABELS: tuple[str, ...] = (*(str(floatToGoString(b)) for b in LATENCY_BUCKETS_S),  # type: ignore[no-untyped-call]
                                   "+Inf")


class PartitionStats:
    """The source metrics of one (remote topic, partition), kept in plain ints on the task thread.

    Why not prometheus_client's own Counter/Gauge/Histogram: each of their updates takes a lock, and the
    source task made eight of them per record, 35% of its thread's time. These fields are written by
    the task thread only and read at scrape time by :class:`_SourceCollector`; a scrape can see one
    histogram's count and sum a record apart, never a torn value.
    """

    __slots__ = ("age_buckets", "age_ms", "age_sum_ms", "bytes", "latency_buckets", "latency_ms",
                 "latency_sum_ms", "records")

    def __init__(self) -> None:
        self.records = 0
        self.bytes = 0
        self.age_ms = 0
        self.age_sum_ms = 0
        self.age_buckets = [0] * len(_BUCKET_LABELS)
        self.latency_ms = 0
        self.latency_sum_ms = 0
        self.latency_buckets = [0] * len(_BUCKET_LABELS)

    def polled(self, value_bytes: int, age_ms: int) -> None:
        """A record was polled from the source, ``age_ms`` after its timestamp."""
        self.bytes += value_bytes
        self.age_ms = age_ms
        age_ms = age_ms if age_ms > 0 else 0
        self.age_sum_ms += age_ms
        self.age_buckets[bisect_left(_LATENCY_BOUNDS_MS, age_ms)] += 1

    def polled_run(self, count: int, value_bytes: int, age_ms: int) -> None:
        """A run of ``count`` records was polled; its first (oldest) record's age stands for all of them."""
        self.bytes += value_bytes
        self.age_ms = age_ms
        age_ms = age_ms if age_ms > 0 else 0
        self.age_sum_ms += age_ms * count
        self.age_buckets[bisect_left(_LATENCY_BOUNDS_MS, age_ms)] += count

    def committed_run(self, count: int, latency_ms: int) -> None:
        """A run of ``count`` records was acknowledged; its first record's latency stands for all."""
        self.records += count
        self.latency_ms = latency_ms
        latency_ms = latency_ms if latency_ms > 0 else 0
        self.latency_sum_ms += latency_ms * count
        self.latency_buckets[bisect_left(_LATENCY_BOUNDS_MS, latency_ms)] += count

    def committed(self, latency_ms: int) -> None:
        """The target acknowledged a record ``latency_ms`` after its timestamp."""
        self.records += 1
        self.latency_ms = latency_ms
        latency_ms = latency_ms if latency_ms > 0 else 0
        self.latency_sum_ms += latency_ms
        self.latency_buckets[bisect_left(_LATENCY_BOUNDS_MS, latency_ms)] += 1


#: The bounds the hot loops bisect on (they inline :meth:`PartitionStats.polled`/``committed``).
LATENCY_BOUNDS_MS = _LATENCY_BOUNDS_MS


class _SourceCollector:
    """Exports the :class:`PartitionStats` of every live :class:`MirrorSourceMetrics` of one registry."""

    def __init__(self) -> None:
        self._tasks: weakref.WeakSet[MirrorSourceMetrics] = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, task: MirrorSourceMetrics) -> None:
        with self._lock:
            self._tasks.add(task)

    def discard(self, task: MirrorSourceMetrics) -> None:
        with self._lock:
            self._tasks.discard(task)

    def records(self) -> int:
        """Records acknowledged by the target over every live task: a sum of plain ints, without
        building the samples :meth:`collect` makes (about a hundred per partition)."""
        with self._lock:
            tasks = list(self._tasks)
        return sum(task.records() for task in tasks)

    def describe(self) -> list[Metric]:
        return [*self._families({}, {}, "mirror_source_", list(_SOURCE_LABELS)),
                *self._families({}, {}, NEW_PREFIX, [*TASK_LABELS, *_SOURCE_LABELS])]

    def collect(self) -> Iterator[Metric]:
        """One family at a time (a generator): a renderer that writes each family out before it asks for
        the next (connect_runtime.metrics.exposition) holds one family's samples, not all twelve."""
        with self._lock:
            tasks = list(self._tasks)
        legacy: dict[tuple[str, ...], PartitionStats] = {}
        new: dict[tuple[str, ...], PartitionStats] = {}
        # With ``metrics.partition.series = topic`` the histograms (19 series a label set) are summed per
        # task and flow, the counters and gauges per topic: a topic costs 4 series, not 42.
        legacy_histograms: dict[tuple[str, ...], PartitionStats] = {}
        new_histograms: dict[tuple[str, ...], PartitionStats] = {}
        for task in tasks:
            per_topic = task.detail == TOPIC
            for labels, stats in list(task.stats_by_labels()):
                if task.legacy:
                    _merge(legacy, labels, stats)
                    if per_topic:
                        _merge(legacy_histograms, (*labels[:2], "", ""), stats)
                if task.new:
                    _merge(new, (*task.task_labels, *labels), stats)
                    if per_topic:
                        _merge(new_histograms, (*task.task_labels, *labels[:2], "", ""), stats)
        yield from self._families(legacy, legacy_histograms, "mirror_source_", list(_SOURCE_LABELS))
        yield from self._families(new, new_histograms, NEW_PREFIX, [*TASK_LABELS, *_SOURCE_LABELS])

    @staticmethod
    def _families(merged: dict[tuple[str, ...], PartitionStats],
                  per_topic_histograms: dict[tuple[str, ...], PartitionStats], prefix: str,
                  labels: list[str]) -> Iterator[Metric]:
        """The six source families, named ``prefix`` + MM2's attribute name, each filled as it is asked
        for (and not held here once yielded). The histograms of the label sets of ``merged`` that
        ``per_topic_histograms`` sums coarser come from there."""
        yield _filled(CounterMetricFamily(f"{prefix}record_count",
                                          "Records replicated and acknowledged by the target (MM2 record-count).",
                                          labels=labels), merged, lambda stats: stats.records)
        yield _filled(CounterMetricFamily(f"{prefix}byte_count",
                                          "Value bytes of records polled for replication (MM2 byte-count; keys "
                                          "and headers not counted).", labels=labels),
                      merged, lambda stats: stats.bytes)
        histograms = merged
        if per_topic_histograms:
            # the label sets of tasks at partition or none detail keep their histograms (both kinds are
            # scraped together only while a flow's tasks restart with a new value)
            histograms = per_topic_histograms
            for key, stats in merged.items():
                if key[-1] != "" or key[-2] == "":
                    _merge(histograms, key, stats)
        yield _filled_histogram(HistogramMetricFamily(f"{prefix}record_age_seconds",
                                                      "Age of a record when polled from the source: now - record "
                                                      "timestamp (MM2 record-age-ms).", labels=labels),
                                histograms, lambda stats: (stats.age_buckets, stats.age_sum_ms))
        yield _filled(GaugeMetricFamily(f"{prefix}record_age_ms", "Last record age in ms (MM2 record-age-ms).",
                                        labels=labels), merged, lambda stats: stats.age_ms)
        yield _filled_histogram(HistogramMetricFamily(f"{prefix}replication_latency_seconds",
                                                      "Time from the record timestamp to the target "
                                                      "acknowledgement (MM2 replication-latency-ms).", labels=labels),
                                histograms, lambda stats: (stats.latency_buckets, stats.latency_sum_ms))
        yield _filled(GaugeMetricFamily(f"{prefix}replication_latency_ms",
                                        "Last replication latency in ms (MM2 replication-latency-ms).",
                                        labels=labels), merged, lambda stats: stats.latency_ms)


_Family = TypeVar("_Family", CounterMetricFamily, GaugeMetricFamily)


def _filled(family: _Family, merged: dict[tuple[str, ...], PartitionStats],
            value: Callable[[PartitionStats], int]) -> _Family:
    for key, stats in merged.items():
        family.add_metric(list(key), value(stats))
    return family


def _filled_histogram(family: HistogramMetricFamily, merged: dict[tuple[str, ...], PartitionStats],
                      value: Callable[[PartitionStats], tuple[list[int], int]]) -> HistogramMetricFamily:
    for key, stats in merged.items():
        buckets, sum_ms = value(stats)
        family.add_metric(list(key), _cumulative(buckets), sum_ms / 1000.0)
    return family


def _merge(merged: dict[tuple[str, ...], PartitionStats], labels: tuple[str, ...], stats: PartitionStats) -> None:
    seen = merged.get(labels)
    if seen is None:
        merged[labels] = _copy(stats)
    else:  # the same partition in two tasks for a moment (a rebalance): one series
        _add(seen, stats)


def _cumulative(buckets: list[int]) -> list[tuple[str, float]]:
    total = 0
    out = []
    for label, count in zip(_BUCKET_LABELS, list(buckets), strict=True):
        total += count
        out.append((label, float(total)))
    return out


def _copy(stats: PartitionStats) -> PartitionStats:
    copy = PartitionStats()
    _add(copy, stats)
    copy.age_ms, copy.latency_ms = stats.age_ms, stats.latency_ms
    return copy


def _add(into: PartitionStats, stats: PartitionStats) -> None:
    into.records += stats.records
    into.bytes += stats.bytes
    into.age_sum_ms += stats.age_sum_ms
    into.latency_sum_ms += stats.latency_sum_ms
    into.age_buckets = [a + b for a, b in zip(into.age_buckets, list(stats.age_buckets), strict=True)]
    into.latency_buckets = [a + b for a, b in zip(into.latency_buckets, list(stats.latency_buckets), strict=True)]
    if stats.records:
        into.latency_ms = stats.latency_ms
    if sum(stats.age_buckets):
        into.age_ms = stats.age_ms


_source_collectors: weakref.WeakKeyDictionary[MetricsRegistry, _SourceCollector] = weakref.WeakKeyDictionary()


def _source_collector_of(registry: MetricsRegistry) -> _SourceCollector:
    with _lock:
        collector = _source_collectors.get(registry)
        if collector is None:
            collector = _source_collectors[registry] = _SourceCollector()
            registry.register(collector)
        return collector


class MirrorSourceMetrics:
    """Per-task source metrics; series exist for the assigned partitions from the start, as in MM2.

    The task thread updates :class:`PartitionStats` (``stats(topic, partition)``; the hot loops keep
    them in their own per-partition state); the registry's collector reads them when scraped.
    """

    def __init__(self, registry: MetricsRegistry, source: str, target: str, connector: str = "MirrorSourceConnector",
                 task: int = 0, formats: tuple[str, ...] = (LEGACY, NEW), detail: str = PARTITION) -> None:
        self.detail = detail
        self._source = source
        self._target = target
        self.task_labels = (connector, str(task))
        names = {f.strip().lower() for f in formats}
        self.legacy = LEGACY in names
        self.new = NEW in names
        self._stats: dict[tuple[str, int], PartitionStats] = {}
        self._collector = _source_collector_of(registry)
        self._collector.add(self)

    def stats(self, topic: str, partition: int) -> PartitionStats:
        """The stats of one (remote topic, partition), created on first use."""
        stats = self._stats.get((topic, partition))
        if stats is None:
            stats = self._stats[(topic, partition)] = PartitionStats()
        return stats

    def stats_by_labels(self) -> list[tuple[tuple[str, ...], PartitionStats]]:
        """Each partition's stats under its labels (with ``metrics.partition.series`` coarser than
        ``partition`` several partitions share labels: the collector sums them)."""
        detail = self.detail
        return [((self._source, self._target, *series_key(detail, topic, partition)), stats)
                for (topic, partition), stats in list(self._stats.items())]

    def records(self) -> int:
        """Records of this task acknowledged by the target."""
        return sum(stats.records for stats in list(self._stats.values()))

    def register(self, remote_topic: str, partition: int) -> None:
        """Create the series of one assigned partition (so it exports 0 before the first record)."""
        self.stats(remote_topic, partition)

    def record_polled(self, remote_topic: str, partition: int, value_bytes: int, age_ms: int) -> None:
        self.stats(remote_topic, partition).polled(value_bytes, age_ms)

    def record_committed(self, remote_topic: str, partition: int, latency_ms: int) -> None:
        self.stats(remote_topic, partition).committed(latency_ms)

    def close(self) -> None:
        """Remove this task's series so a stopped task does not keep exporting stale values."""
        self._collector.discard(self)
        self._stats.clear()


def replicated_records(registry: MetricsRegistry) -> int:
    """Records the source tasks of ``registry`` replicated (acknowledged by the target), as the scrape
    would sum ``mirror_source_record_count_total``, at the cost of one int per partition: for a reader
    that asks often (the start-up narration, every second until the first record)."""
    with _lock:
        collector = _source_collectors.get(registry)
    return collector.records() if collector is not None else 0


_LOSS_LABELS = ("source", "target", "topic", "partition", "reason")


class _Count:
    """One series of a :class:`LossCounter`: its value and when it was created (the ``_created`` sample)."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self.value += amount


class LossCounter:
    """A counter family whose series are a float and a timestamp each, exported as prometheus_client's
    Counter exports them (``<name>_total`` and ``<name>_created``).

    Why not a prometheus_client Counter: every series of the loss counters is created at 0 when a task
    starts (see LossDetector.zero_series), three reasons per partition or topic, and a Counter child
    is an object with a dict of attributes, a value object and a lock (~570 bytes): 12,000 series at
    2,000 topics, 6.8 MiB, for counters that stay 0 but in a loss. Here a series is ~150 bytes. Counts
    change on the task threads under the loss detector's lock; a scrape reads floats.
    """

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...]) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = list(labelnames)
        self._series: dict[tuple[str, ...], _Count] = {}
        self._lock = threading.Lock()

    def labels(self, *values: str) -> _Count:
        """The series of these label values, created at 0 on first use."""
        key = tuple(str(v) for v in values)
        if len(key) != len(self._labelnames):
            raise ValueError(f"{self._name}: {len(self._labelnames)} label values expected, got {len(key)}")
        count = self._series.get(key)
        if count is None:
            with self._lock:
                count = self._series.setdefault(key, _Count())
        return count

    def remove(self, *values: str) -> None:
        """Drop the series of these label values (none: nothing to do, as prometheus_client's remove)."""
        with self._lock:
            self._series.pop(tuple(str(v) for v in values), None)

    def describe(self) -> list[Metric]:
        return [CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)]

    def collect(self) -> list[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)
        with self._lock:
            series = list(self._series.items())
        for key, count in series:
            family.add_metric(list(key), count.value, created=count.created)
        return [family]


_loss_families: weakref.WeakKeyDictionary[MetricsRegistry, tuple[LossCounter, LossCounter]] = (
    weakref.WeakKeyDictionary())


def loss_counters(registry: MetricsRegistry) -> tuple[LossCounter, LossCounter]:
    """``(records lost, loss events)`` of one registry, created on first use. Series outlive the task that
    counted them, so a loss stays visible after a restart of the task."""
    with _lock:
        families = _loss_families.get(registry)
        if families is None:
            lost = LossCounter("mirror_source_records_lost",
                               "Source records lost before they were replicated, or replicated records gone "
                               "from the target, as far as they can be counted, by reason: source-truncated "
                               "(deleted by retention or DeleteRecords), source-recreated, target-truncated.",
                               _LOSS_LABELS)
            events = LossCounter("mirror_source_loss_events",
                                 "Losses detected (each logged once), by reason; a re-created source topic can "
                                 "lose an unknown number of records, so count events too.",
                                 _LOSS_LABELS)
            registry.register(lost)
            registry.register(events)
            families = _loss_families[registry] = (lost, events)
        return families
