"""The raw pipe baseline: one Python process copying a topic A -> B with confluent-kafka, as fast as it can.

This is the physical limit of a client-based replicator on this machine: a batched ``consume(n, timeout)``
on the source, ``produce(..., on_delivery=cb)`` (positional arguments, the fastest call) of every message
to the same partition of the target
(key, value, headers, timestamp kept), ``poll(0)`` per batch and a final ``flush()``. No offsets, no
tracking, no metrics. Settings are the best found in tansu.md §10 (acks=all, like the replicator).

Usage (normally started by bench/throughput.py)::

    python bench/pipe.py SOURCE TARGET TOPIC TARGET_TOPIC PARTITIONS RECORDS [--batch N]

It copies ``RECORDS`` records from offset 0 of partitions 0..PARTITIONS-1 and exits once all are acknowledged.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import FAST_CONSUMER, FAST_PRODUCER


def run(source: str, target: str, topic: str, target_topic: str, partitions: int, records: int,
        batch: int = 10000) -> int:
    consumer = Consumer({"bootstrap.servers": source, "group.id": "bench-pipe", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", **FAST_CONSUMER})
    producer = Producer({"bootstrap.servers": target, **FAST_PRODUCER, "enable.idempotence": True,
                         "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576})
    acked = 0
    errors: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        nonlocal acked
        if err is None:
            acked += 1
        else:
            errors.append(str(err))

    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    copied = 0
    produce = producer.produce
    while copied < records:
        for m in consumer.consume(batch, 1.0):
            if m.error() is not None:
                continue
            while True:
                try:
                    # positionally (topic, value, key, partition, on_delivery, callback, timestamp, headers):
                    # keyword arguments cost the client about twice the time of the call itself
                    produce(target_topic, m.value(), m.key(), m.partition() or 0, delivered, None,
                            m.timestamp()[1], m.headers())
                    break
                except BufferError:
                    producer.poll(0.01)
            copied += 1
        producer.poll(0)
    producer.flush(300)
    consumer.close()
    if errors or acked != copied:
        print(f"pipe: {acked} of {copied} acknowledged, errors {errors[:3]}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("source", "target", "topic", "target_topic"):
        parser.add_argument(name)
    parser.add_argument("partitions", type=int)
    parser.add_argument("records", type=int)
    parser.add_argument("--batch", type=int, default=10000)
    args = parser.parse_args(argv)
    began = time.monotonic()
    code = run(args.source, args.target, args.topic, args.target_topic, args.partitions, args.records, args.batch)
    print(f"pipe: {args.records} records in {time.monotonic() - began:.2f}s, cpu_s={time.process_time():.2f}",
          flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
