"""Prometheus metrics of the MM2 source and checkpoint tasks (Kafka ``MirrorSourceMetrics`` and friends).

MM2 publishes windowed JMX metrics (2 samples x 30 s). Prometheus derives rates, averages and
quantiles itself, so we export the raw material instead: counters for counts, histograms (seconds) for
the latency-like values, plus a last-value gauge in milliseconds that keeps MM2's unit for dashboards
ported from JMX. Mapping (§9):

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

Labels: ``source, target, topic, partition`` for the source metrics (MM2's tags), ``source, target, group,
topic, partition`` for the checkpoint metrics.

``topic`` is the remote (target) topic name for the source metrics and the target-side topic for the
checkpoint metrics, as in MM2. Deliberate divergence: MM2 registers every (group, partition) on ONE
shared ``checkpoint-latency`` sensor, so one recording moves every group's value; here each
(group, topic, partition) has its own series.

Registry: metrics never go to the process-global default registry (two tasks in one process, or two
tests, would collide). A task asks :func:`registry_for` with its context: a context exposing
``metrics_registry`` wins; otherwise the provider set with :func:`set_registry_provider` is used (the
runtime sets it to the registry it serves); otherwise one private registry is created lazily. Metric
families are created once per registry and shared by the tasks using it; each task owns and removes its
label sets.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
                      3600.0)

_SOURCE_LABELS = ("source", "target", "topic", "partition")
_CHECKPOINT_LABELS = ("source", "target", "group", "topic", "partition")

_lock = threading.Lock()
_default_registry: CollectorRegistry | None = None
_provider: Callable[[], CollectorRegistry] | None = None


def set_registry_provider(provider: Callable[[], CollectorRegistry] | None) -> None:
    """Let the runtime say which registry MM2 task metrics go to (None: back to the private default)."""
    global _provider
    with _lock:
        _provider = provider


def registry_for(context: object | None = None) -> CollectorRegistry:
    """The registry for a task or connector: its context's ``metrics_registry``, else the provider's."""
    global _default_registry
    registry = getattr(context, "metrics_registry", None)
    if isinstance(registry, CollectorRegistry):
        return registry
    with _lock:
        provider = _provider
        if provider is None:
            if _default_registry is None:
                _default_registry = CollectorRegistry(auto_describe=True)
            return _default_registry
    return provider()


@dataclass(frozen=True)
class _SourceFamilies:
    records: Counter
    bytes: Counter
    record_age_s: Histogram
    record_age_ms: Gauge
    latency_s: Histogram
    latency_ms: Gauge


@dataclass(frozen=True)
class _CheckpointFamilies:
    latency_s: Histogram
    latency_ms: Gauge


_source_families: weakref.WeakKeyDictionary[CollectorRegistry, _SourceFamilies] = weakref.WeakKeyDictionary()
_checkpoint_families: weakref.WeakKeyDictionary[CollectorRegistry, _CheckpointFamilies] = (
    weakref.WeakKeyDictionary())


def _source_families_of(registry: CollectorRegistry) -> _SourceFamilies:
    labels = _SOURCE_LABELS
    buckets = _LATENCY_BUCKETS_S
    with _lock:
        families = _source_families.get(registry)
        if families is None:
            families = _SourceFamilies(
                records=Counter("mirror_source_record_count",
                                "Records replicated and acknowledged by the target (MM2 record-count).",
                                labels, registry=registry),
                bytes=Counter("mirror_source_byte_count",
                              "Value bytes of records polled for replication (MM2 byte-count; keys and "
                              "headers not counted).", labels, registry=registry),
                record_age_s=Histogram("mirror_source_record_age_seconds",
                                       "Age of a record when polled from the source: now - record timestamp "
                                       "(MM2 record-age-ms).", labels, buckets=buckets, registry=registry),
                record_age_ms=Gauge("mirror_source_record_age_ms",
                                    "Last record age in ms (MM2 record-age-ms).", labels, registry=registry),
                latency_s=Histogram("mirror_source_replication_latency_seconds",
                                    "Time from the record timestamp to the target acknowledgement "
                                    "(MM2 replication-latency-ms).", labels, buckets=buckets,
                                    registry=registry),
                latency_ms=Gauge("mirror_source_replication_latency_ms",
                                 "Last replication latency in ms (MM2 replication-latency-ms).",
                                 labels, registry=registry),
            )
            _source_families[registry] = families
        return families


def _checkpoint_families_of(registry: CollectorRegistry) -> _CheckpointFamilies:
    with _lock:
        families = _checkpoint_families.get(registry)
        if families is None:
            families = _CheckpointFamilies(
                latency_s=Histogram("mirror_checkpoint_latency_seconds",
                                    "Time from listing a group's source offsets to the checkpoint's "
                                    "acknowledgement (MM2 checkpoint-latency-ms).",
                                    _CHECKPOINT_LABELS, buckets=_LATENCY_BUCKETS_S, registry=registry),
                latency_ms=Gauge("mirror_checkpoint_latency_ms",
                                 "Last checkpoint latency in ms (MM2 checkpoint-latency-ms).",
                                 _CHECKPOINT_LABELS, registry=registry),
            )
            _checkpoint_families[registry] = families
        return families


@dataclass(frozen=True)
class _SourceChildren:
    """The labelled children of one partition, resolved once (``labels()`` is the costly part)."""

    records: Any
    bytes: Any
    record_age_s: Any
    record_age_ms: Any
    latency_s: Any
    latency_ms: Any


class MirrorSourceMetrics:
    """Per-task source metrics; label sets are pre-registered for the assigned partitions, as MM2 does."""

    def __init__(self, registry: CollectorRegistry, source: str, target: str) -> None:
        self._families = _source_families_of(registry)
        self._source = source
        self._target = target
        self._children: dict[tuple[str, int], _SourceChildren] = {}

    def _of(self, topic: str, partition: int) -> _SourceChildren:
        children = self._children.get((topic, partition))
        if children is None:
            key = (self._source, self._target, topic, str(partition))
            f = self._families
            children = _SourceChildren(f.records.labels(*key), f.bytes.labels(*key), f.record_age_s.labels(*key),
                                       f.record_age_ms.labels(*key), f.latency_s.labels(*key),
                                       f.latency_ms.labels(*key))
            self._children[(topic, partition)] = children
        return children

    def register(self, remote_topic: str, partition: int) -> None:
        """Create the series of one assigned partition (so it exports 0 before the first record)."""
        self._of(remote_topic, partition)

    def record_polled(self, remote_topic: str, partition: int, value_bytes: int, age_ms: int) -> None:
        children = self._of(remote_topic, partition)
        children.bytes.inc(value_bytes)
        children.record_age_ms.set(age_ms)
        children.record_age_s.observe(max(age_ms, 0) / 1000.0)

    def record_committed(self, remote_topic: str, partition: int, latency_ms: int) -> None:
        children = self._of(remote_topic, partition)
        children.records.inc()
        children.latency_ms.set(latency_ms)
        children.latency_s.observe(max(latency_ms, 0) / 1000.0)

    def close(self) -> None:
        """Remove this task's series so a stopped task does not keep exporting stale values."""
        f = self._families
        for topic, partition in self._children:
            key = (self._source, self._target, topic, str(partition))
            for family in (f.records, f.bytes, f.record_age_s, f.record_age_ms, f.latency_s, f.latency_ms):
                try:
                    family.remove(*key)
                except KeyError:
                    pass
        self._children.clear()


class MirrorCheckpointMetrics:
    """Per-task checkpoint metrics, one series per (group, target-side topic, partition)."""

    def __init__(self, registry: CollectorRegistry, source: str, target: str) -> None:
        self._families = _checkpoint_families_of(registry)
        self._source = source
        self._target = target
        self._labels: set[tuple[str, str, str, str, str]] = set()

    def checkpoint_latency(self, group: str, topic: str, partition: int, latency_ms: int) -> None:
        key = (self._source, self._target, group, topic, str(partition))
        self._labels.add(key)
        self._families.latency_ms.labels(*key).set(latency_ms)
        self._families.latency_s.labels(*key).observe(max(latency_ms, 0) / 1000.0)

    def close(self) -> None:
        for key in self._labels:
            for family in (self._families.latency_ms, self._families.latency_s):
                try:
                    family.remove(*key)
                except KeyError:
                    pass
        self._labels.clear()
