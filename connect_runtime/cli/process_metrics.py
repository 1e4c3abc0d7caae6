"""What an operator alerts on to see a process leak: its threads, file descriptors and Kafka clients.

A replicator runs for months through broker restarts and network cuts; a component that forgets a
client, a thread or a socket on a failure path grows the process a little per fault, and it runs out of
threads, descriptors or memory long after the fault anyone remembers. Three families make that a graph:

* prometheus-client's process collector: ``process_open_fds``, ``process_max_fds``,
  ``process_resident_memory_bytes``, ``process_cpu_seconds_total`` ... (the default registry has it, a
  runtime's own registry does not: it is added here);
* ``<prefix>_process_threads``: every OS thread of the process, librdkafka's native ones included
  (each client has a main thread and one per broker it talks to), which Python's ``threading`` does
  not list;
* ``connect_clients_open{component, kind}``: the live confluent-kafka clients by the module that built
  them (:mod:`connect_runtime.clients.registry`).

docs/metrics.md says what to alert on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from connect_runtime.clients.registry import ClientsCollector


def os_threads() -> int:
    """The process's OS threads (``/proc/self/status``), or Python's own count where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return threading.active_count()


class ThreadsCollector(Collector):
    """``<prefix>_process_threads``, read at scrape time."""

    def __init__(self, prefix: str) -> None:
        self._name = f"{prefix}_process_threads"

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(self._name, "OS threads of this process, librdkafka's native threads included",
                                value=os_threads())


def register_process_metrics(registry: CollectorRegistry, prefix: str) -> None:
    """Add the process, thread and client families to ``registry`` (once per process's ``/metrics``)."""
    ProcessCollector(registry=registry)
    registry.register(ThreadsCollector(prefix))
    registry.register(ClientsCollector())
