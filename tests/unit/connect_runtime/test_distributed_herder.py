"""DistributedHerder against in-memory stores and a recording worker: lifecycle and REST semantics."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from connect_runtime.api.config import ConfigDef, Importance, Type
from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.errors import AlreadyExistsError, BadRequestError, ConnectError, NotFoundError, NotLeaderError
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import Task
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.runtime.coordination.membership import SoleMember
from connect_runtime.runtime.distributed.distributed_herder import DistributedHerder
from connect_runtime.runtime.distributed.task_reconfiguration import LOAD_REMINDER_S, ReconfigurationSchedule
from connect_runtime.runtime.herder import ConnectorOffset
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.storage.status_store import KafkaStatusStore
from tests.support.kafka import wait_until
from tests.unit.connect_runtime.herder_fakes import FakeBroker, FakeWorker, RecordingForwarder

ALTERED: list[dict[str, Any]] = []


class DemoConnector(SourceConnector):
    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define("topic", Type.STRING, importance=Importance.HIGH, doc="where")

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[Task]:
        return Task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None:
        pass

    def alter_offsets(self, config: Mapping[str, str],
                      offsets: Mapping[str, tuple[SourceMap, Mapping[str, Any] | None]]) -> bool:
        for _partition, offset in offsets.values():
            if offset is not None and not isinstance(offset.get("seq"), int):
                raise BadRequestError("seq must be an integer")
        ALTERED.append(dict(offsets))
        return True


class Cluster:
    def __init__(self, membership: Any = None, forwarder: RecordingForwarder | None = None) -> None:
        self.broker = FakeBroker()
        clients: dict[str, Any] = {"producer_config": {}, "consumer_config": {}, "admin_config": {},
                                   "log_factory": self.broker.log_factory}
        self.status_store = KafkaStatusStore("status", **clients)
        self.config_store = KafkaConfigStore("configs", **clients)
        self.offsets = MemoryOffsetStore()
        self.status_writer = StatusWriter(self.status_store, "w1:8083")
        plugins = Plugins()
        plugins.register("DemoConnector", DemoConnector)
        self.worker = FakeWorker(self.status_writer, self.offsets, plugins)
        self.herder = DistributedHerder(
            worker_id="w1:8083", worker=self.worker, plugins=plugins, config_store=self.config_store,
            status_store=self.status_store, offset_store=self.offsets,
            membership=membership or SoleMember("http://w1:8083", self.status_store.max_generation),
            status_writer=self.status_writer, request_timeout_s=10, forwarder=forwarder)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    assert c.herder.health().status == "starting"
    c.herder.start()
    assert c.herder.wait_until_ready(10)
    yield c
    c.herder.stop(10)


def config(tasks: int = 2, **extra: str) -> dict[str, str]:
    return {"name": "demo", "connector.class": "DemoConnector", "tasks.max": str(tasks), "topic": "t",
            **extra}


def running_tasks(c: Cluster) -> set[ConnectorTaskId]:
    with c.worker.lock:
        return set(c.worker.tasks)


def test_create_generates_tasks_and_runs_them(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}, {"task": "1"}, {"task": "2"}]
    created = cluster.herder.put_connector_config("demo", config(tasks=2), allow_replace=False)
    assert created.created and created.info.type == "source"
    wait_until(lambda: running_tasks(cluster) == {ConnectorTaskId("demo", 0), ConnectorTaskId("demo", 1)},
               5, "both tasks running")
    assert [t.config for t in cluster.herder.task_configs("demo")] == [{"task": "0"}, {"task": "1"}]
    status = wait_until(lambda: (s := cluster.herder.connector_status("demo")) and len(s.tasks) == 2 and s, 5,
                        "status with 2 tasks")
    assert status.connector_state is State.RUNNING and status.connector_worker_id == "w1:8083"
    assert {t.state for t in status.tasks} == {State.RUNNING}
    assert cluster.herder.health().status == "healthy"
    with pytest.raises(AlreadyExistsError):
        cluster.herder.put_connector_config("demo", config(), allow_replace=False)


def test_zero_task_connector_is_running(cluster: Cluster) -> None:
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    wait_until(lambda: cluster.worker.started("task_configs") == ["demo"], 5, "task configs computed")
    wait_until(lambda: cluster.herder.connector_status("demo").connector_state is State.RUNNING, 5, "running")
    # As in Java, 0 computed vs 0 stored is "unchanged": no commit record is written.
    assert b"commit-demo" not in [r.key for r in cluster.broker.topics["configs"]]
    assert cluster.herder.connector_info("demo").tasks == []


def test_retriable_task_config_failure_is_retried(cluster: Cluster) -> None:
    cluster.worker.failures_before_success["demo"] = 2
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    wait_until(lambda: running_tasks(cluster) == {ConnectorTaskId("demo", 0)}, 10, "task after retries")
    assert len(cluster.worker.started("task_configs")) >= 3


def reconfiguration_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records
            if r.name == "connect_runtime.runtime.distributed.task_reconfiguration"]


def test_a_loading_connector_is_one_info_line_and_a_later_retriable_error_keeps_its_level(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """Until its first answer a connector's RetriableError is its load ("not known yet"): one INFO line, the
    repeats DEBUG, and one line when it loaded; after that answer it is a failure again, at INFO each time."""
    cluster.worker.failures_before_success["demo"] = 3
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    with caplog.at_level(logging.DEBUG, logger="connect_runtime.runtime.distributed.task_reconfiguration"):
        cluster.herder.put_connector_config("demo", config(), allow_replace=False)
        wait_until(lambda: running_tasks(cluster) == {ConnectorTaskId("demo", 0)}, 10, "task after the load")
        waits = [level for level, line in reconfiguration_lines(caplog) if "waiting for it to load" in line]
        assert waits == [logging.INFO, logging.DEBUG, logging.DEBUG]
        assert [line for level, line in reconfiguration_lines(caplog)
                if level == logging.INFO and "loaded after" in line and "1 task config(s)" in line]
        assert not [line for _, line in reconfiguration_lines(caplog) if "computing task configs failed" in line]
        caplog.clear()
        cluster.worker.failures_before_success["demo"] = 1
        cluster.worker.reconfigure["demo"]()
        wait_until(lambda: len(cluster.worker.started("task_configs")) >= 6, 10, "asked again after the failure")
    failed = [(level, line) for level, line in reconfiguration_lines(caplog) if "computing task configs failed" in line]
    assert failed and failed[0][0] == logging.INFO and "RetriableError: not ready yet" in failed[0][1]
    assert not [line for _, line in reconfiguration_lines(caplog) if "waiting for it to load" in line]


def test_a_connector_loads_again_after_a_restart_and_not_after_a_stop() -> None:
    now = [100.0]
    schedule = ReconfigurationSchedule(clock=lambda: now[0])
    assert schedule.waiting_for_load("demo") is None  # never started here
    schedule.started("demo")
    assert schedule.due() == ["demo"]
    now[0] = 101.0
    assert schedule.waiting_for_load("demo") == (1.0, True)  # logged at INFO
    now[0] = 112.5
    assert schedule.waiting_for_load("demo") == (12.5, False)  # at DEBUG ...
    now[0] = 101.0 + LOAD_REMINDER_S
    assert schedule.waiting_for_load("demo") == (1.0 + LOAD_REMINDER_S, True)  # ... but for a reminder
    assert schedule.waiting_for_load("demo") == (1.0 + LOAD_REMINDER_S, False)
    now[0] = 112.5
    assert schedule.succeeded("demo") == 12.5
    assert schedule.waiting_for_load("demo") is None  # answered: a RetriableError now is a failure
    assert schedule.succeeded("demo") is None
    schedule.started("demo")  # resumed: loads again
    assert schedule.succeeded("demo") is None  # answered at once: there was no wait to report
    schedule.started("demo")
    schedule.stopped("demo")
    assert schedule.waiting_for_load("demo") is None


def test_unchanged_task_configs_not_rewritten_changed_ones_restart_their_task(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}, {"task": "1"}]
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    wait_until(lambda: len(running_tasks(cluster)) == 2, 5, "2 tasks")
    commits = sum(1 for r in cluster.broker.topics["configs"] if r.key == b"commit-demo")
    cluster.worker.reconfigure["demo"]()  # unchanged: no new generation
    wait_until(lambda: len(cluster.worker.started("task_configs")) >= 2, 5, "recomputed")
    assert sum(1 for r in cluster.broker.topics["configs"] if r.key == b"commit-demo") == commits
    cluster.worker.task_configs["demo"] = [{"task": "0"}, {"task": "1", "new": "yes"}]
    cluster.worker.reconfigure["demo"]()
    wait_until(lambda: cluster.worker.tasks.get(ConnectorTaskId("demo", 1)) == {"task": "1", "new": "yes"}, 5,
               "task 1 restarted with its new config")
    assert ("stop_tasks", (ConnectorTaskId("demo", 1),)) in cluster.worker.calls
    assert cluster.worker.started("start_task").count(ConnectorTaskId("demo", 0)) == 1


def test_pause_resume_stop_and_offsets(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    wait_until(lambda: len(running_tasks(cluster)) == 1, 5, "task running")
    cluster.herder.pause_connector("demo")
    assert cluster.worker.connectors["demo"] is TargetState.PAUSED
    wait_until(lambda: cluster.herder.connector_status("demo").connector_state is State.PAUSED, 5, "paused")
    offsets = [ConnectorOffset({"task": 0}, {"seq": 41})]
    with pytest.raises(BadRequestError, match=r"STOPPED state .* '/connectors/demo/stop' endpoint"):
        cluster.herder.alter_connector_offsets("demo", offsets)
    cluster.herder.resume_connector("demo")
    assert cluster.worker.connectors["demo"] is TargetState.STARTED
    cluster.herder.stop_connector("demo")
    assert running_tasks(cluster) == set() and cluster.herder.connector_info("demo").tasks == []
    wait_until(lambda: cluster.herder.connector_status("demo").connector_state is State.STOPPED, 5, "stopped")
    assert cluster.herder.connector_status("demo").tasks == []
    with pytest.raises(BadRequestError, match="seq must be an integer"):
        cluster.herder.alter_connector_offsets("demo", [ConnectorOffset({"task": 0}, {"seq": "x"})])
    cluster.herder.alter_connector_offsets("demo", offsets)
    assert [(o.partition, o.offset) for o in cluster.herder.connector_offsets("demo")] == [({"task": 0},
                                                                                             {"seq": 41})]
    cluster.herder.reset_connector_offsets("demo")
    assert cluster.herder.connector_offsets("demo") == []
    assert ALTERED[-1] == {'{"task":0}': ({"task": 0}, None)}
    cluster.herder.resume_connector("demo")
    wait_until(lambda: running_tasks(cluster) == {ConnectorTaskId("demo", 0)}, 5, "task back after resume")


def test_restart_with_tasks_reports_restarting_and_recreates_tasks(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}, {"task": "1"}]
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    wait_until(lambda: len(cluster.herder.connector_status("demo").tasks) == 2, 5, "2 task statuses")
    cluster.status_writer.on_task_failure(ConnectorTaskId("demo", 1), "trace")
    wait_until(lambda: cluster.herder.task_status(ConnectorTaskId("demo", 1)).state is State.FAILED, 5, "failed")
    plan = cluster.herder.restart_connector("demo", include_tasks=True, only_failed=True)
    assert plan is not None
    assert plan.connector_state is State.RUNNING
    assert [(t.id, t.state) for t in plan.tasks] == [(0, State.RUNNING), (1, State.RESTARTING)]
    wait_until(lambda: cluster.worker.started("start_task").count(ConnectorTaskId("demo", 1)) == 2, 5,
               "task 1 started again")
    assert cluster.worker.started("start_task").count(ConnectorTaskId("demo", 0)) == 1
    wait_until(lambda: cluster.herder.task_status(ConnectorTaskId("demo", 1)).state is State.RUNNING, 5,
               "running")
    assert cluster.herder.restart_connector("demo", False, False) is None
    assert cluster.worker.started("start_connector").count("demo") == 2


def test_delete_tombstones_statuses_and_validation_errors(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    wait_until(lambda: len(cluster.herder.connector_status("demo").tasks) == 1, 5, "task status")
    cluster.herder.delete_connector("demo")
    assert cluster.herder.connectors() == [] and running_tasks(cluster) == set()
    store = cluster.status_store
    wait_until(lambda: store.get("demo") is None and store.get_all("demo") == [], 5, "statuses tombstoned")
    with pytest.raises(NotFoundError):
        cluster.herder.connector_status("demo")
    with pytest.raises(BadRequestError, match=r"contains the following 2 error\(s\)") as err:
        cluster.herder.put_connector_config("demo", {"name": "demo", "connector.class": "DemoConnector",
                                                     "tasks.max": "0"}, allow_replace=True)
    assert "tasks.max" in str(err.value) and "topic" in str(err.value)
    infos = cluster.herder.validate_connector_config(config())
    assert infos.error_count == 0 and infos.groups[0] == "Common"
    with pytest.raises(BadRequestError):
        cluster.herder.validate_connector_config({"connector.class": "NoSuchConnector"})


def test_initial_state_and_stop_shutdown(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.put_connector_config("demo", config(), allow_replace=False,
                                        initial_state=TargetState.PAUSED)
    assert ("start_connector", "demo", TargetState.PAUSED) in cluster.worker.calls
    assert cluster.worker.started("task_configs") == []
    cluster.herder.stop(10)
    assert ("stop",) in cluster.worker.calls
    assert not cluster.offsets.started  # stopped by the worker, as Java's Worker.stop does


def test_fewer_tasks_stop_the_dropped_ones_and_forget_their_statuses(cluster: Cluster) -> None:
    cluster.worker.task_configs["demo"] = [{"task": "0"}, {"task": "1"}]
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    wait_until(lambda: len(cluster.herder.connector_status("demo").tasks) == 2, 5, "2 task statuses")
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.worker.reconfigure["demo"]()
    wait_until(lambda: running_tasks(cluster) == {ConnectorTaskId("demo", 0)}, 5, "task 1 stopped")
    wait_until(lambda: cluster.status_store.get_task("demo", 1) is None, 5, "task 1 status tombstoned")
    assert [t.id for t in cluster.herder.connector_status("demo").tasks] == [0]
    assert cluster.worker.started("start_task").count(ConnectorTaskId("demo", 0)) == 1


def test_sole_member_assigns_everything_and_starts_above_existing_generations() -> None:
    from connect_runtime.storage.config_topic_state import ClusterConfigState

    member = SoleMember("http://w:1", generation_floor=lambda: 41)
    empty = ClusterConfigState()
    first = member.join(empty, 1.0)
    assert (first.generation, first.leader, first.leader_url, first.connectors) == (42, True, "http://w:1",
                                                                                   frozenset())
    assert member.poll(empty, 0.0) is None  # nothing changed: no rebalance
    snap = ClusterConfigState(offset=3, connector_configs={"c": {}}, task_configs={ConnectorTaskId("c", 0): {}},
                              task_counts={"c": 1})
    second = member.poll(snap, 0.0)
    assert second is not None and second.generation == 43
    assert second.connectors == {"c"} and second.tasks == {ConnectorTaskId("c", 0)}


def test_leader_writes_a_session_key_and_takes_task_configs_from_followers(cluster: Cluster) -> None:
    key = wait_until(lambda: cluster.config_store.snapshot().session_key, 5, "session key written")
    assert len(key.key) == 32 and key.algorithm == "HmacSHA256"
    assert cluster.herder.session_key() == key.key
    cluster.herder.put_connector_config("demo", config(), allow_replace=False)
    cluster.herder.put_task_configs("demo", [{"from": "follower"}])
    wait_until(lambda: cluster.worker.tasks.get(ConnectorTaskId("demo", 0)) == {"from": "follower"}, 5,
               "follower's task config running")
    with pytest.raises(NotFoundError):
        cluster.herder.put_task_configs("nope", [])


class FollowerMember:
    """A group member that is not the leader and is assigned everything (for forwarding tests)."""

    def join(self, snapshot: Any, timeout_s: float) -> Any:
        from connect_runtime.runtime.coordination.membership import Assignment

        tasks = snapshot.all_tasks()
        return Assignment.of(1, False, "http://leader:8083", snapshot.connectors(), tasks)

    def poll(self, snapshot: Any, timeout_s: float) -> Any:
        return self.join(snapshot, timeout_s)

    def request_rebalance(self, work_changed: bool = False) -> None: ...

    def wakeup(self) -> None: ...

    def leave(self) -> None: ...


def test_follower_forwards_new_task_configs_to_the_leader() -> None:
    from connect_runtime.storage.config_records import SessionKey

    forwarder = RecordingForwarder()
    sent = forwarder.sent
    c = Cluster(FollowerMember(), forwarder)
    c.config_store.start()
    c.config_store.put_session_key(SessionKey(b"k" * 32, "HmacSHA256", 1))
    c.config_store.put_connector_config("demo", config())
    c.worker.task_configs["demo"] = [{"task": "0"}]
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        wait_until(lambda: sent, 5, "task configs forwarded")
        assert sent[0] == ("http://leader:8083", "demo", [{"task": "0"}], b"k" * 32)
        assert b"commit-demo" not in [r.key for r in c.broker.topics["configs"]]  # a follower never writes
        with pytest.raises(NotLeaderError) as err:
            c.herder.put_connector_config("other", config(), allow_replace=False)
        assert err.value.target_url == "http://leader:8083"
    finally:
        c.herder.stop(10)


def test_extension_hooks_run_on_the_tick_thread_and_leadership_is_gained_once() -> None:
    from connect_runtime.runtime.coordination.membership import Assignment

    events: list[tuple[str, str]] = []

    class Hooked(DistributedHerder):
        def on_tick_thread_start(self) -> None:
            events.append(("thread", threading.current_thread().name))

        def on_rebalance_completed(self, assignment: Assignment) -> None:
            events.append(("rebalance", str(assignment.generation)))

        def on_leadership_gained(self) -> None:
            events.append(("leader", threading.current_thread().name))
            self.put_connector_config("demo", config(), allow_replace=True)  # a leader may write at once

    c = Cluster()
    herder = Hooked(worker_id="w1:8083", worker=c.worker, plugins=c.herder._plugins, config_store=c.config_store,
                    status_store=c.status_store, offset_store=c.offsets,
                    membership=SoleMember("http://w1:8083", c.status_store.max_generation),
                    status_writer=c.status_writer, request_timeout_s=10)
    herder.start()
    try:
        assert herder.wait_until_ready(10)
        assert herder.connectors() == ["demo"]
        # SoleMember rebalances when the work changes: later assignments keep us leader, no new "gain".
        wait_until(lambda: sum(1 for e in events if e[0] == "rebalance") >= 2, 5, "a second assignment")
        assert [e for e in events if e[0] != "rebalance"] == [("thread", "herder-w1:8083"),
                                                              ("leader", "herder-w1:8083")]
    finally:
        herder.stop(10)


class UnreachableGroup(FollowerMember):
    """A member whose client connected but whose join never completes (the cluster stopped answering)."""

    def __init__(self) -> None:
        self.left = 0

    def join(self, snapshot: Any, timeout_s: float) -> Any:
        raise ConnectError("worker did not join Connect group g within 0.1 s")

    def leave(self) -> None:
        self.left += 1


def test_a_start_that_fails_joining_closes_the_member_client() -> None:
    """Issue 32: the member client (kafka-python's IO thread and sockets) was closed only by a herder
    that had started, so every retry of a start that failed joining left one behind."""
    member = UnreachableGroup()
    c = Cluster(member)
    c.herder.start()
    with pytest.raises(ConnectError, match="did not join"):
        c.herder.wait_until_ready(10)
    c.herder.stop(10)
    assert member.left == 1
