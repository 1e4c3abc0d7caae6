"""Added partitions are awaited in the target's metadata before tasks produce to them; new topics are not.

A Kafka broker answers CreateTopics and CreatePartitions before its metadata shows the result (with
thousands of partitions, for tens of seconds). The task producer queues the records of a topic it does not
know yet until it shows (``topic.metadata.propagation.max.ms``), so new topics need no wait; but it fails at
once a record to a partition its metadata does not show of a topic it knows, so added partitions are
awaited. The target here is TopicSync's recording fake whose metadata shows a topic's new partitions only
after a number of describes.
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
    """Creates topics and adds partitions at once, but its metadata shows a topic's state only after ``lag``
    describes (before: what it showed before the change; nothing for a new topic); the topics in ``never``
    are never shown past their old state."""

    def __init__(self, topics: dict[str, int] | None = None, lag: int = 0, never: Iterable[str] = ()) -> None:
        super().__init__(topics)
        self.lag = lag
        self.never = set(never)
        self.shown = dict(self.topics)  # what the metadata shows until the lag ran out
        self.described: list[list[str]] = []

    def create_topics(self, topics: Mapping[str, TopicSpec], deadline_s: float | None = None,
                      stop: threading.Event | None = None) -> CreateOutcome:
        self.calls.append(("create_topics", dict(topics)))
        self.topics.update((name, spec.partitions) for name, spec in topics.items())
        return CreateOutcome(list(topics), [], [], {}, [])

    def create_partitions(self, counts: Mapping[str, int]) -> set[str]:
        self.calls.append(("create_partitions", dict(counts)))
        self.topics.update(counts)
        return set(counts)

    def describe_topics(self, names: Iterable[str]) -> dict[str, int]:
        names = list(names)
        self.described.append(names)
        if len(self.described) <= self.lag:
            return {n: self.shown[n] for n in names if n in self.shown}
        return {n: (self.shown if n in self.never else self.topics)[n] for n in names if n in self.topics}


def test_new_topics_are_not_awaited() -> None:
    source = FakeAdmin({"a": 2, "b": 3})
    target = LaggingTarget(lag=100)  # the created topics would not show for 100 describes
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    assert target.called("create_topics")
    target.described.clear()
    begin = time.monotonic()
    sync.await_partition_growth(begin + 30)
    assert time.monotonic() - begin < 1
    assert target.described == []


def test_added_partitions_are_awaited_until_the_target_shows_them_all() -> None:
    source = FakeAdmin({"a": 4, "b": 3, "c": 1})
    # a and b exist with fewer partitions; c is new
    target = LaggingTarget({"source.a": 2, "source.b": 1}, lag=2)
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    assert target.called("create_partitions") == [{"source.a": 4, "source.b": 3}]
    target.described.clear()
    sync.await_partition_growth(time.monotonic() + 30)
    # two describes show the old counts, the third the new ones; the new topic c is never described
    assert target.described == [["source.a", "source.b"]] * 3
    target.described.clear()
    sync.await_partition_growth(time.monotonic() + 30)  # nothing added since: nothing to wait for
    assert target.described == []


def test_what_the_target_does_not_show_by_the_deadline_is_logged_once_with_a_count(
        caplog: pytest.LogCaptureFixture) -> None:
    source = FakeAdmin({f"t{i}": 2 for i in range(8)})
    target = LaggingTarget({f"source.t{i}": 1 for i in range(8)}, never=[f"source.t{i}" for i in range(1, 8)])
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    target.described.clear()
    begin = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="mirror.source.topic_sync"):
        sync.await_partition_growth(begin + 1.2)
    assert time.monotonic() - begin < 5
    # the topic shown in full is not described again; the others are, until the deadline
    assert target.described[0] == [f"source.t{i}" for i in range(8)]
    assert target.described[1] == [f"source.t{i}" for i in range(1, 8)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "added partitions of 7 remote topic(s)" in warnings[0]
    assert "source.t1, source.t2, source.t3, source.t4, source.t5;" in warnings[0]


def test_a_describe_the_target_refuses_counts_as_not_shown_and_a_stop_ends_the_wait(
        caplog: pytest.LogCaptureFixture) -> None:
    class Refusing(LaggingTarget):
        def describe_topics(self, names: Iterable[str]) -> dict[str, int]:
            if self.topics == self.shown:  # loading the target view, before anything was added
                return {n: self.topics[n] for n in names if n in self.topics}
            self.described.append(list(names))
            raise ConnectError("describing topics: broker transport failure")

    stop = threading.Event()
    source = FakeAdmin({"a": 2})
    target = Refusing({"source.a": 1})
    sync = make_sync(source, target)
    sync._stop = stop  # the connector's stop event, as the connector passes it
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    threading.Timer(0.8, stop.set).start()
    begin = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="mirror.source.topic_sync"):
        sync.await_partition_growth(begin + 30)
    assert time.monotonic() - begin < 10
    assert len(target.described) >= 2  # polled again after the refused describe
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # stopping is not a warning
