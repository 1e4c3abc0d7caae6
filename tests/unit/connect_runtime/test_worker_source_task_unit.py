"""WorkerSourceTask paths that need a controllable producer (no broker): the producer seam is the shared
fake, whose broker acknowledges only when the test says so, in any order, or with an error."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError
from prometheus_client import CollectorRegistry

from connect_runtime.api.records import SourceRecord
from connect_runtime.api.task import SourceTask
from connect_runtime.lifecycle import ConnectorTaskId, State
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.task.worker_source_task import SourceTaskSettings, WorkerSourceTask
from connect_runtime.storage.memory import MemoryOffsetStore
from tests.support.fakes import FakeProducer
from tests.support.kafka import wait_until

TASK = ConnectorTaskId("c", 0)


class ListTask(SourceTask):
    """Hands out the given batches once each; optionally blocks in ``start`` until released."""

    def __init__(self, batches: list[list[SourceRecord]], start_gate: threading.Event | None = None) -> None:
        self.batches = list(batches)
        self.start_gate = start_gate
        self.stop_calls = 0
        self.started = threading.Event()

    def start(self, config: Mapping[str, str]) -> None:
        self.registry_at_start = self.context.metrics_registry
        self.started.set()
        if self.start_gate is not None:
            self.start_gate.wait(10)

    def poll(self) -> list[SourceRecord] | None:
        return self.batches.pop(0) if self.batches else None

    def stop(self) -> None:
        self.stop_calls += 1


def rec(partition: str, seq: int) -> SourceRecord:
    return SourceRecord("t", b"v", source_partition={"p": partition}, source_offset={"seq": seq})


def make(task: SourceTask, store: MemoryOffsetStore, registry: CollectorRegistry | None = None,
         ) -> tuple[WorkerSourceTask, list[FakeProducer], RecordingStatusListener]:
    producers: list[FakeProducer] = []

    def factory(config: dict[str, str]) -> Any:
        producers.append(FakeProducer(config))
        return producers[-1]

    listener = RecordingStatusListener()
    worker_task = WorkerSourceTask(TASK, task, {}, SourceTaskSettings("w", offset_flush_interval_s=600.0),
                                   offset_store=store, producer_config={}, status_listener=listener,
                                   metrics=ConnectMetrics.create(CollectorRegistry()).for_task("c", 0),
                                   producer_factory=factory, metrics_registry=registry or CollectorRegistry())
    return worker_task, producers, listener


def commit(worker_task: WorkerSourceTask, producer: FakeProducer) -> None:
    """Commit once the task thread has served every released delivery report."""
    wait_until(lambda: not producer.delivery.ready, 10, "delivery reports served")
    before = worker_task.commit_cycles
    worker_task.request_commit()
    wait_until(lambda: worker_task.commit_cycles > before, 10, "a commit")


def test_out_of_order_acknowledgements_commit_only_the_contiguous_prefix() -> None:
    store = MemoryOffsetStore()
    worker_task, producers, _ = make(ListTask([[rec("a", 0), rec("b", 0), rec("a", 1), rec("a", 2)]]), store)
    worker_task.start()
    try:
        wait_until(lambda: producers and len(producers[0].delivery.produced) == 4, 10, "4 records produced")
        producer = producers[0]
        producer.delivery.release([2, 3, 1])  # a1, a2 and b0 acknowledged; a0 still in flight
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) is None
        assert store.get("c", {"p": "b"}) == {"seq": 0}
        producer.delivery.release([0])
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) == {"seq": 2}
    finally:
        worker_task.stop()
        assert worker_task.join(10)


def test_delivery_error_fails_the_task_and_nothing_after_the_hole_is_committed() -> None:
    store = MemoryOffsetStore()
    worker_task, producers, listener = make(ListTask([[rec("a", 0), rec("a", 1), rec("a", 2)]]), store)
    worker_task.start()
    wait_until(lambda: producers and len(producers[0].delivery.produced) == 3, 10, "3 records produced")
    producers[0].delivery.release([0, 2])
    producers[0].delivery.release([1], error=KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    assert worker_task.join(10)
    event = listener.last(TASK)
    assert event is not None and event.state is State.FAILED
    assert "Message size too large" in (event.trace or "")
    assert store.get("c", {"p": "a"}) == {"seq": 0}  # the final commit stops at the hole


@pytest.mark.parametrize("cancel", [True, False])
def test_a_cancelled_task_commits_nothing_more_and_a_stopped_one_commits_what_was_acknowledged(cancel: bool) -> None:
    """Java's finalOffsetCommit: a task the worker gave up on (it did not stop in time) must not write its
    offsets later, over a KIP-875 reset or the next owner's commits; a task that stops commits them."""
    store = MemoryOffsetStore()
    worker_task, producers, listener = make(ListTask([[rec("a", 0), rec("a", 1)]]), store)
    worker_task.start()
    wait_until(lambda: producers and len(producers[0].delivery.produced) == 2, 10, "2 records produced")
    if cancel:
        worker_task.cancel()
    else:
        worker_task.stop()
    assert worker_task.join(10)
    assert producers[0].delivery.reported == {0, 1}  # the close flushed: both acknowledged either way
    assert store.get("c", {"p": "a"}) == (None if cancel else {"seq": 1})
    # a cancelled task reports nothing more: its last state stays the one it had
    assert listener.state(TASK) is (State.RUNNING if cancel else State.UNASSIGNED)


def test_stop_during_start_is_applied_once_start_returns() -> None:
    gate = threading.Event()
    task = ListTask([], start_gate=gate)
    worker_task, _, listener = make(task, MemoryOffsetStore())
    worker_task.start()
    assert task.started.wait(10)
    worker_task.stop()
    assert task.stop_calls == 0  # not while start() is still running...
    gate.set()
    assert worker_task.join(10)
    assert task.stop_calls == 1  # ...but right after it, exactly once
    assert listener.state(TASK) is State.UNASSIGNED


def test_the_task_context_carries_the_metrics_registry_before_start() -> None:
    registry = CollectorRegistry()
    task = ListTask([])
    worker_task, _, _ = make(task, MemoryOffsetStore(), registry)
    worker_task.start()
    try:
        assert task.started.wait(10)
        assert task.registry_at_start is registry
        assert task.context.task_id == 0 and task.context.worker_id == "w"
    finally:
        worker_task.stop()
        assert worker_task.join(10)


class HalfStartingTask(SourceTask):
    """Opens a resource, then fails in ``start`` (a later step: a bad value, an unreachable cluster).

    Records what the runtime calls on it afterwards; ``stop`` may raise, as a task's own bug would.
    """

    def __init__(self, stop_raises: bool = False) -> None:
        self.opened = False
        self.calls: list[str] = []
        self.stop_raises = stop_raises

    def start(self, config: Mapping[str, str]) -> None:
        self.opened = True
        raise ValueError("bad value for some.key")

    def poll(self) -> list[SourceRecord] | None:
        self.calls.append("poll")
        return None

    def stop(self) -> None:
        self.calls.append("stop")
        if self.stop_raises:
            raise RuntimeError("stop of a half-started task")

    def commit(self) -> None:
        self.calls.append("commit")

    def close(self) -> None:
        self.calls.append("close")
        self.opened = False


def test_a_start_that_raises_is_stopped_and_closed_and_fails_with_the_start_error() -> None:
    """Java counts a task as started once initialize is attempted (KAFKA-10792): what start opened is
    released by stop/close. No offset commit (commit) runs for a task that never started."""
    task = HalfStartingTask()
    worker_task, _, listener = make(task, MemoryOffsetStore())
    worker_task.start()
    assert worker_task.join(10)
    assert task.calls == ["stop", "close"]
    assert not task.opened
    event = listener.last(TASK)
    assert event is not None and event.state is State.FAILED
    assert "ValueError: bad value for some.key" in (event.trace or "")


def test_a_stop_that_raises_after_a_failed_start_still_closes_and_keeps_the_start_error() -> None:
    task = HalfStartingTask(stop_raises=True)
    worker_task, _, listener = make(task, MemoryOffsetStore())
    worker_task.start()
    assert worker_task.join(10)
    assert task.calls == ["stop", "close"]
    event = listener.last(TASK)
    assert event is not None and event.state is State.FAILED
    assert "bad value for some.key" in (event.trace or "") and "stop of a half-started" not in (event.trace or "")
    worker_task.stop()  # the worker's later stop (restart) does not stop the task a second time
    assert task.calls == ["stop", "close"]
