"""Steady load generator: produce records to a topic at a fixed rate for a fixed time (its own process).

Records are spread round-robin over the partitions; each carries the producer's CreateTime, which the
latency benchmark compares with the arrival time on the target, so the generator's own batching
(``--linger-ms``, 20 by default: see ``LINGER_MS`` for why not less on Tansu) is part of the end-to-end
figure, not of the replicator's.

Usage::

    python bench/load.py BOOTSTRAP TOPIC PARTITIONS RATE SECONDS [--value-bytes 100] [--linger-ms 20]

Prints one line at the end: ``produced N records in S s, F failed; requested R/s, produce calls at P/s,
acknowledged at A/s, at most M ms behind schedule``. Each record's CreateTime is its ``produce`` call,
so a generator behind schedule hides its lag from the latency figures: P below R, or M beyond a few
tens of ms, means the generator did not sustain the rate. A below R means broker A did not (records
waited in the producer's queue, which the latency figures do show). Only failed deliveries call back
into Python: a callback per record cost as much CPU as the produce call, on cores the brokers need.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from confluent_kafka import Producer

#: The generator's batching. Tansu's cost follows the number of batches it stores, not records: with
#: ``linger.ms=5`` one broker and one consumer at the end (fetch.wait.max.ms=10) fell behind at 1,000
#: records/s (broker CPU 0.6 -> 0.9 core in 25 s, latency p50 13 ms -> 1.7 s) and at 3,000/s (40 ms ->
#: 4.5 s), while ``linger.ms=50`` held 3,000/s flat (p50 33 ms, broker 0.1-0.2 core) and ``linger.ms=20``
#: held 44,399/s (p50 20-57 ms, broker 0.2-0.35 core); 2026-11-23, load average ~12 (/tmp script in the
#: bench/results.md section of that day). 20 ms keeps the source side sustained at 10% of the max rate.
LINGER_MS = 20


def run(bootstrap: str, topic: str, partitions: int, rate: float, seconds: float, value_bytes: int,
        linger_ms: int = LINGER_MS) -> int:
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        failed.append(str(err))

    # Delivery reports for failures only: a Python callback per record would cost the generator as much
    # as the produce call itself at tens of thousands of records/s, on the cores the brokers need.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "acks": "all",
                         "queue.buffering.max.messages": 1_000_000, "delivery.report.only.error": True,
                         "on_delivery": delivered})
    value = os.urandom(value_bytes)
    produce = producer.produce
    total = int(seconds * rate)
    began = time.monotonic()
    sent = 0
    behind_max_s = 0.0
    while sent < total:
        elapsed = time.monotonic() - began
        due = min(int(elapsed * rate) + 1, total)
        # How late the oldest record of this step is against its schedule: its CreateTime is taken now.
        behind_max_s = max(behind_max_s, elapsed - sent / rate)
        while sent < due:
            try:
                produce(topic, value, None, sent % partitions)
            except BufferError:
                producer.poll(0.01)
                continue
            sent += 1
        producer.poll(0)
        time.sleep(max(0.0, min(0.001, (sent + 1) / rate - (time.monotonic() - began))))
    produced_s = time.monotonic() - began
    producer.flush(60)
    done_s = time.monotonic() - began
    print(f"produced {sent} records in {done_s:.1f} s, {len(failed)} failed; requested {rate:.0f}/s, "
          f"produce calls at {sent / produced_s:.0f}/s, acknowledged at {sent / done_s:.0f}/s, "
          f"at most {behind_max_s * 1000:.0f} ms behind schedule", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("partitions", type=int)
    parser.add_argument("rate", type=float, help="records per second")
    parser.add_argument("seconds", type=float)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--linger-ms", type=int, default=LINGER_MS)
    args = parser.parse_args(argv)
    return run(args.bootstrap, args.topic, args.partitions, args.rate, args.seconds, args.value_bytes,
               args.linger_ms)


if __name__ == "__main__":
    sys.exit(main())
