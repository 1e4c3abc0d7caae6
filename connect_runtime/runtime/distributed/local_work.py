"""The connectors and tasks running on this worker, changed only by applying reconciliation plans.

The herder's tick thread computes a :class:`~connect_runtime.runtime.distributed.reconciler.ReconcilePlan` and
hands it here; this module turns each step into a Worker call, keeps :class:`RunningWork` in step with
it and reports start failures to the status topic. A connector or task that failed to start stays
recorded as running (so it is not restarted in a loop); a restart request or a config change stops it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.runtime.distributed import reconciler
from connect_runtime.runtime.distributed.reconciler import ReconcilePlan, RunningWork
from connect_runtime.runtime.distributed.task_reconfiguration import ReconfigurationSchedule
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.runtime.worker.worker_runtime import WorkerRuntime
from connect_runtime.storage.config_topic_state import ClusterConfigState

logger = logging.getLogger(__name__)

#: What a task of a snapshot checks once its transactional producer fenced older ones, if anything (the herder's
#: generation and ownership check under exactly-once: exactly_once_task.py).
TaskCheck = Callable[[ConnectorTaskId, ClusterConfigState], Callable[[], None] | None]


class LocalWork:
    """Applies plans to the Worker (tick thread only)."""

    def __init__(self, worker: WorkerRuntime, status: StatusWriter, on_reconfigure: Callable[[str], None],
                 task_shutdown_timeout_s: float, task_check: TaskCheck | None = None) -> None:
        self._worker = worker
        self._status = status
        self._task_check = task_check
        #: When each running connector's task configs are due to be recomputed: a connector is due
        #: when it starts (or resumes) and forgotten when it stops.
        self.reconfigurations = ReconfigurationSchedule()
        #: What a connector calls (any thread) to have its task configs recomputed.
        self._on_reconfigure = on_reconfigure
        self._task_timeout_s = task_shutdown_timeout_s
        self.running = RunningWork()

    def runs_connector(self, name: str) -> bool:
        return name in self.running.connectors

    def runs_task(self, task: ConnectorTaskId) -> bool:
        return task in self.running.tasks

    def reconcile(self, connectors: Iterable[str], tasks: Iterable[ConnectorTaskId],
                  snapshot: ClusterConfigState) -> None:
        """Make the worker run exactly the assigned work of ``snapshot``."""
        self.apply(reconciler.plan(connectors, tasks, snapshot, self.running), snapshot)

    def apply(self, plan: ReconcilePlan, snapshot: ClusterConfigState) -> None:
        self.stop_tasks(plan.stop_tasks)
        for name in plan.stop_connectors:
            self.stop_connector(name)
        for name, config, state in plan.start_connectors:
            self._start_connector(name, config, state)
        for name, state in plan.target_state_changes:
            self._change_target_state(name, state)
        for task, config, state in plan.start_tasks:
            check = None if self._task_check is None else self._task_check(task, snapshot)
            self._start_task(task, snapshot.connector_configs[task.connector], config, state,
                             snapshot.task_count(task.connector), check)
        moved_with_connector = {name for name, _state in plan.target_state_changes}
        for task, state in plan.task_state_changes:
            self.running.task_states[task] = state
            if task.connector not in moved_with_connector:
                # The connector runs on another worker (or not at all): the worker moved nothing here,
                # so pause or resume this worker's tasks of it directly.
                moved_with_connector.add(task.connector)
                self._worker.set_target_state(task.connector, state)

    def stop_all(self) -> None:
        self.stop_tasks(list(self.running.tasks))
        for name in list(self.running.connectors):
            self.stop_connector(name)

    def _start_connector(self, name: str, config: Mapping[str, str], state: TargetState) -> None:
        logger.info("Starting connector %s (target state %s)", name, state.value)
        self.running.connectors[name] = config
        self.running.connector_states[name] = state
        try:
            started = self._worker.start_connector(name, config, state, self._on_reconfigure)
        except Exception as exc:
            logger.exception("Connector %s failed to start", name)
            self._status.on_connector_failure(name, f"{type(exc).__name__}: {exc}")
            return
        if started and state is TargetState.STARTED:
            self.reconfigurations.started(name)

    def stop_connector(self, name: str) -> None:
        logger.info("Stopping connector %s", name)
        self.running.connectors.pop(name, None)
        self.running.connector_states.pop(name, None)
        self.reconfigurations.stopped(name)
        try:
            self._worker.stop_connector(name)
        except Exception:
            logger.exception("Error stopping connector %s", name)

    def _start_task(self, task: ConnectorTaskId, connector_config: Mapping[str, str], config: Mapping[str, str],
                    state: TargetState, generation_size: int, check: Callable[[], None] | None = None) -> None:
        self.running.tasks[task] = config
        self.running.task_states[task] = state
        # The generation's size tells a restart of an old task from a task of a new generation in the log.
        logger.info("Starting task %s (of %d)", task, generation_size)
        try:
            self._worker.start_task(task, connector_config, config, state, post_producer_check=check)
        except Exception as exc:
            logger.exception("Task %s failed to start", task)
            self._status.on_task_failure(task, f"{type(exc).__name__}: {exc}")

    def stop_tasks(self, tasks: Sequence[ConnectorTaskId]) -> None:
        if not tasks:
            return
        logger.info("Stopping %d task(s): %s", len(tasks), ", ".join(str(t) for t in sorted(tasks)))
        for task in tasks:
            self.running.tasks.pop(task, None)
            self.running.task_states.pop(task, None)
        self._worker.stop_tasks(list(tasks), self._task_timeout_s)

    def _change_target_state(self, name: str, state: TargetState) -> None:
        previous = self.running.connector_states.get(name)
        logger.info("Connector %s target state %s -> %s", name, None if previous is None else previous.value,
                    state.value)
        self.running.connector_states[name] = state
        self._worker.set_target_state(name, state)
        if state is TargetState.STARTED:
            self.reconfigurations.started(name)
