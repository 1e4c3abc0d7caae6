"""Helpers for driving the MM2 connectors directly in tests (without a herder)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.errors import RetriableError
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

    def forget_reconfigurations(self) -> None:
        with self._lock:
            self.reconfigurations = 0

    def offset_storage_reader(self) -> Any:
        return _EmptyReader()


class _EmptyReader:
    def offset(self, partition: SourceMap) -> Mapping[str, Any] | None:
        return None

    def offsets(self, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
        return [(p, None) for p in partitions]


def start_connector(connector: SourceConnector, config: Mapping[str, str],
                    context: RecordingConnectorContext | None = None, timeout_s: float = 60.0
                    ) -> RecordingConnectorContext:
    """Start ``connector`` and wait, as the runtime's retries do, until its start's initial work is done.

    The source and checkpoint connectors return from ``start`` at once and answer ``task_configs`` with
    RetriableError until their topics or groups are loaded; then they ask for one task reconfiguration,
    which is waited for and not counted in ``context.reconfigurations`` (tests count the later ones).
    """
    from mirror.checkpoint.connector import MirrorCheckpointConnector
    from mirror.source.connector import MirrorSourceConnector

    context = context or RecordingConnectorContext()
    connector.initialize(context)
    connector.start(dict(config))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            connector.task_configs(1)
            break
        except RetriableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    enabled = str(config.get("enabled", "true")).strip().lower() != "false"
    if enabled and isinstance(connector, MirrorSourceConnector | MirrorCheckpointConnector):
        while context.reconfigurations < 1:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{type(connector).__name__} did not ask for its first task configs")
            time.sleep(0.01)
        context.forget_reconfigurations()
    return context


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
