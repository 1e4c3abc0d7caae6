"""What this worker should change so that it runs exactly (assignment x config snapshot): a pure plan.

:func:`plan` compares the work the group assigned to this worker, the cluster's configs and what runs
here now, and returns what to stop and what to start; the herder applies it (tick thread). No threads,
no I/O, so every rule is unit-tested as a table:

* invariant "stop before start": revoked or changed tasks and connectors are stopped first, then new
  ones are started, so a task never runs twice in one worker generation and a Kafka group member can
  take the seat at once;
* a connector or task whose config changed is restarted (stopped, then started with the new config);
* a STOPPED connector runs no tasks (its instance still runs here, in state STOPPED);
* a task runs wherever it is assigned, whether or not its connector instance runs here;
* a running connector whose target state changed is transitioned, not restarted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.storage.config_topic_state import ClusterConfigState

Config = Mapping[str, str]


@dataclass
class RunningWork:
    """What runs on this worker, with the config and target state each was started (or moved) with.

    Owned and changed by the herder's tick thread only.
    """

    connectors: dict[str, Config] = field(default_factory=dict)
    connector_states: dict[str, TargetState] = field(default_factory=dict)
    tasks: dict[ConnectorTaskId, Config] = field(default_factory=dict)
    task_states: dict[ConnectorTaskId, TargetState] = field(default_factory=dict)


@dataclass(frozen=True)
class ReconcilePlan:
    """Steps in the order the herder applies them (stops first)."""

    stop_tasks: list[ConnectorTaskId] = field(default_factory=list)
    stop_connectors: list[str] = field(default_factory=list)
    start_connectors: list[tuple[str, Config, TargetState]] = field(default_factory=list)
    target_state_changes: list[tuple[str, TargetState]] = field(default_factory=list)
    start_tasks: list[tuple[ConnectorTaskId, Config, TargetState]] = field(default_factory=list)
    #: Tasks that keep running while their connector's target state changed: the worker moves them
    #: together with their connector, the herder only records the new state.
    task_state_changes: list[tuple[ConnectorTaskId, TargetState]] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.stop_tasks or self.stop_connectors or self.start_connectors or self.target_state_changes
                    or self.start_tasks or self.task_state_changes)


def target_state(snapshot: ClusterConfigState, name: str) -> TargetState:
    """A connector's target state; STARTED for a connector the snapshot does not know (yet)."""
    return snapshot.target_state(name) or TargetState.STARTED


def plan(connectors: Iterable[str], tasks: Iterable[ConnectorTaskId], snapshot: ClusterConfigState,
         running: RunningWork) -> ReconcilePlan:
    """The steps that make ``running`` equal to the assigned ``connectors`` and ``tasks`` of ``snapshot``."""
    wanted_connectors = {c: snapshot.connector_configs[c] for c in connectors if snapshot.contains(c)}
    wanted_tasks: dict[ConnectorTaskId, Config] = {}
    for task in tasks:
        config = snapshot.task_config(task)
        if (config is not None and snapshot.contains(task.connector) and task in snapshot.tasks(task.connector)
                and target_state(snapshot, task.connector) is not TargetState.STOPPED):
            wanted_tasks[task] = config
    stop_tasks = [t for t, config in running.tasks.items() if wanted_tasks.get(t) != config]
    stop_connectors = [c for c, config in running.connectors.items() if wanted_connectors.get(c) != config]
    still_running = set(running.connectors) - set(stop_connectors)
    start_connectors: list[tuple[str, Config, TargetState]] = []
    changes: list[tuple[str, TargetState]] = []
    for name, config in sorted(wanted_connectors.items()):
        state = target_state(snapshot, name)
        if name not in still_running:
            start_connectors.append((name, config, state))
        elif running.connector_states.get(name) is not state:
            changes.append((name, state))
    tasks_still_running = set(running.tasks) - set(stop_tasks)
    start_tasks: list[tuple[ConnectorTaskId, Config, TargetState]] = []
    task_changes: list[tuple[ConnectorTaskId, TargetState]] = []
    for task, config in sorted(wanted_tasks.items()):
        state = target_state(snapshot, task.connector)
        if task not in tasks_still_running:
            start_tasks.append((task, config, state))
        elif running.task_states.get(task) is not state:
            task_changes.append((task, state))
    return ReconcilePlan(stop_tasks, stop_connectors, start_connectors, changes, start_tasks, task_changes)
