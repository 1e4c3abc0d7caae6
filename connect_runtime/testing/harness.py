"""Run ONE source task through the real runtime against real brokers, for connector tests.

The task goes through the production :class:`~connect_runtime.runtime.task.worker_source_task.WorkerSourceTask`
(same producer settings, delivery tracking, offset commits and status reports as in a worker), so a
connector test exercises the delivery contract, not a fake of it::

    with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=target.bootstrap) as run:
        wait_until(lambda: run.records_written() >= 100, 30, "100 records written")
        run.commit_now()
        assert run.committed({"cluster": "a", "topic": "t", "partition": 0}) == {"offset": 99}

Offsets go to a :class:`~connect_runtime.storage.memory.MemoryOffsetStore` unless a store is given;
pass the same store to a second ``run_source_task`` to test a restart. Leaving the block stops the
task (flush + final commit) and fails if it does not stop in time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import SourceTask
from connect_runtime.api.transforms import build_chain
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.task.error_policy import ErrorPolicy
from connect_runtime.runtime.task.worker_source_task import (
    DEFAULT_MAX_OUTSTANDING_RECORDS,
    SourceTaskSettings,
    WorkerSourceTask,
)
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.storage.offset_store import OffsetMap, OffsetStore


@dataclass
class RunningSourceTask:
    """A task started by :func:`run_source_task`, with what a test needs to observe it."""

    worker_task: WorkerSourceTask
    task_id: ConnectorTaskId
    offset_store: OffsetStore
    listener: RecordingStatusListener
    registry: CollectorRegistry
    metrics: ConnectMetrics = field(repr=False)

    def state(self) -> State:
        """The last reported status: RUNNING, PAUSED, FAILED or UNASSIGNED."""
        return self.listener.state(self.task_id) or State.UNASSIGNED

    def trace(self) -> str | None:
        event = self.listener.last(self.task_id)
        return None if event is None else event.trace

    def wait_for_state(self, state: State, timeout_s: float = 30.0) -> None:
        _wait(lambda: self.state() is state, timeout_s,
              f"{self.task_id} to be {state.value} (is {self.state().value})")

    def committed(self, partition: SourceMap) -> OffsetMap | None:
        """The committed offset of one source partition."""
        return self.offset_store.get(self.task_id.connector, partition)

    def commit_now(self, timeout_s: float = 30.0) -> None:
        """Run an offset-commit cycle now and wait for it (offsets of acknowledged records, task.commit())."""
        before = self.worker_task.commit_cycles
        self.worker_task.request_commit()
        _wait(lambda: self.worker_task.commit_cycles > before or not self.worker_task.is_alive(), timeout_s,
              f"an offset commit of {self.task_id}")

    def records_polled(self) -> float:
        return self._sample("connect_source_task_records_polled_total")

    def records_written(self) -> float:
        """Records the target acknowledged so far."""
        return self._sample("connect_source_task_records_written_total")

    def outstanding(self) -> int:
        return self.worker_task.outstanding

    def pause(self) -> None:
        self.worker_task.transition_to(TargetState.PAUSED)

    def resume(self) -> None:
        self.worker_task.transition_to(TargetState.STARTED)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop (flush, final commit) and wait for the thread; ConnectError if it does not finish."""
        self.worker_task.stop()
        if not self.worker_task.join(timeout_s):
            raise ConnectError(f"{self.task_id} did not stop within {timeout_s}s")

    def _sample(self, name: str) -> float:
        value = self.registry.get_sample_value(
            name, {"connector": self.task_id.connector, "task": str(self.task_id.task)})
        return value or 0.0


@contextmanager
def run_source_task(task: SourceTask | type[SourceTask], config: Mapping[str, str], *,
                    bootstrap_servers: str, connector: str = "test-connector", task_number: int = 0,
                    offset_store: OffsetStore | None = None, producer_config: Mapping[str, str] | None = None,
                    worker_id: str = "harness-worker", offset_flush_interval_ms: int = 1_000,
                    shutdown_timeout_ms: int = 5_000,
                    max_outstanding_records: int = DEFAULT_MAX_OUTSTANDING_RECORDS,
                    target_state: TargetState = TargetState.STARTED, wait_running_s: float | None = 30.0,
                    stop_timeout_s: float = 30.0, error_policy: ErrorPolicy | None = None
                    ) -> Iterator[RunningSourceTask]:
    """Start ``task`` (a SourceTask or its class) with ``config``, writing to ``bootstrap_servers``.

    ``producer_config`` adds librdkafka producer settings; ``transforms``/``predicates`` in ``config``
    apply as the worker applies the connector's. With ``wait_running_s`` the block is entered
    only once the task reported RUNNING (AssertionError if it failed instead, with its trace).
    """
    task_id = ConnectorTaskId(connector, task_number)
    store = offset_store if offset_store is not None else MemoryOffsetStore()
    registry = CollectorRegistry()
    metrics = ConnectMetrics.create(registry)
    listener = RecordingStatusListener()
    instance = task() if isinstance(task, type) else task
    settings = SourceTaskSettings(worker_id, offset_flush_interval_s=offset_flush_interval_ms / 1000,
                                  shutdown_timeout_s=shutdown_timeout_ms / 1000,
                                  max_outstanding_records=max_outstanding_records,
                                  error_policy=error_policy or ErrorPolicy.from_config(config))
    worker_task = WorkerSourceTask(
        task_id, instance, config, settings, offset_store=store,
        producer_config={"bootstrap.servers": bootstrap_servers, **(producer_config or {})},
        status_listener=listener, metrics=metrics.for_task(connector, task_number), target_state=target_state,
        metrics_registry=registry, transforms=build_chain(config))
    running = RunningSourceTask(worker_task, task_id, store, listener, registry, metrics)
    worker_task.start()
    try:
        if wait_running_s is not None and target_state is TargetState.STARTED:
            _wait(lambda: running.state() in (State.RUNNING, State.FAILED), wait_running_s, f"{task_id} to start")
            if running.state() is State.FAILED:
                raise AssertionError(f"{task_id} failed to start:\n{running.trace()}")
        yield running
    except BaseException:
        worker_task.stop()
        worker_task.join(stop_timeout_s)
        raise
    running.stop(stop_timeout_s)


def _wait(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)
