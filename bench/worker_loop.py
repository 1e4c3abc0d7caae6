"""Micro-benchmark of the source-task hot path: records/s through WorkerSourceTask into a real broker.

Two tasks are measured, each from the first poll until the target acknowledged every record:

* ``prebuilt``: the task hands out ready-made SourceRecords, so the figure is the runtime's own cost
  (submit tracking, produce, delivery report, commit_record, offset commit) plus librdkafka and broker;
* ``prebuilt-commit-record``: the same, with ``commit_record`` overridden (as MirrorSourceTask does),
  so the runtime also builds a RecordMetadata per acknowledged record;
* ``sequence``: the test SequenceSourceTask, which also builds a JSON value per record.

Usage::

    python bench/worker_loop.py [--records 500000] [--value-bytes 100] [--runs 3] [--bootstrap host:port]

Without ``--bootstrap`` an embedded broker (mirror.local.broker.LocalBroker, Tansu) is started and
stopped. One JSON line per run goes to stdout; the median per task goes last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Mapping

from confluent_kafka.admin import AdminClient, NewTopic

from connect_runtime.api.records import RecordMetadata, SourceRecord
from connect_runtime.api.task import SourceTask
from connect_runtime.testing.harness import run_source_task
from connect_runtime.testing.sequence_source import SequenceSourceTask


class PrebuiltTask(SourceTask):
    """Returns batches of prebuilt records with increasing source offsets, up to ``max.records``."""

    def start(self, config: Mapping[str, str]) -> None:
        self._total = int(config["max.records"])
        self._batch = int(config.get("batch.size", "1000"))
        value = b"x" * int(config.get("value.bytes", "100"))
        topic = config["topic"]
        partition = {"task": 0}
        self._records = [SourceRecord(topic=topic, value=value, key=b"0", source_partition=partition,
                                      source_offset={"seq": i}) for i in range(self._total)]
        self._next = 0

    def poll(self) -> list[SourceRecord] | None:
        if self._next >= self._total:
            time.sleep(0.05)
            return None
        batch = self._records[self._next:self._next + self._batch]
        self._next += len(batch)
        return batch

    def stop(self) -> None:
        pass


class PrebuiltCommitRecordTask(PrebuiltTask):
    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        pass


TASKS: dict[str, type[SourceTask]] = {
    "prebuilt": PrebuiltTask,
    "prebuilt-commit-record": PrebuiltCommitRecordTask,
    "sequence": SequenceSourceTask,
}


def create_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(timeout=30)


def run_once(kind: str, bootstrap: str, records: int, value_bytes: int) -> dict[str, object]:
    topic = f"bench-worker-loop-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    task = TASKS[kind]
    config = {"topic": topic, "max.records": str(records), "batch.size": "1000",
              "value.bytes": str(value_bytes)}
    with run_source_task(task, config, bootstrap_servers=bootstrap, connector=f"bench-{kind}",
                         offset_flush_interval_ms=1000, wait_running_s=None) as run:
        # PrebuiltTask builds its records in start(): time from the first polled record on.
        while run.records_polled() == 0:
            time.sleep(0.001)
        began = time.perf_counter()
        while run.records_written() < records:
            if run.state() == "FAILED":
                raise SystemExit(f"task failed:\n{run.trace()}")
            time.sleep(0.002)
        elapsed = time.perf_counter() - began
        run.commit_now()
        committed = run.committed({"task": 0})
    if committed != {"seq": records - 1}:
        raise SystemExit(f"unexpected committed offset {committed}")
    return {"task": kind, "records": records, "seconds": round(elapsed, 3),
            "records_per_s": round(records / elapsed)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bootstrap", help="use this cluster instead of an embedded broker")
    args = parser.parse_args(argv)

    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from mirror.local.broker import LocalBroker

        broker = LocalBroker(name="bench").start()
        bootstrap = broker.bootstrap_servers
    try:
        for kind in TASKS:
            rates = []
            for _ in range(args.runs):
                result = run_once(kind, bootstrap, args.records, args.value_bytes)
                rates.append(result["records_per_s"])
                print(json.dumps(result), flush=True)
            print(json.dumps({"task": kind, "median_records_per_s": statistics.median(rates)}), flush=True)
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
