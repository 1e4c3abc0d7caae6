"""Fakes of confluent-kafka's Consumer, Producer and AdminClient, for tests that record what code asks of Kafka.

One set for every test: ``tests/unit/support/test_fakes_match_confluent_kafka.py`` checks that each fake
method exists on the real client and takes only parameters the real one takes, so a fake cannot accept a
call that would fail against librdkafka. That is why a fake has no test-only methods: what a test steers
or inspects is a data attribute (``script``, ``delivery``, ``calls``) or a module function
(:func:`factory_of`, :func:`calls_to`).

Messages and errors are the real ``confluent_kafka.Message`` and ``KafkaError`` (both can be built in
Python), so code under test sees exactly the objects librdkafka hands out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import ClusterMetadata, PartitionMetadata, TopicMetadata

Fake = TypeVar("Fake")
DeliveryCallback = Callable[[KafkaError | None, Message], None]
Answer = Any  # a result, a KafkaError code (int) or an exception to fail the future with


def message(topic: str = "t", partition: int = 0, offset: int = 0, key: bytes | None = None,
            value: bytes | None = None, headers: list[tuple[str, bytes | None]] | None = None,
            timestamp: tuple[int, int] = (TIMESTAMP_CREATE_TIME, 0), error: KafkaError | None = None) -> Message:
    """A real Message, as a consumer's poll or a delivery report returns it."""
    return Message(topic=topic, partition=partition, offset=offset, key=key, value=value, headers=headers,
                   timestamp=timestamp, error=error)


def event(code: int, topic: str = "t", partition: int = 0) -> Message:
    """A poll result that is an error or event, not a record (``_PARTITION_EOF``, ``_TRANSPORT``...)."""
    return Message(topic=topic, partition=partition, error=KafkaError(code))


def done(value: Any = None) -> Future[Any]:
    """A completed future, as the admin API returns per resource."""
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def failed(error: int | BaseException) -> Future[Any]:
    """A failed future: a KafkaError code becomes the KafkaException librdkafka would raise."""
    future: Future[Any] = Future()
    future.set_exception(KafkaException(KafkaError(error)) if isinstance(error, int) else error)
    return future


def factory_of(fake: Fake) -> Callable[..., Fake]:
    """A client factory (``Consumer(config)``, ``AdminClient(config)``) that records the config on ``fake``
    and returns it; pass it where code takes a factory, or monkeypatch it over the class."""
    def make(config: Mapping[str, Any], **_: Any) -> Fake:
        fake.config = dict(config)  # type: ignore[attr-defined]
        return fake
    return make


def calls_to(fake: FakeAdminClient, method: str) -> list[Any]:
    """The first argument of each call of ``method`` on an admin fake, in call order."""
    return [request for name, request in fake.calls if name == method]


ScriptEntry = Message | list[Message] | None


class FakeConsumer:
    """A consumer that plays back ``script``: one entry per poll, a list is a batch for ``consume``.

    ``None`` is a poll that found nothing. ``poll`` takes the first message of a batch and leaves the
    rest for the next call; ``consume(n)`` takes up to ``n`` messages of the next entry. An empty script
    returns nothing (the real consumer would wait ``timeout``; ``waits`` records each timeout asked for).
    """

    def __init__(self, config: Mapping[str, Any] | None = None, script: Iterable[ScriptEntry] = ()) -> None:
        self.config: dict[str, Any] = dict(config or {})
        self.script: list[ScriptEntry] = list(script)
        self.assigned: list[TopicPartition] = []
        self.waits: list[float] = []
        self.closed = False
        #: Cached (low, high) watermarks per (topic, partition); librdkafka's -1001 when none is cached.
        self.watermarks: dict[tuple[str, int], tuple[int, int]] = {}
        #: What a watermark query to the broker (``cached=False``) answers, where it differs from the cache.
        self.broker_watermarks: dict[tuple[str, int], tuple[int, int]] = {}
        self.seeks: list[tuple[str, int, int]] = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = list(partitions)

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        key = (partition.topic, partition.partition)
        if not cached and key in self.broker_watermarks:
            return self.broker_watermarks[key]
        return self.watermarks.get(key, (-1001, -1001))

    def seek(self, partition: TopicPartition) -> None:
        self.seeks.append((partition.topic, partition.partition, partition.offset))

    def _take(self, num_messages: int) -> list[Message]:
        if not self.script:
            return []
        entry = self.script[0]
        if not isinstance(entry, list):
            self.script.pop(0)
            return [] if entry is None else [entry]
        taken, rest = entry[:num_messages], entry[num_messages:]
        if rest:
            self.script[0] = rest
        else:
            self.script.pop(0)
        return taken

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        self.waits.append(timeout)
        return self._take(num_messages)

    def poll(self, timeout: float | None = None) -> Message | None:
        self.waits.append(-1 if timeout is None else timeout)
        taken = self._take(1)
        return taken[0] if taken else None

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """No metadata: code under test only warms librdkafka's cache with it (clients/factory.py, learn_leaders)."""
        return ClusterMetadata()

    def close(self) -> None:
        self.closed = True


@dataclass
class Produced:
    """One ``produce`` call and the target offset the fake broker gave it."""

    topic: str
    value: bytes | None
    key: bytes | None
    partition: int
    offset: int
    timestamp: int
    headers: Any
    on_delivery: DeliveryCallback | None = field(repr=False)


class Delivery:
    """The broker side of a :class:`FakeProducer`: which records have been acknowledged (or failed).

    A released report is served by the producer's next ``poll`` or ``flush``, on the calling thread, as
    librdkafka serves delivery callbacks. Thread-safe: a test releases while a task thread polls.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.produced: list[Produced] = []
        self.ready: list[tuple[int, KafkaError | None]] = []
        self.reported: set[int] = set()

    def release(self, indexes: Iterable[int] | None = None, error: KafkaError | None = None) -> None:
        """Acknowledge the records at these produce indexes (all unreleased ones if None), or fail them."""
        with self.lock:
            released = {i for i, _ in self.ready} | self.reported
            chosen = range(len(self.produced)) if indexes is None else indexes
            self.ready.extend((i, error) for i in chosen if i not in released)

    def unreleased(self) -> int:
        with self.lock:
            released = {i for i, _ in self.ready} | self.reported
            return sum(1 for i in range(len(self.produced)) if i not in released)


class FakeProducer:
    """A producer whose broker (``delivery``) acknowledges only when the test says so, in any order.

    ``flush`` stands for a healthy broker: it acknowledges everything still unreleased, then serves the
    reports. Delivered messages carry per-partition offsets in produce order; an unset partition is 0.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.config: dict[str, Any] = dict(config or {})
        self.delivery = Delivery()
        self.closed = 0  # close() calls
        self._next_offset: dict[tuple[str, int], int] = {}

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                on_delivery: DeliveryCallback | None = None, callback: DeliveryCallback | None = None,
                timestamp: int = 0, headers: Any = None) -> None:
        on_delivery = on_delivery if on_delivery is not None else callback  # 'callback' is its alias
        target = max(partition, 0)
        with self.delivery.lock:
            offset = self._next_offset.get((topic, target), 0)
            self._next_offset[(topic, target)] = offset + 1
            self.delivery.produced.append(Produced(topic, value, key, target, offset, timestamp, headers,
                                                   on_delivery))

    def poll(self, timeout: float | None = None) -> int:
        with self.delivery.lock:
            ready, self.delivery.ready = self.delivery.ready, []
            self.delivery.reported.update(i for i, _ in ready)
            records = [self.delivery.produced[i] for i, _ in ready]
        for record, (_, error) in zip(records, ready, strict=True):
            if record.on_delivery is not None:
                record.on_delivery(error, message(record.topic, record.partition, record.offset, record.key,
                                                  record.value, record.headers,
                                                  (TIMESTAMP_CREATE_TIME, record.timestamp), error))
        return len(ready)

    def flush(self, timeout: float | None = None) -> int:
        self.delivery.release()
        self.poll(0)
        return 0

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Nothing is queued locally: every produced record is already with the fake broker."""

    def close(self) -> bool:
        """What a closed producer does next is refuse every call: here it is only counted."""
        self.closed += 1
        return True

    def __len__(self) -> int:
        return self.delivery.unreleased() + len(self.delivery.ready)


class FakeAdminClient:
    """An AdminClient that records each call in ``calls`` and answers from ``answers``.

    ``answers[method][key]`` is the result for one resource (a topic, group or ACL binding): a value, a
    KafkaError code or an exception for a failed future. Unanswered resources succeed with ``None``,
    except ``alter_consumer_group_offsets``, which echoes the request as the real client does.
    ``topics`` (name -> partition count) is what ``list_topics`` reports.
    """

    def __init__(self, topics: Mapping[str, int] | None = None,
                 answers: Mapping[str, Mapping[Any, Answer]] | None = None) -> None:
        self.config: dict[str, Any] = {}
        self.topics = dict(topics or {})
        self.answers = {method: dict(by_key) for method, by_key in (answers or {}).items()}
        self.calls: list[tuple[str, Any]] = []

    def _futures(self, method: str, keys: Iterable[Any],
                 default: Callable[[Any], Any] = lambda _key: None) -> dict[Any, Future[Any]]:
        out: dict[Any, Future[Any]] = {}
        for key in keys:
            if key not in self.answers.get(method, {}):
                out[key] = done(default(key))
                continue
            answer = self.answers[method][key]
            is_error = isinstance(answer, BaseException) or (isinstance(answer, int) and not isinstance(answer, bool))
            out[key] = failed(answer) if is_error else done(answer)
        return out

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        self.calls.append(("list_topics", topic))
        cluster = ClusterMetadata()
        for name, partitions in self.topics.items():
            if topic is not None and name != topic:
                continue
            meta = TopicMetadata()
            meta.topic = name
            for p in range(partitions):
                partition = PartitionMetadata()
                partition.id = p
                meta.partitions[p] = partition
            cluster.topics[name] = meta
        return cluster

    def create_topics(self, new_topics: list[Any], **kwargs: Any) -> dict[str, Future[Any]]:
        self.calls.append(("create_topics", list(new_topics)))
        return self._futures("create_topics", [t.topic for t in new_topics])

    def create_partitions(self, new_partitions: list[Any], **kwargs: Any) -> dict[str, Future[Any]]:
        self.calls.append(("create_partitions", list(new_partitions)))
        return self._futures("create_partitions", [p.topic for p in new_partitions])

    def create_acls(self, acls: list[Any], **kwargs: Any) -> dict[Any, Future[Any]]:
        self.calls.append(("create_acls", list(acls)))
        return self._futures("create_acls", acls)

    def describe_consumer_groups(self, group_ids: list[str], **kwargs: Any) -> dict[str, Future[Any]]:
        self.calls.append(("describe_consumer_groups", list(group_ids)))
        return self._futures("describe_consumer_groups", group_ids)

    def alter_consumer_group_offsets(self, alter_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions],
                                     **kwargs: Any) -> dict[str, Future[Any]]:
        requests = list(alter_consumer_group_offsets_request)
        self.calls.append(("alter_consumer_group_offsets", requests))
        by_group = {r.group_id: r for r in requests}
        return self._futures("alter_consumer_group_offsets", by_group,
                             lambda group: ConsumerGroupTopicPartitions(group, by_group[group].topic_partitions))
