"""Producing a stretch of consumed messages in one call: the C accelerator of the bulk path, when present.

Why: at small records the per-record Python loop of a replicating task (four Message accessors and a
``Producer.produce`` call per record, all under the GIL) sets the task's pace, not librdkafka or the
brokers. ``_bulk_produce`` (a C extension built with the package when a compiler is there) runs that loop
in C through the same librdkafka handle and releases the GIL while librdkafka copies the records.

It changes nothing a record carries: each keeps its key, value, timestamp and headers, goes to the same
partition in the same order, through the same idempotent producer. It stops at the first record it cannot
produce (a full queue, an error) and says how many it produced; the caller produces that one through
``Producer.produce``, so every error takes the path it took without the extension.

Without the extension (no compiler at install, another platform, another confluent-kafka layout) or with
``CONNECT_PURE_PYTHON_PRODUCE=1`` in the environment, :func:`span_producer` returns None and callers use
their Python loop: slower at small records, otherwise the same.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import confluent_kafka
from confluent_kafka import Message, Producer

logger = logging.getLogger(__name__)

#: Set to 1 to turn the extension off (benchmarks compare both paths; a suspected fault can be ruled out).
DISABLE_ENV = "CONNECT_PURE_PYTHON_PRODUCE"

#: ``produce(messages, start, stop, topic, partition) -> (produced, value bytes)``
SpanProducer = Callable[[list[Message], int, int, str, int], tuple[int, int]]
#: ``run_end(messages, start) -> end``: the following messages of start's partition at the next offsets
#: (-1 when ``messages[start]`` is not a confluent-kafka Message: the caller scans itself).
RunEnd = Callable[[list[Message], int], int]


def _loaded_librdkafka() -> str | None:
    """The path of the librdkafka confluent-kafka loaded (the wheel's own copy, or the system's)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1]
                if "librdkafka" in os.path.basename(path) and path.startswith("/"):
                    return path
    except OSError:
        return None
    return None


@cache
def _module() -> Any | None:
    """The bound extension, or None (and why, once, at debug level)."""
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        logger.debug("bulk produce: turned off by %s", DISABLE_ENV)
        return None
    try:
        from connect_runtime.clients import _bulk_produce  # type: ignore[attr-defined]
    except ImportError:
        logger.debug("bulk produce: the C extension is not built; the Python loop produces")
        return None
    path = _loaded_librdkafka()
    if path is None:
        logger.debug("bulk produce: no librdkafka found among the process's libraries")
        return None
    try:
        version = _bulk_produce.bind(path, Producer, Message)
    except (ImportError, TypeError) as exc:
        logger.debug("bulk produce: cannot bind to %s: %s", path, exc)
        return None
    if version != confluent_kafka.libversion()[1]:  # not the library confluent-kafka runs on
        logger.debug("bulk produce: %s is version %#x, confluent-kafka runs %#x", path, version,
                     confluent_kafka.libversion()[1])
        return None
    return _bulk_produce


def span_producer(producer: Producer) -> SpanProducer | None:
    """``producer``'s span producer, or None when records must go through ``producer.produce``.

    None also when ``produce`` is not confluent-kafka's own (a subclass or an instance overriding it):
    whatever that override does must keep happening.
    """
    module = _module()
    if module is None or not isinstance(producer, Producer):
        return None
    if type(producer).produce is not Producer.produce or "produce" in getattr(producer, "__dict__", {}):
        return None
    name = module.client_name(producer)
    if not isinstance(name, str) or "#producer-" not in name:  # the handle is not what it should be
        logger.warning("bulk produce: unexpected client behind %r (%r); the Python loop produces", producer, name)
        return None
    produce: SpanProducer = partial(module.produce_span, producer)
    return produce


def run_end() -> RunEnd | None:
    """The extension's run scan (None without it)."""
    module = _module()
    return None if module is None else module.run_end
