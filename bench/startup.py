"""Start-up benchmark: seconds from a fresh process until the offset store is loaded and answers.

Java Connect users report ~2 minutes to read ~2M records of the offsets topic at start. This fills an
offsets topic with ``--records`` records in Connect's exact format (``["<connector>",{partition}]`` ->
``{"offset":n}``): ``--connectors`` connectors x ``--partitions`` source partitions each, written
round-robin so every partition is updated many times, with ~1% tombstones. Then, for each run, a *fresh
Python process* is started and timed until ``KafkaOffsetStore.start()`` returned and a lookup of a
known partition answered with the expected (latest) offset. The same is measured for a naive loader
that, like Java, decodes the JSON of every record while reading (KafkaBasedLog with a per-record
callback), so both figures come from the same machine, topic and broker.

Usage::

    python bench/startup.py [--records 1000000] [--connectors 100] [--partitions 1000] [--runs 3]
                            [--bootstrap host:port]

Without ``--bootstrap`` an embedded broker (mirror.local.broker.LocalBroker, Tansu, in-memory) is
started and stopped; it shares the machine's cores with the measured process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

CHILD_FLAG = "--child"


def key_of(connector: int, partition: int) -> bytes:
    return (f'["conn-{connector:03d}",{{"cluster":"src","partition":{partition % 100},'
            f'"topic":"topic-{partition // 100}"}}]').encode()


def fill(bootstrap: str, topic: str, records: int, connectors: int, partitions: int) -> dict[str, Any]:
    """Create the topic (25 partitions, compacted, as Connect) and write the records; returns the probe."""
    from confluent_kafka import Producer

    from connect_runtime.clients.admin import TopicAdmin

    TopicAdmin({"bootstrap.servers": bootstrap}).create_topic(topic, 25, 1, compacted=True)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "batch.num.messages": 100_000, "partitioner": "murmur2_random",
                         "queue.buffering.max.messages": 1_000_000})
    keys = connectors * partitions
    latest: dict[int, int | None] = {}
    began = time.monotonic()
    for i in range(records):
        slot = i % keys
        tombstone = i % 97 == 5
        value = None if tombstone else b'{"offset":%d}' % i
        latest[slot] = None if tombstone else i
        while True:
            try:
                producer.produce(topic, value=value, key=key_of(slot // partitions, slot % partitions))
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120):
        raise SystemExit("records not acknowledged")
    probe = next(s for s in range(keys - 1, -1, -1) if latest.get(s) is not None)
    return {"seconds": time.monotonic() - began, "probe_slot": probe, "expected": latest[probe]}


def child(args: argparse.Namespace) -> None:
    """Runs in the fresh process: load, look up, print one JSON line, exit."""
    imported = time.time()
    import json as json_

    from connect_runtime.storage.kafka_log import KafkaBasedLog, LogRecord
    from connect_runtime.storage.kafka_offset_store import KafkaOffsetStore
    from connect_runtime.storage.memory import partition_id

    base = {"bootstrap.servers": args.bootstrap}
    slot = args.probe_slot
    partition = {"cluster": "src", "partition": (slot % args.partitions) % 100,
                 "topic": f"topic-{(slot % args.partitions) // 100}"}
    connector = f"conn-{slot // args.partitions:03d}"
    began = time.time()
    if args.loader == "store":
        store = KafkaOffsetStore(args.topic, producer_config=base, consumer_config=base, admin_config=base,
                                 replication_factor=1)
        store.start(timeout_s=600)
        loaded = time.time()
        found = store.get(connector, partition)
        answered = time.time()
        store.stop()
    else:
        data: dict[str, dict[str, tuple[Any, Any]]] = {}

        def consumed(record: LogRecord) -> None:  # what Java does: deserialize every record
            if record.key is None:
                return
            name, part = json_.loads(record.key)
            entries = data.setdefault(name, {})
            if record.value is None:
                entries.pop(partition_id(part), None)
            else:
                entries[partition_id(part)] = (part, json_.loads(record.value))

        log = KafkaBasedLog(args.topic, producer_config=base, consumer_config=base, admin_config=base,
                            consumed=consumed, partitions=25, replication_factor=1)
        log.start(timeout_s=600)
        loaded = time.time()
        entry = data.get(connector, {}).get(partition_id(partition))
        found = entry[1] if entry else None
        answered = time.time()
        log.stop()
    print(json.dumps({"import_s": began - imported, "load_s": loaded - began, "lookup_s": answered - loaded,
                      "ready_at": answered, "found": found}), flush=True)


def measure(args: argparse.Namespace, loader: str, probe: dict[str, Any]) -> dict[str, Any]:
    cmd = [sys.executable, __file__, CHILD_FLAG, "--loader", loader, "--bootstrap", args.bootstrap,
           "--topic", args.topic, "--partitions", str(args.partitions), "--probe-slot",
           str(probe["probe_slot"])]
    spawned = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["total_s"] = result["ready_at"] - spawned  # fresh process start -> lookup answered
    if result["found"] != {"offset": probe["expected"]}:
        raise SystemExit(f"{loader}: lookup returned {result['found']}, expected offset {probe['expected']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--connectors", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000, help="source partitions per connector")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--loader", default="store", help=argparse.SUPPRESS)
    parser.add_argument("--probe-slot", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    broker = None
    if args.bootstrap is None:
        from mirror.local.broker import LocalBroker

        broker = LocalBroker(name="bench-startup").start()
        args.bootstrap = broker.bootstrap_servers
    args.topic = args.topic or f"bench-offsets-{uuid.uuid4().hex[:8]}"
    try:
        probe = fill(args.bootstrap, args.topic, args.records, args.connectors, args.partitions)
        distinct = min(args.records, args.connectors * args.partitions)
        print(f"wrote {args.records:,} records ({distinct:,} distinct keys, {args.connectors} connectors) to "
              f"{args.topic} in {probe['seconds']:.1f}s", flush=True)
        loaders = ["store"] + ([] if args.skip_naive else ["naive"])
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in loaders}
        for _ in range(args.runs):
            for name in loaders:
                results[name].append(measure(args, name, probe))
                print(json.dumps({"loader": name, **results[name][-1]}), flush=True)
    finally:
        if broker is not None:
            broker.stop()

    print()
    print(f"| loader ({args.records:,} records) | fresh process -> lookup (s), median [min-max] | import (s) "
          "| read to end (s) | first lookup (s) |")
    print("|---|---|---|---|---|")
    labels = {"store": "KafkaOffsetStore (raw bytes, lazy decode)", "naive": "naive: decode every record"}
    for name, runs in results.items():
        totals = [r["total_s"] for r in runs]
        print(f"| {labels[name]} | {statistics.median(totals):.2f} [{min(totals):.2f}-{max(totals):.2f}] "
              f"| {statistics.median(r['import_s'] for r in runs):.2f} "
              f"| {statistics.median(r['load_s'] for r in runs):.2f} "
              f"| {statistics.median(r['lookup_s'] for r in runs):.3f} |")


if __name__ == "__main__":
    main()
