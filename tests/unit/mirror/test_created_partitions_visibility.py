"""Created remote topics and added partitions are awaited in the target's metadata before tasks produce to them.

A Kafka broker answers CreateTopics and CreatePartitions before its metadata shows the result (with
thousands of partitions, for tens of seconds). A task producer fails at once a record to a partition its
metadata does not show of a topic it knows, and tasks producing to thousands of topics the target does not
show yet slow down their creation (mirror.source.topic_sync). The target here is TopicSync's recording fake
whose metadata shows a topic's new state only after a number of describes.
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


def test_created_topics_are_awaited_until_the_target_shows_all_their_partitions() -> None:
    source = FakeAdmin({"a": 2, "b": 3})
    target = LaggingTarget(lag=2)
    target.shown = {"source.b": 1}  # b shows with 1 of its 3 partitions at first, a not at all
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    assert target.called("create_topics")
    target.described.clear()  # what loading the target view described
    sync.await_created_partitions(time.monotonic() + 30)
    assert target.described == [["source.a", "source.b"]] * 3
    target.described.clear()
    sync.await_created_partitions(time.monotonic() + 30)  # nothing created since: nothing to wait for
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
    sync.await_created_partitions(time.monotonic() + 30)
    # two describes show the old counts (and not c), the third the new ones
    assert target.described == [["source.a", "source.b", "source.c"]] * 3
    target.described.clear()
    sync.await_created_partitions(time.monotonic() + 30)  # nothing added since: nothing to wait for
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
        sync.await_created_partitions(begin + 1.2)
    assert time.monotonic() - begin < 5
    # the topic shown in full is not described again; the others are, until the deadline
    assert target.described[0] == [f"source.t{i}" for i in range(8)]
    assert target.described[1] == [f"source.t{i}" for i in range(1, 8)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "does not show 7 created or grown remote topic(s)" in warnings[0]
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
        sync.await_created_partitions(begin + 30)
    assert time.monotonic() - begin < 10
    assert len(target.described) >= 2  # polled again after the refused describe
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # stopping is not a warning
