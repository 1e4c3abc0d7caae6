"""Every live confluent-kafka client the factory built, by the component that built it.

Why: each librdkafka handle holds threads (one main thread, one per broker, a background thread for an
admin client) and sockets until it is destroyed, and it is destroyed only when the last reference to it
goes (``close()`` for a consumer and a producer, garbage collection for an admin client). A component
that keeps, or loses track of, a client across a fault and a restart grows the process by a handful of
threads and descriptors per fault. The registry makes such a client visible: the
``connect_clients_open`` metric (:class:`ClientsCollector`) counts the live ones per component and kind,
and the tests' leak check compares the count before and after each test.

The registry holds clients weakly: it never keeps one alive. A client counts as open from its creation
until it is garbage, or until ``close()`` for a consumer or a producer (a closed client's handle is
destroyed, though the Python object may live on in a field). confluent-kafka's Producer and Consumer are
C types without weak references, so the factory builds the small subclasses below, which add one
(``__slots__``: no instance dict, no cost on ``produce``) and mark the client closed in ``close()``.

The *component* is the module that asked the factory for the client, skipping this package's own
modules (a TopicAdmin built by ``connect_runtime.storage.kafka_log`` counts for ``kafka_log``), so it
needs no argument at any call site and never goes stale.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import Counter
from collections.abc import Iterator
from types import FrameType
from typing import Any

from confluent_kafka import Consumer, Producer
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

try:  # the C span producer's Gate (TrackedProducer says why); the extension is optional
    from connect_runtime.clients._bulk_produce import Gate as _SpanGate  # type: ignore[import-not-found]
except ImportError:
    _SpanGate = None

_PACKAGE = __name__.rsplit(".", 1)[0] + "."  # "connect_runtime.clients."


class _Entry:
    __slots__ = ("closed", "component", "kind")

    def __init__(self, kind: str, component: str) -> None:
        self.kind = kind
        self.component = component
        self.closed = False


_lock = threading.Lock()
_live: weakref.WeakKeyDictionary[Any, _Entry] = weakref.WeakKeyDictionary()
_created = 0
_created_by: Counter[str] = Counter()


def caller_component() -> str:
    """The module of the first caller frame outside ``connect_runtime.clients`` (``"?"`` if none)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", "?"))
        if not module.startswith(_PACKAGE):
            return module
        frame = frame.f_back
    return "?"


def track(client: Any, kind: str, component: str | None = None) -> None:
    """Count ``client`` as open until it is closed (:func:`closed`) or garbage."""
    global _created
    entry = _Entry(kind, component or caller_component())
    with _lock:
        _live[client] = entry
        _created += 1
        _created_by[entry.component] += 1


def created() -> int:
    """How many clients the factory built since the process started (open or not)."""
    return _created


def created_by() -> Counter[str]:
    """How many clients each component had the factory build since the process started (open or not)."""
    with _lock:
        return Counter(_created_by)


def closed(client: Any) -> None:
    """``client`` was closed: its handle is gone even if the object lives on."""
    with _lock:
        entry = _live.get(client)
        if entry is not None:
            entry.closed = True


def open_clients() -> Counter[tuple[str, str]]:
    """(component, kind) -> how many clients the factory built are open now."""
    with _lock:
        entries = list(_live.values())
    return Counter((e.component, e.kind) for e in entries if not e.closed)


class TrackedProducer(Producer):
    """A Producer the registry can hold weakly; ``close()`` marks it closed, after waiting for C spans.

    ``span_gate`` is the C span producer's Gate (:mod:`connect_runtime.clients.bulk_produce`), None where
    the extension is not built. A span holds the Gate while it produces through this producer's librdkafka
    handle without the GIL; ``close()`` closes the Gate before confluent-kafka's close destroys the handle:
    that waits for a running span and makes later ones produce nothing, so the handle is never destroyed
    under a span, whichever thread closes. The Gate is made with the producer, not when the first span is
    bound, so no ``close()`` can run between the two and miss it.
    """

    __slots__ = ("__weakref__", "span_gate")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.span_gate = None if _SpanGate is None else _SpanGate()

    def close(self, *args: Any, **kwargs: Any) -> Any:
        gate = self.span_gate
        if gate is not None:
            gate.close()  # raises (and nothing is closed) only from inside a span of this producer's own thread
        try:
            return super().close(*args, **kwargs)
        finally:
            closed(self)

    def __exit__(self, *exc_info: object) -> None:
        """confluent-kafka's ``__exit__`` calls its C close directly, past the override above."""
        self.close()


class TrackedConsumer(Consumer):
    """A Consumer the registry can hold weakly; ``close()`` marks it closed."""

    __slots__ = ("__weakref__",)

    def close(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().close(*args, **kwargs)
        finally:
            closed(self)


class ClientsCollector(Collector):
    """``connect_clients_open{component, kind}``: the clients counted above, read at scrape time.

    Process-wide (the registry is): register it once per process's ``/metrics``. Every component and
    kind seen since the process started keeps a series, 0 once its clients are gone, so a graph shows
    the drop rather than a vanished line.
    """

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._seen_lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "connect_clients_open",
            "confluent-kafka clients (librdkafka handles) open in this process, by the module that built them",
            labels=("component", "kind"))
        counts = open_clients()
        with self._seen_lock:
            self._seen |= set(counts)
            keys = sorted(self._seen)
        for key in keys:
            family.add_metric(list(key), counts.get(key, 0))
        yield family
