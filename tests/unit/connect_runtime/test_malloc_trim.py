"""The process trimmer gives freed heap memory back to the OS (connect_runtime.cli.malloc_trim).

The decision logic runs against a recording fake allocator; one test runs the real glibc path and
checks RSS itself: memory freed in a thread's arena, pinned by one live block, stays resident until
the trimmer runs (so it fails without the trimmer), and leaves once it has.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connect_runtime.cli import malloc_trim
from connect_runtime.cli.malloc_trim import (
    DEFAULT_ARENA_MAX,
    M_ARENA_MAX,
    GlibcAllocator,
    MallocTrimmer,
    start_process_trimmer,
    tune_allocator,
)
from tests.support.kafka import wait_until

MIB = 1024 * 1024


class FakeAllocator:
    """Free bytes stay counted after a trim (as ``mallinfo2`` does); a trim brings RSS down to ``live``."""

    def __init__(self, free: int | None, rss: int | None = None, live: int = 0) -> None:
        self.free = free
        self.rss = rss
        self.live = live
        self.trim_calls = 0

    def free_bytes(self) -> int | None:
        return self.free

    def trim(self) -> None:
        self.trim_calls += 1
        if self.rss is not None:
            self.rss = self.live

    def resident_bytes(self) -> int | None:
        return self.rss


def test_trims_only_when_enough_memory_is_free() -> None:
    allocator = FakeAllocator(free=10 * MIB)
    trimmer = MallocTrimmer(allocator, interval_s=60, min_free_bytes=32 * MIB)
    assert trimmer.maybe_trim() is False
    assert allocator.trim_calls == 0
    allocator.free = 40 * MIB
    assert trimmer.maybe_trim() is True
    assert allocator.trim_calls == 1
    assert trimmer.trims == 1


def test_after_a_trim_rss_growth_triggers_the_next() -> None:
    # mallinfo2 still counts the trimmed bytes as free: without the growth checks every tick would trim
    allocator = FakeAllocator(free=100 * MIB, rss=200 * MIB, live=120 * MIB)
    trimmer = MallocTrimmer(allocator, interval_s=60, min_free_bytes=32 * MIB, min_growth_bytes=8 * MIB)
    assert trimmer.maybe_trim() is True
    assert allocator.rss == 120 * MIB
    allocator.rss = 125 * MIB
    assert trimmer.maybe_trim() is False
    allocator.rss = 130 * MIB  # a backlog came and went: RSS grew again
    assert trimmer.maybe_trim() is True
    assert allocator.trim_calls == 2


def test_after_a_trim_memory_freed_without_rss_growth_triggers_the_next() -> None:
    """A trim during a transient (a node starting thousands of partitions) cannot give back what is still
    alive; once the transient is freed RSS has not grown, but the free bytes have, and they are trimmed."""
    allocator = FakeAllocator(free=40 * MIB, rss=400 * MIB, live=380 * MIB)
    trimmer = MallocTrimmer(allocator, interval_s=60, min_free_bytes=16 * MIB, min_growth_bytes=8 * MIB)
    assert trimmer.maybe_trim() is True
    assert allocator.rss == 380 * MIB
    allocator.free = 45 * MIB  # less than the growth: not worth the arena locks
    assert trimmer.maybe_trim() is False
    allocator.free, allocator.live = 140 * MIB, 280 * MIB  # the transient is freed, its pages still resident
    assert trimmer.maybe_trim() is True
    assert allocator.rss == 280 * MIB
    assert trimmer.maybe_trim() is False  # nothing new freed, RSS flat: the next tick leaves it
    assert allocator.trim_calls == 2


def test_trims_every_time_when_the_allocator_cannot_tell_what_is_free() -> None:
    allocator = FakeAllocator(free=None)
    trimmer = MallocTrimmer(allocator, interval_s=60)
    assert trimmer.maybe_trim() and trimmer.maybe_trim()
    assert allocator.trim_calls == 2


def test_the_thread_trims_on_its_interval_and_stops() -> None:
    allocator = FakeAllocator(free=None)
    trimmer = MallocTrimmer(allocator, interval_s=0.05).start()
    try:
        wait_until(lambda: allocator.trim_calls >= 2, 10, "two timed trims")
    finally:
        trimmer.stop()
    calls = allocator.trim_calls
    time.sleep(0.2)  # a stopped trimmer must stay quiet: nothing to poll for, so wait a few intervals
    assert allocator.trim_calls == calls


def test_a_failing_allocator_ends_trimming_without_raising() -> None:
    class Broken(FakeAllocator):
        def trim(self) -> None:
            self.trim_calls += 1
            raise OSError("boom")

    allocator = Broken(free=None)
    trimmer = MallocTrimmer(allocator, interval_s=0.02).start()
    wait_until(lambda: allocator.trim_calls >= 1, 10, "the first trim")
    wait_until(lambda: trimmer._thread is None or not trimmer._thread.is_alive(), 10, "the thread to end")
    trimmer.stop()
    assert allocator.trim_calls == 1


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval"):
        MallocTrimmer(FakeAllocator(free=0), interval_s=0)


def test_process_trimmer_is_off_with_interval_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(malloc_trim, "_process_trimmer", None)
    monkeypatch.setattr(malloc_trim, "_process_tuned", True)  # this test process keeps its malloc settings
    assert start_process_trimmer({malloc_trim.INTERVAL_ENV: "0"}) is None
    assert malloc_trim._process_trimmer is None


@pytest.mark.parametrize(("interval", "expected_s"), [("45000", 45.0), ("soon", None)])
def test_process_trimmer_is_one_per_process_and_reads_the_interval(monkeypatch: pytest.MonkeyPatch,
                                                                   interval: str, expected_s: float | None) -> None:
    """A bad interval falls back to the default (None here) rather than failing the process."""
    if GlibcAllocator.load() is None:
        pytest.skip("not glibc: no malloc_trim")
    monkeypatch.setattr(malloc_trim, "_process_trimmer", None)
    monkeypatch.setattr(malloc_trim, "_process_tuned", True)  # this test process keeps its malloc settings
    first = start_process_trimmer({malloc_trim.INTERVAL_ENV: interval})
    try:
        assert first is not None
        assert first.interval_s == (malloc_trim.DEFAULT_INTERVAL_S if expected_s is None else expected_s)
        assert start_process_trimmer({}) is first
    finally:
        if first is not None:
            first.stop()


_ARENA_SCENARIO = """
import ctypes, json, threading
from pathlib import Path
from connect_runtime.cli.malloc_trim import GlibcAllocator, MallocTrimmer

MIB = 1024 * 1024


def rss_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status")


allocator = GlibcAllocator.load()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
kept = []


def churn():
    # Like a fetch queue that filled and drained on a librdkafka thread: 64 MiB of 4 KB blocks, all
    # freed but the last one, which pins the top of the arena's heap (glibc's own trimming only shrinks
    # a heap from its top).
    blocks = []
    for _ in range(16384):
        block = libc.malloc(4000)
        assert block
        ctypes.memset(block, 1, 4000)
        blocks.append(block)
    for block in blocks[:-1]:
        libc.free(block)
    kept.append(blocks[-1])


trimmer = MallocTrimmer(allocator, interval_s=60)
trimmer.maybe_trim()
before = rss_mib()
thread = threading.Thread(target=churn)
thread.start()
thread.join()
retained = rss_mib() - before
free = allocator.free_bytes()
trimmed = trimmer.maybe_trim()
after = rss_mib() - before
print(json.dumps({"retained": retained, "free": free, "trimmed": trimmed, "after": after}))
"""


def test_freed_memory_of_a_thread_arena_leaves_the_process_only_with_the_trimmer() -> None:
    """Run in a fresh interpreter: in the test process, arenas that earlier tests' threads left with free
    memory would take the churn without growing RSS, and the result would depend on test order."""
    if GlibcAllocator.load() is None or not Path("/proc/self/status").exists():
        pytest.skip("needs glibc and /proc")
    out = subprocess.run([sys.executable, "-c", _ARENA_SCENARIO], capture_output=True, text=True, timeout=120,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    retained, after = result["retained"], result["after"]
    assert retained > 40, f"expected the freed 64 MiB to stay resident, RSS grew {retained:.0f} MiB"
    assert result["free"] is None or result["free"] > 40 * MIB
    assert result["trimmed"] is True
    assert after < retained - 40, f"RSS after trim still {after:.0f} MiB above the start"


class RecordingTunable:
    def __init__(self, accepted: bool = True) -> None:
        self.calls: list[tuple[int, int]] = []
        self.accepted = accepted

    def set_option(self, param: int, value: int) -> bool:
        self.calls.append((param, value))
        return self.accepted


def test_tuning_sets_two_arenas_and_leaves_the_mmap_threshold_to_glibc() -> None:
    tunable = RecordingTunable()
    applied = tune_allocator(tunable, {})
    assert tunable.calls == [(M_ARENA_MAX, DEFAULT_ARENA_MAX)]
    assert applied == {"arena_max": 2}


def test_tuning_leaves_the_users_malloc_environment_alone() -> None:
    tunable = RecordingTunable()
    assert tune_allocator(tunable, {"MALLOC_ARENA_MAX": "4"}) == {}
    assert tunable.calls == []


def test_tuning_can_be_turned_off_and_reports_only_accepted_settings() -> None:
    tunable = RecordingTunable()
    assert tune_allocator(tunable, {malloc_trim.TUNE_ENV: "0"}) == {}
    assert tunable.calls == []
    assert tune_allocator(RecordingTunable(accepted=False), {}) == {}


def test_the_process_is_tuned_once_even_with_trimming_off(monkeypatch: pytest.MonkeyPatch) -> None:
    tunable = RecordingTunable()
    monkeypatch.setattr(malloc_trim, "_process_trimmer", None)
    monkeypatch.setattr(malloc_trim, "_process_tuned", False)
    monkeypatch.setattr(GlibcAllocator, "load", classmethod(lambda cls: tunable))
    assert start_process_trimmer({malloc_trim.INTERVAL_ENV: "0"}) is None
    assert start_process_trimmer({malloc_trim.INTERVAL_ENV: "0"}) is None
    assert tunable.calls == [(M_ARENA_MAX, DEFAULT_ARENA_MAX)]


def test_glibc_accepts_the_settings() -> None:
    if GlibcAllocator.load() is None:
        pytest.skip("not glibc")
    # in a child process: the settings would change how this test process allocates
    code = ("from connect_runtime.cli.malloc_trim import GlibcAllocator, tune_allocator; "
            "print(sorted(tune_allocator(GlibcAllocator.load(), {})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "['arena_max']"
