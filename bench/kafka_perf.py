"""The brokers' own ceilings on this machine: Kafka's producer and consumer performance tools.

``kafka-producer-perf-test`` and ``kafka-consumer-perf-test`` (``org.apache.kafka.tools.ProducerPerformance``
and ``ConsumerPerformance``, from the Kafka 4.4 jars the Kafka tier fetches: tests/support/apache_kafka.py)
run as their scripts start them (``-Xmx512M``, ``kafka-run-class.sh``'s G1 options), with our task
producer's and source consumer's settings as Java keys (bench/java_copier.py, ``tuned_settings``). Beside
the copiers they say how fast these brokers take records in and hand them out with no copier in between:

* ``kafka-producer-perf`` writes ``--records`` records of the row's size (no key) to a fresh 8-partition
  topic of B, created like the copiers' targets. It is timed as the copiers are: from the first record
  visible on B to the last (the tool's own figures, which count its start-up ramp, are in its log);
  CPU is the JVM's over the same interval, its JIT compilers' apart.
* ``kafka-consumer-perf`` reads the pre-loaded source topic of A, every record once, in a group of its
  own. Nothing lands anywhere, so its clock is the tool's own: ``fetch.nMsg.sec`` over ``fetch.time.ms``
  (from its first fetch to its last record, group join excluded); its CPU is the JVM's whole life, start-up
  included, so its CPU per record is an upper bound.

A tool's JVM exits when it is done: the benchmarks read its CPU from ``/proc`` before reaping it
(:class:`JvmTool`), and its threads' CPU from the last sample taken while it ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import thread_cpu
from bench.common import admin, cpu_seconds

MODES = ("kafka-producer-perf", "kafka-consumer-perf")
#: The tools' heap, as ``kafka-producer-perf-test.sh`` and ``kafka-consumer-perf-test.sh`` set it.
HEAP_MB = 512
PRODUCER = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER = "org.apache.kafka.tools.ConsumerPerformance"
#: ConsumerPerformance's result columns (its header line), the figures read from it.
CONSUMER_COLUMNS = ("fetch.time.ms", "fetch.nMsg.sec", "data.consumed.in.nMsg")


@dataclass
class JvmTool:
    """A tool's JVM: alive until it exits, its CPU readable after (it is reaped only by :meth:`reap`)."""

    proc: subprocess.Popen[bytes]
    log: Path
    #: Each of its threads as last seen while it ran (tid -> name, CPU seconds).
    threads: thread_cpu.Snapshot = field(default_factory=dict)

    def running(self) -> bool:
        """True while it runs; samples its threads. Never reaps it, so ``/proc`` keeps its CPU."""
        if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return False
        try:
            sample = thread_cpu.snapshot(self.proc.pid)
        except OSError:  # exited meanwhile
            return False
        # a thread that ends (the JVM's compiler threads come and go; at exit all end) keeps its last figure
        self.threads = {**self.threads, **sample}
        return True

    def alive(self) -> bool:
        """For the copy's wait: running, or exited cleanly (a producer done before the last check)."""
        if self.running():
            return True
        result = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return result is not None and result.si_code == os.CLD_EXITED and result.si_status == 0

    def wait_exit(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.running():
            if time.monotonic() > deadline:
                raise SystemExit(f"{self.log.name}: still running after {timeout_s:.0f}s")
            time.sleep(0.05)

    def cpu_s(self) -> float:
        """User+system CPU so far (after its exit: its whole life, until reaped)."""
        return cpu_seconds(self.proc.pid)

    def reap(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _start(main_class: str, args: list[str], workdir: Path, name: str) -> JvmTool:
    from tests.support.apache_kafka import SHIPPED_JVM_OPTIONS, java_command, write_log4j2

    log4j2 = write_log4j2(workdir / "perf-log4j2.properties")
    command = java_command(main_class, args, heap_mb=HEAP_MB, log4j2=log4j2, base_options=SHIPPED_JVM_OPTIONS)
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return JvmTool(proc, log)


def _properties(settings: dict[str, str]) -> list[str]:
    return ["--command-property", *(f"{key}={value}" for key, value in settings.items())]


def start_producer(workdir: Path, target: str, topic: str, records: int, value_bytes: int) -> JvmTool:
    """kafka-producer-perf-test: ``records`` records of ``value_bytes`` to ``topic`` on ``target``, unthrottled."""
    from bench.java_copier import tuned_settings

    args = ["--bootstrap-server", target, "--topic", topic, "--num-records", str(records),
            "--record-size", str(value_bytes), "--throughput", "-1",
            *_properties(tuned_settings()["producer"])]
    return _start(PRODUCER, args, workdir, f"producer-perf-{topic}")


def start_consumer(workdir: Path, source: str, topic: str, records: int, group: str) -> JvmTool:
    """kafka-consumer-perf-test: ``records`` records of ``topic`` on ``source``, from the start, in ``group``."""
    from bench.java_copier import tuned_settings

    args = ["--bootstrap-server", source, "--topic", topic, "--num-records", str(records),
            "--group", group, "--timeout", "60000",
            *_properties(tuned_settings()["consumer"])]
    return _start(CONSUMER, args, workdir, f"consumer-perf-{topic}")


def delete_group(bootstrap: str, group: str) -> None:
    """Remove the tool's group, so that a later run's checkpoint connector does not find it on A."""
    client = admin(bootstrap)  # keep a reference: a destroyed client fails its futures
    try:
        for future in client.delete_consumer_groups([group], request_timeout=30).values():
            future.result(timeout=60)
    except Exception as exc:  # the figures stand; a group left over only costs a later checkpoint task
        print(f"could not delete group {group}: {exc!r}", file=sys.stderr)


def consumer_figures(log_text: str) -> dict[str, float]:
    """ConsumerPerformance's result line, by its header's column names (``CONSUMER_COLUMNS``)."""
    lines = [line for line in log_text.splitlines() if line.count(",") >= 5]
    header = next((i for i, line in enumerate(lines) if "fetch.nMsg.sec" in line), None)
    if header is None or header + 1 >= len(lines):
        raise SystemExit(f"kafka-consumer-perf-test printed no result:\n{log_text[-2000:]}")
    names = [name.strip() for name in lines[header].split(",")]
    values = [value.strip() for value in lines[header + 1].split(",")]
    figures = dict(zip(names, values, strict=False))
    return {name: float(figures[name]) for name in CONSUMER_COLUMNS}
