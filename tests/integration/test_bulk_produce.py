"""The C span producer (connect_runtime/clients/bulk_produce.py) against confluent-kafka's own produce.

What it must hold: a record it produces is byte for byte what ``Producer.produce`` would have sent (key,
value, headers, timestamp, partition, order); it stops at the first record it cannot produce and says how
many it produced, so the Python path meets that record's error itself; it never takes a producer whose
``produce`` is not confluent-kafka's own, nor one whose ``close()`` would not wait for it; a list another
thread shrinks under it is never read past its end, and a producer another thread closes is not destroyed
under it. Every check reads the records back from a real broker.

scripts/asan-span-producer runs this file under AddressSanitizer, where reading past a list's end or a
destroyed handle is a report, not luck: keep every test here at most 200,000 records.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, Producer, TopicPartition

from connect_runtime.clients import bulk_produce
from connect_runtime.clients.bulk_produce import produce_path, run_end
from connect_runtime.clients.factory import new_producer
from mirror.source import bulk_copy
from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, unique

pytestmark = pytest.mark.integration

needs_extension = pytest.mark.skipif(bulk_produce.unavailable() is not None,
                                     reason=f"the C span producer cannot run: {bulk_produce.unavailable()}")


def source_records(count: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]:
    """(key, value, headers, timestamp) with nulls, empties, repeated and non-ASCII header names."""
    out = []
    for i in range(count):
        key = None if i % 5 == 0 else b"" if i % 5 == 1 else b"k%d" % i
        value = None if i % 7 == 0 else b"" if i % 7 == 1 else bytes([i % 256]) * (i % 300)
        headers: list[tuple[str, bytes | None]] = [] if i % 4 == 0 else [("h", b"%d" % i), ("h", None),
                                                                           ("n\u00e9", b"\x00\xff")][: i % 4]
        out.append((key, value, headers, 1_700_000_000_000 + i * 17))
    return out


def consumed_batch(bootstrap: str, topic: str, count: int) -> list[Message]:
    """The topic's records as confluent-kafka Messages, as a task's consumer hands them over."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("span-reader"),
                         "enable.auto.commit": False})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    out: list[Message] = []
    try:
        for _ in range(200):
            out.extend(m for m in consumer.consume(1000, 0.2) if m.error() is None)
            if len(out) >= count:
                break
    finally:
        consumer.close()
    assert len(out) == count, f"read {len(out)} of {count}"
    return out


def fill(bootstrap: str, topic: str, records: list[Any], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, headers, ts in records:
        producer.produce(topic, value, key, partition, None, None, ts, headers or None)
    assert producer.flush(30) == 0


def view(bootstrap: str, topic: str, expect: int) -> list[tuple[Any, ...]]:
    return [(r.partition, r.key, r.value, r.headers, r.timestamp)
            for r in sorted(consume_all(bootstrap, topic, expect=expect), key=lambda r: (r.partition, r.offset))]


def task_producer(bootstrap: str, **extra: Any) -> Producer:
    """A producer as a task gets one: from the client factory, idempotent."""
    return new_producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5, **extra})


@contextmanager
def span_over(bootstrap: str, records: list[Any], **producer_extra: Any) -> Iterator[tuple[list[Message], Producer,
                                                                                           Any]]:
    """``records`` written to a new topic and consumed back, a task producer (closed after), its span producer."""
    source = create_topic(bootstrap, unique("span-src"))
    fill(bootstrap, source, records)
    messages = consumed_batch(bootstrap, source, len(records))
    producer = task_producer(bootstrap, **producer_extra)
    try:
        path = produce_path(producer)
        assert path.span is not None, path.reason
        yield messages, producer, path.span
    finally:
        producer.close()


def built_messages(count: int, topic: str = "built") -> list[Message]:
    """``count`` Messages as a consumer would hand them over, built in Python (no source topic needed)."""
    return [Message(topic=topic, partition=0, offset=i, key=b"k%d" % i, value=b"v%d" % i,
                    timestamp=(1, 1_700_000_000_000 + i), headers=[("h", b"%d" % i)]) for i in range(count)]


@contextmanager
def switching_often() -> Iterator[None]:
    """A thread waiting for the GIL gets it at the span's first release of it, not 5 ms later."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def when_producing(producer: Producer, action: Any) -> threading.Thread:
    """A thread that runs ``action`` as soon as ``producer`` holds a record: inside the span that queued it,
    since the thread gets the GIL only while the span produces without it. (After 60 s without a record it
    runs ``action`` anyway, and the test's assertions say what went wrong rather than a hang.)"""
    def watch() -> None:
        deadline = time.monotonic() + 60
        while len(producer) == 0 and time.monotonic() < deadline:
            pass
        action()

    thread = threading.Thread(target=watch, name="span-test-watch")
    thread.start()
    return thread


@needs_extension
def test_a_span_sends_what_produce_sends(cluster_a: Cluster) -> None:
    bootstrap = cluster_a.bootstrap
    by_c, by_python = create_topic(bootstrap, unique("span-c"), 3), create_topic(bootstrap, unique("span-py"), 3)
    with span_over(bootstrap, source_records(700)) as (messages, producer, span):
        assert span(messages, 0, 700, by_c, 2) == (700, sum(len(m.value() or b"") for m in messages))
        for m in messages:
            ts = m.timestamp()[1]
            producer.produce(by_python, m.value(), m.key(), 2, None, None, ts if ts > 0 else 0, m.headers())
        assert producer.flush(30) == 0

    copied = view(bootstrap, by_c, 700)
    assert copied == view(bootstrap, by_python, 700)
    assert [(k, v, h or None, ts) for _, k, v, h, ts in copied] == \
        [(k, v, h or None, ts) for k, v, h, ts in source_records(700)]
    assert {p for p, *_ in copied} == {2}


@needs_extension
def test_a_span_stops_at_a_full_queue_and_says_where(cluster_a: Cluster) -> None:
    bootstrap = cluster_a.bootstrap
    target = create_topic(bootstrap, unique("span-full"))
    with span_over(bootstrap, source_records(300),
                   **{"queue.buffering.max.messages": 40, "linger.ms": 1000}) as (messages, producer, span):
        done, _ = span(messages, 0, 300, target, 0)
        assert done == 40  # the queue's size, and no more
        with pytest.raises(BufferError):  # the record it stopped at: produce meets the same full queue
            producer.produce(target, messages[done].value(), messages[done].key(), 0)
        position = done
        while position < 300:
            producer.poll(0.05)
            position += span(messages, position, 300, target, 0)[0]
        assert producer.flush(30) == 0
    copied = view(bootstrap, target, 300)
    assert [(k, v) for _, k, v, _, _ in copied] == [(m.key(), m.value()) for m in messages]


@needs_extension
def test_a_span_stops_at_a_record_the_client_refuses(cluster_a: Cluster) -> None:
    bootstrap = cluster_a.bootstrap
    records = [(b"k%d" % i, b"x" * (5000 if i == 30 else 10), [], 1_700_000_000_000) for i in range(50)]
    target = create_topic(bootstrap, unique("span-refused"))
    with span_over(bootstrap, records, **{"message.max.bytes": 2000}) as (messages, producer, span):
        assert span(messages, 0, 50, target, 0) == (30, 300)
        with pytest.raises(KafkaException, match="MSG_SIZE_TOO_LARGE"):
            producer.produce(target, messages[30].value(), messages[30].key(), 0)
        assert span(messages, 31, 50, target, 0) == (19, 190)
        assert producer.flush(30) == 0
    assert [k for _, k, *_ in view(bootstrap, target, 49)] == [b"k%d" % i for i in range(50) if i != 30]


@needs_extension
def test_a_closed_producer_produces_nothing_and_produce_says_why(cluster_a: Cluster) -> None:
    with span_over(cluster_a.bootstrap, source_records(10)) as (messages, producer, span):
        target = messages[0].topic() or ""
        producer.close()
        assert span(messages, 0, 10, target, 0) == (0, 0)
        with pytest.raises(RuntimeError):
            producer.produce(target, b"v", None, 0)
    with span_over(cluster_a.bootstrap, source_records(10)) as (messages, producer, span):
        with producer:  # confluent-kafka's __exit__ closes in C, past close(): the factory's producer closes the gate
            pass
        assert producer.span_gate.closed  # type: ignore[attr-defined]
        assert span(messages, 0, 10, target, 0) == (0, 0)


@needs_extension
def test_the_run_scan_agrees_with_the_python_scan(cluster_a: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    bootstrap = cluster_a.bootstrap
    source = create_topic(bootstrap, unique("span-runs"), 3)
    for p in range(3):  # several produce calls per partition: the consumer interleaves partitions
        for chunk in range(4):
            fill(bootstrap, source, source_records(60)[chunk * 15:(chunk + 1) * 15], partition=p)
    messages = consumed_batch(bootstrap, source, 180)
    scan = run_end()
    assert scan is not None

    ends = [scan(messages, i) for i in range(len(messages))]
    monkeypatch.setattr(bulk_copy, "_run_end", None)  # the bulk copy's own scan, in Python
    assert ends == [bulk_copy.run_end(messages, i) for i in range(len(messages))]
    assert any(messages[end].partition() != messages[end - 1].partition() for end in ends if end < len(messages))
    assert scan([object(), *messages], 0) == -1  # not a Message: the caller scans itself


@needs_extension
def test_a_list_another_thread_shrinks_during_a_span_is_not_read_past_its_end(cluster_a: Cluster) -> None:
    """The list's length is read again after each chunk produced without the GIL: another thread that
    empties the list meanwhile frees the messages past the new end, which the span must never reach."""
    bootstrap = cluster_a.bootstrap
    target = create_topic(bootstrap, unique("span-shrunk"))
    count, keep = 50_000, 1_000
    messages = built_messages(count)
    expected = [(m.key(), m.value()) for m in messages[:count]]  # bytes only: the Messages must be freeable
    producer = task_producer(bootstrap)
    try:
        span = produce_path(producer).span
        assert span is not None
        with switching_often():
            shrinker = when_producing(producer, lambda: messages.__delitem__(slice(keep, None)))
            produced, _ = span(messages, 0, count, target, 0)
            shrinker.join()
        assert len(messages) == keep
        assert keep <= produced < count  # it stopped where the list ended when it looked again
        assert producer.flush(30) == 0
    finally:
        producer.close()
    assert [(k, v) for _, k, v, _, _ in view(bootstrap, target, produced)] == expected[:produced]


@needs_extension
def test_close_on_another_thread_waits_for_the_running_span(cluster_a: Cluster) -> None:
    """close() destroys the librdkafka handle the span uses without the GIL: it waits for the span to end
    (the producer's gate), which therefore produces every record, and closes after delivering them."""
    bootstrap = cluster_a.bootstrap
    target = create_topic(bootstrap, unique("span-closed"))
    count = 50_000
    messages = built_messages(count)
    producer = task_producer(bootstrap)
    span = produce_path(producer).span
    assert span is not None
    span_ended = threading.Event()
    seen: dict[str, bool] = {}

    def close() -> None:
        seen["span ended when close was called"] = span_ended.is_set()
        producer.close()
        seen["span ended when close returned"] = span_ended.is_set()

    with switching_often():
        closer = when_producing(producer, close)
        produced, _ = span(messages, 0, count, target, 0)
        span_ended.set()
        closer.join()
    assert seen == {"span ended when close was called": False, "span ended when close returned": True}
    assert produced == count
    assert span(messages, 0, 10, target, 0) == (0, 0)  # after close: nothing, and produce says why
    with pytest.raises(RuntimeError):
        producer.produce(target, b"v", None, 0)
    assert [k for _, k, *_ in view(bootstrap, target, count)] == [m.key() for m in messages]


def test_only_confluent_kafkas_own_produce_is_bypassed(cluster_a: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    class Counting(Producer):
        def produce(self, *args: Any, **kwargs: Any) -> None:
            super().produce(*args, **kwargs)

    assert produce_path(Counting({"bootstrap.servers": cluster_a.bootstrap})).span is None
    monkeypatch.setenv(bulk_produce.DISABLE_ENV, "1")
    bulk_produce._binding.cache_clear()
    producer = task_producer(cluster_a.bootstrap)
    try:
        path = produce_path(producer)
        assert (path.span, path.name, path.reason) == (None, "python-loop",
                                                       f"turned off by {bulk_produce.DISABLE_ENV}=1")
        assert run_end() is None
    finally:
        producer.close()
        monkeypatch.delenv(bulk_produce.DISABLE_ENV)
        bulk_produce._binding.cache_clear()


@needs_extension
def test_a_producer_whose_close_does_not_wait_takes_the_python_loop(cluster_a: Cluster) -> None:
    """confluent-kafka's own Producer closes without waiting for a span: only the factory's producers go to C."""
    plain = Producer({"bootstrap.servers": cluster_a.bootstrap})
    path = produce_path(plain)
    assert path.span is None and "close() does not wait" in path.reason


@pytest.mark.parametrize(("release", "taken"), [("2.12.4", False), ("2.13.0", True), ("2.16.9", True),
                                               ("2.17.0", False), ("3.0.0", False), ("unknown", False)])
def test_only_confluent_kafka_releases_whose_layout_was_checked_are_bound(
        release: str, taken: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The extension reads confluent-kafka's private Producer struct: outside the releases it was checked
    against, the Python loop, saying which release and why (nothing of the extension runs to find out)."""
    if taken and bulk_produce.unavailable() is not None:
        pytest.skip(f"the C span producer cannot run here: {bulk_produce.unavailable()}")
    monkeypatch.setattr(confluent_kafka, "version", lambda: release)
    bulk_produce._binding.cache_clear()
    try:
        reason = bulk_produce.unavailable()
        if taken:
            assert reason is None
        else:
            assert reason is not None and f"confluent-kafka {release} is outside" in reason
    finally:
        monkeypatch.undo()
        bulk_produce._binding.cache_clear()


def test_other_pythons_than_cpython_take_the_python_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "implementation", SimpleNamespace(**{**vars(sys.implementation), "name": "pypy"}))
    bulk_produce._binding.cache_clear()
    try:
        assert bulk_produce.unavailable() == "the C extension is for CPython only, not pypy"
    finally:
        monkeypatch.undo()
        bulk_produce._binding.cache_clear()
