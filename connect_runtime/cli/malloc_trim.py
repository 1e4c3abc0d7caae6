"""Hand memory the process freed back to the OS (glibc ``malloc_trim``), so RSS follows live memory.

Why this exists: under sustained replication the live memory of a worker is flat, but its RSS only
ever grows. Each time the replication falls behind for a while (a slow target, a busy machine), the
bounded buffers fill: librdkafka's consumer queue (up to ``queued.min.messages`` = 100,000 records,
whose fetch buffers stay allocated while any of their records is queued), the tracked records
(at most 100,000 per task) and the producer queue. Once it catches up that memory is freed, but
glibc keeps freed chunks inside its heaps: a heap shrinks only from its top, and librdkafka's threads
allocate from their own arenas, each pinned by a few long-lived blocks. Measured with bench/memory.py
(--trace) at 5,000 records/s for 5 minutes on a shared machine, without trimming: malloc's bytes in use
stayed at 21-24 MiB throughout while the free bytes it kept grew from 5 to 33 MiB (55 MiB after the
final burst), and RSS went from 76 to 117 MiB (162 MiB at the burst); the Python heap (tracemalloc,
another run) was flat at ~32 MiB. Python's own small-object arenas (pymalloc, 1 MiB each) fragment the
same way at each burst; they are outside malloc, so this cannot return them.

``malloc_trim(0)`` releases the free pages of *every* arena (``madvise(MADV_DONTNEED)`` on whole free
pages, glibc >= 2.8), not only the top of the main heap as glibc does by itself. A trim walks the free
lists while holding each arena's lock (35-150 ms for 700k free chunks in 4 arenas, synthetic), so it
runs on a timer and only when it is worth it: when ``mallinfo2`` says at least ``min_free_bytes`` are free
(``mallinfo2`` needs glibc >= 2.33; without it that check passes) and, since the last trim, RSS grew by
``min_growth_bytes`` or the free bytes did. The second catches a transient that a trim met while it was
alive: a node starting thousands of partitions holds their metadata answers, topic configs and creation
batches at once, and once they are freed RSS does not grow, so RSS alone would never trim again and the
freed pages would stay resident for as long as the process runs. On a C library without ``malloc_trim``
(musl, macOS) nothing happens.

Most of that free memory does not pile up in the first place with one glibc setting applied at start
(:func:`tune_allocator`): two arenas. Trimming then only has the rest to do.

Java needs none of this: the JVM heap is sized up front. ``CONNECT_MALLOC_TRIM_INTERVAL_MS=0`` turns the
trimmer off (any other value is the check interval), ``CONNECT_MALLOC_TUNE=0`` the settings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)

INTERVAL_ENV = "CONNECT_MALLOC_TRIM_INTERVAL_MS"
DEFAULT_INTERVAL_S = 30.0
#: Below this much free-but-kept memory a trim is not worth its arena locks.
DEFAULT_MIN_FREE_BYTES = 16 * 1024 * 1024
#: ``mallinfo2`` counts free bytes whether or not a trim already gave their pages back, so after the
#: first trim the free figure alone would trigger one every interval: also require RSS, or the free bytes,
#: to have grown this much since the last trim.
DEFAULT_MIN_GROWTH_BYTES = 8 * 1024 * 1024
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

TUNE_ENV = "CONNECT_MALLOC_TUNE"
#: glibc ``mallopt`` parameter (malloc.h).
M_ARENA_MAX = -8
#: Two arenas instead of glibc's 8 per core: the ~85 threads of a worker (librdkafka runs several per
#: client) otherwise spread their short-lived buffers over up to 16 heaps, each keeping its own free
#: memory.
#:
#: The mmap threshold is left to glibc on purpose. Fixing it (128 KiB was tried) keeps every fetch
#: response and produce batch buffer a fresh ``mmap``: faulted in and zeroed page by page on use,
#: unmapped on free. ``perf`` of a 1 KB copy put page faults, mmap/munmap and malloc at 26% of the
#: process's samples with it and 6-11% without it, about 2 us per 1 KB record, while RSS was no lower:
#: bench/memory.py at 20,000 x 1 KB records/s for 3 minutes, RSS max / settled 152 / 85 MiB with the
#: fixed threshold, 116 / 85 MiB with two arenas alone, 145 / 130 MiB with neither (bench/results.md).
DEFAULT_ARENA_MAX = 2


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


class Allocator(Protocol):
    """What the trimmer needs from the C library (a seam: tests pass a recording fake)."""

    def free_bytes(self) -> int | None:
        """Bytes malloc holds free (None if it cannot tell)."""

    def trim(self) -> None:
        """Return free memory to the OS."""

    def resident_bytes(self) -> int | None:
        """The process's RSS (None if it cannot tell)."""


class GlibcAllocator:
    """glibc's ``mallinfo2`` / ``malloc_trim`` through ctypes."""

    def __init__(self, libc: Any) -> None:
        self._libc = libc
        self._mallinfo2 = getattr(libc, "mallinfo2", None)
        if self._mallinfo2 is not None:
            self._mallinfo2.restype = _MallInfo2
            self._mallinfo2.argtypes = []
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int

    @classmethod
    def load(cls) -> GlibcAllocator | None:
        """The process's glibc, or None on a C library without ``malloc_trim``."""
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            libc.malloc_trim  # noqa: B018 - AttributeError when the C library has none (musl, macOS)
        except (OSError, AttributeError):
            return None
        return cls(libc)

    def free_bytes(self) -> int | None:
        if self._mallinfo2 is None:
            return None
        return int(self._mallinfo2().fordblks)

    def trim(self) -> None:
        self._libc.malloc_trim(0)

    def set_option(self, param: int, value: int) -> bool:
        """``mallopt(param, value)``; True if glibc accepted it."""
        return bool(self._libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)))

    def resident_bytes(self) -> int | None:
        try:
            pages = int(Path("/proc/self/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            return None
        return pages * _PAGE_SIZE


class MallocTrimmer:
    """Every ``interval_s``, trims the heap if at least ``min_free_bytes`` are free and RSS or the free bytes
    grew by ``min_growth_bytes`` since the last trim (see the module docstring)."""

    def __init__(self, allocator: Allocator, interval_s: float = DEFAULT_INTERVAL_S,
                 min_free_bytes: int = DEFAULT_MIN_FREE_BYTES,
                 min_growth_bytes: int = DEFAULT_MIN_GROWTH_BYTES) -> None:
        if interval_s <= 0:
            raise ValueError(f"the trim interval must be > 0, got {interval_s}")
        self._allocator = allocator
        self.interval_s = interval_s
        self.min_free_bytes = min_free_bytes
        self.min_growth_bytes = min_growth_bytes
        #: RSS right after the last trim (None before the first one or if RSS is unknown).
        self._rss_after_trim: int | None = None
        #: free bytes at the last trim (None before the first one or if malloc cannot tell).
        self._free_at_trim: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Trims done so far (for tests and debugging).
        self.trims = 0

    def maybe_trim(self) -> bool:
        """Trim now if enough memory is free and RSS or the free bytes grew since the last trim; True if it
        trimmed."""
        allocator = self._allocator
        free = allocator.free_bytes()
        if free is not None and free < self.min_free_bytes:
            return False
        before = allocator.resident_bytes()
        rss_grew = (before is None or self._rss_after_trim is None
                    or before - self._rss_after_trim >= self.min_growth_bytes)
        free_grew = (free is not None and self._free_at_trim is not None
                     and free - self._free_at_trim >= self.min_growth_bytes)
        if not (rss_grew or free_grew):
            return False
        began = time.monotonic()
        allocator.trim()
        took_ms = (time.monotonic() - began) * 1000
        self.trims += 1
        self._free_at_trim = allocator.free_bytes()
        self._rss_after_trim = after = allocator.resident_bytes()
        if before is not None and after is not None:
            logger.debug("malloc_trim: RSS %.0f -> %.0f MiB in %.1f ms", before / 1048576, after / 1048576,
                         took_ms)
        return True

    def start(self) -> MallocTrimmer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="malloc-trim", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.maybe_trim()
            except Exception:  # never let housekeeping take anything down
                logger.warning("malloc_trim failed; not trimming any more", exc_info=True)
                return


class Tunable(Protocol):
    def set_option(self, param: int, value: int) -> bool:
        """``mallopt``: True if accepted."""


def tune_allocator(allocator: Tunable, environ: Mapping[str, str]) -> dict[str, int]:
    """Apply :data:`DEFAULT_ARENA_MAX`; returns what was applied.

    Call it before the clients start their threads (arenas already created stay). A setting the user
    made in the environment (``MALLOC_ARENA_MAX``) is left alone, as are glibc's other ``MALLOC_*``
    variables, and ``CONNECT_MALLOC_TUNE=0`` applies nothing. Measured with bench/memory.py at 20,000 x
    1 KB records/s for 3 minutes: RSS 45 s after the load 85 MiB with two arenas, 130 MiB without.
    """
    if environ.get(TUNE_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return {}
    applied: dict[str, int] = {}
    if "MALLOC_ARENA_MAX" not in environ and allocator.set_option(M_ARENA_MAX, DEFAULT_ARENA_MAX):
        applied["arena_max"] = DEFAULT_ARENA_MAX
    return applied


_process_trimmer: MallocTrimmer | None = None
_process_tuned = False
_process_lock = threading.Lock()


def start_process_trimmer(environ: Mapping[str, str] | None = None) -> MallocTrimmer | None:
    """Tune the allocator (:func:`tune_allocator`, once) and start the process's one trimmer
    (idempotent); None when trimming is turned off or not on glibc.

    Called by the command-line entry points (``connect-distributed``, ``connect-mirror-maker``) before
    any client exists: the heap belongs to the process, not to one worker or herder.
    """
    global _process_trimmer, _process_tuned
    env = os.environ if environ is None else environ
    with _process_lock:
        if not _process_tuned:
            _process_tuned = True
            glibc = GlibcAllocator.load()
            if glibc is not None:
                applied = tune_allocator(glibc, env)
                if applied:
                    logger.debug("malloc settings: %s", applied)
    raw = env.get(INTERVAL_ENV, "").strip()
    try:
        interval_s = DEFAULT_INTERVAL_S if not raw else int(raw) / 1000
    except ValueError:
        logger.warning("%s=%r is not a number of milliseconds; using %.0f s", INTERVAL_ENV, raw,
                       DEFAULT_INTERVAL_S)
        interval_s = DEFAULT_INTERVAL_S
    if interval_s <= 0:
        return None
    with _process_lock:
        if _process_trimmer is None:
            allocator = GlibcAllocator.load()
            if allocator is None:
                logger.debug("no glibc malloc_trim: freed memory stays with the allocator")
                return None
            _process_trimmer = MallocTrimmer(allocator, interval_s).start()
        return _process_trimmer
