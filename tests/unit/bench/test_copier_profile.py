"""bench/copier_profile.py: perf's shares of the two copiers' measured CPU per record, side by side."""

from __future__ import annotations

from bench import copier_profile, perf_top


def profile(*samples: tuple[int, str, str, str]) -> perf_top.Profile:
    built = perf_top.Profile()
    for count, thread, library, symbol in samples:
        built.add(count, thread, library, symbol)
    return built


def test_perf_shares_split_the_measured_cpu_with_the_largest_difference_first() -> None:
    """A copier's row is its share of samples times the CPU per record its clock measured: perf's counts
    themselves are not time (it regulates its period), its shares are."""
    native = profile((200, "native_copier", "librdkafka.so.1", "rd_kafka_producev"),
                     (200, "rdk:broker1", "libc.so.6", "_int_free"))
    ours = profile((100, "python", "librdkafka.so.1", "rd_kafka_producev"),
                   (100, "python", "cimpl.cpython-311-x86_64-linux-gnu.so", "Message_new0"),
                   (100, "rdk:broker2", "libc.so.6", "_int_free"),
                   (100, "rdk:broker1", "libc.so.6", "_int_free"))
    cpu = {"native": 0.8, "mm2-1": 1.2}
    libraries = copier_profile.side_by_side({"native": native, "mm2-1": ours}, cpu, "libraries", 10).splitlines()
    assert libraries[2] == "| cimpl.cpython-311-x86_64-linux-gnu.so | 0.000 | 0.300 | +0.300 |"
    assert "| libc.so.6 | 0.400 | 0.600 | +0.200 |" in libraries
    assert "| librdkafka.so.1 | 0.400 | 0.300 | -0.100 |" in libraries
    assert libraries[-1] == "| all (the process clock) | 0.800 | 1.200 | +0.400 |"
    threads = copier_profile.side_by_side({"native": native, "mm2-1": ours}, cpu, "threads", 10).splitlines()
    assert "| rdk:broker* | 0.400 | 0.600 | +0.200 |" in threads
    symbols = copier_profile.side_by_side({"native": native, "mm2-1": ours}, cpu, "symbols", 1).splitlines()
    assert symbols[2] == "| `Message_new0` (cimpl.cpython-311-x86_64-linux-gnu.so) | 0.000 | 0.300 | +0.300 |"


def test_the_measured_cpu_is_each_copiers_median_of_its_size() -> None:
    rows = [{"mode": "native", "size": 100, "cpu_us_per_record": {"median": 0.8, "min": 0.7, "max": 0.9}},
            {"mode": "mm2-1", "size": 100, "cpu_us_per_record": {"median": 1.2, "min": 1.1, "max": 1.3}},
            {"mode": "mm2-1", "size": 1000, "cpu_us_per_record": {"median": 2.2, "min": 2.1, "max": 2.3}}]
    assert copier_profile.measured_cpu(rows, 100) == {"native": 0.8, "mm2-1": 1.2}


def test_against_java_the_largest_difference_either_way_leads_and_the_columns_name_it() -> None:
    """Set beside a copier that spends more, the rows where ours saves most come first: a table ordered by
    ours minus the other copier would bury them at the bottom, past ``--top``."""
    java = profile((300, "C2 CompilerThre", "libjvm.so", "PhaseIdealLoop::build_loop_tree"),
                   (100, "task-thread-Mir", "perf-4242.map", "void org.apache.kafka.Sensor.record(double, long)"),
                   (100, "kafka-producer-", "libc.so.6", "__memmove_avx_unaligned_erms"))
    ours = profile((150, "python", "libpython3.11.so.1.0", "_PyEval_EvalFrameDefault"),
                   (100, "rdk:broker1", "libc.so.6", "__memmove_avx_unaligned_erms"))
    cpu = {"java-mm2-1-tuned": 2.5, "mm2-1": 1.0}
    libraries = copier_profile.side_by_side({"java-mm2-1-tuned": java, "mm2-1": ours}, cpu, "libraries", 2,
                                            "java-mm2-1-tuned").splitlines()
    assert libraries[0] == ("| library | Java MM2 tuned, CPU us/record | ours, CPU us/record "
                            "| ours minus Java MM2 tuned |")
    assert libraries[2] == "| libjvm.so | 1.500 | 0.000 | -1.500 |"
    assert libraries[3] == "| libpython3.11.so.1.0 | 0.000 | 0.600 | +0.600 |"
    assert libraries[-1] == "| all (the process clock) | 2.500 | 1.000 | -1.500 |"
    threads = copier_profile.side_by_side({"java-mm2-1-tuned": java, "mm2-1": ours}, cpu, "threads", 10,
                                          "java-mm2-1-tuned").splitlines()
    assert "| C2 CompilerThre | 1.500 | 0.000 | -1.500 |" in threads
    jit = copier_profile.side_by_side({"java-mm2-1-tuned": java, "mm2-1": ours}, cpu, "libraries", 10,
                                      "java-mm2-1-tuned").splitlines()
    assert "| [JIT] | 0.500 | 0.000 | -0.500 |" in jit
    symbols = copier_profile.side_by_side({"java-mm2-1-tuned": java, "mm2-1": ours}, cpu, "symbols", 10,
                                          "java-mm2-1-tuned")
    assert "| `org.apache.kafka.Sensor.record()` ([JIT]) | 0.500 | 0.000 | -0.500 |" in symbols.splitlines()


def test_java_needs_kafka_brokers() -> None:
    try:
        copier_profile.main(["--against", "java-mm2-1-tuned", "--broker", "tansu"])
    except SystemExit as exc:
        assert "needs --broker kafka" in str(exc)
    else:
        raise AssertionError("--against java-mm2-1-tuned on Tansu did not stop")
