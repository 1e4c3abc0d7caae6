"""WorkerSourceTask against real brokers: delivery, offset commits, failures, pause and bounded memory.

The sequence task writes ``{"task": 0, "seq": s}`` records, so loss (a missing seq) and duplicates (a
repeated seq) are visible in the target topic.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from connect_runtime.api.errors import ConfigError, RetriableError
from connect_runtime.api.records import RecordMetadata, SourceRecord
from connect_runtime.lifecycle import State
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import run_source_task
from connect_runtime.testing.sequence_source import SequenceSourceTask
from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, unique, wait_until

pytestmark = pytest.mark.integration

PARTITION = {"task": 0}


def seqs_in(bootstrap: str, topic: str, expect: int | None = None) -> list[int]:
    return [json.loads(r.value or b"{}")["seq"] for r in consume_all(bootstrap, topic, expect=expect)]


def config(topic: str, **extra: Any) -> dict[str, str]:
    return {"topic": topic, **{k.replace("_", "."): str(v) for k, v in extra.items()}}


class AckRecordingTask(SequenceSourceTask):
    """Remembers where the target stored each seq it acknowledged (commit_record runs on the task thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.acked: dict[int, RecordMetadata] = {}

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        assert record.source_offset is not None and metadata is not None
        self.acked[record.source_offset["seq"]] = metadata


class FailingTask(SequenceSourceTask):
    """Raises from poll() once it has handed out ``fail.at`` records."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.fail_at = int(config["fail.at"])

    def poll(self) -> list[SourceRecord] | None:
        if self._next_seq >= self.fail_at:
            raise RuntimeError(f"boom at seq {self._next_seq}")
        return super().poll()


class ThreadRecordingTask(SequenceSourceTask):
    """Notes the thread each commit_record / commit call runs on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()
        self.commits = 0

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        self.threads.add(threading.current_thread().name)

    def commit(self) -> None:
        self.commits += 1
        self.threads.add(threading.current_thread().name)


class HiccupTask(SequenceSourceTask):
    """Raises RetriableError from its first ``hiccups`` polls, then behaves."""

    hiccups = 3

    def poll(self) -> list[SourceRecord] | None:
        if self.hiccups > 0:
            self.hiccups -= 1
            raise RetriableError("source leader moved")
        return super().poll()


class BrokenStartTask(SequenceSourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        raise ConfigError("bad source.cluster.bootstrap.servers", "source.cluster.bootstrap.servers")


class CheckingStore(MemoryOffsetStore):
    """Fails the test if an offset is committed before its record and every earlier one were acknowledged."""

    def __init__(self, acked: Callable[[], Mapping[int, RecordMetadata]]) -> None:
        super().__init__()
        self._acked = acked
        self.violations: list[str] = []

    def put(self, connector: str, offsets: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
            timeout_s: float = 30.0) -> None:
        acked = self._acked()
        for _, offset in offsets:
            assert offset is not None
            missing = [s for s in range(offset["seq"] + 1) if s not in acked]
            if missing:
                self.violations.append(f"seq {offset['seq']} committed, unacked: {missing[:3]}")
        super().put(connector, offsets, timeout_s)


def test_sequence_task_writes_every_record_and_commits_the_last_seq(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("wst-all"))
    with run_source_task(SequenceSourceTask, config(topic, max_records=5000),
                         bootstrap_servers=cluster_a.bootstrap) as run:
        wait_until(lambda: run.records_written() == 5000, 60, "5000 records acknowledged")
        run.commit_now()
        assert run.committed(PARTITION) == {"seq": 4999}
        assert run.outstanding() == 0
    assert seqs_in(cluster_a.bootstrap, topic, expect=5000) == list(range(5000))


def test_full_producer_queue_is_waited_out_without_loss_or_reordering(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("wst-queue"))
    tiny_queue = {"queue.buffering.max.messages": "7"}  # nearly every produce() meets BufferError
    with run_source_task(SequenceSourceTask, config(topic, max_records=1000, batch_size=500),
                         producer_config=tiny_queue, bootstrap_servers=cluster_a.bootstrap) as run:
        wait_until(lambda: run.records_written() == 1000, 60, "1000 records acknowledged")
        run.commit_now()
        assert run.committed(PARTITION) == {"seq": 999}
        assert run.worker_task.peak_outstanding <= 7 + 1  # the queue, plus the record being offered to it
    assert seqs_in(cluster_a.bootstrap, topic, expect=1000) == list(range(1000))


def test_stop_flushes_and_commits_then_restart_resumes_without_gap_or_duplicate(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("wst-stop"))
    store = MemoryOffsetStore()
    # No periodic commit: only the final commit on stop can store the offsets.
    with run_source_task(SequenceSourceTask, config(topic, max_records=3000), offset_store=store,
                         bootstrap_servers=cluster_a.bootstrap, offset_flush_interval_ms=600_000) as run:
        wait_until(lambda: run.records_polled() == 3000, 60, "3000 records polled")
        assert store.history == []
    assert store.get("test-connector", PARTITION) == {"seq": 2999}
    assert run.state() is State.UNASSIGNED

    with run_source_task(SequenceSourceTask, config(topic, max_records=5000), offset_store=store,
                         bootstrap_servers=cluster_a.bootstrap) as run:
        wait_until(lambda: run.records_written() == 2000, 60, "the remaining 2000 records acknowledged")
    assert store.get("test-connector", PARTITION) == {"seq": 4999}
    assert seqs_in(cluster_a.bootstrap, topic, expect=5000) == list(range(5000))


def test_poll_failure_reports_failed_with_trace_commits_acked_and_restarts(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("wst-fail"))
    store = MemoryOffsetStore()
    with run_source_task(FailingTask, {**config(topic, batch_size=100), "fail.at": "500"}, offset_store=store,
                         bootstrap_servers=cluster_a.bootstrap, offset_flush_interval_ms=600_000,
                         wait_running_s=None) as run:  # five quick polls: it may fail before RUNNING is seen
        run.wait_for_state(State.FAILED)
        trace = run.trace() or ""
        assert "RuntimeError: boom at seq 500" in trace and "Traceback" in trace
    # The records handed out before the failure were flushed and their offsets committed on the way out.
    assert store.get("test-connector", PARTITION) == {"seq": 499}

    with run_source_task(SequenceSourceTask, config(topic, max_records=800), offset_store=store,
                         bootstrap_servers=cluster_a.bootstrap) as run:
        wait_until(lambda: run.records_written() == 300, 60, "300 more records acknowledged")
        assert run.state() is State.RUNNING
    assert seqs_in(cluster_a.bootstrap, topic, expect=800) == list(range(800))


def test_failed_offset_commit_is_retried_and_callbacks_run_on_the_task_thread(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("wst-commitfail"))
    store = MemoryOffsetStore()
    store.fail_puts = True
    task = ThreadRecordingTask()
    with run_source_task(task, config(topic, max_records=200), offset_store=store,
                         bootstrap_servers=cluster_a.bootstrap, offset_flush_interval_ms=600_000) as run:
        wait_until(lambda: run.records_written() == 200, 30, "200 records written")
        run.commit_now()
        failures = run.registry.get_sample_value("connect_source_task_offset_commit_failures_total",
                                                 {"connector": "test-connector", "task": "0"})
        assert failures == 1
        assert run.committed(PARTITION) is None
        assert task.commits == 0  # Java: task.commit() only follows a successful offset commit
        store.fail_puts = False
        run.commit_now()
        assert run.committed(PARTITION) == {"seq": 199}
        assert task.commits == 1
    assert task.threads == {"task-test-connector-0"}


def test_retriable_poll_error_is_retried_not_fatal(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("wst-retry"))
    task = HiccupTask()
    with run_source_task(task, config(topic, max_records=100), bootstrap_servers=cluster_a.bootstrap) as run:
        wait_until(lambda: run.records_written() == 100, 30, "100 records written after the hiccups")
        assert task.hiccups == 0
        assert [e.state for e in run.listener.events] == [State.RUNNING]


def test_start_failure_reports_failed_with_its_trace(cluster_a: Cluster) -> None:
    with run_source_task(BrokenStartTask, config("unused"), bootstrap_servers=cluster_a.bootstrap,
                         wait_running_s=None) as run:
        run.wait_for_state(State.FAILED)
        assert "ConfigError: bad source.cluster.bootstrap.servers" in (run.trace() or "")
    assert not run.worker_task.is_alive()
    assert run.records_polled() == 0


def test_delivery_error_fails_the_task(cluster_a: Cluster) -> None:
    missing_topic = unique("wst-missing")  # never created; auto-creation off: every delivery fails
    producer = {"allow.auto.create.topics": "false", "topic.metadata.propagation.max.ms": "500"}
    with run_source_task(SequenceSourceTask, config(missing_topic, max_records=10), producer_config=producer,
                         bootstrap_servers=cluster_a.bootstrap) as run:
        run.wait_for_state(State.FAILED, 60)
        assert "did not acknowledge a record" in (run.trace() or "")
        assert run.committed(PARTITION) is None
        assert run.registry.get_sample_value("connect_source_task_produce_errors_total",
                                             {"connector": "test-connector", "task": "0"}) >= 1


def test_pause_stops_polling_and_resume_continues(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("wst-pause"))
    with run_source_task(SequenceSourceTask, config(topic, records_per_second=500, batch_size=50),
                         bootstrap_servers=cluster_a.bootstrap) as run:
        wait_until(lambda: run.records_written() >= 100, 30, "100 records written")
        run.pause()
        run.wait_for_state(State.PAUSED)
        run.commit_now()
        polled = run.records_polled()
        run.commit_now()  # a full loop iteration later, nothing more was polled
        run.commit_now()
        assert run.records_polled() == polled
        run.resume()
        run.wait_for_state(State.RUNNING)
        wait_until(lambda: run.records_polled() > polled, 30, "polling to continue")
        states = [e.state for e in run.listener.events]
        assert states[:3] == [State.RUNNING, State.PAUSED, State.RUNNING]


def committed_once_settled(run: Any, quiet_s: float = 2.0, timeout_s: float = 30.0) -> Any:
    """Commit until the committed offset has not moved for ``quiet_s``; returns it."""
    deadline = time.monotonic() + timeout_s
    run.commit_now()
    last, since = run.committed(PARTITION), time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, f"committed offsets still moving after {timeout_s:g}s: {last}"
        time.sleep(0.2)
        run.commit_now()
        now = run.committed(PARTITION)
        if now != last:
            last, since = now, time.monotonic()
    return last


def test_paused_broker_freezes_commits_and_bounds_outstanding(
        fresh_cluster: Callable[[str], Cluster]) -> None:
    target = fresh_cluster("t")
    assert target.broker is not None
    topic = create_topic(target.bootstrap, unique("wst-hung"))
    task = AckRecordingTask()
    store = CheckingStore(lambda: task.acked)
    cap = 2000
    with run_source_task(task, config(topic, batch_size=500), offset_store=store, max_outstanding_records=cap,
                         bootstrap_servers=target.bootstrap, offset_flush_interval_ms=200) as run:
        wait_until(lambda: run.records_written() >= 5000, 60, "5000 records written")
        target.broker.pause()  # SIGSTOP: the broker keeps its sockets but answers nothing
        try:
            wait_until(lambda: run.outstanding() == cap, 30, "the outstanding cap to be reached")
            # Answers the broker wrote just before SIGSTOP may still sit in the client's socket buffer and
            # arrive as acknowledgements afterwards (CheckingStore proves each commit was acknowledged):
            # the freeze is asserted from the moment the committed offset stopped moving.
            frozen = committed_once_settled(run)
            wait_until(lambda: run.outstanding() == cap, 30, "the cap to be reached again after late answers")
            polled = run.records_polled()
            for _ in range(5):
                run.commit_now()
                assert run.outstanding() <= cap
            assert run.committed(PARTITION) == frozen, "offsets advanced while nothing was acknowledged"
            assert run.records_polled() == polled, "the task was polled while at the cap"
            gauge = run.registry.get_sample_value("connect_source_task_outstanding_records",
                                                  {"connector": "test-connector", "task": "0"})
            assert gauge == cap
        finally:
            target.broker.resume()
        assert frozen is not None
        wait_until(lambda: run.records_written() >= polled + 5000, 60, "delivery to resume")
        run.pause()
        run.wait_for_state(State.PAUSED)
        wait_until(lambda: run.outstanding() == 0, 60, "every record acknowledged")
        run.commit_now()
        last = run.committed(PARTITION)
    assert run.worker_task.peak_outstanding == cap
    assert not store.violations, store.violations[:3]
    assert last is not None
    records = consume_all(target.bootstrap, topic, expect=last["seq"] + 1)
    seqs = [json.loads(r.value or b"{}")["seq"] for r in records]
    assert seqs == list(range(len(seqs))) and len(seqs) >= last["seq"] + 1
    # Every acknowledgement named where the record really is.
    by_offset = {(r.partition, r.offset): s for r, s in zip(records, seqs, strict=True)}
    assert all(by_offset[(m.partition, m.offset)] == s for s, m in task.acked.items())


class GatedStore(MemoryOffsetStore):
    """Holds each ``put`` until ``gate`` is set, so a test can keep a commit in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def put(self, connector: str, offsets: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
            timeout_s: float = 30.0) -> None:
        self.waiting.set()
        assert self.gate.wait(30), "the test never opened the gate"
        super().put(connector, offsets, timeout_s)


def test_commit_on_request_covers_what_was_acknowledged_before_it_and_says_why_it_could_not(
        cluster_a: Cluster) -> None:
    """With a 10-minute flush interval only requests store offsets. A request answered while a commit is in
    flight waits for the next commit, which covers every record acknowledged before the request; a failed
    write, and a task that failed, are answered with why (at once, not after the timeout)."""
    topic = create_topic(cluster_a.bootstrap, unique("wst-request"))
    store = GatedStore()
    task = AckRecordingTask()
    with run_source_task(task, config(topic, records_per_second=400, batch_size=20), offset_store=store,
                         bootstrap_servers=cluster_a.bootstrap, offset_flush_interval_ms=600_000) as run:
        wait_until(lambda: run.records_written() >= 100, 30, "100 records written")
        store.gate.clear()
        store.waiting.clear()
        first = run.worker_task.request_commit()
        assert store.waiting.wait(10), "the first commit never reached the store"
        acked_at_first = max(task.acked.copy())
        wait_until(lambda: max(task.acked.copy()) >= acked_at_first + 40, 30, "more records acknowledged meanwhile")
        acked_before_second = max(task.acked.copy())
        second = run.worker_task.request_commit()
        store.gate.set()
        assert run.worker_task.await_commit(first, 30) is None
        assert run.worker_task.await_commit(second, 30) is None
        assert (run.committed(PARTITION) or {}).get("seq", -1) >= acked_before_second

        store.fail_puts = True
        stored = (run.committed(PARTITION) or {})["seq"]
        wait_until(lambda: max(task.acked.copy()) > stored, 30, "records acknowledged since the last commit")
        error = run.worker_task.commit_offsets(30)
        assert error is not None and "fail_puts is set" in error
        store.fail_puts = False
        assert run.worker_task.commit_offsets(30) is None

    # It fails at its second poll, often before the harness has seen it RUNNING: the block waits for FAILED.
    with run_source_task(FailingTask, {**config(topic, batch_size=100), "fail.at": "100"},
                         bootstrap_servers=cluster_a.bootstrap, offset_flush_interval_ms=600_000,
                         wait_running_s=None) as run:
        run.wait_for_state(State.FAILED)
        began = time.monotonic()
        assert run.worker_task.commit_offsets(30) == "the task is not running (FAILED: boom at seq 100)"
        assert time.monotonic() - began < 5
