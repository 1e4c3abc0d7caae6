"""Steady load generator: produce records to a topic at a fixed rate for a fixed time (its own process).

Records are spread round-robin over the partitions; each carries the producer's CreateTime, which the
latency benchmark compares with the arrival time on the target, so the generator's own batching
(``linger.ms=5``) is part of the figure. With ``linger.ms=1`` Tansu fell behind at 7,500 records/s while
a consumer fetched from it every 10 ms (the generator needed 7.3 s for 6 s of records, latency grew
without bound), so 5 ms is the smallest linger at which the source side keeps up on this machine.

Usage::

    python bench/load.py BOOTSTRAP TOPIC PARTITIONS RATE SECONDS [--value-bytes 100]

Prints one line at the end: ``produced N records in S s``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from confluent_kafka import Producer


def run(bootstrap: str, topic: str, partitions: int, rate: float, seconds: float, value_bytes: int) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(value_bytes)
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    began = time.monotonic()
    sent = 0
    tick = 0.001
    while True:
        elapsed = time.monotonic() - began
        if elapsed >= seconds:
            break
        due = min(int(elapsed * rate) + 1, int(seconds * rate))
        while sent < due:
            try:
                producer.produce(topic, value=value, partition=sent % partitions, on_delivery=delivered)
            except BufferError:
                producer.poll(0.01)
                continue
            sent += 1
        producer.poll(0)
        time.sleep(tick)
    producer.flush(60)
    print(f"produced {sent} records in {time.monotonic() - began:.1f} s, {len(failed)} failed", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("partitions", type=int)
    parser.add_argument("rate", type=float, help="records per second")
    parser.add_argument("seconds", type=float)
    parser.add_argument("--value-bytes", type=int, default=100)
    args = parser.parse_args(argv)
    return run(args.bootstrap, args.topic, args.partitions, args.rate, args.seconds, args.value_bytes)


if __name__ == "__main__":
    sys.exit(main())
