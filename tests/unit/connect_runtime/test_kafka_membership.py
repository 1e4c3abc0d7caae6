"""The leader's assignment step and self-fencing of a Connect group member, without a broker.

The broker round trips (join, leave, kill) are in tests/integration/test_kafka_membership.py.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.assignor import EMPTY, ConnectorsAndTasks
from connect_runtime.runtime.coordination.connect_protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    MemberMetadata,
    decode_member_assignment,
    decode_member_metadata,
    encode_member_metadata,
)
from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership
from connect_runtime.runtime.coordination.session_lease import MustStopFirst
from connect_runtime.runtime.worker_config import DistributedWorkerConfig
from connect_runtime.storage.config_topic_state import ClusterConfigState

WORK = {"a": 3, "b": 1}


def snapshot(offset: int) -> ClusterConfigState:
    return ClusterConfigState(offset=offset, connector_configs={c: {} for c in WORK}, task_counts=dict(WORK),
                              task_configs={ConnectorTaskId(c, i): {} for c, n in WORK.items() for i in range(n)})


def membership(session_timeout_ms: int = 6000) -> KafkaGroupMembership:
    return KafkaGroupMembership("g", "http://leader:8083/", {"bootstrap_servers": "127.0.0.1:1"},
                                session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=1000,
                                rebalance_timeout_ms=6000, scheduled_rebalance_max_delay_ms=1000)


def metadata(offset: int, owned: ConnectorsAndTasks = EMPTY) -> bytes:
    return encode_member_metadata(MemberMetadata("http://m/", offset, owned))


def test_leader_assigns_all_work_once_from_its_snapshot() -> None:
    member = membership()
    member._snapshot = snapshot(offset=5)
    out = member._leader_assign("m1", 1, {"m1": metadata(5), "m2": metadata(4), "m3": metadata(5)})
    decoded = {m: decode_member_assignment(data) for m, data in out.items()}
    assert all(a.error == NO_ERROR and a.leader == "m1" and a.config_offset == 5 for a in decoded.values())
    assert all(a.leader_url == "http://leader:8083/" for a in decoded.values())
    assigned = [a.assigned for a in decoded.values()]
    assert sum(len(a) for a in assigned) == 2 + 4
    everything = ConnectorsAndTasks.of(WORK, (ConnectorTaskId(c, i) for c, n in WORK.items() for i in range(n)))
    assert assigned[0] | assigned[1] | assigned[2] == everything


def test_a_leader_behind_a_member_on_the_config_topic_assigns_nothing() -> None:
    member = membership()
    member._snapshot = snapshot(offset=5)
    owned = ConnectorsAndTasks.of({"a"})
    out = member._leader_assign("m1", 1, {"m1": metadata(5), "m2": metadata(8, owned)})
    decoded = [decode_member_assignment(data) for data in out.values()]
    assert all(a.error == CONFIG_MISMATCH for a in decoded)
    assert all(not a.assigned and not a.revoked for a in decoded)


def _owning(member: KafkaGroupMembership, generation_lost: bool) -> None:
    """A joined member owning work; only whether its generation is lost matters to the fencing check."""
    rejoins: list[bool] = []
    member._coordinator = SimpleNamespace(  # type: ignore[assignment]
        generation_lost=generation_lost, request_rejoin=lambda: rejoins.append(True), rejoins=rejoins)
    member._owned = ConnectorsAndTasks.of({"a"}, {ConnectorTaskId("a", 0)})


# When to stop is the session lease's rule, tested as tables in test_session_lease.py; these tests check
# that the membership feeds it through the coordinator's callbacks and acts on its answer.


def test_a_member_without_acknowledged_heartbeats_for_a_session_stops_everything() -> None:
    member = membership(session_timeout_ms=6000)
    _owning(member, generation_lost=False)
    member._confirm(time.monotonic() - 2)  # the IO thread's callback for an answered heartbeat
    assert member._fence_if_lost() is None
    member2 = membership(session_timeout_ms=6000)
    _owning(member2, generation_lost=False)
    member2._confirm(time.monotonic() - 7)
    fenced = member2._fence_if_lost()
    assert fenced is not None
    assert not fenced.connectors and not fenced.tasks and not fenced.leader
    assert not member2._owned
    # ... and rejoins owning nothing, so the leader gives the work out again (a paused-then-resumed
    # worker whose seat survived must not sit on work it no longer runs).
    assert member2._coordinator.rejoins == [True]  # type: ignore[union-attr]


def test_a_join_in_flight_extends_the_deadline_to_rebalance_plus_session_timeout() -> None:
    member = membership(session_timeout_ms=6000)
    _owning(member, generation_lost=False)
    member._confirm(time.monotonic() - 7)
    member._set_join_started(time.monotonic() - 11)  # the IO thread's callback for a JoinGroup sent
    assert member._fence_if_lost() is None
    member._set_join_started(time.monotonic() - 13)  # a later attempt of that exchange, sent 13 s ago
    assert member._fence_if_lost() is not None


def test_a_member_whose_generation_is_lost_stops_everything_before_rejoining() -> None:
    member = membership()
    _owning(member, generation_lost=True)
    member._confirm(time.monotonic())
    fenced = member._fence_if_lost()
    assert fenced is not None and not fenced.tasks


def test_join_metadata_reports_owned_work_and_refuses_once_the_generation_is_lost() -> None:
    member = membership()
    member._snapshot = snapshot(offset=5)
    owned = ConnectorsAndTasks.of({"a"}, {ConnectorTaskId("a", 0)})
    member._owned = owned
    reported = decode_member_metadata(member._join_metadata(False))
    assert reported == MemberMetadata("http://leader:8083/", 5, owned)
    with pytest.raises(MustStopFirst):  # it must stop its work before it rejoins
        member._join_metadata(True)
    member._owned = EMPTY
    assert decode_member_metadata(member._join_metadata(True)) == MemberMetadata(  # nothing owned: rejoin
        "http://leader:8083/", 5)


def test_a_finished_join_is_handed_to_the_next_poll_and_wakes_the_herder() -> None:
    woken: list[bool] = []
    member = KafkaGroupMembership("g", None, {"bootstrap_servers": "127.0.0.1:1"}, notify=lambda: woken.append(True))
    member._joined(4, "m1", b"{}")
    assert member._completed is not None and member._completed.generation == 4
    assert member._last_completed_generation == 4
    assert woken == [True]


def test_from_worker_config_takes_group_timeouts_and_the_group_client_config() -> None:
    config = DistributedWorkerConfig({
        "bootstrap.servers": "h:9092", "group.id": "connect-cluster", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s", "session.timeout.ms": "7000",
        "heartbeat.interval.ms": "2000", "rebalance.timeout.ms": "30000",
        "scheduled.rebalance.max.delay.ms": "12345", "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="u" password="p";'})
    member = KafkaGroupMembership.from_worker_config(config, "http://w:8083/")
    assert member.group_id == "connect-cluster"
    assert member.advertised_url == "http://w:8083/"
    assert member._client_config == config.group_client_config("coordinator")  # its keys: test_group_client.py
    coordinator_config = member._settings.coordinator_config()
    assert coordinator_config["session_timeout_ms"] == 7000
    assert coordinator_config["heartbeat_interval_ms"] == 2000
    assert coordinator_config["max_poll_interval_ms"] == 30000  # kafka-python's name for rebalance.timeout.ms
    assert member._assignor.max_delay_ms == 12345



class _Joined:
    """A coordinator that has joined and heartbeats; counts rejoin requests."""

    def __init__(self) -> None:
        self.member_id = "m1"
        self.generation_lost = False
        self.rejoins = 0
        self.rejoin_needed = False

    def stable(self) -> bool:
        return True

    def need_rejoin(self) -> bool:
        return self.rejoin_needed

    def request_rejoin(self) -> None:
        self.rejoins += 1
        self.rejoin_needed = True

    def poll_heartbeat(self) -> None:
        pass

    def ensure_active_group(self, timeout_s: float) -> bool:
        return False  # a real round would take a JoinGroup: these tests only count the requests


def _leader_of_generation_3(others: dict[str, bytes] | None = None,
                            confirmed_ago_s: float = 0.0) -> tuple[KafkaGroupMembership, _Joined]:
    """A member that led generation 3 (alone unless ``others`` were in that round), owning nothing, whose
    last heartbeat the broker acknowledged ``confirmed_ago_s`` ago."""
    member = membership()
    coordinator = _Joined()
    member._coordinator = coordinator  # type: ignore[assignment]
    member._snapshot = ClusterConfigState(offset=1)
    out = member._leader_assign("m1", 3, {"m1": metadata(1), **(others or {})})
    member._joined(3, "m1", out["m1"])
    completed, member._completed = member._completed, None
    assert completed is not None and member._apply(completed) is not None
    member._confirm(time.monotonic() - confirmed_ago_s)
    return member, coordinator


EVERYTHING = ConnectorsAndTasks.of(WORK, (ConnectorTaskId(c, i) for c, n in WORK.items() for i in range(n)))


def test_a_sole_leader_assigns_new_work_in_the_same_generation_without_rejoining() -> None:
    member, coordinator = _leader_of_generation_3()
    member.request_rebalance(work_changed=True)
    assignment = member.poll(snapshot(offset=9), 0.0)
    assert assignment is not None and coordinator.rejoins == 0
    assert (assignment.generation, assignment.leader, assignment.config_offset) == (3, True, 9)
    assert ConnectorsAndTasks.of(assignment.connectors, assignment.tasks) == EVERYTHING
    # The next real round sees it as owned, as if a rebalance had assigned it.
    assert decode_member_metadata(member._join_metadata(False)).owned == EVERYTHING


def test_a_leader_with_other_members_or_a_rejoin_due_rebalances_for_new_work() -> None:
    member, coordinator = _leader_of_generation_3({"m2": metadata(1)})
    member.request_rebalance(work_changed=True)
    assert coordinator.rejoins == 1  # two members: the group must reassign

    member, coordinator = _leader_of_generation_3()
    coordinator.rejoin_needed = True  # a member is joining: the broker asked for a rejoin
    member.request_rebalance(work_changed=True)
    assert coordinator.rejoins == 1

    member, coordinator = _leader_of_generation_3(confirmed_ago_s=4)  # over half a session (6 s)
    member.request_rebalance(work_changed=True)
    assert coordinator.rejoins == 1


def test_a_rebalance_for_any_other_reason_always_rejoins() -> None:
    member, coordinator = _leader_of_generation_3()
    member.request_rebalance()  # e.g. this leader's config write was fenced: a newer leader exists
    assert coordinator.rejoins == 1


def test_a_sole_leader_that_lost_its_generation_before_the_poll_runs_a_real_round() -> None:
    member, coordinator = _leader_of_generation_3()
    member.request_rebalance(work_changed=True)
    coordinator.rejoin_needed = True  # the heartbeat thread learnt of a rebalance meanwhile
    assert member.poll(snapshot(offset=9), 0.0) is None
    assert coordinator.rejoins == 1
