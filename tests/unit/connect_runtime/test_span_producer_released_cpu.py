"""The C span producer's timing of its GIL-free sections (bulk_produce.count_released_cpu / released_cpu_ns).

No broker is needed: librdkafka queues what a span produces until it can send it, and the test purges the
queue before closing. The records are confluent-kafka Messages built in Python, as a consumer hands them over.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Message, Producer

from connect_runtime.clients import bulk_produce
from connect_runtime.clients.bulk_produce import SpanProducer, count_released_cpu, produce_path, released_cpu_ns
from connect_runtime.clients.factory import new_producer

pytestmark = pytest.mark.skipif(bulk_produce.unavailable() is not None,
                                reason=f"the C span producer cannot run: {bulk_produce.unavailable()}")

RECORDS = 20_000


def messages(count: int) -> list[Message]:
    return [Message(topic="src", partition=0, offset=i, key=b"k%d" % i, value=b"v" * 100,
                    timestamp=(1, 1_700_000_000_000 + i), headers=[("h", b"%d" % i)]) for i in range(count)]


@pytest.fixture
def span() -> Iterator[SpanProducer]:
    """A task producer's span producer, with room in its queue for every record (nothing is sent: no broker)."""
    producer: Producer = new_producer({"bootstrap.servers": "127.0.0.1:1", "linger.ms": 60_000,
                                       "queue.buffering.max.messages": 10 * RECORDS, "log_level": 0})
    try:
        path = produce_path(producer)
        assert path.span is not None, path.reason
        yield path.span
    finally:
        producer.purge()
        producer.close()
        count_released_cpu(False)


def test_nothing_is_counted_until_counting_is_turned_on(span: SpanProducer) -> None:
    before = released_cpu_ns()
    assert span(messages(RECORDS), 0, RECORDS, "dst", 0)[0] == RECORDS
    assert released_cpu_ns() == before


def test_a_span_adds_the_cpu_of_its_gil_free_sections_and_no_more_than_its_thread_spent(span: SpanProducer) -> None:
    batch = messages(RECORDS)
    assert count_released_cpu(True)
    before, thread_before = released_cpu_ns(), time.thread_time_ns()
    assert span(batch, 0, RECORDS, "dst", 0)[0] == RECORDS
    thread_spent = time.thread_time_ns() - thread_before
    released = released_cpu_ns()
    assert before is not None and released is not None
    assert 0 < released - before <= thread_spent  # a part of the thread's CPU: the GIL-held gathering is not in it

    count_released_cpu(False)
    assert span(batch, 0, RECORDS, "dst", 0)[0] == RECORDS
    assert released_cpu_ns() == released
