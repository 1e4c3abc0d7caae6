"""KafkaConfigStore / KafkaStatusStore on a real broker: exact record bytes, reload, generation rule."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connect_runtime.lifecycle import State, TargetState
from connect_runtime.storage.config_records import RestartRequest
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.status_store import KafkaStatusStore, Status
from tests.conftest import Cluster
from tests.support.kafka import consume_all, unique, wait_until

pytestmark = pytest.mark.integration


def java_partition(key: bytes, partitions: int) -> int:
    """Kafka's Java default partitioner: ``toPositive(murmur2(key)) % partitions``."""
    m, r, length = 0x5BD1E995, 24, len(key)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(key[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length % 4
    if tail:
        h ^= int.from_bytes(key[length - tail:], "little")
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def clients(bootstrap: str) -> dict[str, dict[str, str]]:
    base = {"bootstrap.servers": bootstrap}
    return {"producer_config": base, "consumer_config": base, "admin_config": base}


@pytest.fixture
def stores() -> Iterator[list[KafkaConfigStore | KafkaStatusStore]]:
    started: list[KafkaConfigStore | KafkaStatusStore] = []
    yield started
    for store in started:
        store.stop()


Started = list[KafkaConfigStore | KafkaStatusStore]


def config_store(bootstrap: str, topic: str, started: Started) -> KafkaConfigStore:
    store = KafkaConfigStore(topic, replication_factor=1, **clients(bootstrap))
    store.start(60)
    started.append(store)
    return store


def status_store(bootstrap: str, topic: str, started: Started) -> KafkaStatusStore:
    store = KafkaStatusStore(topic, partitions=3, replication_factor=1, **clients(bootstrap))
    store.start(60)
    started.append(store)
    return store


def test_config_topic_records_are_connects_byte_for_byte_and_reload(cluster_a: Cluster, stores: Started) -> None:
    topic = unique("configs")
    first = config_store(cluster_a.bootstrap, topic, stores)
    first.put_connector_config("mm2", {"connector.class": "MirrorSourceConnector", "tasks.max": "2"},
                               target_state=TargetState.PAUSED)
    first.put_task_configs("mm2", [{"task.id": "0"}, {"task.id": "1"}])
    first.put_target_state("mm2", TargetState.STOPPED)
    first.put_restart_request(RestartRequest("mm2", include_tasks=True, only_failed=True))
    first.put_task_count_record("mm2", 2)
    first.put_connector_config("gone", {"connector.class": "X"})
    first.remove_connector_config("gone")

    raw = [(r.key, r.value) for r in consume_all(cluster_a.bootstrap, topic)]
    assert raw == [
        (b"target-state-mm2", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        (b"connector-mm2", b'{"properties":{"connector.class":"MirrorSourceConnector","tasks.max":"2"}}'),
        (b"task-mm2-0", b'{"properties":{"task.id":"0"}}'),
        (b"task-mm2-1", b'{"properties":{"task.id":"1"}}'),
        (b"commit-mm2", b'{"tasks":2}'),
        (b"target-state-mm2", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (b"restart-connector-mm2", b'{"include-tasks":true,"only-failed":true}'),
        (b"tasks-fencing-mm2", b'{"task-count":2}'),
        (b"connector-gone", b'{"properties":{"connector.class":"X"}}'),
        (b"connector-gone", None),
        (b"target-state-gone", None),
    ]
    assert {r.partition for r in consume_all(cluster_a.bootstrap, topic)} == {0}  # one partition, ordered

    second = config_store(cluster_a.bootstrap, topic, stores)
    snap = second.snapshot()
    assert snap == first.snapshot()
    assert snap.connectors() == ["mm2"] and snap.target_state("mm2") is TargetState.STOPPED
    assert snap.task_config_list("mm2") == [{"task.id": "0"}, {"task.id": "1"}]
    assert snap.task_count_records == {"mm2": 2} and snap.offset == len(raw)

    # A write by one instance reaches the other through the topic.
    first.put_target_state("mm2", TargetState.STARTED)
    wait_until(lambda: second.snapshot().target_state("mm2") is TargetState.STARTED, 15, "second store sees STARTED")


def test_status_records_tombstones_and_generation_rule(cluster_a: Cluster, stores: Started) -> None:
    topic = unique("status")
    new_owner = status_store(cluster_a.bootstrap, topic, stores)
    old_owner = status_store(cluster_a.bootstrap, topic, stores)
    new_owner.put(Status("c", State.RUNNING, "w2:8083", 6))
    new_owner.put(Status("c", State.RUNNING, "w2:8083", 6, task=0))
    wait_until(lambda: old_owner.get_task("c", 0) is not None, 15, "the old owner reads the new status")
    # The previous owner's late shutdown report (older generation) must not hide the new owner's state.
    old_owner.put_safe(Status("c", State.UNASSIGNED, "w1:8083", 5, task=0))
    old_owner.put_safe(Status("c", State.FAILED, "w1:8083", 7, trace="later generation wins", task=1))
    old_owner.put(Status("c", State.DESTROYED, "w1:8083", 7, task=2))
    old_owner.flush()

    records = consume_all(cluster_a.bootstrap, topic)
    assert sorted((r.key or b"", r.value or b"") for r in records) == sorted([
        (b"status-connector-c", b'{"state":"RUNNING","trace":null,"worker_id":"w2:8083","generation":6}'),
        (b"status-task-c-0", b'{"state":"RUNNING","trace":null,"worker_id":"w2:8083","generation":6}'),
        (b"status-task-c-1",
         b'{"state":"FAILED","trace":"later generation wins","worker_id":"w1:8083","generation":7}'),
        (b"status-task-c-2", b""),
    ])
    assert [r.value for r in records if r.key == b"status-task-c-2"] == [None]
    # Same partition as a Java worker would use for each key, so both can share the topic.
    assert all(r.partition == java_partition(r.key or b"", 3) for r in records)
    assert len({r.partition for r in records}) > 1

    reloaded = status_store(cluster_a.bootstrap, topic, stores)
    assert reloaded.get_task("c", 0) == Status("c", State.RUNNING, "w2:8083", 6, task=0)
    assert reloaded.get_task("c", 1) == Status("c", State.FAILED, "w1:8083", 7, "later generation wins", 1)
    assert reloaded.get_task("c", 2) is None
    assert [s.task for s in reloaded.get_all("c")] == [0, 1]
    assert reloaded.max_generation() == 7


def test_a_late_unassigned_of_an_older_generation_is_not_a_release(cluster_a: Cluster, stores: Started) -> None:
    """Found by the 2-hour soak: a worker that lost the group stopped its work after the next owner wrote
    RUNNING, and its status reader lagged (the network to the broker had been cut), so its ``put_safe``
    wrote UNASSIGNED over the newer RUNNING. When the next owner was then killed, the leader read that
    UNASSIGNED as a clean release and held the work 300 s for a return that never came. Released means
    written by a worker that could write it safely over the newest generation read.

    Found by the 10-minute soak: the late UNASSIGNED (or FAILED) must not even replace the next owner's
    RUNNING in what any worker reads, or every worker's REST shows the task UNASSIGNED on its old owner
    while the new owner runs it, until the next restart."""
    topic = unique("status-release")
    lagging = status_store(cluster_a.bootstrap, topic, stores)
    for task in (0, 1, 2):
        lagging.put(Status("c", State.RUNNING, "w1:8083", 79, task=task))
    lagging.flush()
    leader = status_store(cluster_a.bootstrap, topic, stores)
    for task in (0, 1, 2):
        leader.put(Status("c", State.RUNNING, "w2:8083", 80, task=task))  # the next owner
    leader.put(Status("c", State.UNASSIGNED, "w2:8083", 80, task=1))  # which released task 1 cleanly
    leader.flush()
    lagging.put(Status("c", State.UNASSIGNED, "w1:8083", 79, task=0))  # the late stop, written blindly
    lagging.put(Status("c", State.FAILED, "w1:8083", 79, "late trace", task=2))  # a late failure
    lagging.put(Status("c", State.RUNNING, "w1:8083", 79, task=3))  # a marker: all before it was read
    lagging.flush()
    wait_until(lambda: leader.get_task("c", 3) is not None, 15, "the leader reads the late records")
    wait_until(lambda: leader.released_by_last_owner("c", 1), 15, "the leader reads the clean release")
    reloaded = status_store(cluster_a.bootstrap, topic, stores)  # the same from a full read of the topic
    wait_until(lambda: reloaded.get_task("c", 3) is not None, 15, "a new reader reads the whole topic")
    for store in (leader, reloaded, lagging):
        for task in (0, 2):
            current = store.get_task("c", task)
            assert current is not None and (current.state, current.worker_id) == (State.RUNNING, "w2:8083"), current
        assert not store.released_by_last_owner("c", 0) and store.released_by_last_owner("c", 1)
    lagging.put(Status("c", State.UNASSIGNED, "w1:8083", 81, task=0))  # a later generation's release
    lagging.flush()
    wait_until(lambda: leader.released_by_last_owner("c", 0), 15, "a release of a newer generation")
