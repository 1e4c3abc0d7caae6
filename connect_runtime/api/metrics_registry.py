"""Where a connector or task registers its own metrics: the ``metrics_registry`` of its context.

Why the runtime hands one over: several herders share one process (the MM2 driver), each serving its
own registry under its own labels, so a connector's metrics must land in the registry of the herder
that runs it; a process-global registry would mix flows (and two tests would collide).

The API stays free of third-party imports, so this is the part of prometheus_client's
``CollectorRegistry`` a plugin relies on; the runtime's contexts always carry a real one, and
prometheus_client metrics are created with ``registry=None`` and then ``register``-ed on it.
"""

from __future__ import annotations

from typing import Any, Protocol


class MetricsRegistry(Protocol):
    """A Prometheus collector registry (``prometheus_client.CollectorRegistry``)."""

    def register(self, collector: Any) -> None:
        """Add a collector (a metric family or a custom collector) to what the registry serves."""
        ...

    def unregister(self, collector: Any) -> None:
        """Remove a collector registered before."""
        ...
