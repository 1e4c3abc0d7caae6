"""Offsets wait for the task's durability barrier (``SourceTask.before_offset_commit``), on the per-record
path, at the periodic commit and at the final commit of a stopping task.

No broker: what matters is the order of two calls (the barrier's ``wait``, then ``OffsetStore.put``) and
that offsets stay unwritten while the barrier says no, which a recording store shows directly. The
producer is the shared fake, whose broker acknowledges only when the test says so.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import DurabilityBarrier
from connect_runtime.lifecycle import State
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.task.worker_source_task import SourceTaskSettings, WorkerSourceTask
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.storage.offset_store import OffsetMap
from tests.support.fakes import FakeProducer
from tests.support.kafka import wait_until
from tests.unit.connect_runtime.test_worker_source_task_unit import TASK, ListTask, commit, rec


class RecordingStore(MemoryOffsetStore):
    """The in-memory store, noting each write in the shared ``events`` list."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def put(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]],
            timeout_s: float = 30.0) -> None:
        self.events.append("put")
        super().put(connector, offsets, timeout_s=timeout_s)


class Gate:
    """A barrier the test opens (or breaks); ``wait`` notes itself in ``events``."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.open = threading.Event()
        self.broken = False

    def wait(self, timeout_s: float) -> bool:
        delivered = not self.broken and self.open.wait(timeout_s)
        self.events.append(f"barrier {'delivered' if delivered else 'not delivered'}")
        return delivered


class BarrierTask(ListTask):
    """A task with side writes: each offset commit waits for ``gate``; ``raises`` makes the hook fail."""

    def __init__(self, batches: list[list[Any]], gate: Gate) -> None:
        super().__init__(batches)
        self.gate = gate
        self.raises = False
        self.commits = 0
        self.hook_calls = 0

    def before_offset_commit(self) -> DurabilityBarrier | None:
        self.hook_calls += 1
        if self.raises:
            raise RuntimeError("side producer is gone")
        return self.gate

    def commit(self) -> None:
        self.commits += 1


def setup(batches: list[list[Any]], flush_timeout_ms: int = 100,
          ) -> tuple[WorkerSourceTask, FakeProducer, RecordingStore, BarrierTask, list[str]]:
    events: list[str] = []
    store = RecordingStore(events)
    task = BarrierTask(batches, Gate(events))
    producers: list[FakeProducer] = []

    def factory(config: dict[str, str]) -> Any:
        producers.append(FakeProducer(config))
        return producers[-1]

    settings = SourceTaskSettings("w", offset_flush_interval_s=600.0, offset_flush_timeout_s=flush_timeout_ms / 1000)
    worker_task = WorkerSourceTask(TASK, task, {}, settings, offset_store=store, producer_config={},
                                   status_listener=RecordingStatusListener(),
                                   metrics=ConnectMetrics.create(CollectorRegistry()).for_task("c", 0),
                                   producer_factory=factory, metrics_registry=CollectorRegistry())
    worker_task.start()
    wait_until(lambda: producers and len(producers[0].delivery.produced) == len(batches[0]), 10, "records produced")
    return worker_task, producers[0], store, task, events


def test_offsets_are_not_written_until_the_barrier_reports_the_side_writes_delivered() -> None:
    worker_task, producer, store, task, events = setup([[rec("a", 0), rec("a", 1)]])
    try:
        producer.delivery.release()  # the target acknowledged both records
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) is None  # but the side writes are not delivered: nothing written
        assert events == ["barrier not delivered"]
        assert task.commits == 0  # task.commit() only follows a written commit
        task.gate.open.set()
        commit(worker_task, producer)  # the offsets were put back, so the next interval writes them
        assert store.get("c", {"p": "a"}) == {"seq": 1}
        assert events == ["barrier not delivered", "barrier delivered", "put"]
        assert task.commits == 1
    finally:
        worker_task.stop()
        assert worker_task.join(10)


def test_a_hook_that_raises_fails_the_commit_and_the_offsets_are_retried() -> None:
    worker_task, producer, store, task, events = setup([[rec("a", 0)]])
    try:
        producer.delivery.release()
        task.raises = True
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) is None and "put" not in events
        task.raises = False
        task.gate.open.set()
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) == {"seq": 0}
    finally:
        worker_task.stop()
        assert worker_task.join(10)
    assert worker_task.state is State.UNASSIGNED  # a failed commit never fails the task


def test_the_final_commit_at_stop_writes_nothing_past_undelivered_side_writes() -> None:
    worker_task, producer, store, task, events = setup([[rec("a", 0), rec("a", 1)]])
    producer.delivery.release()
    wait_until(lambda: worker_task.outstanding == 0, 10, "both records acknowledged")
    task.gate.broken = True  # e.g. the side producer's broker refused them
    worker_task.stop()
    assert worker_task.join(10)
    assert task.hook_calls == 1 and events == ["barrier not delivered"]
    assert store.get("c", {"p": "a"}) is None  # after a restart both records are sent again (and mapped)


def test_the_final_commit_at_stop_waits_for_the_barrier_then_writes() -> None:
    worker_task, producer, store, task, events = setup([[rec("a", 0), rec("a", 1)]], flush_timeout_ms=5_000)
    producer.delivery.release()
    wait_until(lambda: worker_task.outstanding == 0, 10, "both records acknowledged")
    worker_task.stop()
    wait_until(lambda: task.hook_calls == 1, 10, "the final commit asking for the barrier")
    assert store.get("c", {"p": "a"}) is None  # the stopping task waits while the side writes are in flight
    task.gate.open.set()
    assert worker_task.join(10)
    assert events == ["barrier delivered", "put"]
    assert store.get("c", {"p": "a"}) == {"seq": 1}
    assert task.commits == 1
    assert worker_task.state is State.UNASSIGNED
