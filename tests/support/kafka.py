"""Small helpers for integration tests against real brokers.

Counting records uses ``enable.partition.eof`` (the fetch-response high watermark, through
:func:`connect_runtime.clients.log_reader.read_to_end`), never ListOffsets:
on Tansu ListOffsets "latest" is the base offset of the last batch + 1 (docs/tansu.md), while the
fetch high watermark is exact on Tansu and on Kafka alike.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connect_runtime.clients.log_reader import read_to_end

T = TypeVar("T")


def unique(prefix: str) -> str:
    """A name no other test uses: topics, groups, connector names."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(predicate: Callable[[], T], timeout_s: float = 30.0, message: str = "condition",
               interval_s: float = 0.2, retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Poll ``predicate`` until it returns something truthy; fail with ``message`` on timeout.

    An exception from ``predicate`` is a failure, raised at once with its own message (a note names
    what was awaited): retrying through it would hide a broken test or product behind a timeout. Where
    an exception is expected while the condition settles (a server still starting, a page being
    redrawn), name it in ``retry_on``; the last one is reported if the wait times out.
    """
    deadline = time.monotonic() + timeout_s
    last_exc: BaseException | None = None
    while True:
        try:
            result = predicate()
            if result:
                return result
        except retry_on as exc:
            last_exc = exc
        except Exception as exc:
            exc.add_note(f"raised by the predicate while waiting for {message}")
            raise
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_exc!r})" if last_exc else ""
            raise AssertionError(f"timed out after {timeout_s}s waiting for {message}{detail}")
        time.sleep(interval_s)


def admin(bootstrap: str) -> AdminClient:
    # allow.auto.create.topics=false: on Tansu a metadata lookup would otherwise create the topic.
    return AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False})


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    client = admin(bootstrap)  # keep a reference: a destroyed client fails its pending futures
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})])
    futures[name].result(timeout=15)
    wait_until(lambda: name in topics(bootstrap), 15, f"topic {name} visible")
    return name


def topics(bootstrap: str) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=10).topics)


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes | None]] | int,
            partition: int | None = None, **extra: Any) -> int:
    """Produce records (key, value) or N generated records ``key-i``/``value-i``; returns the count."""
    if isinstance(records, int):
        records = [(f"key-{i}".encode(), f"value-{i}".encode()) for i in range(records)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "allow.auto.create.topics": False})
    errors: list[KafkaError] = []
    count = 0
    for key, value in records:
        kwargs: dict[str, Any] = dict(extra)
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                producer.produce(topic, value=value, key=key,
                                 on_delivery=lambda err, _msg: err and errors.append(err), **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} records not delivered"
    assert not errors, f"delivery errors: {errors[:3]}"
    return count


@dataclass
class Consumed:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None
    timestamp: int


def consume_all(bootstrap: str, topic: str, timeout_s: float = 30.0,
                expect: int | None = None, read_committed: bool = False) -> list[Consumed]:
    """Read a whole topic from the beginning up to its current end (per-partition EOF).

    With ``expect``, keep reading (past EOF) until at least that many records arrived or the timeout. Records of
    open and aborted transactions are read too unless ``read_committed`` (the end is then the last stable offset).
    """
    meta = admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    parts = sorted(meta.partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("test-reader"),
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    out: list[Consumed] = []

    def collect(records: list[Message]) -> None:
        out.extend(Consumed(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, msg.key(), msg.value(),
                            msg.headers(), msg.timestamp()[1]) for msg in records)

    def fail(err: KafkaError) -> None:
        raise AssertionError(f"consume error: {err}")

    positions = {(topic, p): OFFSET_BEGINNING for p in parts}
    deadline = time.monotonic() + timeout_s
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            reached = read_to_end(consumer, positions, collect, remaining, on_error=fail)
            if not reached.complete or expect is None or len(out) >= expect:
                break
            # expecting more: read on from where this read ended
            positions = {key: max(end, positions[key]) for key, end in reached.ends.items()}
            for record in out:
                key = (record.topic, record.partition)
                positions[key] = max(positions[key], record.offset + 1)
    finally:
        consumer.close()
    return out


#: Commit errors that only say the group's coordinator is not ready yet: the commit is tried again.
_COORDINATOR_MOVING = frozenset({KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
                                 KafkaError.NOT_COORDINATOR})


def commit_group_offsets(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for a group without joining it (manual assign + commit)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                asynchronous=False)
                return
            except KafkaException as exc:
                # e.g. COORDINATOR_LOAD_IN_PROGRESS: Kafka's coordinator for a new group's partition is
                # still loading (seen on a fresh Kafka 4.4 broker); librdkafka does not retry a sync commit,
                # nor does it always mark that error retriable (a loaded 2-core machine, Kafka 4.4)
                error = exc.args[0]
                if not (error.retriable() or error.code() in _COORDINATOR_MOVING) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()
