"""The per-record cost of our replication in Python alone: MirrorSourceTask in WorkerSourceTask, fake clients.

Why: on real brokers one run varies by 2x with the machine's load (bench/README.md), so a hot-path
change of 10-20% cannot be seen there in one run. Here the clients are replaced by fakes that cost
(almost) nothing: the consumer hands out prebuilt ``confluent_kafka.Message`` s, the producer keeps each
record's delivery callback and calls it on the next ``poll`` with a ``Message`` that carries the
target offset, exactly the objects librdkafka gives Python. Everything else is the production code:
``WorkerSourceTask`` (submit, produce, delivery reports, commit of the acknowledged prefix, metrics),
``MirrorSourceTask`` (convert, MM2 metrics, offset syncs through ``OffsetSyncProducer``).

The figure is process CPU per record on the task thread, from the first poll until the last record was
acknowledged and its offset committed, median of ``--runs``. ``--compare-code DIR`` runs the same in a
child process on the packages in DIR (``git archive HEAD~1 connect_runtime mirror | tar -x -C DIR``),
interleaved with the current code, which is how a hot-path change is measured before and after.

Usage::

    python bench/hot_path.py [--records 300000] [--partitions 8] [--value-bytes 100] [--runs 5]
                             [--path bulk|per-record] [--transforms] [--compare-code DIR] [--profile out.prof]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOPIC = "bench-hot"

# Minimal fakes of its own, not tests/support/fakes.py: those record every call (a lock, a dataclass and
# a Message per record), which this benchmark would measure as the runtime's per-record cost.


class FakeConsumer:
    """Hands out prebuilt messages, round-robin over partitions, ``n`` at a time."""

    def __init__(self, messages: list[Any]) -> None:
        self._messages = messages
        self._next = 0

    def assign(self, partitions: Any) -> None:
        pass

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        """The task fetches leaders before assigning (clients.factory.learn_leaders): nothing to learn here."""

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        start = self._next
        if start >= len(self._messages):
            time.sleep(0.01)
            return []
        self._next = start + num_messages
        return self._messages[start:self._next]

    def poll(self, timeout: float = -1) -> Any:
        taken = self.consume(1, timeout)
        return taken[0] if taken else None

    def position(self, partitions: Any) -> list[Any]:
        return []

    def get_watermark_offsets(self, partition: Any, timeout: float = -1, cached: bool = False) -> tuple[int, int]:
        return -1001, -1001  # nothing cached: the loss check skips the partition

    def assignment(self) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class FakeProducer:
    """Acknowledges every record on the next ``poll``/``flush``, with per-partition target offsets."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        from confluent_kafka import Message

        self._message = Message
        self._pending: list[tuple[Callable[[Any, Any], None] | None, str, int, int | None]] = []
        self._next_offset: dict[tuple[str, int], int] = {}

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                on_delivery: Callable[[Any, Any], None] | None = None, callback: Any = None, timestamp: int = 0,
                headers: Any = None) -> None:
        self._pending.append((on_delivery, topic, partition, timestamp))

    def poll(self, timeout: float = 0) -> int:
        pending, self._pending = self._pending, []
        message = self._message
        offsets = self._next_offset
        for callback, topic, partition, timestamp in pending:
            offset = offsets.get((topic, partition), 0)
            offsets[(topic, partition)] = offset + 1
            if callback is not None:
                callback(None, message(topic=topic, partition=partition, offset=offset,
                                       timestamp=(1, timestamp or 0)))
        if not pending and timeout:
            time.sleep(min(timeout, 0.001))
        return len(pending)

    def flush(self, timeout: float = -1) -> int:
        self.poll(0)
        return 0

    def purge(self, *args: Any) -> None:
        self._pending.clear()

    def __len__(self) -> int:
        return len(self._pending)


def fake_producer(config: Mapping[str, Any]) -> Any:
    return FakeProducer(config)


def build_messages(records: int, partitions: int, value_bytes: int, chunk: int = 1) -> list[Any]:
    """``records`` messages, ``chunk`` consecutive ones per partition in turn (librdkafka hands out a fetched
    partition's messages together: chunk 1 is the worst case of the bulk path, one run per record)."""
    from confluent_kafka import Message

    value = b"x" * value_bytes
    now_ms = int(time.time() * 1000)
    out = []
    for i in range(records):
        block, within = divmod(i, chunk)
        partition = block % partitions
        offset = (block // partitions) * chunk + within
        out.append(Message(topic=TOPIC, partition=partition, offset=offset, key=None, value=value,
                           timestamp=(1, now_ms), headers=None))
    return out


def task_config(partitions: int) -> dict[str, str]:
    return {
        "name": "MirrorSourceConnector",
        "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        "source.cluster.alias": "A",
        "target.cluster.alias": "B",
        "source.cluster.bootstrap.servers": "127.0.0.1:1",
        "target.cluster.bootstrap.servers": "127.0.0.1:1",
        "task.assigned.partitions": ",".join(f"{TOPIC}-{p}" for p in range(partitions)),
        "task.index": "0",
    }


def run_once(records: int, partitions: int, value_bytes: int, profile: str | None = None,
             chunk: int = 1, path: str = "bulk", transforms: bool = False) -> dict[str, Any]:
    """One run on whatever ``connect_runtime``/``mirror`` is importable (current code or --compare-code)."""
    from prometheus_client import CollectorRegistry

    from connect_runtime.lifecycle import ConnectorTaskId
    from connect_runtime.metrics import ConnectMetrics
    from connect_runtime.runtime.status import RecordingStatusListener
    from connect_runtime.runtime.task.worker_source_task import WorkerSourceTask
    from connect_runtime.storage.memory import MemoryOffsetStore
    from mirror.source.offset_sync_writer import OffsetSyncProducer
    from mirror.source.task import MirrorSourceTask

    messages = build_messages(records, partitions, value_bytes, chunk)

    def offset_syncs(topic: str, config: Mapping[str, Any], writer: Any) -> OffsetSyncProducer:
        return OffsetSyncProducer(topic, config, writer, producer_factory=fake_producer)

    def fake_consumer(_config: Mapping[str, Any]) -> Any:
        return FakeConsumer(messages)

    import inspect

    extra: dict[str, Any] = {}
    if "offset_map_factory" in inspect.signature(MirrorSourceTask).parameters:  # the exact offset map, if built
        from mirror.source.offset_map_writer import OffsetMapWriter

        extra["offset_map_factory"] = lambda topic, config: OffsetMapWriter(topic, config,
                                                                            producer_factory=fake_producer)
    task_class = MirrorSourceTask
    if path == "per-record":  # the path a task with transformations takes
        task_class = type("PerRecordMirrorSourceTask", (MirrorSourceTask,), {"bulk_ready": lambda self: False})
    task = task_class(consumer_factory=fake_consumer, offset_sync_factory=offset_syncs, **extra)
    if transforms:  # one InsertHeader on every record (current code only: older code has no transformations)
        from connect_runtime.api.transforms import build_chain

        extra_task = {"transforms": build_chain({"transforms": "h", "transforms.h.type": "InsertHeader",
                                                 "transforms.h.header": "via", "transforms.h.value.literal": "b"})}
    else:
        extra_task = {}
    store = MemoryOffsetStore()
    registry = CollectorRegistry()
    metrics = ConnectMetrics.create(registry)
    task_id = ConnectorTaskId("MirrorSourceConnector", 0)
    # --compare-code may run code whose WorkerSourceTask takes the two keywords instead of one SourceTaskSettings
    if "settings" in inspect.signature(WorkerSourceTask).parameters:
        from connect_runtime.runtime.task.source_task_settings import SourceTaskSettings

        settings: dict[str, Any] = {"settings": SourceTaskSettings("bench", offset_flush_interval_s=1.0)}
    else:
        settings = {"worker_id": "bench", "offset_flush_interval_ms": 1_000}
    worker_task = WorkerSourceTask(
        task_id, task, task_config(partitions), offset_store=store,
        producer_config={"bootstrap.servers": "127.0.0.1:1"}, status_listener=RecordingStatusListener(),
        metrics=metrics.for_task(task_id.connector, 0), producer_factory=fake_producer,
        metrics_registry=registry, **settings, **extra_task)
    profiler = None
    if profile:  # profile the task thread, where the per-record work runs
        import cProfile

        profiler = cProfile.Profile()
        run = worker_task._run
        worker_task._run = lambda: profiler.runcall(run)  # type: ignore[method-assign]
    last_message = messages[-1]
    last = {"cluster": "A", "partition": last_message.partition(), "topic": TOPIC}
    expected = {"offset": last_message.offset()}
    began_cpu = time.process_time()
    began = time.perf_counter()
    worker_task.start()
    try:
        while store.get(task_id.connector, last) != expected:
            if worker_task.failure is not None:
                raise SystemExit(f"task failed: {worker_task.failure!r}")
            worker_task.request_commit()
            time.sleep(0.005)
        elapsed = time.perf_counter() - began
        cpu = time.process_time() - began_cpu
    finally:
        worker_task.stop()
        worker_task.join(10)
        if profiler is not None:
            profiler.dump_stats(profile)  # type: ignore[arg-type]
    return {"records": records, "seconds": round(elapsed, 3), "cpu_s": round(cpu, 3),
            "us_per_record": round(cpu / records * 1e6, 3), "records_per_s": round(records / elapsed)}


def run_child(code_dir: str | None, args: argparse.Namespace) -> dict[str, Any]:
    """One run in a fresh process, on the current code or on the packages in ``code_dir``."""
    env = dict(os.environ)
    if code_dir:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [code_dir, env.get("PYTHONPATH")]))
        env["HOT_PATH_CODE"] = code_dir
    command = [sys.executable, __file__, "--child", "--records", str(args.records), "--partitions",
               str(args.partitions), "--value-bytes", str(args.value_bytes), "--chunk", str(args.chunk),
               "--path", args.path, *(["--transforms"] if args.transforms else [])]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True,
                         cwd=code_dir or None)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--path", choices=("bulk", "per-record"), default="bulk",
                        help="per-record: the task declines the bulk path (as with transformations set)")
    parser.add_argument("--transforms", action="store_true",
                        help="one InsertHeader transformation on every record (implies the per-record path)")
    parser.add_argument("--chunk", type=int, default=1,
                        help="consecutive messages of one partition (1: round-robin, the worst case for runs)")
    parser.add_argument("--compare-code", help="also run on the packages in this directory (before a change)")
    parser.add_argument("--profile", help="one in-process run under cProfile, stats written here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        code = os.environ.get("HOT_PATH_CODE")
        if code:  # the packages of DIR must win over the editable install
            sys.path.insert(0, code)
        print(json.dumps(run_once(args.records, args.partitions, args.value_bytes, chunk=args.chunk, path=args.path,
                                  transforms=args.transforms)), flush=True)
        return 0
    if args.profile:
        print(json.dumps(run_once(args.records, args.partitions, args.value_bytes, args.profile, args.chunk)))
        return 0
    variants = {"current": None}
    if args.compare_code:
        variants = {"before": args.compare_code, **variants}
    figures: dict[str, list[float]] = {name: [] for name in variants}
    for run in range(args.runs):
        for name, code in variants.items():
            result = run_child(code, args)
            figures[name].append(result["us_per_record"])
            print(json.dumps({"run": run + 1, "code": name, **result}), flush=True)
    print(f"\n{args.records:,} records x {args.value_bytes} B, {args.partitions} partitions, fake clients, "
          f"median of {args.runs} (process CPU per record, us):")
    base = statistics.median(figures["before"]) if "before" in figures else None
    print("\n| code | CPU per record (us), median | min-max | records/s of CPU | vs before |\n|---|---|---|---|---|")
    for name, values in figures.items():
        median = statistics.median(values)
        change = f"{median / base:.2f}x" if base and name != "before" else "-"
        print(f"| {name} | {median:.2f} | {min(values):.2f}-{max(values):.2f} | {1e6 / median:,.0f} | {change} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
