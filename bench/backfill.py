"""Backfill (Spark) vs. streaming replication (MirrorSourceTask) of the same backlog, in one run.

An 8-partition source topic is filled with ``--records`` records of ``--value-bytes`` bytes; then the
same backlog, from offset 0, is copied twice to the target under two source aliases (so to two remote
topics):

* ``streaming``: MirrorSourceConnector's task configs (``--tasks``) run through the production
  WorkerSourceTask (``connect_runtime.testing.harness.run_source_task``), timed from the tasks' start
  until the target acknowledged every record;
* ``backfill``: ``mirror.backfill.command.run_backfill`` on ``--master`` (default ``local[2]``), timed end
  to end (plan, claim, Spark start, copy, handover), and its copy phase alone (the Spark jobs).

Usage::

    python bench/backfill.py [--records 5000000] [--value-bytes 200] [--partitions 8] [--tasks 2]
                             [--master local[2]] [--quick] [--source host:port --target host:port]

Without ``--source``/``--target`` two embedded brokers (Tansu, in memory) are started and stopped.
The last line is JSON with both rates and the ratio.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from prometheus_client import CollectorRegistry

from connect_runtime.api.errors import RetriableError
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.api.records import SourceMap
from connect_runtime.testing.harness import run_source_task
from mirror.backfill.command import BackfillOptions, run_backfill
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask


@contextmanager
def brokers(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    if args.source and args.target:
        yield args.source, args.target
        return
    from mirror.local.broker import LocalBroker

    with tempfile.TemporaryDirectory(prefix="bench-backfill") as tmp:
        a = LocalBroker(name="bench-a", log_dir=Path(tmp)).start()
        try:
            b = LocalBroker(name="bench-b", log_dir=Path(tmp)).start()
            try:
                yield a.bootstrap_servers, b.bootstrap_servers
            finally:
                b.stop()
        finally:
            a.stop()


def fill(bootstrap: str, topic: str, partitions: int, records: int, value_bytes: int) -> float:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "batch.num.messages": 100_000, "queue.buffering.max.messages": 2_000_000,
                         "queue.buffering.max.kbytes": 2_097_151})
    value = b"v" * value_bytes
    began = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, b"k%d" % i, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    return time.monotonic() - began


def connector_props(alias: str, source: str, target: str, topic: str) -> dict[str, str]:
    return {"name": "MirrorSourceConnector", "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "source.cluster.alias": alias, "target.cluster.alias": "bench-target",
            "source.cluster.bootstrap.servers": source, "target.cluster.bootstrap.servers": target,
            "enabled": "true", "topics": topic, "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1", "sync.topic.acls.enabled": "false",
            "refresh.topics.enabled": "false", "sync.topic.configs.enabled": "false"}


class BenchConnectorContext:
    """The connector runs without a herder here: the task set is fixed, reconfiguration is not acted on."""

    def __init__(self) -> None:
        self.metrics_registry = CollectorRegistry()

    def request_task_reconfiguration(self) -> None:
        pass

    def raise_error(self, error: BaseException) -> None:
        logging.error("the connector failed: %s", error)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return _NoOffsets()


def ready_task_configs(connector: MirrorSourceConnector, tasks: int, timeout_s: float = 60.0) -> list[dict[str, str]]:
    """The task configs once the connector's start has loaded its topics (it answers RetriableError until
    then, and the runtime asks again)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return connector.task_configs(tasks)
        except RetriableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class _NoOffsets:
    def offset(self, partition: SourceMap) -> Mapping[str, Any] | None:
        return None

    def offsets(self, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
        return [(p, None) for p in partitions]


def run_streaming(source: str, target: str, topic: str, records: int, tasks: int) -> dict[str, Any]:
    connector = MirrorSourceConnector()
    connector.initialize(BenchConnectorContext())
    connector.start(connector_props(f"stream{uuid.uuid4().hex[:6]}", source, target, topic))
    try:
        configs = ready_task_configs(connector, tasks)
        with ExitStack() as stack:
            began = time.monotonic()
            runs = [stack.enter_context(run_source_task(MirrorSourceTask, config, bootstrap_servers=target,
                                                        connector="MirrorSourceConnector", task_number=i))
                    for i, config in enumerate(configs)]
            while sum(r.records_written() for r in runs) < records:
                if any(r.state() == "FAILED" for r in runs):
                    raise RuntimeError("a streaming task failed")
                time.sleep(0.05)
            seconds = time.monotonic() - began
    finally:
        connector.stop()
    return {"records": records, "seconds": round(seconds, 2), "rate": round(records / seconds), "tasks": len(configs)}


def run_bulk(source: str, target: str, topic: str, records: int, master: str, batch: int) -> dict[str, Any]:
    alias = f"bulk{uuid.uuid4().hex[:6]}"
    options = BackfillOptions(alias, "bench-target", master=master, batch_records=batch, progress=False)
    worker = {"offset.storage.topic": f"mm2-offsets.{alias}.internal", "offset.storage.replication.factor": "1"}
    began = time.monotonic()
    summary = run_backfill(connector_props(alias, source, target, topic), worker, options)
    seconds = time.monotonic() - began
    assert summary.copied == records, f"backfill copied {summary.copied} of {records}"
    copy_seconds = max(r.seconds for r in summary.results)
    first = min(r.started_at for r in summary.results)
    for r in sorted(summary.results, key=lambda r: r.started_at):
        logging.info("chunk %s-%d: +%.2fs for %.2fs on %s (%d records)", r.topic, r.partition, r.started_at - first,
                     r.seconds, r.worker, r.copied)
    return {"records": records, "seconds": round(seconds, 2), "rate": round(records / seconds),
            "job_seconds": round(summary.copy_seconds, 2), "job_rate": round(records / summary.copy_seconds),
            "slowest_task_seconds": round(copy_seconds, 2), "tasks": len(summary.results), "master": master}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--value-bytes", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=2, help="streaming tasks (tasks.max)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--batch-records", type=int, default=50_000)
    parser.add_argument("--quick", action="store_true", help="400,000 records (CI)")
    parser.add_argument("-v", action="store_true", help="log the backfill's steps")
    parser.add_argument("--source")
    parser.add_argument("--target")
    args = parser.parse_args(argv)
    records = 400_000 if args.quick else args.records
    logging.basicConfig(level=logging.INFO if args.v else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with brokers(args) as (source, target):
        topic = f"backlog-{uuid.uuid4().hex[:8]}"
        fill_s = fill(source, topic, args.partitions, records, args.value_bytes)
        print(f"backlog: {records:,} records x {args.value_bytes} B in {args.partitions} partitions "
              f"(written in {fill_s:.1f}s)", file=sys.stderr)
        bulk = run_bulk(source, target, topic, records, args.master, args.batch_records)
        print(f"backfill  ({args.master}): {bulk['rate']:,} records/s end to end ({bulk['seconds']}s); "
              f"copy phase {bulk['job_rate']:,} records/s ({bulk['job_seconds']}s)", file=sys.stderr)
        stream = run_streaming(source, target, topic, records, args.tasks)
        print(f"streaming ({stream['tasks']} tasks): {stream['rate']:,} records/s ({stream['seconds']}s)",
              file=sys.stderr)
    ratio = bulk["rate"] / stream["rate"]
    print(f"ratio backfill / streaming: {ratio:.2f}x end to end, {bulk['job_rate'] / stream['rate']:.2f}x copy phase",
          file=sys.stderr)
    print(json.dumps({"records": records, "value_bytes": args.value_bytes, "partitions": args.partitions,
                      "backfill": bulk, "streaming": stream, "ratio": round(ratio, 2),
                      "ratio_job": round(bulk["job_rate"] / stream["rate"], 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
