"""Prometheus metrics of the MM2 checkpoint task (Kafka ``MirrorCheckpointMetrics``), one series per
(group, target-side topic, partition), or coarser with ``metrics.partition.series`` (:mod:`mirror.metrics`).

``checkpoint-latency-ms`` as a histogram in seconds plus a last-value gauge in ms, under MM2's name and
KIP-1280's (see :mod:`mirror.metrics` for the mapping, the names and the labels), and two counters of
ours: translations by basis (exact offset map or offset sync) and group offset syncs by outcome.
Checkpoints are few (one per group partition and interval), so prometheus_client's own metric objects
are fine here, unlike the source task's per-record counts. Kept next to the checkpoint task, apart from
the source metrics' collector.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from connect_runtime.api.metrics_registry import MetricsRegistry
from mirror.metrics import LATENCY_BUCKETS_S, LEGACY, NEW, NEW_PREFIX, PARTITION, TASK_LABELS, series_key

_CHECKPOINT_LABELS = ("source", "target", "group", "topic", "partition")

#: Guards the per-registry families: two tasks of one registry may start at once.
_lock = threading.Lock()


@dataclass(frozen=True)
class _CheckpointFamilies:
    latency_s: Histogram
    latency_ms: Gauge
    translations: Counter
    group_syncs: Counter
    new_latency_s: Histogram
    new_latency_ms: Gauge


_checkpoint_families: weakref.WeakKeyDictionary[MetricsRegistry, _CheckpointFamilies] = (
    weakref.WeakKeyDictionary())


def _checkpoint_families_of(registry: MetricsRegistry) -> _CheckpointFamilies:
    with _lock:
        families = _checkpoint_families.get(registry)
        if families is None:
            families = _CheckpointFamilies(
                latency_s=Histogram("mirror_checkpoint_latency_seconds",
                                    "Time from listing a group's source offsets to the checkpoint's "
                                    "acknowledgement (MM2 checkpoint-latency-ms).",
                                    _CHECKPOINT_LABELS, buckets=LATENCY_BUCKETS_S, registry=None),
                latency_ms=Gauge("mirror_checkpoint_latency_ms",
                                 "Last checkpoint latency in ms (MM2 checkpoint-latency-ms).",
                                 _CHECKPOINT_LABELS, registry=None),
                translations=Counter("mirror_checkpoint_translations",
                                     "Group offsets translated, by basis: offset-map (exact) or offset-sync "
                                     "(MM2's rule, where the offset map has no entry).",
                                     ("source", "target", "basis"), registry=None),
                group_syncs=Counter("mirror_group_offset_syncs",
                                    "Group offset syncs onto the target by outcome: written, unchanged, "
                                    "active (members on the target), clamped (moved inside the target's "
                                    "log), failed.", ("source", "target", "outcome"), registry=None),
                new_latency_s=Histogram(f"{NEW_PREFIX}checkpoint_latency_seconds",
                                        "mirror_checkpoint_latency_seconds under KIP-1280's name.",
                                        (*TASK_LABELS, *_CHECKPOINT_LABELS), buckets=LATENCY_BUCKETS_S,
                                        registry=None),
                new_latency_ms=Gauge(f"{NEW_PREFIX}checkpoint_latency_ms",
                                     "mirror_checkpoint_latency_ms under KIP-1280's name.",
                                     (*TASK_LABELS, *_CHECKPOINT_LABELS), registry=None),
            )
            for family in (families.latency_s, families.latency_ms, families.translations, families.group_syncs,
                           families.new_latency_s, families.new_latency_ms):
                registry.register(family)
            _checkpoint_families[registry] = families
        return families


class MirrorCheckpointMetrics:
    """Per-task checkpoint metrics, one series per (group, target-side topic, partition)."""

    def __init__(self, registry: MetricsRegistry, source: str, target: str,
                 connector: str = "MirrorCheckpointConnector", task: int = 0,
                 formats: tuple[str, ...] = (LEGACY, NEW), detail: str = PARTITION) -> None:
        self._families = _checkpoint_families_of(registry)
        self._detail = detail
        self._source = source
        self._target = target
        self._task_labels = (connector, str(task))
        names = {f.strip().lower() for f in formats}
        self._legacy = LEGACY in names
        self._new = NEW in names
        self._labels: set[tuple[str, str, str, str, str]] = set()

    def checkpoint_latency(self, group: str, topic: str, partition: int, latency_ms: int) -> None:
        key = (self._source, self._target, group, *series_key(self._detail, topic, partition))
        self._labels.add(key)
        families = self._families
        if self._legacy:
            families.latency_ms.labels(*key).set(latency_ms)
            families.latency_s.labels(*key).observe(max(latency_ms, 0) / 1000.0)
        if self._new:
            families.new_latency_ms.labels(*self._task_labels, *key).set(latency_ms)
            families.new_latency_s.labels(*self._task_labels, *key).observe(max(latency_ms, 0) / 1000.0)

    def translated(self, basis: str, count: int = 1) -> None:
        """``count`` group offsets translated through ``basis`` (``offset-map`` or ``offset-sync``)."""
        self._families.translations.labels(self._source, self._target, basis).inc(count)

    def group_synced(self, outcome: str, count: int = 1) -> None:
        self._families.group_syncs.labels(self._source, self._target, outcome).inc(count)

    def close(self) -> None:
        families = self._families
        for key in self._labels:
            for family, labels in ((families.latency_ms, key), (families.latency_s, key),
                                   (families.new_latency_ms, (*self._task_labels, *key)),
                                   (families.new_latency_s, (*self._task_labels, *key))):
                try:
                    family.remove(*labels)
                except KeyError:
                    pass
        self._labels.clear()
