"""Config and status stores over an in-memory log: record formats and the read-side rules."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from connect_runtime.api.errors import ConnectError
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.storage.config_records import RestartRequest, SessionKey, parse_task_key
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.status_store import KafkaStatusStore, Status, can_write_safely, parse_status_key
from tests.unit.connect_runtime.herder_fakes import FakeBroker


def config_store(broker: FakeBroker) -> KafkaConfigStore:
    return KafkaConfigStore("configs", producer_config={}, consumer_config={}, admin_config={},
                            log_factory=broker.log_factory)


def records(broker: FakeBroker, topic: str = "configs") -> list[tuple[bytes | None, bytes | None]]:
    return [(r.key, r.value) for r in broker.topics[topic]]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def on_connector_config_update(self, connector: str) -> None:
        self.events.append(("config", connector))

    def on_connector_config_remove(self, connector: str) -> None:
        self.events.append(("remove", connector))

    def on_task_config_update(self, connector: str, tasks: Sequence[ConnectorTaskId]) -> None:
        self.events.append(("tasks", (connector, tuple(tasks))))

    def on_connector_target_state_change(self, connector: str) -> None:
        self.events.append(("target", connector))

    def on_restart_request(self, request: RestartRequest) -> None:
        self.events.append(("restart", request))

    def on_session_key_update(self) -> None:
        self.events.append(("session-key", None))

    def on_fencing_update(self, connector: str) -> None:
        self.events.append(("fencing", connector))


def test_config_store_writes_connects_exact_record_formats() -> None:
    broker = FakeBroker()
    store = config_store(broker)
    store.start()
    store.put_connector_config("c", {"connector.class": "X", "tasks.max": "2"}, target_state=TargetState.STOPPED)
    store.put_task_configs("c", [{"t": "0"}, {"t": "1"}])
    store.put_target_state("c", TargetState.PAUSED)
    store.put_restart_request(RestartRequest("c", include_tasks=True, only_failed=False))
    store.put_task_count_record("c", 2)
    store.remove_connector_config("c")
    assert records(broker) == [
        (b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (b"connector-c", b'{"properties":{"connector.class":"X","tasks.max":"2"}}'),
        (b"task-c-0", b'{"properties":{"t":"0"}}'),
        (b"task-c-1", b'{"properties":{"t":"1"}}'),
        (b"commit-c", b'{"tasks":2}'),
        (b"target-state-c", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        (b"restart-connector-c", b'{"include-tasks":true,"only-failed":false}'),
        (b"tasks-fencing-c", b'{"task-count":2}'),
        (b"connector-c", None),
        (b"target-state-c", None),
    ]


def test_task_configs_become_visible_only_with_a_complete_commit() -> None:
    broker = FakeBroker()
    writer = config_store(broker)
    writer.start()
    writer.put_connector_config("c", {"connector.class": "X"})
    writer.put_task_configs("c", [{"gen": "1"}])
    log = broker.logs["configs"][0]
    # A leader that died after task 0 of a 2-task generation: nothing of it may become visible.
    log.send_sync(b"task-c-0", b'{"properties":{"gen":"2"}}')
    assert writer.snapshot().task_config_list("c") == [{"gen": "1"}]
    log.send_sync(b"commit-c", b'{"tasks":2}')
    snap = writer.snapshot()
    assert "c" in snap.inconsistent and snap.tasks("c") == []
    writer.put_task_configs("c", [{"gen": "3"}, {"gen": "3"}])
    snap = writer.snapshot()
    assert snap.task_config_list("c") == [{"gen": "3"}, {"gen": "3"}] and not snap.inconsistent


def test_second_instance_reloads_the_same_state_and_prefers_state_v2() -> None:
    broker = FakeBroker()
    first = config_store(broker)
    first.start()
    first.put_connector_config("a-b", {"connector.class": "X"})
    first.put_task_configs("a-b", [{"k": "v"}])
    first.put_target_state("a-b", TargetState.STOPPED)
    first.put_connector_config("gone", {"connector.class": "X"})
    first.remove_connector_config("gone")
    # An old (pre-3.5) Java worker's record has no state.v2.
    broker.logs["configs"][0].send_sync(b"target-state-old", b'{"state":"PAUSED"}')
    first.put_connector_config("old", {"connector.class": "X"})
    second = config_store(broker)
    second.start()
    snap = second.snapshot()
    assert snap.connectors() == ["a-b", "old"]
    assert snap.target_state("a-b") is TargetState.STOPPED and snap.target_state("old") is TargetState.PAUSED
    task = ConnectorTaskId("a-b", 0)
    assert snap.tasks("a-b") == [task] and snap.task_config(task) == {"k": "v"}
    assert snap.offset == len(broker.topics["configs"])


def test_listener_is_told_only_after_start_and_in_order() -> None:
    broker = FakeBroker()
    store = config_store(broker)
    recorder = Recorder()
    first = config_store(broker)
    first.start()
    first.put_connector_config("pre", {"connector.class": "X"})
    store.set_update_listener(recorder)
    store.start()
    assert recorder.events == []
    first.put_task_configs("pre", [])
    first.put_target_state("pre", TargetState.PAUSED)
    first.put_restart_request(RestartRequest("pre", True, True))
    first.remove_connector_config("pre")
    assert recorder.events == [("tasks", ("pre", ())), ("target", "pre"),
                               ("restart", RestartRequest("pre", True, True)), ("remove", "pre"),
                               ("target", "pre")]


def test_listener_is_told_of_new_session_keys() -> None:
    """A follower signs forwarded task configs with the key it last saw: it must hear of every new one
    (Java's onSessionKeyUpdate), or it keeps a stale key (or none) until an unrelated config record."""
    broker = FakeBroker()
    leader, follower, recorder = config_store(broker), config_store(broker), Recorder()
    leader.start()
    leader.put_session_key(SessionKey(b"k1", "HmacSHA256", 1))
    follower.set_update_listener(recorder)
    follower.start()
    assert recorder.events == [] and follower.snapshot().session_key == SessionKey(b"k1", "HmacSHA256", 1)
    leader.put_session_key(SessionKey(b"k2", "HmacSHA256", 2))
    assert recorder.events == [("session-key", None)]
    assert follower.snapshot().session_key == SessionKey(b"k2", "HmacSHA256", 2)


@pytest.mark.parametrize(("key", "expected"),
                         [("task-a-b-12", ConnectorTaskId("a-b", 12)), ("task-x-", None), ("task-x", None)])
def test_task_keys_allow_dashes_in_connector_names(key: str, expected: ConnectorTaskId | None) -> None:
    assert parse_task_key(key) == expected


def test_status_values_and_tombstones() -> None:
    broker = FakeBroker()
    store = KafkaStatusStore("status", producer_config={}, consumer_config={}, admin_config={},
                             log_factory=broker.log_factory)
    store.start()
    store.put(Status("c", State.RUNNING, "w1:8083", 7))
    store.put(Status("c", State.FAILED, "w1:8083", 7, trace="boom", task=0))
    store.put(Status("c", State.DESTROYED, "w1:8083", 7, task=0))
    assert records(broker, "status") == [
        (b"status-connector-c", b'{"state":"RUNNING","trace":null,"worker_id":"w1:8083","generation":7}'),
        (b"status-task-c-0", b'{"state":"FAILED","trace":"boom","worker_id":"w1:8083","generation":7}'),
        (b"status-task-c-0", None),
    ]
    assert store.get("c") == Status("c", State.RUNNING, "w1:8083", 7)
    assert store.get_task("c", 0) is None
    assert json.loads(broker.topics["status"][0].value or b"")["generation"] == 7


def test_put_safe_keeps_a_newer_generation_from_another_worker() -> None:
    broker = FakeBroker()
    store = KafkaStatusStore("status", producer_config={}, consumer_config={}, admin_config={},
                             log_factory=broker.log_factory)
    store.start()
    store.put(Status("c", State.RUNNING, "new:1", 5, task=0))
    store.put_safe(Status("c", State.UNASSIGNED, "old:1", 4, task=0))
    assert store.get_task("c", 0) == Status("c", State.RUNNING, "new:1", 5, task=0)
    store.put_safe(Status("c", State.UNASSIGNED, "new:1", 3, task=0))  # same worker: always allowed
    assert store.get_task("c", 0) == Status("c", State.UNASSIGNED, "new:1", 3, task=0)
    assert can_write_safely(None, Status("c", State.RUNNING, "w", 0))
    assert store.max_generation() == 3  # only the latest record per key counts


def test_status_keys() -> None:
    assert parse_status_key("status-task-a-b-3") == ("a-b", 3)
    assert parse_status_key("status-connector-a-b") == ("a-b", None)
    assert parse_status_key("status-topic-t:connector-c") is None


def test_no_commit_is_written_when_a_task_record_fails() -> None:
    broker = FakeBroker()
    store = config_store(broker)
    store.start()
    store.put_connector_config("c", {"connector.class": "X"})
    store.put_task_configs("c", [{"gen": "1"}])
    log = broker.logs["configs"][0]

    def failing_send(key: bytes | None, value: bytes | None, callback: Any = None,
                     partition: int | None = None) -> None:
        callback(ConnectError("broker down"), None)

    log.send = failing_send  # type: ignore[method-assign]
    with pytest.raises(ConnectError, match="task configs of connector c"):
        store.put_task_configs("c", [{"gen": "2"}, {"gen": "2"}])
    assert [r.key for r in broker.topics["configs"]].count(b"commit-c") == 1
    assert store.snapshot().task_config_list("c") == [{"gen": "1"}]


def test_a_task_generation_is_pending_fencing_from_its_commit_until_the_next_fencing_record() -> None:
    """Java's connectorsPendingFencing: every new generation, same task count included, waits for a
    tasks-fencing record (a follower hears of it, to start its waiting tasks)."""
    broker = FakeBroker()
    leader, follower, recorder = config_store(broker), config_store(broker), Recorder()
    leader.start()
    follower.set_update_listener(recorder)
    follower.start()
    leader.put_connector_config("c", {"connector.class": "X"})
    leader.put_task_configs("c", [{"t": "0"}, {"t": "1"}])
    assert follower.snapshot().pending_fencing == {"c"}
    leader.put_task_count_record("c", 2)
    assert follower.snapshot().pending_fencing == frozenset()
    assert recorder.events[-1] == ("fencing", "c")
    leader.put_task_configs("c", [{"t": "0", "v": "2"}, {"t": "1", "v": "2"}])
    assert follower.snapshot().pending_fencing == {"c"}, "a new generation with the same count is pending too"
    leader.remove_connector_config("c")
    assert follower.snapshot().pending_fencing == frozenset()
    replay = config_store(broker)
    replay.start()
    assert replay.snapshot().pending_fencing == frozenset()
