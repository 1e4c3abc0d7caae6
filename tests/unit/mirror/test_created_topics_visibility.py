"""Created remote topics are awaited in the target's metadata before tasks produce to them.

A Kafka broker answers CreateTopics before its metadata shows the topics (with thousands of partitions,
for tens of seconds), and librdkafka fails the records it queued for a topic its metadata calls unknown
after ``topic.metadata.propagation.max.ms``. The target here is TopicSync's recording fake whose metadata
shows a created topic only after a number of describes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping

import pytest

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.admin import CreateOutcome, TopicSpec
from tests.unit.mirror.test_topic_sync import FakeAdmin, make_sync


class LaggingTarget(FakeAdmin):
    """Creates topics at once but shows each in its metadata only after ``lag`` describes, with
    ``partial`` partitions at first for the topics named there."""

    def __init__(self, lag: int, never: Iterable[str] = (), partial: Mapping[str, int] | None = None) -> None:
        super().__init__()
        self.lag = lag
        self.never = set(never)
        self.partial = dict(partial or {})
        self.described: list[list[str]] = []

    def create_topics(self, topics: Mapping[str, TopicSpec], deadline_s: float | None = None,
                      stop: threading.Event | None = None) -> CreateOutcome:
        self.topics.update((name, spec.partitions) for name, spec in topics.items())
        return CreateOutcome(list(topics), [], [], {}, [])

    def describe_topics(self, names: Iterable[str]) -> dict[str, int]:
        names = list(names)
        self.described.append(names)
        if len(self.described) <= self.lag:
            return {n: self.partial[n] for n in names if n in self.partial}
        return {n: self.topics[n] for n in names if n in self.topics and n not in self.never}


def test_created_topics_are_awaited_until_the_target_shows_all_their_partitions() -> None:
    source = FakeAdmin({"a": 2, "b": 3})
    target = LaggingTarget(lag=2, partial={"source.b": 1})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    target.described.clear()  # what loading the target view described
    sync.await_created_topics(time.monotonic() + 30)
    # the first describes show b with 1 of its 3 partitions: not shown yet; the third shows both
    assert target.described == [["source.a", "source.b"]] * 3
    target.described.clear()
    sync.await_created_topics(time.monotonic() + 30)  # nothing created since: nothing to wait for
    assert target.described == []


def test_what_the_target_does_not_show_by_the_deadline_is_logged_once_with_a_count(
        caplog: pytest.LogCaptureFixture) -> None:
    source = FakeAdmin({f"t{i}": 1 for i in range(8)})
    target = LaggingTarget(lag=0, never=[f"source.t{i}" for i in range(1, 8)])
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    target.described.clear()
    begin = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="mirror.source.topic_sync"):
        sync.await_created_topics(begin + 1.2)
    assert time.monotonic() - begin < 5
    # the shown topic is not described again; the others are, until the deadline
    assert target.described[0] == [f"source.t{i}" for i in range(8)]
    assert target.described[1] == [f"source.t{i}" for i in range(1, 8)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "does not show 7 created remote topic(s)" in warnings[0]
    assert "source.t1, source.t2, source.t3, source.t4, source.t5;" in warnings[0]


def test_a_describe_the_target_refuses_counts_as_not_shown_and_a_stop_ends_the_wait(
        caplog: pytest.LogCaptureFixture) -> None:
    class Refusing(LaggingTarget):
        def describe_topics(self, names: Iterable[str]) -> dict[str, int]:
            if not self.topics:  # loading the target view, before anything was created
                return {}
            self.described.append(list(names))
            raise ConnectError("describing topics: broker transport failure")

    stop = threading.Event()
    source = FakeAdmin({"a": 1})
    target = Refusing(lag=0)
    sync = make_sync(source, target)
    sync._stop = stop  # the connector's stop event, as the connector passes it
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    threading.Timer(0.8, stop.set).start()
    begin = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="mirror.source.topic_sync"):
        sync.await_created_topics(begin + 30)
    assert time.monotonic() - begin < 10
    assert len(target.described) >= 2  # polled again after the refused describe
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # stopping is not a warning
