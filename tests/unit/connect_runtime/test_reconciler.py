"""The reconciler's rules as a table: (assignment x config snapshot x what runs here) -> plan."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.runtime.distributed.reconciler import ReconcilePlan, RunningWork, plan
from connect_runtime.storage.config_topic_state import ClusterConfigState

A0, A1, B0 = ConnectorTaskId("a", 0), ConnectorTaskId("a", 1), ConnectorTaskId("b", 0)
STARTED, PAUSED, STOPPED = TargetState.STARTED, TargetState.PAUSED, TargetState.STOPPED


def snapshot(tasks: Mapping[str, int] | None = None, states: Mapping[str, TargetState] | None = None,
             connectors: tuple[str, ...] = ("a", "b"), version: str = "1",
             inconsistent: frozenset[str] = frozenset()) -> ClusterConfigState:
    tasks = {"a": 2, "b": 1} if tasks is None else tasks
    return ClusterConfigState(
        offset=1, connector_configs={c: {"v": version} for c in connectors},
        task_configs={ConnectorTaskId(c, i): {"task": str(i), "v": version} for c, n in tasks.items()
                      for i in range(n)},
        task_counts=dict(tasks), target_states=dict(states or {}), inconsistent=inconsistent)


def running(connectors: Mapping[str, TargetState] | None = None,
            tasks: Mapping[ConnectorTaskId, TargetState] | None = None, version: str = "1") -> RunningWork:
    work = RunningWork()
    for name, state in (connectors or {}).items():
        work.connectors[name] = {"v": version}
        work.connector_states[name] = state
    for task, state in (tasks or {}).items():
        work.tasks[task] = {"task": str(task.task), "v": version}
        work.task_states[task] = state
    return work


def summary(p: ReconcilePlan) -> dict[str, object]:
    """The plan without configs, for readable expectations."""
    return {"stop_tasks": sorted(p.stop_tasks), "stop_connectors": sorted(p.stop_connectors),
            "start_connectors": [(n, s) for n, _c, s in p.start_connectors],
            "target_state_changes": p.target_state_changes,
            "start_tasks": [(t, s) for t, _c, s in p.start_tasks], "task_state_changes": p.task_state_changes}


def expect(**steps: object) -> dict[str, object]:
    empty: dict[str, object] = {"stop_tasks": [], "stop_connectors": [], "start_connectors": [],
                                "target_state_changes": [], "start_tasks": [], "task_state_changes": []}
    return {**empty, **steps}


CASES = [
    pytest.param(["a"], [A0, A1], snapshot(), running(),
                 expect(start_connectors=[("a", STARTED)], start_tasks=[(A0, STARTED), (A1, STARTED)]),
                 id="fresh assignment starts connectors then tasks, in order"),
    pytest.param(["a", "b"], [A0, A1, B0], snapshot(), running({"a": STARTED, "b": STARTED},
                                                               {A0: STARTED, A1: STARTED, B0: STARTED}),
                 expect(), id="nothing to do when running equals assigned"),
    pytest.param(["b"], [B0], snapshot(), running({"a": STARTED}, {A0: STARTED, A1: STARTED}),
                 expect(stop_tasks=[A0, A1], stop_connectors=["a"], start_connectors=[("b", STARTED)],
                        start_tasks=[(B0, STARTED)]),
                 id="revoked work stops, new work starts"),
    pytest.param(["a"], [A0, A1], snapshot(version="2"), running({"a": STARTED}, {A0: STARTED, A1: STARTED}),
                 expect(stop_tasks=[A0, A1], stop_connectors=["a"], start_connectors=[("a", STARTED)],
                        start_tasks=[(A0, STARTED), (A1, STARTED)]),
                 id="changed configs restart connector and tasks"),
    pytest.param(["a"], [A0, A1], snapshot(tasks={"a": 0, "b": 1}, states={"a": STOPPED}),
                 running({"a": STARTED}, {A0: STARTED, A1: STARTED}),
                 expect(stop_tasks=[A0, A1], target_state_changes=[("a", STOPPED)]),
                 id="a STOPPED connector keeps its instance and runs no tasks"),
    pytest.param(["a"], [A0], snapshot(states={"a": STOPPED}), running({"a": STOPPED}, {A0: STARTED}),
                 expect(stop_tasks=[A0]),
                 id="tasks of a STOPPED connector stop even while configs remain"),
    pytest.param([], [B0], snapshot(), running(),
                 expect(start_tasks=[(B0, STARTED)]),
                 id="a task runs where it is assigned even if its connector runs elsewhere"),
    pytest.param(["a"], [A0], snapshot(states={"a": PAUSED}), running({"a": STARTED}, {A0: STARTED}),
                 expect(target_state_changes=[("a", PAUSED)], task_state_changes=[(A0, PAUSED)]),
                 id="a pause moves the running connector and records its tasks' state, no restart"),
    pytest.param(["a"], [A0], snapshot(states={"a": PAUSED}), running(),
                 expect(start_connectors=[("a", PAUSED)], start_tasks=[(A0, PAUSED)]),
                 id="new work starts in its target state"),
    pytest.param(["a", "gone"], [A0, ConnectorTaskId("gone", 0)], snapshot(), running(),
                 expect(start_connectors=[("a", STARTED)], start_tasks=[(A0, STARTED)]),
                 id="assigned work unknown to the snapshot is not started"),
    pytest.param(["a"], [A0, A1], snapshot(tasks={"a": 1, "b": 1}), running({"a": STARTED}, {A0: STARTED, A1: STARTED}),
                 expect(stop_tasks=[A1]), id="a task dropped by a smaller generation stops"),
    pytest.param(["a"], [A0], snapshot(inconsistent=frozenset({"a"})), running({"a": STARTED}, {A0: STARTED}),
                 expect(stop_tasks=[A0]), id="an inconsistent connector has no tasks"),
]


@pytest.mark.parametrize(("connectors", "tasks", "snap", "work", "expected"), CASES)
def test_plan(connectors: list[str], tasks: list[ConnectorTaskId], snap: ClusterConfigState, work: RunningWork,
              expected: dict[str, object]) -> None:
    assert summary(plan(connectors, tasks, snap, work)) == expected


def test_the_plan_carries_the_configs_to_start_with() -> None:
    p = plan(["a"], [A1], snapshot(version="7"), running())
    assert p.start_connectors == [("a", {"v": "7"}, STARTED)]
    assert p.start_tasks == [(A1, {"task": "1", "v": "7"}, STARTED)]


def test_planning_changes_nothing() -> None:
    work = running({"a": STARTED}, {A0: STARTED})
    before = (dict(work.connectors), dict(work.connector_states), dict(work.tasks), dict(work.task_states))
    assert not plan(["b"], [B0], snapshot(), work).is_empty()
    assert (work.connectors, work.connector_states, work.tasks, work.task_states) == before
    assert plan(["a"], [A0], snapshot(), work).is_empty()
