"""Shared pieces of the replication benchmarks: brokers, topics, pre-loading, exact end offsets, processes.

Everything here is measurement plumbing, not product code. Two rules it follows because the test broker
is Tansu (docs/tansu.md):

* ListOffsets "latest" is wrong on Tansu when a batch holds more than one record: it answers the
  base offset of the newest batch + 1. :class:`EndOffsets` therefore uses it only as a *lower bound* and
  reads the exact high watermark from one fetch starting one record below it
  (:func:`connect_runtime.clients.log_reader.end_offsets`), which transfers only the tail of each
  partition instead of the whole topic.
* Admin metadata lookups auto-create topics unless ``allow.auto.create.topics=false``.
"""

from __future__ import annotations

import base64
import os
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]
from confluent_kafka.cimpl import NewTopic

from connect_runtime.clients.log_reader import end_offsets, ignore_error

BENCH_DIR = Path(__file__).resolve().parent
MB = 1_000_000  # MB/s figures count payload bytes (key + value), 10^6 bytes, as docs/tansu.md

#: The consumer tuning of docs/tansu.md (librdkafka 2.16): without queued.min.messages raised and
#: fetch.queue.backoff.ms lowered, a consumer pauses ~1 s whenever 100k messages are queued.
FAST_CONSUMER_QUEUE: dict[str, Any] = {"queued.min.messages": 1000000, "fetch.queue.backoff.ms": 10}
#: The producer tuning of docs/tansu.md.
FAST_PRODUCER: dict[str, Any] = {
    "linger.ms": 20, "batch.size": 1000000, "batch.num.messages": 100000, "acks": "all",
}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- machine ------------------------------------------------------------------------------------------
def machine_facts() -> dict[str, str]:
    """What the figures depend on: cores, CPU model, memory, Python and client versions."""
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal"))
        memory = f"{mem_kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = "?"
    return {
        "cores": str(os.cpu_count()), "cpu": cpu, "memory": memory,
        "python": platform.python_version(), "os": f"{platform.system()} {platform.release()}",
        "confluent-kafka": str(confluent_kafka.__version__), "librdkafka": confluent_kafka.libversion()[0],
        "load average at start": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }


# -- brokers and topics -------------------------------------------------------------------------------
@contextmanager
def local_brokers(names: tuple[str, ...] = ("bench-a", "bench-b")) -> Iterator[list[str]]:
    """Fresh brokers, stopped on exit; yields their bootstrap strings. Embedded Tansu (in-memory), or
    single-node Apache Kafka clusters after ``--broker kafka`` (bench/kafka_brokers.py)."""
    from bench import kafka_brokers
    from mirror.local.broker import LocalBroker

    if kafka_brokers.current() == "kafka":
        with kafka_brokers.kafka_brokers(names) as bootstraps:
            yield bootstraps
        return
    brokers: list[Any] = []
    try:
        for name in names:
            brokers.append(LocalBroker(name=name).start())
        yield [b.bootstrap_servers for b in brokers]
    finally:
        for broker in brokers:
            broker.stop()


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False})


def create_topic(bootstrap: str, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    client = admin(bootstrap)  # keep a reference: a destroyed client fails its futures
    new = NewTopic(name, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
    client.create_topics([new])[name].result(timeout=30)
    from bench import kafka_brokers

    if kafka_brokers.current() == "kafka":
        _wait_for_leaders(client, name, partitions)


def delete_topics(bootstrap: str, names: list[str]) -> None:
    """Delete ``names`` (best effort: a run's topics on a target that outlives the run)."""
    client = admin(bootstrap)
    for name, future in client.delete_topics(names, operation_timeout=30).items():
        try:
            future.result(timeout=60)
        except Exception as exc:  # the figures stand; only disk space is at stake
            print(f"could not delete {name}: {exc}", file=sys.stderr)


def delete_topics_and_wait(bootstrap: str, names: list[str], timeout_s: float = 60.0) -> None:
    """Delete those of ``names`` that exist and wait until the cluster no longer lists them."""
    client = admin(bootstrap)
    present = [name for name in names if name in client.list_topics(timeout=30).topics]
    if not present:
        return
    delete_topics(bootstrap, present)
    deadline = time.monotonic() + timeout_s
    while set(present) & set(client.list_topics(timeout=30).topics):
        if time.monotonic() > deadline:
            print(f"topics {present} still listed {timeout_s:.0f}s after their deletion", file=sys.stderr)
            return
        time.sleep(0.2)


def _wait_for_leaders(client: AdminClient, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
    """Apache Kafka answers ListOffsets of a topic just created with NOT_LEADER_FOR_PARTITION until its
    leaders are elected: wait for an answer from every partition, so the benchmarks' readers can start."""
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    request = {TopicPartition(topic, p): latest for p in range(partitions)}
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = client.list_offsets(request, request_timeout=10)
            for tp in request:
                result[tp].result(timeout=15)
            return
        except confluent_kafka.KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def preload(bootstrap: str, topic: str, records: int, value_bytes: int, partitions: int,
            compression: str = "none") -> float:
    """Write ``records`` records of ``value_bytes`` (no key) round-robin over the partitions; seconds taken.

    Uncompressed, every record has the same random value. With a ``compression`` (the producer's
    ``compression.type``), each record has a value of its own (:func:`distinct_values`): with one value
    repeated the codec would squeeze a batch to almost nothing, which no real topic does.
    """
    producer = Producer({"bootstrap.servers": bootstrap, **FAST_PRODUCER, "compression.type": compression,
                         "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000})
    values = distinct_values(value_bytes) if compression != "none" else None
    value = os.urandom(value_bytes)
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    began = time.monotonic()
    produce = producer.produce
    for i in range(records):
        while True:
            try:
                produce(topic, value=value if values is None else values(i), partition=i % partitions,
                        on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(300) or failed:
        raise SystemExit(f"pre-load of {topic} failed: {failed[:3]}")
    return time.monotonic() - began


def distinct_values(value_bytes: int, pool_bytes: int = 64 << 20) -> Callable[[int], bytes]:
    """Record ``i``'s value for a compressed topic: a JSON-like text with a sequence number, a key-like
    field and random base64 payload, cut to ``value_bytes``; no two records of a copy alike.

    The payload is a slice of a 64 MiB random base64 text at an offset of its own per record, so a codec
    finds the field names and the base64 alphabet but no repeats within its window (zstd's and lz4's are
    far smaller than the text).
    """
    text = base64.b64encode(os.urandom(pool_bytes * 3 // 4))
    span = len(text) - value_bytes

    def value(i: int) -> bytes:
        head = b'{"seq":%d,"key":"user-%d","payload":"' % (i, i % 9973)
        start = (i * 7919 * value_bytes) % span
        return (head + text[start:start + value_bytes])[:value_bytes - 2] + b'"}'

    return value


class EndOffsets:
    """Exact end offsets (high watermarks) of a topic's partitions, cheaply, on Tansu and Kafka alike."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self._admin = admin(bootstrap)
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": unique("bench-end-offsets"),
            "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 10,
            "allow.auto.create.topics": False, "auto.offset.reset": "earliest",
        })

    def lower_bounds(self) -> list[int]:
        """ListOffsets latest per partition: exact on Kafka, a lower bound on Tansu."""
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        request = {TopicPartition(self.topic, p): latest for p in range(self.partitions)}
        result = self._admin.list_offsets(request, request_timeout=10)
        return [max(0, result[tp].result(timeout=15).offset) for tp in request]

    def any_written(self) -> bool:
        # ListOffsets on a topic that does not exist yet waits for its whole request timeout: look first.
        topic = self._admin.list_topics(self.topic, timeout=5).topics.get(self.topic)
        if topic is None or topic.error is not None or len(topic.partitions) < self.partitions:
            return False
        try:
            return sum(self.lower_bounds()) > 0
        except Exception:  # just created; a fresh client, since this one keeps the error
            self._admin = admin(self.bootstrap)
            return False

    def exact(self, timeout_s: float = 15.0) -> list[int]:
        """The fetch high watermark of every partition (reads each partition's tail only)."""
        lows = self.lower_bounds()
        ends = [0] * self.partitions
        wanted = {p for p in range(self.partitions) if lows[p] > 0}
        if not wanted:
            return ends
        found = end_offsets(self._consumer, {(self.topic, p): lows[p] - 1 for p in sorted(wanted)}, timeout_s,
                            on_error=ignore_error)
        late = sorted(wanted - {p for _, p in found})
        if late:
            raise TimeoutError(f"no end of partition(s) {late} of {self.topic} within {timeout_s}s")
        for (_, p), end in found.items():
            ends[p] = end
        self._consumer.unassign()
        return ends

    def total(self) -> int:
        return sum(self.exact())

    def close(self) -> None:
        self._consumer.close()


class CommittedRecords:
    """How many records of a topic a ``read_committed`` consumer can read: the committed count.

    For exactly-once runs the high watermark is the wrong end: it counts records of transactions still
    open (a read_committed reader cannot see them yet, and an abort would drop them) and one commit
    marker per partition and transaction. This reader consumes the topic from the beginning with
    ``isolation.level=read_committed`` and counts data records only, so a copy is done when the count
    reaches the total. Same interface as :class:`EndOffsets` for :func:`wait_for_records`. The reading
    costs this process CPU (every record is fetched once more), not the copier's.
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self._admin = admin(bootstrap)
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": unique("bench-committed"),
            "enable.auto.commit": False, "isolation.level": "read_committed", "fetch.wait.max.ms": 10,
            "allow.auto.create.topics": False, "auto.offset.reset": "earliest", **FAST_CONSUMER_QUEUE,
        })
        self._counts = [0] * partitions
        self._assigned = False

    def _drain(self, budget_s: float = 0.5) -> None:
        if not self._assigned:
            topic = self._admin.list_topics(self.topic, timeout=5).topics.get(self.topic)
            if topic is None or topic.error is not None or len(topic.partitions) < self.partitions:
                return
            self._consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
            self._assigned = True
        until = time.monotonic() + budget_s
        while time.monotonic() < until:
            batch = self._consumer.consume(100_000, 0.01)
            if not batch:
                return
            for message in batch:
                if message.error() is None:
                    self._counts[message.partition() or 0] += 1

    def any_written(self) -> bool:
        self._drain()
        return sum(self._counts) > 0

    def lower_bounds(self) -> list[int]:
        self._drain()
        return list(self._counts)

    def total(self) -> int:
        self._drain()
        return sum(self._counts)

    def close(self) -> None:
        self._consumer.close()


@dataclass
class Completion:
    """When the records appeared on the target: first batch seen, all seen, and the count."""

    first_at: float
    done_at: float
    records: int

    @property
    def seconds(self) -> float:
        return self.done_at - self.first_at


def wait_for_records(ends: EndOffsets | CommittedRecords, expected: int, timeout_s: float, *,
                     alive: Callable[[], bool], on_first: Callable[[], None] | None = None, interval_s: float = 0.05,
                     stall_s: float = 60.0, samples: list[tuple[float, int]] | None = None) -> Completion:
    """Poll the target until ``expected`` records are there; times the first and the last appearance.

    The start is the first time ListOffsets shows a record (so process start-up, group joins and topic
    creation are not part of the throughput); the end is the first exact count reaching ``expected``.
    ``samples`` collects (wall-clock time, records on the target, a lower bound) at every poll.
    """
    deadline = time.monotonic() + timeout_s
    while not ends.any_written():
        if not alive():
            raise SystemExit("the replicating process exited before writing anything")
        if time.monotonic() > deadline:
            raise SystemExit(f"nothing reached {ends.topic} within {timeout_s}s")
        time.sleep(0.01)
    first = time.monotonic()
    if on_first is not None:
        on_first()
    last_progress, last_lows = first, -1
    while True:
        lows = sum(ends.lower_bounds())
        if samples is not None:
            samples.append((time.time(), lows))
        if lows != last_lows:
            last_progress, last_lows = time.monotonic(), lows
        elif time.monotonic() - last_progress > stall_s:
            raise SystemExit(f"stalled: ~{lows} of {expected} records on {ends.topic}, none for {stall_s:.0f}s")
        if lows >= expected - ends.partitions * 200_000 or lows >= expected:
            total = ends.total()
            if total >= expected:
                if samples is not None:
                    samples.append((time.time(), total))
                return Completion(first, time.monotonic(), total)
        if not alive():
            raise SystemExit(f"the replicating process exited with {lows} records on the target")
        if time.monotonic() > deadline:
            raise SystemExit(f"only ~{lows} of {expected} records reached {ends.topic} within {timeout_s}s")
        time.sleep(interval_s)


# -- processes ----------------------------------------------------------------------------------------
def rss_kb(pid: int) -> int:
    """Resident set size of a process (kB), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process used so far (its children excluded); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def python_child(args: list[str], log_path: Path, code: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``python <args>`` with its output in ``log_path``.

    ``code``: a directory holding another version of the packages (e.g. ``git archive`` of an older
    commit); it goes first on PYTHONPATH, ahead of the editable install, so before/after figures of a
    change come from the same brokers and the same run.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    log = log_path.open("wb")
    try:
        # ``python -m`` puts the working directory first on sys.path, ahead of PYTHONPATH: run in ``code``
        # so that a checkout as working directory cannot shadow it (the paths in ``args`` are absolute).
        return subprocess.Popen([sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=None if code is None else str(code))
    finally:
        log.close()


def stop_child(process: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    """SIGTERM, then SIGKILL if it does not exit in time."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def fmt_rate(records: int, seconds: float, value_bytes: int) -> tuple[float, float]:
    """(records/s, MB/s of payload)."""
    rate = records / seconds if seconds > 0 else 0.0
    return rate, rate * value_bytes / MB
