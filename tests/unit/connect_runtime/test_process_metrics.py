"""The process families an operator alerts on for a leak: threads, descriptors, open Kafka clients."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from connect_runtime.cli.process_metrics import os_threads, register_process_metrics
from connect_runtime.clients.factory import new_consumer, new_producer

NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "log_level": "0"}


def test_threads_descriptors_and_clients_per_component_are_exposed() -> None:
    registry = CollectorRegistry()
    register_process_metrics(registry, "mirror")
    clients = {"component": __name__, "kind": "producer"}
    producer = new_producer(NOWHERE)
    consumer = new_consumer({**NOWHERE, "group.id": "metrics"})
    try:
        assert registry.get_sample_value("connect_clients_open", clients) == 1
        assert registry.get_sample_value("connect_clients_open", {**clients, "kind": "consumer"}) == 1
        threads = registry.get_sample_value("mirror_process_threads")
        assert threads is not None and threads >= 3  # this thread and each client's librdkafka main thread
        fds = registry.get_sample_value("process_open_fds")
        assert fds is not None and fds > 0
    finally:
        producer.close()
        consumer.close()
    # closed: the series stays, at 0, so a graph shows the drop
    assert registry.get_sample_value("connect_clients_open", clients) == 0
    assert os_threads() >= 1
