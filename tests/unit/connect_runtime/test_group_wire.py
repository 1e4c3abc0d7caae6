"""The group protocol every member speaks: Java's ``sessioned`` (coordination/group_wire.py).

The Java side is read and written with ``java_connect_protocol``, which tests/kafka/test_java_connect_protocol.py
holds to Java's own code; here: what the runtime's metadata and assignments become on Java's wire and back,
and a leader of ours assigning to members that speak Java's protocol, as a Java worker would read it.
"""

from __future__ import annotations

import pytest

from connect_runtime.api.errors import ConfigError
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination import group_messages as messages
from connect_runtime.runtime.coordination import java_connect_protocol as java
from connect_runtime.runtime.coordination.assignor import EMPTY, ConnectorsAndTasks
from connect_runtime.runtime.coordination.group_wire import NO_REST_URL, WIRE
from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership, _Completed
from connect_runtime.runtime.worker_config import DistributedWorkerConfig
from connect_runtime.storage.config_topic_state import ClusterConfigState

WORK = {"MirrorSourceConnector": 3, "MirrorCheckpointConnector": 1}
EVERYTHING = ConnectorsAndTasks.of(WORK, (ConnectorTaskId(c, i) for c, n in WORK.items() for i in range(n)))


@pytest.mark.parametrize("value", [None, "", "sessioned", " Sessioned "])
def test_sessioned_or_unset_is_accepted_and_every_member_speaks_sessioned(value: str | None) -> None:
    extra = {} if value is None else {"connect.protocol": value}
    member = KafkaGroupMembership.from_worker_config(DistributedWorkerConfig(_worker_config(**extra)), "http://w/")
    assert member.wire.name == "sessioned"


@pytest.mark.parametrize(("value", "why"), [("compatible", "'compatible' protocol has no request signing"),
                                            ("Default", "'default' \\(eager\\) protocol revokes all work"),
                                            ("eager", "only 'sessioned' is supported")])
def test_the_worker_config_refuses_java_protocols_we_do_not_speak_by_name(value: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"'{value}' for configuration connect.protocol: .*{why}.*; set it to "
                                          f"'sessioned' \\(Java's default\\) or delete the key$"):
        DistributedWorkerConfig(_worker_config(**{"connect.protocol": value}))


def test_member_metadata_is_java_sessioned_and_reads_back() -> None:
    owned = ConnectorsAndTasks.of({"MirrorSourceConnector"}, {ConnectorTaskId("MirrorSourceConnector", 2)})
    data = WIRE.encode_metadata(messages.MemberMetadata("http://w:8083/", 12, owned))
    assert java.header_version(data) == 2
    state = java.decode_metadata(data)  # what a Java leader reads
    assert (state.url, state.config_offset) == ("http://w:8083/", 12)
    assert state.assignment is not None
    assert (state.assignment.connectors, state.assignment.tasks) == (("MirrorSourceConnector",),
                                                                     (ConnectorTaskId("MirrorSourceConnector", 2),))
    assert WIRE.decode_metadata(data) == messages.MemberMetadata("http://w:8083/", 12, owned)


def test_a_member_owning_nothing_sends_a_null_allocation_as_java_does() -> None:
    data = WIRE.encode_metadata(messages.MemberMetadata("http://w:8083/", 3))
    assert data == java.encode_metadata(java.WorkerState("http://w:8083/", 3), java.JavaConnectProtocol.SESSIONED)
    assert java.decode_metadata(data).assignment is None


def test_a_member_sends_its_last_assignment_back_as_its_allocation_as_java_does() -> None:
    """Java's ``assignmentSnapshot``: the last assignment's leader, URL, offset, revocations and delay, with all
    the member runs as its connectors and tasks."""
    leader = _leader()
    data = java.encode_assignment(java.Assignment(
        "java-1", "http://java:8083/", 7, ("MirrorSourceConnector",), (ConnectorTaskId("MirrorSourceConnector", 0),),
        (), (ConnectorTaskId("MirrorSourceConnector", 2),), 10_000), java.JavaConnectProtocol.SESSIONED)
    leader._owned = ConnectorsAndTasks.of((), {ConnectorTaskId("MirrorSourceConnector", 1),
                                               ConnectorTaskId("MirrorSourceConnector", 2)})
    leader._coordinator = _Coordinator()  # type: ignore[assignment]
    leader._apply(_Completed(3, "py-1", data))
    allocation = java.decode_metadata(leader._join_metadata(False)).assignment
    assert allocation == java.Assignment(
        "java-1", "http://java:8083/", 7, ("MirrorSourceConnector",),
        (ConnectorTaskId("MirrorSourceConnector", 0), ConnectorTaskId("MirrorSourceConnector", 1)),
        (), (ConnectorTaskId("MirrorSourceConnector", 2),), 10_000)
    leader._fence("a test")  # dropped everything: a null allocation, as Java's after it revoked all
    assert java.decode_metadata(leader._join_metadata(False)).assignment is None


class _Coordinator:
    def request_rejoin(self) -> None:
        pass


def test_no_internal_rest_travels_as_javas_unusable_url() -> None:
    data = WIRE.encode_metadata(messages.MemberMetadata("http://w:8083/", 3, internal_rest=False))
    assert java.decode_metadata(data).url == NO_REST_URL
    assert WIRE.decode_metadata(data) == messages.MemberMetadata(None, 3, internal_rest=False)


def test_assignments_round_trip_through_javas_schema() -> None:
    assignment = messages.WireAssignment(
        messages.NO_ERROR, "member-1", "http://l:8083/", 9,
        ConnectorsAndTasks.of({"MirrorSourceConnector"}, {ConnectorTaskId("MirrorSourceConnector", 1)}),
        ConnectorsAndTasks.of((), {ConnectorTaskId("MirrorCheckpointConnector", 0)}), 2500)
    data = WIRE.encode_assignment(assignment)
    got = java.decode_assignment(data)
    assert (got.leader, got.leader_url, got.config_offset, got.delay_ms) == ("member-1", "http://l:8083/", 9, 2500)
    assert got.revoked_tasks == (ConnectorTaskId("MirrorCheckpointConnector", 0),)
    assert WIRE.decode_assignment(data) == assignment


def test_a_java_leaders_assignment_is_read_as_the_runtimes() -> None:
    """Bytes as a Java leader sends them (a connector with its tasks, a revocation, a delay)."""
    data = java.encode_assignment(java.Assignment(
        "java-1", "http://java:8083/", 41, ("MirrorSourceConnector",),
        (ConnectorTaskId("MirrorSourceConnector", 0), ConnectorTaskId("MirrorHeartbeatConnector", 0)),
        (), (ConnectorTaskId("MirrorSourceConnector", 2),), 10_000), java.JavaConnectProtocol.SESSIONED)
    assert WIRE.decode_assignment(data) == messages.WireAssignment(
        messages.NO_ERROR, "java-1", "http://java:8083/", 41,
        ConnectorsAndTasks.of({"MirrorSourceConnector"}, {ConnectorTaskId("MirrorSourceConnector", 0),
                                                          ConnectorTaskId("MirrorHeartbeatConnector", 0)}),
        ConnectorsAndTasks.of((), {ConnectorTaskId("MirrorSourceConnector", 2)}), 10_000)


@pytest.mark.parametrize("data", [b"", b"\x00\x02\x00", b'{"version": 1}'])
def test_unreadable_java_payloads_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(messages.ProtocolError, match="sessioned"):
        WIRE.decode_metadata(data)
    with pytest.raises(messages.ProtocolError, match="sessioned"):
        WIRE.decode_assignment(data)


def _java_member(offset: int, owned: ConnectorsAndTasks = EMPTY, url: str = "http://java:8083/") -> bytes:
    """A Java worker's JoinGroup metadata for ``sessioned`` (its allocation: what it runs)."""
    allocation = (java.Assignment("old-leader", "http://old:8083/", offset, tuple(sorted(owned.connectors)),
                                  tuple(sorted(owned.tasks))) if owned else None)
    return java.encode_metadata(java.WorkerState(url, offset, allocation), java.JavaConnectProtocol.SESSIONED)


def _leader() -> KafkaGroupMembership:
    member = KafkaGroupMembership("A-mm2", "http://py:8083/", {"bootstrap_servers": "127.0.0.1:1"},
                                  scheduled_rebalance_max_delay_ms=10_000)
    member._snapshot = ClusterConfigState(
        offset=7, connector_configs={c: {} for c in WORK}, task_counts=dict(WORK),
        task_configs={t: {} for t in EVERYTHING.tasks})
    return member


def test_our_leader_assigns_java_members_in_javas_schema_and_never_what_they_run() -> None:
    leader = _leader()
    java_runs = ConnectorsAndTasks.of((), {ConnectorTaskId("MirrorSourceConnector", 0),
                                          ConnectorTaskId("MirrorSourceConnector", 1)})
    out = leader._leader_assign("py-1", 5, {"py-1": WIRE.encode_metadata(messages.MemberMetadata("http://py:8083/", 7)),
                                            "java-1": _java_member(7, java_runs)})
    decoded = {m: java.decode_assignment(data) for m, data in out.items()}  # as a Java follower reads it
    assert all(a.error == java.NO_ERROR and a.leader == "py-1" and a.leader_url == "http://py:8083/"
               and a.config_offset == 7 for a in decoded.values())
    to_java = decoded["java-1"]
    # What the Java member runs is not assigned anywhere else in the same round (revoke before reassign).
    to_python = set(decoded["py-1"].tasks)
    assert not to_python & java_runs.tasks
    assert not set(to_java.tasks) & java_runs.tasks  # already its own: not assigned again
    everything_after = (set(to_python) | set(to_java.tasks) | (java_runs.tasks - set(to_java.revoked_tasks)))
    assert everything_after == set(EVERYTHING.tasks)


def test_our_leader_keeps_connectors_when_a_java_member_has_no_internal_rest() -> None:
    leader = _leader()
    out = leader._leader_assign("py-1", 5, {"py-1": WIRE.encode_metadata(messages.MemberMetadata("http://py:8083/", 7)),
                                            "java-1": _java_member(7, url=NO_REST_URL)})
    decoded = {m: java.decode_assignment(data) for m, data in out.items()}
    assert set(decoded["py-1"].connectors) == set(WORK)
    assert decoded["java-1"].connectors == ()


def test_a_java_member_ahead_on_the_config_topic_gets_config_mismatch() -> None:
    out = _leader()._leader_assign("py-1", 5, {"py-1": WIRE.encode_metadata(messages.MemberMetadata("http://py/", 7)),
                                               "java-1": _java_member(9)})
    assert {java.decode_assignment(data).error for data in out.values()} == {java.CONFIG_MISMATCH}


def _worker_config(**extra: str) -> dict[str, str]:
    return {"bootstrap.servers": "h:9092", "group.id": "A-mm2", "config.storage.topic": "c",
            "offset.storage.topic": "o", "status.storage.topic": "s", **extra}
