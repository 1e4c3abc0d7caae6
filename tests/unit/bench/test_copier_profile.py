"""bench/copier_profile.py: perf samples of the two copiers as CPU per record, side by side."""

from __future__ import annotations

from bench import copier_profile, perf_top
from bench.throughput import PERF_HZ


def profile(*samples: tuple[int, str, str, str]) -> perf_top.Profile:
    built = perf_top.Profile()
    for count, thread, library, symbol in samples:
        built.add(count, thread, library, symbol)
    return built


def test_samples_become_cpu_per_record_with_the_difference_largest_first() -> None:
    """``samples / perf's rate / records``: at 499 Hz, 499 samples over 1,000,000 records are 1 us/record."""
    native = profile((PERF_HZ, "native_copier", "librdkafka.so.1", "rd_kafka_producev"),
                     (PERF_HZ // 2, "rdk:broker1", "libc.so.6", "_int_free"))
    ours = profile((PERF_HZ, "python", "librdkafka.so.1", "rd_kafka_producev"),
                   (PERF_HZ, "python", "cimpl.cpython-311-x86_64-linux-gnu.so", "Message_new0"),
                   (PERF_HZ // 2, "rdk:broker2", "libc.so.6", "_int_free"))
    records = {"native": 1_000_000, "mm2-1": 1_000_000}
    libraries = copier_profile.side_by_side({"native": native, "mm2-1": ours}, records, "libraries", 10)
    lines = libraries.splitlines()
    assert lines[2] == "| cimpl.cpython-311-x86_64-linux-gnu.so | 0.000 | 1.000 | +1.000 |"
    assert "| librdkafka.so.1 | 1.000 | 1.000 | +0.000 |" in lines
    assert lines[-1] == "| all | 1.499 | 2.499 | |"
    threads = copier_profile.side_by_side({"native": native, "mm2-1": ours}, records, "threads", 10)
    assert "| rdk:broker* | 0.499 | 0.499 | +0.000 |" in threads.splitlines()
    symbols = copier_profile.side_by_side({"native": native, "mm2-1": ours}, records, "symbols", 1)
    assert symbols.splitlines()[2] == ("| `Message_new0` (cimpl.cpython-311-x86_64-linux-gnu.so) | 0.000 | 1.000 "
                                       "| +1.000 |")
