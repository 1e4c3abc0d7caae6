"""The process's cyclic garbage collector, set for a copier: rare young collections, a frozen start-up heap.

Why: every consumed record is a ``confluent_kafka.Message``, an object the cyclic collector tracks, and a
task consumes them 10,000 at a time. With CPython's default thresholds (700, 10, 10) a young collection
runs every 700 new objects, so about 14 times inside each ``consume`` call, each moving the batch's
messages still alive one generation up; every tenth of those runs the middle generation, and every tenth
of *those* a full collection, which walks every object of the process: the modules, configs, metrics and
herder state a node holds, tens of thousands of objects at least. So a full collection came about every
70,000 records, and its cost grew with the process, not with the records: 3M messages made in
10,000-message batches ran 3,821 young, 347 middle and 32 full collections, 0.38 s of collecting in a
process holding only the client library and 0.69 s (0.53 s of it full collections) in one that imported
the node's modules, a fifth of that loop's time; tuned, none (bench/results.md, 2026-11-27 02:54-03:33). All of
it runs with the GIL held, on the task's thread.

Two settings:

* :func:`tune_collector`, at start: a young collection every :data:`YOUNG_THRESHOLD` new tracked objects,
  more than a consume batch holds. A batch's messages are freed (by reference counting) once handled, so
  the count drops back and young collections become rare; the messages never reach the older generations.
* :func:`freeze_startup_objects`, once the node runs: one full collection, then ``gc.freeze()`` moves every
  object alive to the permanent generation, which later collections skip. What the start built lives as
  long as the process anyway; a cycle among those objects that becomes garbage later is not collected
  (reference counting still frees everything else), the price of not walking them again and again.

In whole copies on Apache Kafka (same entry) the difference did not show beside the run-to-run spread: the
settings bound the pauses a copy takes for collecting; they are not a throughput figure.

``CONNECT_GC_TUNE=0`` leaves CPython's defaults. The raw pipe of bench/pipe.py applies the same settings,
so that it stays the limit the replicator is measured against.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Mapping

logger = logging.getLogger(__name__)

TUNE_ENV = "CONNECT_GC_TUNE"
#: New tracked objects between two young collections (CPython's default: 700): above a task's consume
#: batch (10,000 messages) with room for what handling it allocates.
YOUNG_THRESHOLD = 50_000


def _wanted(environ: Mapping[str, str] | None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(TUNE_ENV, "").strip().lower() not in ("0", "false", "no", "off")


def tune_collector(environ: Mapping[str, str] | None = None) -> bool:
    """Raise the young generation's threshold (older generations keep CPython's); False when turned off."""
    if not _wanted(environ):
        return False
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    return True


def freeze_startup_objects(environ: Mapping[str, str] | None = None) -> int:
    """Collect once, then keep every object alive out of all later collections; how many were frozen
    (0 when turned off). Call it once the process has built what it keeps (a node: its herders running)."""
    if not _wanted(environ):
        return 0
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.debug("garbage collector: %d start-up objects frozen", frozen)
    return frozen
