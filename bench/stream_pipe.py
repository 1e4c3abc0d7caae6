"""The raw streaming pipe: the latency baseline of the replicator, with the same client settings.

Copies ``TOPIC`` on SOURCE from its current end to ``TARGET_TOPIC`` on TARGET (same partition, key,
value, headers, timestamp) until it is stopped (SIGTERM/SIGINT), with what a MirrorSource task uses and
nothing else: a source consumer that waits ``fetch.wait.max.ms`` 10 ms (bench/latency.py sets the same
for the replicator on Tansu), ``poll`` then ``consume(n, 0)`` (returns as soon as a record is there), and
an idempotent ``acks=all`` producer lingering 10 ms (Connect's task producer defaults here). No offsets,
no tracking, no metrics: what is left of the replicator's latency above this is ours.

Usage (started by bench/latency.py)::

    python bench/stream_pipe.py SOURCE TARGET TOPIC TARGET_TOPIC START

``START``: where to begin on SOURCE, ``offset,offset,...`` for partitions 0, 1, ... (the end of each
when the bench starts measuring, so that the n-th record copied is the n-th the bench pairs).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from connect_runtime.runtime.task.worker_source_task import PRODUCER_DEFAULTS

#: The replicator's source consumer on Tansu in bench/latency.py (TANSU_FETCH_WAIT).
CONSUMER = {"fetch.wait.max.ms": 10, "fetch.min.bytes": 1, "queued.min.messages": 1000000,
            "fetch.queue.backoff.ms": 10, "enable.auto.commit": False, "enable.partition.eof": False}


def run(source: str, target: str, topic: str, target_topic: str, start: list[int]) -> int:
    consumer = Consumer({"bootstrap.servers": source, "group.id": "bench-stream-pipe", **CONSUMER})
    producer = Producer({"bootstrap.servers": target, **PRODUCER_DEFAULTS, "enable.idempotence": True,
                         "enable.sparse.connections": False})
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    consumer.assign([TopicPartition(topic, p, offset) for p, offset in enumerate(start)])
    produce = producer.produce
    copied = 0
    while not stopping:
        first = consumer.poll(0.1)
        if first is None:
            producer.poll(0)
            continue
        for m in [first, *consumer.consume(500, 0)]:
            if m.error() is not None:
                continue
            produce(target_topic, m.value(), m.key(), m.partition() or 0, None, None, m.timestamp()[1], m.headers())
            copied += 1
        producer.poll(0)
    producer.flush(30)
    consumer.close()
    print(f"stream pipe: copied {copied} records", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("source", "target", "topic", "target_topic"):
        parser.add_argument(name)
    parser.add_argument("start", help="start offsets on SOURCE, comma-separated, partition 0 first")
    args = parser.parse_args(argv)
    return run(args.source, args.target, args.topic, args.target_topic, [int(o) for o in args.start.split(",")])


if __name__ == "__main__":
    sys.exit(main())
