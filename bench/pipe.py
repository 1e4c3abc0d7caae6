"""The raw pipe baseline: one Python process copying a topic A -> B with confluent-kafka, as fast as it can.

This is the limit of a client-based replicator on this machine: the same client settings as a
MirrorSource task, and nothing a task does beyond the copy. A batched ``consume(n, timeout)`` on the
source, ``produce`` (positional arguments, the fastest call) of every message to the same partition of
the target (key, value, headers, timestamp kept), ``poll(0)`` per batch and a final ``flush()``.

* Producer: the task producer's settings (``PRODUCER_DEFAULTS`` of
  ``connect_runtime/runtime/task/worker_source_task.py``: acks=all, linger.ms, never time out, bounded queue;
  idempotent with ``enable.gapless.guarantee``, as ``task_producer_config`` builds it) plus
  ``delivery.report.only.error=true``: no Python call per record, only failures reach the error callback.
  The task needs a report per run of records to commit offsets; the pipe needs none, which is what makes
  it the limit.
* Consumer: the task's source consumer (``COPIER_CONSUMER_DEFAULTS`` of
  ``mirror/source/task.py`` over librdkafka's defaults, read_uncommitted), assigned, no group.

No offsets, no tracking, no metrics, and no delivery callback per record (a Python call per record the
replicator does not pay).

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

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.task.worker_source_task import task_producer_config
from mirror.source.task import copier_consumer_config


def producer_config(target: str, on_error: Any) -> dict[str, Any]:
    """The task producer's config (as the runtime builds it for task 0), reporting failures only."""
    config: dict[str, Any] = task_producer_config({"bootstrap.servers": target}, ConnectorTaskId("bench-pipe", 0))
    config.update({"delivery.report.only.error": True, "on_delivery": on_error})
    return config


def consumer_config(source: str) -> dict[str, Any]:
    """The task's source consumer config (group id only because librdkafka wants one; never joined)."""
    config = copier_consumer_config({"bootstrap.servers": source, "client.id": "bench-pipe"}, "bench-pipe")
    config.update({"enable.auto.commit": False, "auto.offset.reset": "earliest"})
    return config


def run(source: str, target: str, topic: str, target_topic: str, partitions: int, records: int,
        batch: int = 10000) -> int:
    errors: list[str] = []

    def failed(err: Any, _msg: Any) -> None:  # with delivery.report.only.error: failures only
        errors.append(str(err))

    consumer = Consumer(consumer_config(source))
    producer = Producer(producer_config(target, failed))
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
                    produce(target_topic, m.value(), m.key(), m.partition() or 0, None, None,
                            m.timestamp()[1], m.headers())
                    break
                except BufferError:
                    producer.poll(0.01)
            copied += 1
        producer.poll(0)
    left = producer.flush(300)
    consumer.close()
    if errors or left:
        print(f"pipe: {left} of {copied} not acknowledged, errors {errors[:3]}", file=sys.stderr)
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
