"""What a source task gets before its loop runs: its producer's configuration and its context.

Producer safety (why these defaults): ``acks=all`` and idempotence, so the target acknowledges each
partition's records once and in order with up to 5 requests in flight (Java pins one request in flight
instead, which caps throughput at one round trip per batch); without idempotence ordering needs one
request in flight. ``message.timeout.ms=0`` (never time out) copies Connect's
``delivery.timeout.ms=Integer.MAX_VALUE``: a slow target stalls the task, it never drops a record.
``enable.gapless.guarantee``, unless errors are tolerated: a record the target refuses then fails every
later one instead of leaving a hole behind records that succeed, which is what lets the bulk path
acknowledge a whole run from its last record (:mod:`~connect_runtime.runtime.task.submitted_runs`). With
``errors.tolerance=all`` a refused record must be skipped and the rest delivered, so it is off and
every record carries a delivery callback.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.lifecycle import ConnectorTaskId

#: Connect's producer safety defaults, in librdkafka names.
PRODUCER_DEFAULTS: Mapping[str, str] = {
    "acks": "all",
    # Java's default is 5 (Kafka 4.0, KIP-1030): 5 takes ~5 ms off the replication latency's p50 but cost
    # 31-40% more copier CPU per record at 1 KB (bench/results.md, 2026-11-23 14:31); latency-sensitive
    # flows set producer.override.linger.ms.
    "linger.ms": "10",
    "message.timeout.ms": "0",
    # librdkafka's default is 1 GiB per producer; a record count cap alone does not bound bytes.
    "queue.buffering.max.kbytes": "131072",
}


def task_producer_config(base: Mapping[str, str], task: ConnectorTaskId, *,
                         tolerate_errors: bool = False) -> dict[str, str]:
    """The producer config of one task: Connect's defaults, then the worker's settings, then the client id.

    Idempotence is on unless the user set ``enable.idempotence`` or weakened ``acks`` (librdkafka
    refuses idempotence without ``acks=all``); without it, ordering needs one request in flight.
    """
    config = {**PRODUCER_DEFAULTS, **base}
    if "enable.idempotence" not in base:
        strong_acks = config.get("acks", config.get("request.required.acks", "all")) in ("all", "-1")
        config["enable.idempotence"] = "true" if strong_acks else "false"
    idempotent = is_true(config["enable.idempotence"])
    in_flight_keys = ("max.in.flight.requests.per.connection", "max.in.flight")
    if not idempotent and not any(k in base for k in in_flight_keys):
        config["max.in.flight.requests.per.connection"] = "1"
    if idempotent and not tolerate_errors:
        config.setdefault("enable.gapless.guarantee", "true")
    config.setdefault("client.id", f"connector-producer-{task}")
    return config


def is_true(value: object) -> bool:
    return str(value).strip().lower() == "true"


class TaskContext:
    """The SourceTaskContext a task receives."""

    __slots__ = ("_metrics_registry", "_reader", "_task_id", "_worker_id")

    def __init__(self, task_id: int, worker_id: str, reader: OffsetStorageReader,
                 metrics_registry: MetricsRegistry) -> None:
        self._task_id = task_id
        self._worker_id = worker_id
        self._reader = reader
        self._metrics_registry = metrics_registry

    @property
    def task_id(self) -> int:
        return self._task_id

    @property
    def worker_id(self) -> str:
        return self._worker_id

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader

    @property
    def metrics_registry(self) -> MetricsRegistry:
        return self._metrics_registry
