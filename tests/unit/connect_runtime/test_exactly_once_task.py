"""ExactlyOnceWorkerSourceTask with a fake transactional producer: what goes into each transaction, when the
task hears of its records, what a failure aborts. The broker side (fencing, kill -9, the offsets topic read
back read_committed) is tested on real brokers in tests/integration/test_exactly_once.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from prometheus_client import CollectorRegistry

from connect_runtime.api.bulk import BulkSink, BulkSourceTask
from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceMap, SourceRecord
from connect_runtime.api.transforms import TransformationChain, build_chain
from connect_runtime.lifecycle import ConnectorTaskId, State
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.task.exactly_once_task import (
    ExactlyOnceWorkerSourceTask,
    exactly_once_settings,
    transactional_offsets,
    transactional_producer_config,
)
from connect_runtime.runtime.task.source_task_settings import SourceTaskSettings, TransactionSettings
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.storage.offset_store import OffsetMap, serialize_key, serialize_value
from tests.support.fakes import FakeProducer
from tests.support.kafka import wait_until
from tests.unit.connect_runtime.test_worker_source_task_unit import ListTask, rec

TASK = ConnectorTaskId("c", 0)


class TxnProducer(FakeProducer):
    """A FakeProducer that logs its transaction calls next to its records (``log``)."""

    def __init__(self, config: Any, log: list[Any], init_error: KafkaError | None = None) -> None:
        super().__init__(config)
        self.log = log
        self.init_error = init_error

    def init_transactions(self, timeout: float) -> None:
        if self.init_error is not None:
            raise KafkaException(self.init_error)
        self.log.append("init")

    def begin_transaction(self) -> None:
        self.log.append("begin")

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                **kwargs: Any) -> None:
        self.log.append(("produce", topic, value, key))
        super().produce(topic, value, key, partition, **kwargs)

    def commit_transaction(self, timeout: float) -> None:
        self.flush()  # librdkafka's commit flushes first (here: the offset records)
        self.log.append("commit")

    def abort_transaction(self, timeout: float) -> None:
        self.log.append("abort")


class Offsets(MemoryOffsetStore):
    """A memory offset store with a transactional side: records for the offsets topic."""

    def __init__(self) -> None:
        super().__init__()
        self.refreshed = 0

    def records_for(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]]
                    ) -> list[tuple[str, int, bytes, bytes | None]]:
        return [("offsets", 0, serialize_key(connector, p), serialize_value(o)) for p, o in offsets]

    def refresh(self, timeout_s: float = 30.0) -> None:
        self.refreshed += 1


class NotifiedTask(ListTask):
    def __init__(self, batches: list[list[SourceRecord]], log: list[Any]) -> None:
        super().__init__(batches)
        self.log = log

    def commit_records(self, records: Sequence[tuple[SourceRecord, Any]]) -> None:
        self.log.append(("acknowledged", len(records)))


def make(task: ListTask, log: list[Any], init_error: KafkaError | None = None, cls: type[TxnProducer] = TxnProducer,
         transforms: TransformationChain | None = None, flush_timeout_s: float = 5.0,
         check: Callable[[], None] | None = None,
         ) -> tuple[ExactlyOnceWorkerSourceTask, list[TxnProducer], RecordingStatusListener, Offsets]:
    producers: list[TxnProducer] = []

    def factory(config: dict[str, str]) -> Any:
        producers.append(cls(config, log, init_error))
        return producers[-1]

    listener = RecordingStatusListener()
    offsets = Offsets()
    settings = SourceTaskSettings("w", offset_flush_interval_s=0.0, log_flow="A->B",
                                  offset_flush_timeout_s=flush_timeout_s,
                                  transactions=TransactionSettings("g-c-0", "poll"))
    worker_task = ExactlyOnceWorkerSourceTask(
        TASK, task, {}, settings, offset_store=offsets,
        producer_config={"bootstrap.servers": "b:9092"}, status_listener=listener,
        metrics=ConnectMetrics.create(CollectorRegistry()).for_task("c", 0), producer_factory=factory,
        metrics_registry=CollectorRegistry(), transforms=transforms, post_producer_check=check)
    return worker_task, producers, listener, offsets


def test_each_poll_batch_commits_with_its_offsets_and_the_task_hears_after_the_commit() -> None:
    log: list[Any] = []
    task = NotifiedTask([[rec("a", 0), rec("a", 1)], [rec("a", 2)]], log)
    worker_task, producers, _, offsets = make(task, log)
    worker_task.start()
    wait_until(lambda: log.count("commit") >= 2, 10, "two transactions committed")
    worker_task.stop()
    assert worker_task.join(10)
    assert producers[0].config["transactional.id"] == "g-c-0"
    assert offsets.refreshed == 1  # the offsets were read again once init_transactions resolved old ones
    first = log[:log.index("commit") + 2]
    assert first[:2] == ["init", "begin"]
    data = [e for e in first if isinstance(e, tuple) and e[0] == "produce" and e[1] == "t"]
    written = [e for e in first if isinstance(e, tuple) and e[0] == "produce" and e[1] == "offsets"]
    assert len(data) == 2 and written == [("produce", "offsets", b'{"seq":1}', b'["c",{"p":"a"}]')]
    # commit_records only after the transaction holding the records committed
    assert log.index(("acknowledged", 2)) > log.index("commit")
    assert worker_task.committed_transactions >= 2 and worker_task.failure is None


class BulkListTask(NotifiedTask, BulkSourceTask):
    """Offers the bulk path; with transformations the runtime must not take it (they run per record)."""

    def bulk_ready(self) -> bool:
        return True

    def poll_bulk(self, sink: BulkSink) -> int:
        raise AssertionError("a task with transformations was run on the bulk path")


def test_a_bulk_task_with_transformations_runs_per_record_and_transformed() -> None:
    """As at least once: the bulk path produces the task's input as it is, so transformations keep a task
    on the per-record path (exactly-once took the bulk path regardless before issue 30)."""
    log: list[Any] = []
    task = BulkListTask([[rec("a", 0), rec("a", 1)]], log)
    chain = build_chain({"transforms": "h", "transforms.h.type": "InsertHeader", "transforms.h.header": "via",
                         "transforms.h.value.literal": "b"})
    worker_task, producers, _, _ = make(task, log, transforms=chain)
    worker_task.start()
    wait_until(lambda: ("acknowledged", 2) in log, 10, "the records committed in a transaction")
    worker_task.stop()
    assert worker_task.join(10)
    assert worker_task.failure is None and not worker_task.bulk
    produced = [p for p in producers[0].delivery.produced if p.topic == "t"]
    assert len(produced) == 2 and all(("via", b"b") in list(p.headers or []) for p in produced), produced


def test_a_refused_record_aborts_the_transaction_and_fails_the_task() -> None:
    log: list[Any] = []
    task = NotifiedTask([[rec("a", 0), rec("a", 1)]], log)

    class Refusing(TxnProducer):
        """The broker refuses the records (a newer producer holds the id); the commit then fails, as
        librdkafka's does when a record of the transaction failed."""

        def flush(self, timeout: float | None = None) -> int:
            self.delivery.release(error=KafkaError(KafkaError.PRODUCER_FENCED))
            self.poll(0)
            return 0

        def commit_transaction(self, timeout: float) -> None:
            self.flush()
            raise KafkaException(KafkaError(KafkaError.PRODUCER_FENCED))

    worker_task, _, _, _ = make(task, log, cls=Refusing)
    worker_task.start()
    assert worker_task.join(10)
    assert "abort" in log and "commit" not in log
    assert not any(e == ("acknowledged", 2) for e in log)
    assert "fenced: a newer instance of this task" in str(worker_task.failure)
    assert worker_task.state is State.FAILED


class SlowCommit(TxnProducer):
    """A target slower than offset.flush.timeout.ms: the first ``slow`` commit calls time out, as librdkafka's
    does (a retriable _TIMED_OUT, the same commit finished by the next call)."""

    slow = 4

    def commit_transaction(self, timeout: float) -> None:
        if self.slow > 0:
            self.slow -= 1
            time.sleep(0.05)
            self.log.append("commit timed out")
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True))
        super().commit_transaction(timeout)


def test_a_commit_slower_than_the_flush_timeout_keeps_waiting_and_the_task_runs_on(
        caplog: pytest.LogCaptureFixture) -> None:
    """KIP-618: offset.flush.timeout.ms does not bound an exactly-once commit (Java blocks until it completes)."""
    log: list[Any] = []
    task = NotifiedTask([[rec("a", 0), rec("a", 1)], [rec("a", 2)]], log)
    worker_task, _, listener, _ = make(task, log, cls=SlowCommit, flush_timeout_s=0.1)
    worker_task.start()
    wait_until(lambda: log.count("commit") >= 2, 10, "two transactions committed")
    worker_task.stop()
    assert worker_task.join(10)
    assert worker_task.failure is None and State.FAILED not in [e.state for e in listener.events]
    first = log[:log.index("commit") + 1]
    assert first.count("commit timed out") == 4 and "abort" not in log
    # the offsets went into the transaction once, before the first call; the retries only wait
    assert [e for e in first if isinstance(e, tuple) and e[1] == "offsets"] == [
        ("produce", "offsets", b'{"seq":1}', b'["c",{"p":"a"}]')]
    assert log.index(("acknowledged", 2)) > log.index("commit")
    assert "keeps waiting until the target completes it" in caplog.text


def test_a_stop_during_a_slow_commit_hands_it_to_the_final_commit() -> None:
    """A boundary's commit that is still waiting when the task stops is finished by the final commit (within
    its budget), without writing its offsets a second time."""
    log: list[Any] = []
    task = NotifiedTask([[rec("a", 0), rec("a", 1)]], log)

    class UntilStopped(SlowCommit):
        slow = 1_000_000

        def commit_transaction(self, timeout: float) -> None:
            if timeout > 1.0:  # the final commit's budget (5 s), not a boundary's 1 s slice
                self.slow = 0
            super().commit_transaction(timeout)

    worker_task, _, _, _ = make(task, log, cls=UntilStopped)
    worker_task.start()
    wait_until(lambda: "commit timed out" in log, 10, "the first commit waiting")
    worker_task.stop()
    assert worker_task.join(10)
    assert worker_task.failure is None and log.count("commit") == 1 and "abort" not in log
    assert len([e for e in log if isinstance(e, tuple) and e[1] == "offsets"]) == 1
    assert ("acknowledged", 2) in log


def test_a_target_without_transactions_fails_the_task_with_one_line_naming_the_cluster() -> None:
    log: list[Any] = []
    worker_task, _, _, _ = make(NotifiedTask([], log), log,
                                init_error=KafkaError(KafkaError.UNSUPPORTED_VERSION, "no transactions"))
    worker_task.start()
    assert worker_task.join(10)
    message = str(worker_task.failure)
    assert "target cluster of flow A->B (b:9092)" in message and "exactly.once.source.support" in message
    assert "\n" not in message and worker_task.state is State.FAILED


class StartedTask(NotifiedTask):
    def start(self, config: Any) -> None:
        self.log.append("task started")


def test_the_post_producer_check_runs_after_init_transactions_and_before_the_offsets_are_read() -> None:
    log: list[Any] = []
    refreshed_at_check: list[int] = []

    def check() -> None:
        refreshed_at_check.append(offsets.refreshed)
        log.append("check")

    worker_task, _, _, offsets = make(StartedTask([[rec("a", 0)]], log), log, check=check)
    worker_task.start()
    wait_until(lambda: "commit" in log, 10, "a transaction committed")
    worker_task.stop()
    assert worker_task.join(10)
    assert log[:4] == ["init", "begin", "check", "task started"]
    assert refreshed_at_check == [0] and offsets.refreshed == 1 and worker_task.failure is None


def test_a_task_whose_post_producer_check_fails_produces_nothing_and_fails() -> None:
    """The herder's check found a newer task-config generation (or the task revoked) once the producer was up: the
    task must not produce, since a fencing of the new generation may have come before its init_transactions."""
    log: list[Any] = []

    def check() -> None:
        raise ConnectError("Cannot start source task c-0 with exactly-once support: the connector has generated a "
                           "new set of task configs since the task was started")

    worker_task, _, _, offsets = make(StartedTask([[rec("a", 0)]], log), log, check=check)
    worker_task.start()
    assert worker_task.join(10)
    assert "task started" not in log and not [e for e in log if isinstance(e, tuple) and e[0] == "produce"]
    assert "commit" not in log and offsets.refreshed == 0
    assert worker_task.state is State.FAILED and "new set of task configs" in str(worker_task.failure)


def test_transactional_producer_config_bounds_the_delivery_timeout() -> None:
    config = transactional_producer_config({"message.timeout.ms": "0", "acks": "1"}, "id")
    assert config["transactional.id"] == "id" and config["acks"] == "all" and config["enable.idempotence"] == "true"
    assert config["message.timeout.ms"] == config["transaction.timeout.ms"] == "60000"


def test_the_settings_of_a_task_under_exactly_once_come_from_its_transaction_boundary() -> None:
    """Built once by the worker: ``poll`` commits after every batch (interval 0), ``interval`` every
    ``transaction.boundary.interval.ms`` (in seconds) or, without it, every offset flush interval."""
    base = SourceTaskSettings("w", offset_flush_interval_s=60.0)
    assert exactly_once_settings(base, None, TASK, {}) is base  # at least once: unchanged
    poll = exactly_once_settings(base, "g", TASK, {})
    assert poll.transactions == TransactionSettings("g-c-0", "poll") and poll.offset_flush_interval_s == 0.0
    interval = exactly_once_settings(base, "g", TASK, {"transaction.boundary": "Interval",
                                                       "transaction.boundary.interval.ms": "2500"})
    assert interval.transactions == TransactionSettings("g-c-0", "interval")
    assert interval.offset_flush_interval_s == 2.5
    assert exactly_once_settings(base, "g", TASK, {"transaction.boundary": "interval"}).offset_flush_interval_s == 60
    with pytest.raises(ConnectError, match=r"transaction\.boundary=connector"):
        exactly_once_settings(base, "g", TASK, {"transaction.boundary": "connector"})
    with pytest.raises(ConnectError, match="needs the Kafka offsets store, not MemoryOffsetStore"):
        transactional_offsets(MemoryOffsetStore())
