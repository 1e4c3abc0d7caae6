"""LocalWork applies reconciliation plans to the worker: target-state changes reach every task here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.runtime.distributed.local_work import LocalWork
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.storage.config_topic_state import ClusterConfigState

A0, A1 = ConnectorTaskId("a", 0), ConnectorTaskId("a", 1)


class RecordingWorker:
    """The WorkerRuntime seam, recording what the herder asks of it."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def start_connector(self, name: str, config: Mapping[str, str], target_state: TargetState,
                        on_reconfigure: Callable[[str], None]) -> bool:
        self.calls.append(("start_connector", name, target_state))
        return True

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop_connector(self, name: str) -> None:
        self.calls.append(("stop_connector", name))

    def start_task(self, task: ConnectorTaskId, connector_config: Mapping[str, str],
                   task_config: Mapping[str, str], target_state: TargetState,
                   post_producer_check: Callable[[], None] | None = None) -> bool:
        self.calls.append(("start_task", task, target_state))
        return True

    def stop_tasks(self, ids: Sequence[ConnectorTaskId], timeout_s: float) -> None:
        self.calls.append(("stop_tasks", tuple(ids)))

    def set_target_state(self, name: str, state: TargetState) -> None:
        self.calls.append(("set_target_state", name, state))


def snapshot(state: TargetState) -> ClusterConfigState:
    return ClusterConfigState(offset=1, connector_configs={"a": {"v": "1"}},
                              task_configs={A0: {"t": "0"}, A1: {"t": "1"}}, task_counts={"a": 2},
                              target_states={"a": state})


def local_work(worker: RecordingWorker) -> LocalWork:
    return LocalWork(worker, StatusWriter(None, "w1"), lambda _name: None, 1.0)  # type: ignore[arg-type]


def test_pausing_a_connector_pauses_its_tasks_on_a_worker_that_does_not_run_the_connector() -> None:
    worker = RecordingWorker()
    work = local_work(worker)
    work.reconcile([], [A0, A1], snapshot(TargetState.STARTED))  # only tasks of "a" run here
    worker.calls.clear()
    work.reconcile([], [A0, A1], snapshot(TargetState.PAUSED))
    assert worker.calls == [("set_target_state", "a", TargetState.PAUSED)]
    assert work.running.task_states == {A0: TargetState.PAUSED, A1: TargetState.PAUSED}
    worker.calls.clear()
    work.reconcile([], [A0, A1], snapshot(TargetState.STARTED))
    assert worker.calls == [("set_target_state", "a", TargetState.STARTED)]


def test_a_worker_running_the_connector_moves_its_tasks_with_it_once() -> None:
    worker = RecordingWorker()
    work = local_work(worker)
    work.reconcile(["a"], [A0, A1], snapshot(TargetState.STARTED))
    worker.calls.clear()
    work.reconcile(["a"], [A0, A1], snapshot(TargetState.PAUSED))
    assert worker.calls == [("set_target_state", "a", TargetState.PAUSED)]
