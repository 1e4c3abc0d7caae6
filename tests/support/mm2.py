"""Helpers for driving the MM2 connectors directly in tests (without a herder)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from connect_runtime.api.records import SourceMap


class RecordingConnectorContext:
    """A ConnectorContext that records reconfiguration requests and raised errors."""

    def __init__(self) -> None:
        self.metrics_registry = CollectorRegistry()
        self.reconfigurations = 0
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()

    def request_task_reconfiguration(self) -> None:
        with self._lock:
            self.reconfigurations += 1

    def raise_error(self, error: BaseException) -> None:
        with self._lock:
            self.errors.append(error)

    def offset_storage_reader(self) -> Any:
        return _EmptyReader()


class _EmptyReader:
    def offset(self, partition: SourceMap) -> Mapping[str, Any] | None:
        return None

    def offsets(self, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
        return [(p, None) for p in partitions]


def flow_config(source_alias: str, target_alias: str, source_bootstrap: str, target_bootstrap: str,
                name: str = "MirrorSourceConnector",
                overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """A connector config as the driver would build it for ``source->target``, with RF 1."""
    config = {
        "name": name,
        "connector.class": f"org.apache.kafka.connect.mirror.{name}",
        "source.cluster.alias": source_alias,
        "target.cluster.alias": target_alias,
        "source.cluster.bootstrap.servers": source_bootstrap,
        "target.cluster.bootstrap.servers": target_bootstrap,
        "enabled": "true",
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "sync.topic.acls.enabled": "false",  # create_acls aborts the process on Tansu (docs/tansu.md)
        # The session brokers are shared by every test: heartbeats topics other tests leave behind
        # would bypass the test's own topic filter (KIP-1089) and land in its task assignment.
        "heartbeats.replication.enabled": "false",
    }
    config.update(overrides or {})
    return config
