"""A follower signs the task configs it forwards with the newest session key it has read (KIP-507).

The regression: a follower refreshed its view of the config topic only on connector, task, target-state
and restart records, so a session key written after its last refresh (the leader's first key, or a
rotation) stayed invisible and its forwards were never sent (no key) or refused (stale key), forever.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from connect_runtime.runtime.coordination.membership import Assignment
from connect_runtime.storage.config_records import SessionKey
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.config_topic_state import ClusterConfigState
from tests.support.kafka import wait_until
from tests.unit.connect_runtime.herder_fakes import RecordingForwarder
from tests.unit.connect_runtime.test_distributed_herder import Cluster, config

LEADER_URL = "http://leader:8083"


class Follower:
    """Membership of a follower that runs connector ``demo`` (and no task); the leader is elsewhere."""

    def __init__(self) -> None:
        self.assignment = Assignment.of(1, False, LEADER_URL, ["demo"], [])

    def join(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment:
        return self.assignment

    def poll(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment | None:
        return None

    def request_rebalance(self, work_changed: bool = False) -> None:
        pass

    def wakeup(self) -> None:
        pass

    def leave(self) -> None:
        pass


@pytest.fixture
def follower() -> Iterator[tuple[Cluster, KafkaConfigStore, list[Any]]]:
    forwarder = RecordingForwarder()
    sent: list[Any] = forwarder.sent
    cluster = Cluster(Follower(), forwarder)
    leader_store = KafkaConfigStore("configs", producer_config={}, consumer_config={}, admin_config={},
                                    log_factory=cluster.broker.log_factory)  # type: ignore[arg-type]
    leader_store.start()
    leader_store.put_connector_config("demo", config(tasks=1))
    cluster.worker.task_configs["demo"] = [{"task": "0"}]
    cluster.herder.start()
    assert cluster.herder.wait_until_ready(10)
    yield cluster, leader_store, sent
    cluster.herder.stop(10)


def test_first_key_written_after_the_followers_last_refresh_is_used(
        follower: tuple[Cluster, KafkaConfigStore, list[Any]]) -> None:
    cluster, leader, sent = follower
    wait_until(lambda: "demo" in cluster.worker.started("task_configs"), 5, "task configs computed")
    assert sent == []  # no key yet: nothing can be signed
    leader.put_session_key(SessionKey(b"k1", "HmacSHA256", 1))  # no other config record follows
    wait_until(lambda: sent, 10, "the task configs forwarded once the key is read")
    assert sent[0] == (LEADER_URL, "demo", [{"task": "0"}], b"k1")


def test_rotated_key_is_used_for_the_next_forward(follower: tuple[Cluster, KafkaConfigStore, list[Any]]) -> None:
    cluster, leader, sent = follower
    leader.put_session_key(SessionKey(b"k1", "HmacSHA256", 1))
    wait_until(lambda: sent, 10, "first forward")
    leader.put_session_key(SessionKey(b"k2", "HmacSHA256", 2))
    cluster.worker.task_configs["demo"] = [{"task": "0", "new": "topic"}]
    cluster.worker.reconfigure["demo"]()  # the connector asks for new task configs (e.g. a new topic)
    wait_until(lambda: len(sent) == 2, 10, "the second forward")
    assert sent[1] == (LEADER_URL, "demo", [{"task": "0", "new": "topic"}], b"k2")
