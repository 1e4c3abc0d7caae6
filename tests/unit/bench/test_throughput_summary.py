"""bench/throughput.py's summary (medians, spreads, ratios paired per round) and bench/pipe.py's settings."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench import pipe, thread_cpu
from bench.throughput import Result, run_order, summarize, table, thread_wait_table
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.task.worker_source_task import task_producer_config
from mirror.source.task import copier_consumer_config


def result(mode: str, round_: int, rate: float, cpu_s: float = 1.0) -> Result:
    return Result(mode, 100, 1000, seconds=1000 / rate, records_per_s=rate, mb_per_s=rate / 10_000,
                  cpu_s=cpu_s, round=round_)


def test_ratio_is_paired_per_round_then_the_median() -> None:
    results = [result("pipe", 0, 100.0), result("mm2-1", 0, 90.0, 2.0),
               result("pipe", 1, 200.0), result("mm2-1", 1, 100.0, 3.0),
               result("pipe", 2, 50.0), result("mm2-1", 2, 40.0, 4.0)]
    rows = {row["mode"]: row for row in summarize(results)}
    assert rows["mm2-1"]["ratio"] == {"median": 0.8, "min": 0.5, "max": 0.9}
    assert rows["mm2-1"]["records_per_s"] == {"median": 90.0, "min": 40.0, "max": 100.0}
    assert rows["mm2-1"]["cpu_us_per_record"] == {"median": 3000.0, "min": 2000.0, "max": 4000.0}
    # the headline comes first after the pipe, spreads beside every median
    text = table(list(rows.values()))
    assert text.splitlines()[2].startswith("| (a) raw pipe")
    assert "as shipped" in text.splitlines()[3] and "0.80x [0.50-0.90]" in text


def test_the_brokers_cpu_and_their_jit_share_are_medians_per_record_beside_each_row() -> None:
    results = [result("pipe", 0, 100.0), result("mm2-1", 0, 90.0), result("mm2-1", 1, 90.0), result("mm2-1", 2, 90.0)]
    for run, (brokers, jit) in zip(results[1:], [(3.0, 1.0), (5.0, 2.5), (4.0, 0.5)], strict=True):
        run.broker_cpu_s, run.broker_jit_s = brokers / 1000, jit / 1000  # seconds: us per record of 1,000
    rows = {row["mode"]: row for row in summarize(results)}
    assert rows["mm2-1"]["broker_cpu_us_per_record"] == {"median": 4.0, "min": 3.0, "max": 5.0}
    assert rows["mm2-1"]["broker_jit_us_per_record"] == 1.0
    lines = table(list(rows.values())).splitlines()
    assert "brokers' CPU us/record (JIT compilers')" in lines[0]
    assert "| 4.00 [3.00-5.00] (1.00) |" in lines[3]
    assert "| - |" in lines[2]  # not measured (Tansu, or the pipe's row here)


def test_rounds_start_one_mode_further_down() -> None:
    modes = ["pipe", "mm2-1", "mm2-1-datapath"]
    assert [run_order(modes, index) for index in range(4)] == [
        ["pipe", "mm2-1", "mm2-1-datapath"], ["mm2-1", "mm2-1-datapath", "pipe"],
        ["mm2-1-datapath", "pipe", "mm2-1"], ["pipe", "mm2-1", "mm2-1-datapath"]]


def test_pipe_uses_the_task_clients_settings_and_reports_only_errors() -> None:
    producer = pipe.producer_config("127.0.0.1:9", print)
    task = task_producer_config({"bootstrap.servers": "127.0.0.1:9"}, ConnectorTaskId("bench-pipe", 0))
    assert {k: v for k, v in producer.items() if k not in ("delivery.report.only.error", "on_delivery")} == task
    assert producer["delivery.report.only.error"] is True
    consumer = pipe.consumer_config("127.0.0.1:9")
    task_consumer = copier_consumer_config({"bootstrap.servers": "127.0.0.1:9", "client.id": "bench-pipe"},
                                           "bench-pipe")
    assert {k: consumer[k] for k in task_consumer} == task_consumer


def test_thread_cpu_names_the_threads_that_spent_it() -> None:
    spent_enough, release = threading.Event(), threading.Event()

    def spin() -> None:  # 50 ms of its own CPU, then it stays alive until the snapshot was taken
        while time.thread_time() < 0.05:
            sum(range(1000))
        spent_enough.set()
        release.wait(30)

    before = thread_cpu.snapshot(os.getpid())
    worker = threading.Thread(target=spin, name="spinner")
    worker.start()
    try:
        assert spent_enough.wait(60)
        after = thread_cpu.snapshot(os.getpid())
    finally:
        release.set()
        worker.join()
    assert worker.native_id is not None
    spent = thread_cpu.by_thread(before, after, {worker.native_id: "spinner-0a1b2c3d"})
    assert spent["spinner-*"] >= 0.04  # clock ticks of 10 ms; the unique suffix folds


def test_the_native_ratio_is_paired_per_round_and_each_compression_is_a_group_of_its_own() -> None:
    results = [result("native", 0, 200.0), result("pipe", 0, 100.0), result("mm2-1", 0, 180.0),
               result("native", 1, 100.0), result("pipe", 1, 100.0), result("mm2-1", 1, 95.0)]
    lz4 = [result("native", 0, 50.0), result("mm2-1", 0, 40.0)]
    for run in lz4:
        run.compression = "lz4"
    rows = summarize(results + lz4)
    by_group = {(row["mode"], row["compression"]): row for row in rows}
    assert by_group[("mm2-1", "none")]["native_ratio"] == {"median": 0.925, "min": 0.9, "max": 0.95}
    assert by_group[("mm2-1", "lz4")]["native_ratio"] == {"median": 0.8, "min": 0.8, "max": 0.8}
    assert by_group[("mm2-1", "lz4")]["ratio"] is None  # no pipe ran on the lz4 topic: nothing to pair with
    lines = table(rows).splitlines()
    assert "ratio to (n), paired" in lines[0] and lines[2].startswith("| (n) native copier")
    assert any(line.startswith("| (b) mm2 tasks.max=1 as shipped") and "| 100 B, lz4 source |" in line
               and "| 0.80x |" in line for line in lines)


def test_a_warm_row_counts_only_what_it_timed_and_its_jit_apart() -> None:
    warm = result("java-mm2-1-tuned", 0, 100.0, cpu_s=2.0)
    warm.records, warm.warm_records, warm.jit_cpu_s = 500, 500, 0.5
    rows = {row["mode"]: row for row in summarize([result("pipe", 0, 100.0), warm])}
    assert rows["java-mm2-1-tuned"]["cpu_us_per_record"]["median"] == 4000.0  # 2 s over the 500 timed
    assert rows["java-mm2-1-tuned"]["jit_us_per_record"]["median"] == 1000.0
    line = table(list(rows.values())).splitlines()[3]
    assert line.startswith("| (j) Java MM2 tasks.max=1 tuned") and "| 1, timed after 500 records |" in line
    assert "| 4000.00 | 1000.00 |" in line


@pytest.mark.skipif(not Path("/proc/self/schedstat").exists(), reason="a kernel without schedstats")
def test_run_queue_snapshot_sees_two_spinners_on_one_cpu_wait_for_it() -> None:
    """Two processes that never sleep, pinned to one CPU: each is ready to run all the time and runs about
    half of it, so each waits for the CPU for a good share of the interval."""
    spinners = [subprocess.Popen([sys.executable, "-c", "import os; os.sched_setaffinity(0, {0})\nwhile True: pass"])
                for _ in range(2)]
    try:
        time.sleep(0.5)  # both pinned and spinning
        before = {p.pid: thread_cpu.run_queue_snapshot(p.pid) for p in spinners}
        time.sleep(1.0)
        waited = {p.pid: thread_cpu.by_thread(before[p.pid], thread_cpu.run_queue_snapshot(p.pid), {})
                  for p in spinners}
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    for pid, by_name in waited.items():
        assert by_name.get("python", 0.0) > 0.2, (pid, by_name)  # about 0.5 s of the 1 s


def test_the_busiest_threads_shares_of_the_copy_time_on_a_cpu_and_waiting_for_one() -> None:
    results = [result("mm2-1", round_, 1000.0) for round_ in range(3)]  # each copy took 1 s
    for run, (task, waited) in zip(results, [(0.6, 0.3), (0.7, 0.2), (0.65, 0.4)], strict=True):
        run.threads = {"task-MirrorSourceConnector-0": task, "rdk:broker*": 0.3, "(ended threads)": 0.9}
        run.thread_waits = {"task-MirrorSourceConnector-0": waited, "rdk:broker*": 0.1}
    rows = summarize(results)
    shares = rows[0]["thread_shares"]
    assert list(shares) == ["task-MirrorSourceConnector-0", "rdk:broker*"]  # by CPU; "(ended threads)" is no thread
    assert shares["task-MirrorSourceConnector-0"] == pytest.approx([0.65, 0.3])
    assert shares["rdk:broker*"] == pytest.approx([0.3, 0.1])
    text = thread_wait_table(rows).splitlines()
    assert text[2].endswith("| 100 B | task-MirrorSourceConnector-0 65% / 30%, rdk:broker* 30% / 10% |")
    results[0].thread_waits = None  # a run that did not measure the waits is left out of both medians
    assert summarize(results)[0]["thread_shares"]["task-MirrorSourceConnector-0"] == pytest.approx([0.675, 0.3])
