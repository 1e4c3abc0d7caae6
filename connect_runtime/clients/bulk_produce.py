"""Producing a stretch of consumed messages in one call: the C accelerator of the bulk path, when present.

Why: at small records the per-record Python loop of a replicating task (four Message accessors and a
``Producer.produce`` call per record, all under the GIL) sets the task's pace, not librdkafka or the
brokers. ``_bulk_produce`` (a C extension built with the package when a compiler is there) runs that loop
in C through the same librdkafka handle and releases the GIL while librdkafka copies the records.

It changes nothing a record carries: each keeps its key, value, timestamp and headers, goes to the same
partition in the same order, through the same idempotent producer. It stops at the first record it cannot
produce (a full queue, an error) and says how many it produced; the caller produces that one through
``Producer.produce``, so every error takes the path it took without the extension.

The extension reaches into confluent-kafka, so each step that could go wrong is checked before a record
is produced, and a failed check means the Python loop, never a crash:

* CPython with the GIL only: the extension uses CPython's object layout and relies on the GIL (setup.py
  builds it only there; this module refuses it elsewhere too, should a build of it be found).
* librdkafka is found through ``confluent_kafka.cimpl``'s own library (``dlopen`` of cimpl's file with
  ``RTLD_NOLOAD``, then ``dlsym``), so it is the copy confluent-kafka itself calls; its version must be
  the one ``confluent_kafka.libversion()`` reports.
* The producer's ``rd_kafka_t`` pointer is read from confluent-kafka's private ``Handle`` struct, so only
  for the confluent-kafka releases whose struct was checked (:data:`HANDLE_LAYOUT_CHECKED`). A release
  outside them would crash inside the first check, not fail it: there the Python loop produces.
* The span runs without the GIL while another thread could close the producer, which destroys the
  handle. Only producers whose ``close()`` waits for a running span are taken: those the client factory
  builds (:class:`connect_runtime.clients.registry.TrackedProducer`) carry the extension's ``Gate``,
  which every span holds while it uses the handle and which ``close()`` closes first (it waits for the
  span, and spans after it produce nothing). The span callable holds a reference to the producer, so
  the object cannot be deallocated under a span either.

Which path a task takes, and why, is logged at INFO when the task starts and exported as the
``connect_source_task_produce_path`` metric (docs/metrics.md): the Python loop is slower at small records
(bench/README.md), and nobody would see it otherwise. ``CONNECT_PURE_PYTHON_PRODUCE=1`` in the environment turns
the extension off (benchmarks compare both paths; a suspected fault can be ruled out).

How many tasks one process can run on as many cores depends on the share ``s`` of a record's CPU that
holds the GIL: at most ``1 / (s + (1 - s) / N)`` times one task (Amdahl). Only the extension knows where
its GIL-free sections are, so it can time them with the thread's CPU clock (:func:`count_released_cpu`,
:func:`released_cpu_ns`; ``bench/scale.py gil`` reads them). Off unless turned on: each clock read is a
system call, too dear for a span of one record.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import confluent_kafka
from confluent_kafka import Message, Producer

logger = logging.getLogger(__name__)

#: Set to 1 to turn the extension off.
DISABLE_ENV = "CONNECT_PURE_PYTHON_PRODUCE"

#: The confluent-kafka releases, ``(major, minor)`` from (inclusive) to (exclusive), whose ``struct Handle``
#: (src/confluent_kafka/src/confluent_kafka.h) starts with ``PyObject_HEAD`` and the ``rd_kafka_t`` pointer,
#: as ``_bulk_produce.c`` reads it: checked in the source of 2.13.0, 2.13.2, 2.14.0, 2.14.2, 2.15.0 and
#: 2.16.1. To take a newer release in: read that struct in its source, run
#: tests/integration/test_bulk_produce.py and scripts/asan-span-producer on it, then raise the bound.
HANDLE_LAYOUT_CHECKED = ((2, 13), (2, 17))

#: The two values of :attr:`ProducePath.name` (and of the metric's ``path`` label).
C_SPAN = "c-span"
PYTHON_LOOP = "python-loop"

#: ``produce(messages, start, stop, topic, partition) -> (produced, value bytes)``
SpanProducer = Callable[[list[Message], int, int, str, int], tuple[int, int]]
#: ``run_end(messages, start) -> end``: the following messages of start's partition at the next offsets
#: (-1 when ``messages[start]`` is not a confluent-kafka Message: the caller scans itself).
RunEnd = Callable[[list[Message], int], int]


@dataclass(frozen=True, slots=True)
class ProducePath:
    """How a bulk task produces the records between a run's first and last: ``span`` (C) or its Python
    loop (``span`` None), and why, in words for the task's start-up line and the metric."""

    span: SpanProducer | None
    reason: str

    @property
    def name(self) -> str:
        return C_SPAN if self.span is not None else PYTHON_LOOP


def _release() -> str:
    """confluent-kafka's release, e.g. ``2.16.1`` (``version()`` was a (text, number) pair in old releases)."""
    version: Any = confluent_kafka.version()
    return str(version if isinstance(version, str) else version[0])


def _layout_checked(release: str) -> bool:
    """Whether ``release`` is among :data:`HANDLE_LAYOUT_CHECKED` (a text it cannot read is not)."""
    found = re.match(r"(\d+)\.(\d+)", release)
    if found is None:
        return False
    low, high = HANDLE_LAYOUT_CHECKED
    return low <= (int(found[1]), int(found[2])) < high


@cache
def _binding() -> tuple[Any | None, str]:
    """(the bound extension, why) or (None, why not): once per process, every check above in order."""
    switch = os.environ.get(DISABLE_ENV, "")
    if switch not in ("", "0"):
        return None, f"turned off by {DISABLE_ENV}={switch}"
    if sys.implementation.name != "cpython":
        return None, f"the C extension is for CPython only, not {sys.implementation.name}"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None, "the C extension needs the GIL, and this CPython is a free-threaded build"
    release = _release()
    if not _layout_checked(release):
        (low_major, low_minor), (high_major, high_minor) = HANDLE_LAYOUT_CHECKED
        return None, (f"confluent-kafka {release} is outside the releases whose Producer layout the C extension "
                      f"was checked against ({low_major}.{low_minor} up to, not including, "
                      f"{high_major}.{high_minor})")
    try:
        import connect_runtime.clients._bulk_produce as _bulk_produce  # type: ignore[import-not-found]
    except ImportError:
        return None, "the C extension is not built (no C compiler when the package was installed)"
    if not hasattr(_bulk_produce, "Gate"):  # a build older than this module (an install not rebuilt)
        return None, "the C extension is older than this package; reinstall the package to rebuild it"
    cimpl = confluent_kafka.cimpl.__file__  # noqa: TID251  (the file the extension binds to, not an import of it)
    try:
        version = _bulk_produce.bind(cimpl, Producer, Message)
    except (ImportError, TypeError) as exc:
        return None, f"the C extension cannot bind to librdkafka through {cimpl}: {exc}"
    expected = confluent_kafka.libversion()[1]
    if version != expected:
        return None, (f"the librdkafka found through {cimpl} is version {version:#x}, confluent-kafka reports "
                      f"{expected:#x}")
    return _bulk_produce, (f"the C extension is bound (confluent-kafka {release}, librdkafka "
                           f"{confluent_kafka.libversion()[0]})")


def unavailable() -> str | None:
    """Why no producer in this process can take the C path (None: producers built by the factory can)."""
    module, reason = _binding()
    return reason if module is None else None


def produce_path(producer: Producer) -> ProducePath:
    """How records go through ``producer``: its C span producer, or the caller's Python loop and why.

    The Python loop also when ``produce`` is not confluent-kafka's own (a subclass or an instance
    overriding it: whatever that override does must keep happening), and when the producer's ``close()``
    does not wait for a running span (it has no Gate: not built by the client factory).
    """
    module, reason = _binding()
    if module is None:
        return ProducePath(None, reason)
    if not isinstance(producer, Producer):
        return ProducePath(None, f"the producer is a {type(producer).__name__}, not a confluent-kafka Producer")
    if type(producer).produce is not Producer.produce or "produce" in getattr(producer, "__dict__", {}):
        return ProducePath(None, "the producer's produce() is not confluent-kafka's own")
    gate = getattr(producer, "span_gate", None)
    if not isinstance(gate, module.Gate):
        return ProducePath(None, "the producer's close() does not wait for a running span (a producer not "
                                 "built by connect_runtime.clients.factory)")
    name = module.client_name(producer)
    if not isinstance(name, str) or "#producer-" not in name:  # the handle is not what it should be
        logger.warning("bulk produce: unexpected client behind %r (%r); the Python loop produces", producer, name)
        return ProducePath(None, f"unexpected librdkafka client behind the producer ({name!r})")
    produce: SpanProducer = partial(module.produce_span, gate, producer)
    return ProducePath(produce, reason)


def run_end() -> RunEnd | None:
    """The extension's run scan (None without it)."""
    module, _ = _binding()
    return None if module is None else module.run_end


def count_released_cpu(on: bool = True) -> bool:
    """Turn the timing of the spans' GIL-free sections on (or off); False when no extension is bound, or it
    is a build without the timing (nothing is then counted)."""
    module, _ = _binding()
    if module is None or not hasattr(module, "count_released_cpu"):
        return False
    module.count_released_cpu(on)
    return True


def released_cpu_ns() -> int | None:
    """CPU nanoseconds the spans of every thread of this process spent without the GIL while the timing was on
    (None: nothing can be counted, see :func:`count_released_cpu`)."""
    module, _ = _binding()
    if module is None or not hasattr(module, "released_cpu_ns"):
        return None
    return int(module.released_cpu_ns())
