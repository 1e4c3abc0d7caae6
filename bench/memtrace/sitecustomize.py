"""Memory instrumentation of a benchmarked process, loaded by Python's ``site`` at interpreter start.

bench/memory.py puts this directory first on the replication process's PYTHONPATH (and only that
process's) and sets ``BENCH_TRACE_DIR``. The process then, without any change to the product:

* samples every second into ``<dir>/process.csv``: RSS, the Python heap traced by ``tracemalloc``,
  glibc's ``mallinfo2`` (bytes in use vs. free-but-kept by malloc: tells fragmentation and arena growth
  from live objects), thread count, and every 30 s the number of objects the GC tracks; every 10 s
  into ``<dir>/details.csv``: RssAnon / RssFile, native threads (librdkafka's included) and Python's
  small-object allocator (pymalloc arenas of 1 MiB, bytes in use), which malloc's figures do not see;
* writes a ``tracemalloc`` snapshot at each second listed in ``BENCH_TRACE_SNAPSHOTS`` (process age,
  e.g. ``90,390``) to ``<dir>/snapshot-<s>.pickle`` (bench/memdiff.py compares two);
* turns on librdkafka statistics (``statistics.interval.ms``) for the clients that are polled all the
  time (the task's producer, the source consumer, the offset-syncs producer) and writes their queue
  sizes to ``<dir>/clients.csv``: producer ``msg_cnt``/``msg_size`` (messages in librdkafka's queue),
  consumer ``fetchq_cnt``/``fetchq_size`` (pre-fetched, not yet consumed: the consumer queue) and
  ``replyq`` (events waiting for ``poll``). Clients that are not polled steadily are left alone: their
  statistics events would pile up in their queues and the instrument would cause the growth it measures.

``BENCH_TRACE_MALLOC_TRIM_S`` (an experiment, default off) calls glibc ``malloc_trim(0)`` that often and
writes RSS before/after to ``<dir>/trim.csv``. ``BENCH_TRACE_FRAMES`` (default 1) is the traceback depth
``tracemalloc`` keeps; every frame more costs CPU on each allocation. ``BENCH_TRACE_TRACEMALLOC=0``
keeps tracemalloc off (RSS and stats only). ``BENCH_TRACE_STATS=0`` leaves librdkafka's statistics off: at
thousands of partitions each client's statistics are megabytes of JSON a second, which the node parses on
the clients' threads; once a task's clients stop being polled (a rebalance), their statistics events pile up
(a node of 2,000 topics x 4 partitions under bench/scale.py start grew to 6 GB RSS).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

_DIR = os.environ.get("BENCH_TRACE_DIR")
_BORN = time.monotonic()


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


try:
    _LIBC: Any = ctypes.CDLL("libc.so.6")
    _LIBC.mallinfo2.restype = _MallInfo2
except (OSError, AttributeError):
    _LIBC = None


def _mallinfo() -> tuple[int, int, int]:
    """(bytes malloc handed out, bytes free but kept, bytes in mmapped chunks); zeros without glibc."""
    if _LIBC is None:
        return 0, 0, 0
    info = _LIBC.mallinfo2()
    return int(info.uordblks), int(info.fordblks), int(info.hblkhd)


def _trimmer(directory: Path, interval_s: float) -> None:
    """An experiment: glibc ``malloc_trim(0)`` every ``interval_s``, to see how much RSS is freed memory."""
    out = (directory / "trim.csv").open("w", buffering=1)
    out.write("seconds,rss_before_kb,rss_after_kb,trim_ms\n")
    while True:
        time.sleep(interval_s)
        before = _rss_kb()
        began = time.monotonic()
        _LIBC.malloc_trim(0)
        out.write(f"{began - _BORN:.1f},{before},{_rss_kb()},{(time.monotonic() - began) * 1000:.1f}\n")


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _pymalloc() -> tuple[int, int]:
    """(arenas allocated now, bytes in allocated blocks) of Python's small-object allocator.

    ``sys._debugmallocstats`` prints to the C stderr only, so fd 2 points to a file meanwhile (a line
    another thread writes to stderr in that millisecond lands there too).
    """
    import sys
    import tempfile

    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    arenas = used = 0
    for line in text.splitlines():
        if line.startswith("# arenas allocated current"):
            arenas = int(line.split("=")[1].replace(",", ""))
        elif line.startswith("# bytes in allocated blocks"):
            used = int(line.split("=")[1].replace(",", ""))
    return arenas, used


def _proc_fields() -> dict[str, int]:
    """Native thread count and the anonymous / file-backed parts of RSS (kB)."""
    fields: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("Threads:", "RssAnon:", "RssFile:")):
            fields[line.split(":")[0]] = int(line.split()[1])
    return fields


def _details(directory: Path) -> None:
    """Every 10 s: pymalloc arenas and used bytes, native threads, RssAnon/RssFile (details.csv)."""
    out = (directory / "details.csv").open("w", buffering=1)
    out.write("seconds,rss_anon_kb,rss_file_kb,native_threads,pymalloc_arenas,pymalloc_used_kb\n")
    while True:
        fields = _proc_fields()
        arenas, used = _pymalloc()
        out.write(f"{time.monotonic() - _BORN:.1f},{fields.get('RssAnon', 0)},{fields.get('RssFile', 0)},"
                  f"{fields.get('Threads', 0)},{arenas},{used // 1024}\n")
        time.sleep(10.0)


def _sampler(directory: Path, snapshot_at: list[float], tracing: bool) -> None:
    out = (directory / "process.csv").open("w", buffering=1)
    out.write("seconds,rss_kb,traced_kb,malloc_used_kb,malloc_free_kb,mmapped_kb,threads,gc_objects\n")
    gc_objects = -1
    n = 0
    began = time.monotonic()
    while True:
        age = time.monotonic() - _BORN
        if n % 30 == 0:
            gc_objects = len(gc.get_objects())
        traced = tracemalloc.get_traced_memory()[0] // 1024 if tracing else 0
        used, free, mapped = _mallinfo()
        out.write(f"{age:.1f},{_rss_kb()},{traced},{used // 1024},{free // 1024},{mapped // 1024},"
                  f"{threading.active_count()},{gc_objects}\n")
        while tracing and snapshot_at and age >= snapshot_at[0]:
            at = snapshot_at.pop(0)
            snapshot = tracemalloc.take_snapshot()
            snapshot.dump(str(directory / f"snapshot-{at:.0f}.pickle"))
        n += 1
        time.sleep(max(0.0, n - (time.monotonic() - began)))


def _stats_writer(directory: Path) -> Any:
    out = (directory / "clients.csv").open("w", buffering=1)
    out.write("seconds,client,type,msg_cnt,msg_size,fetchq_cnt,fetchq_size,replyq\n")
    lock = threading.Lock()

    def on_stats(raw: str) -> None:
        stats = json.loads(raw)
        # The largest partition queue, not the sum: a consumer's partition queues are forwarded to its one
        # consumer queue, and every partition then reports that shared queue (the sum counts it n times).
        fetchq_cnt = fetchq_size = 0
        for topic in stats.get("topics", {}).values():
            for partition in topic.get("partitions", {}).values():
                fetchq_cnt = max(fetchq_cnt, int(partition.get("fetchq_cnt", 0)))
                fetchq_size = max(fetchq_size, int(partition.get("fetchq_size", 0)))
        with lock:
            out.write(f"{time.monotonic() - _BORN:.1f},{stats.get('client_id', '')},{stats.get('type', '')},"
                      f"{stats.get('msg_cnt', 0)},{stats.get('msg_size', 0)},{fetchq_cnt},{fetchq_size},"
                      f"{stats.get('replyq', 0)}\n")

    return on_stats


def _steadily_polled(config: dict[str, Any]) -> bool:
    """The clients of the replication hot path (see the module docstring for why only these)."""
    client_id = str(config.get("client.id", ""))
    if "offset-syncs" in client_id or "replication-consumer" in client_id:
        return True
    # the task producer: "connector-producer-<task>", or the flow's name under the MM2 driver ("A->B")
    internal = client_id.endswith(("-statuses", "-offsets", "-configs")) or "|" in client_id
    return "transactional.id" not in config and "group.id" not in config and (
        client_id.startswith("connector-producer") or ("->" in client_id and not internal))


def _install_stats(directory: Path) -> None:
    import confluent_kafka

    on_stats = _stats_writer(directory)
    clients = (directory / "clients.txt").open("a", buffering=1)

    def wrap(base: Any) -> Any:
        class Instrumented(base):  # type: ignore[misc]
            # No instance dict nor __weakref__ here: the runtime's tracked clients subclass these and
            # declare their own ``__weakref__`` slot, which a base that already has one refuses.
            __slots__ = ()

            def __init__(self, config: dict[str, Any], *args: Any, **kwargs: Any) -> None:
                config = dict(config)
                watched = _steadily_polled(config)
                clients.write(f"{base.__name__} client.id={config.get('client.id', '')} "
                              f"group.id={config.get('group.id', '')} stats={watched}\n")
                if watched:
                    config.setdefault("statistics.interval.ms", 1000)
                    config.setdefault("stats_cb", on_stats)
                super().__init__(config, *args, **kwargs)

        Instrumented.__name__ = base.__name__
        return Instrumented

    confluent_kafka.Producer = wrap(confluent_kafka.Producer)  # type: ignore[misc]
    confluent_kafka.Consumer = wrap(confluent_kafka.Consumer)  # type: ignore[misc]


def _start(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tracing = os.environ.get("BENCH_TRACE_TRACEMALLOC", "1") != "0"
    if tracing:
        tracemalloc.start(int(os.environ.get("BENCH_TRACE_FRAMES", "1")))
    snapshot_at = sorted(float(s) for s in os.environ.get("BENCH_TRACE_SNAPSHOTS", "").split(",") if s.strip())
    if os.environ.get("BENCH_TRACE_STATS", "1") != "0":
        _install_stats(directory)
    trim_s = float(os.environ.get("BENCH_TRACE_MALLOC_TRIM_S", "0"))
    if trim_s > 0 and _LIBC is not None:
        threading.Thread(target=_trimmer, args=(directory, trim_s), name="bench-trim", daemon=True).start()
    threading.Thread(target=_sampler, args=(directory, snapshot_at, tracing), name="bench-memtrace",
                     daemon=True).start()
    threading.Thread(target=_details, args=(directory,), name="bench-memtrace-details", daemon=True).start()


if _DIR:
    _start(Path(_DIR))
