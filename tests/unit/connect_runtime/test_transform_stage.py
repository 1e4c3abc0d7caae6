"""Transformations in WorkerSourceTask's per-record path, with the producer seam's fake (its broker
acknowledges only when the test says so): what a dropped record does to offset commits, and what a
failing transformation does under each ``errors.tolerance``. The same on real brokers, end to end:
tests/integration/test_transforms.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from connect_runtime.api.records import Acknowledged, SourceRecord
from connect_runtime.api.transforms import build_chain
from connect_runtime.lifecycle import State
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.task.error_policy import ErrorPolicy
from connect_runtime.runtime.task.worker_source_task import SourceTaskSettings, WorkerSourceTask
from connect_runtime.storage.memory import MemoryOffsetStore
from tests.support.fakes import FakeProducer
from tests.support.kafka import wait_until
from tests.unit.connect_runtime.test_worker_source_task_unit import TASK, ListTask, commit

DROP_TOMBSTONES = {"transforms": "drop,mark", "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
                   "transforms.drop.predicate": "tomb", "predicates": "tomb",
                   "predicates.tomb.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
                   "transforms.mark.type": "InsertHeader", "transforms.mark.header": "via",
                   "transforms.mark.value.literal": "mm2"}


class Boom:
    """A transformation that fails on values b"boom"."""

    def configure(self, configs: Mapping[str, str]) -> None:
        pass

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        if record.value == b"boom":
            raise ValueError("boom")
        return record

    def close(self) -> None:
        pass


class RecordingTask(ListTask):
    def __init__(self, batches: list[list[SourceRecord]]) -> None:
        super().__init__(batches)
        self.acknowledged: list[tuple[SourceRecord, Any]] = []

    def commit_records(self, acknowledged: Acknowledged) -> None:
        self.acknowledged.extend(acknowledged)


def rec(seq: int, value: bytes | None = b"v") -> SourceRecord:
    return SourceRecord("t", value, source_partition={"p": "a"}, source_offset={"seq": seq})


def make(task: ListTask, store: MemoryOffsetStore, config: Mapping[str, str], policy: ErrorPolicy | None = None,
         ) -> tuple[WorkerSourceTask, list[FakeProducer], RecordingStatusListener, Any]:
    producers: list[FakeProducer] = []

    def factory(producer_config: dict[str, str]) -> Any:
        producers.append(FakeProducer(producer_config))
        return producers[-1]

    listener = RecordingStatusListener()
    registry = CollectorRegistry()
    metrics = ConnectMetrics.create(registry).for_task("c", 0)
    settings = SourceTaskSettings("w", offset_flush_interval_s=600.0, error_policy=policy or ErrorPolicy())
    worker_task = WorkerSourceTask(TASK, task, {}, settings, offset_store=store, producer_config={},
                                   status_listener=listener, metrics=metrics, producer_factory=factory,
                                   metrics_registry=CollectorRegistry(), transforms=build_chain(config))
    return worker_task, producers, listener, registry


def test_a_dropped_record_is_done_but_commits_only_behind_earlier_acknowledgements() -> None:
    """As Connect's recordDropped: its offset is committed (a restart does not poll it again), and only
    once every earlier record of its source partition is acknowledged (Invariant C still holds)."""
    store = MemoryOffsetStore()
    task = RecordingTask([[rec(0), rec(1, None), rec(2), rec(3, None)]])
    worker_task, producers, _, _ = make(task, store, DROP_TOMBSTONES)
    worker_task.start()
    try:
        wait_until(lambda: producers and len(producers[0].delivery.produced) == 2, 10, "2 records produced")
        producer = producers[0]
        assert [(p.value, p.headers) for p in producer.delivery.produced] == [(b"v", [("via", b"mm2")])] * 2
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) is None  # seq 1 dropped, but seq 0 is still in flight
        producer.delivery.release([0])
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) == {"seq": 1}  # 0 acknowledged, 1 dropped: done up to 1
        producer.delivery.release([1])
        commit(worker_task, producer)
        assert store.get("c", {"p": "a"}) == {"seq": 3}  # the trailing tombstone is done too
        # The task hears of the records that were written, as the task returned them (its offsets).
        assert [r.source_offset for r, _ in task.acknowledged] == [{"seq": 0}, {"seq": 2}]
        assert all(r.headers is None for r, _ in task.acknowledged)
    finally:
        worker_task.stop()
        assert worker_task.join(10)


def test_a_failing_transformation_fails_the_task_by_default() -> None:
    store = MemoryOffsetStore()
    config = {"transforms": "b", "transforms.b.type": f"{__name__}.Boom"}
    worker_task, producers, listener, _ = make(ListTask([[rec(0), rec(1, b"boom"), rec(2)]]), store, config)
    worker_task.start()
    assert worker_task.join(10)
    event = listener.last(TASK)
    assert event is not None and event.state is State.FAILED
    assert "transformation b failed on a record of topic t: boom" in (event.trace or "")
    assert [p.value for p in producers[0].delivery.produced] == [b"v"]  # nothing after the failure


def test_errors_tolerance_all_skips_a_failing_record_and_commits_past_it() -> None:
    store = MemoryOffsetStore()
    config = {"transforms": "b", "transforms.b.type": f"{__name__}.Boom"}
    worker_task, producers, _, registry = make(ListTask([[rec(0), rec(1, b"boom"), rec(2)]]), store, config,
                                              ErrorPolicy(tolerate=True))
    worker_task.start()
    try:
        wait_until(lambda: producers and len(producers[0].delivery.produced) == 2, 10, "2 records produced")
        producers[0].delivery.release([0, 1])
        commit(worker_task, producers[0])
        assert store.get("c", {"p": "a"}) == {"seq": 2}
        labels = {"connector": "c", "task": "0"}
        assert registry.get_sample_value("connect_source_task_records_skipped_total", labels) == 1
        assert registry.get_sample_value("connect_source_task_records_written_total", labels) == 2
    finally:
        worker_task.stop()
        assert worker_task.join(10)

