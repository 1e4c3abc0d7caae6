"""bench/perf_top.py: a perf report summed per thread pool, library and symbol."""

from __future__ import annotations

from bench import perf_top

REPORT = "\n".join([
    "# Samples: 1K of event 'cpu-clock:pppH'",
    "#",
    "600\tnative_copier\t/usr/lib/libc.so.6\t[.] __memmove_avx_unaligned_erms",
    "250\trdk:broker1\t/venv/confluent_kafka.libs/librdkafka-1.so\t[.] rd_kafka_msgset_writer_write_msg",
    "100\trdk:broker2\t/venv/confluent_kafka.libs/librdkafka-1.so\t[.] rd_kafka_msgset_writer_write_msg",
    "40\tdata-plane-kafk\t/tmp/perf-4242.map\t[.] Lkafka/log/UnifiedLog;::append",
    "10\tdata-plane-kafk\t[JIT] tid 4242\t[.] Interpreter",
    "",
])


def test_samples_sum_per_thread_pool_library_and_symbol() -> None:
    profile = perf_top.parse(REPORT)
    assert profile.samples == 1000
    assert profile.threads == {"native_copier": 600, "rdk:broker*": 350, "data-plane-kafk": 50}
    assert profile.libraries == {"libc.so.6": 600, "librdkafka-1.so": 350, "[JIT]": 50}
    assert profile.symbols[("librdkafka-1.so", "rd_kafka_msgset_writer_write_msg")] == 350
    text = perf_top.markdown(profile, top=2)
    assert "| rdk:broker* | 35.0% |" in text
    assert "| `rd_kafka_msgset_writer_write_msg` | librdkafka-1.so | 35.0% | rdk:broker* 35.0% |" in text
    assert "UnifiedLog" not in text  # beyond the top 2 symbols


def test_a_jvm_methods_signature_is_cut_to_its_class_and_name_and_overloads_count_together() -> None:
    profile = perf_top.Profile()
    profile.add(3, "task-thread-Mir", "/tmp/perf-4242.map", "void org.apache.kafka.Sensor.record(double, long)")
    profile.add(2, "task-thread-Mir", "/tmp/perf-4242.map", "void org.apache.kafka.Sensor.record()")
    profile.add(1, "task-thread-Mir", "/tmp/perf-4242.map", "Interpreter")
    profile.add(4, "C2 CompilerThre", "/usr/lib/jvm/lib/server/libjvm.so", "Node::Node(unsigned int)")
    assert profile.symbols[("[JIT]", "org.apache.kafka.Sensor.record()")] == 5
    assert profile.symbols[("[JIT]", "Interpreter")] == 1  # not a method: as perf named it
    assert profile.symbols[("libjvm.so", "Node::Node(unsigned int)")] == 4  # C++ outside the perf map: untouched
