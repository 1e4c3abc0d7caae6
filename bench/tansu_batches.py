"""Why the latency floor on the test broker moves: Tansu's cost follows the batches it stores, not records.

One fresh Tansu broker (in-memory, as the benchmarks use), one producer at ``RATE`` records/s over 8
partitions with ``linger.ms=LINGER``, one consumer at the end (``fetch.wait.max.ms=10``, as bench/latency.py's
consumers). Every 5 s: the broker's CPU (cores, from /proc) and the consumer's latency (CreateTime ->
arrival) p50/p99. With a small linger each record is nearly its own batch; if the broker's CPU and the
latency climb while the rate stays the same, its cost per fetch grows with what is stored, and every
steady-rate figure on Tansu depends on how long the run was and how the producers batch.

Usage::

    python bench/tansu_batches.py RATE LINGER_MS [SECONDS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.common import create_topic, local_brokers

PARTITIONS = 8


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(rate: float, linger_ms: int, seconds: float) -> None:
    with local_brokers(("batches-a",)) as (bootstrap,):
        pid = int(subprocess.check_output(["pgrep", "-n", "-f", "cluster-batches-a"]).split()[0])
        create_topic(bootstrap, "t", PARTITIONS)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "fetch.wait.max.ms": 10,
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition("t", p, 0) for p in range(PARTITIONS)])
        latencies: list[tuple[float, float]] = []
        stop = threading.Event()

        def consume() -> None:
            while not stop.is_set():
                first = consumer.poll(0.05)
                now = time.time() * 1000
                for m in [first, *consumer.consume(10000, 0)] if first is not None else []:
                    if m.error() is None:
                        latencies.append((now, now - m.timestamp()[1]))

        thread = threading.Thread(target=consume)
        thread.start()
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "acks": "all",
                             "queue.buffering.max.messages": 1_000_000})
        value = os.urandom(100)
        began = time.monotonic()
        sent, total, mark = 0, int(rate * seconds), 5.0
        cpu_before, at = _cpu_s(pid), time.monotonic()
        while sent < total:
            elapsed = time.monotonic() - began
            due = min(int(elapsed * rate) + 1, total)
            while sent < due:
                producer.produce("t", value, None, sent % PARTITIONS)
                sent += 1
            producer.poll(0)
            time.sleep(0.001)
            if elapsed >= mark:
                cpu = _cpu_s(pid)
                window = sorted(lat for arrived, lat in latencies if arrived >= (time.time() - 5) * 1000)
                p50 = window[len(window) // 2] if window else float("nan")
                p99 = window[int(len(window) * 0.99)] if window else float("nan")
                print(f"t={mark:3.0f} s  broker CPU {(cpu - cpu_before) / (time.monotonic() - at):.2f} cores  "
                      f"latency p50 {p50:.0f} ms  p99 {p99:.0f} ms  ({len(window)} records)", flush=True)
                cpu_before, at, mark = cpu, time.monotonic(), mark + 5
        producer.flush(60)
        stop.set()
        thread.join()
        consumer.close()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run(float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 30.0)
