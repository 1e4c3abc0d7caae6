"""Java Connect's group protocols (coordination/connect_protocol.py): golden bytes and round trips, then the
protocol every member speaks (``sessioned``): what the runtime's metadata and assignments become on Java's
wire and back, and a leader of ours assigning to members that speak Java's protocol, as a Java worker would
read it.

The golden bytes were written by Java's own ``ConnectProtocol`` / ``IncrementalCooperativeConnectProtocol``
(connect-runtime 4.3.1 on JDK 17, through tests/kafka/mirrormaker/ConnectProtocolProbe.java); the Kafka
tier (tests/kafka/test_java_connect_protocol.py) compares many more cases with Java live.
"""

from __future__ import annotations

from typing import Any

import pytest

from connect_runtime.api.errors import ConfigError
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.assignor import EMPTY, ConnectorsAndTasks
from connect_runtime.runtime.coordination.connect_protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    NO_REST_URL,
    PROTOCOLS_BY_PREFERENCE,
    Assignment,
    JavaConnectProtocol,
    JavaProtocolError,
    MemberMetadata,
    ProtocolError,
    WireAssignment,
    WorkerState,
    decode_assignment,
    decode_member_assignment,
    decode_member_metadata,
    decode_metadata,
    encode_assignment,
    encode_member_assignment,
    encode_member_metadata,
    encode_metadata,
    header_version,
    java_hash_set_order,
    java_string_hash,
    join_group_protocols,
)
from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership, _Completed  # noqa: PLC2701 (a unit test of this module's own internal)
from connect_runtime.runtime.worker_config import DistributedWorkerConfig
from connect_runtime.storage.config_topic_state import ClusterConfigState

EAGER, COMPATIBLE, SESSIONED = JavaConnectProtocol.EAGER, JavaConnectProtocol.COMPATIBLE, JavaConnectProtocol.SESSIONED
T = ConnectorTaskId


def _assignment(**fields: Any) -> Assignment:
    return Assignment(leader="L", leader_url="http://u", config_offset=3, **fields)


# (protocol, assignment, Java's bytes)
GOLDEN_ASSIGNMENTS = [
    (EAGER, _assignment(connectors=("c",), tasks=(T("c", 0), T("d", 1))),
     "0000000000014c0008687474703a2f2f7500000000000000030000000200016300000002ffffffff000000000001640000000100000001"),
    (COMPATIBLE, _assignment(error=CONFIG_MISMATCH, revoked_connectors=("r",), revoked_tasks=(T("r", 2),),
                             delay_ms=1000),
     "0001000100014c0008687474703a2f2f750000000000000003000000000000000100017200000002ffffffff00000002000003e8"),
    (SESSIONED, _assignment(),
     "0002000000014c0008687474703a2f2f750000000000000003000000000000000000000000"),
    (SESSIONED, _assignment(connectors=("b", "a", "c", "a")),
     "0002000000014c0008687474703a2f2f7500000000000000030000000300016100000001ffffffff00016200000001ffffffff"
     "00016300000001ffffffff0000000000000000"),
]


@pytest.mark.parametrize(("protocol", "assignment", "golden"), GOLDEN_ASSIGNMENTS)
def test_assignment_bytes_are_javas(protocol: JavaConnectProtocol, assignment: Assignment, golden: str) -> None:
    assert encode_assignment(assignment, protocol, jdk=17).hex() == golden
    assert header_version(bytes.fromhex(golden)) == protocol.version


def test_metadata_bytes_are_javas_in_javas_preference_order() -> None:
    assert encode_metadata(WorkerState("http://a:8083/", 5), EAGER).hex() == (
        "0000000e687474703a2f2f613a383038332f0000000000000005")
    fresh = WorkerState("http://a", -1)
    assert [(name, data.hex()) for name, data in join_group_protocols(fresh, SESSIONED)] == [
        ("sessioned", "00020008687474703a2f2f61ffffffffffffffffffffffff"),  # null allocation: int32 -1
        ("compatible", "00010008687474703a2f2f61ffffffffffffffffffffffff"),
        ("default", "00000008687474703a2f2f61ffffffffffffffff"),
    ]
    running = WorkerState("u", 1, Assignment("L", "http://u", 3, ("c",), (T("c", 0),)))
    assert [(name, data.hex()) for name, data in join_group_protocols(running, COMPATIBLE)] == [
        # the allocation: int32 length 0x34, then the previous assignment encoded as v1
        ("compatible", "00010001750000000000000001000000340001000000014c0008687474703a2f2f750000000000000003"
                       "0000000100016300000002ffffffff000000000000000000000000"),
        ("default", "00000001750000000000000001"),  # v0 has no allocation
    ]


def test_protocol_names_and_versions() -> None:
    assert [(p.protocol_name, p.version) for p in PROTOCOLS_BY_PREFERENCE] == [
        ("sessioned", 2), ("compatible", 1), ("default", 0)]
    assert JavaConnectProtocol.from_name("Sessioned") is SESSIONED
    with pytest.raises(JavaProtocolError, match="not a Java Connect protocol"):
        JavaConnectProtocol.from_name("range")
    assert [name for name, _ in join_group_protocols(WorkerState("u", 0), EAGER)] == ["default"]


ROUND_TRIPS = [
    Assignment("leader-1", "http://127.0.0.1:8083/", 2**40, ("a", "b"), (T("a", 0), T("b", 1), T("z", 7)),
               ("c",), (T("c", 0), T("c", 1)), 300_000, CONFIG_MISMATCH),
    Assignment("", "", -1),
    Assignment("m", "https://h:1/", 0, tuple(f"connector-{i}" for i in range(30)),
               tuple(T(f"connector-{i}", i) for i in range(30))),
    Assignment("m", "u", 1, ("connecteur-é", "\u8fde\u63a5\u5668"), (T("connecteur-é", 0),)),
]


@pytest.mark.parametrize("assignment", ROUND_TRIPS)
@pytest.mark.parametrize("protocol", [COMPATIBLE, SESSIONED])
def test_assignment_round_trip(assignment: Assignment, protocol: JavaConnectProtocol) -> None:
    read = decode_assignment(encode_assignment(assignment, protocol))
    # connectors and tasks come back grouped by connector, connectors in Java's HashSet order
    assert read == Assignment(assignment.leader, assignment.leader_url, assignment.config_offset,
                              tuple(java_hash_set_order(assignment.connectors)), read.tasks,
                              assignment.revoked_connectors, read.revoked_tasks, assignment.delay_ms,
                              assignment.error)
    assert sorted(read.tasks) == sorted(assignment.tasks)
    assert sorted(read.revoked_tasks) == sorted(assignment.revoked_tasks)


def test_metadata_round_trip_and_v0_read_by_the_incremental_reader() -> None:
    previous = ROUND_TRIPS[0]
    state = WorkerState("http://127.0.0.1:8083/", 41, previous)
    for protocol in (COMPATIBLE, SESSIONED):
        data = encode_metadata(state, protocol)
        assert header_version(data) == protocol.version
        read = decode_metadata(data)
        assert (read.url, read.config_offset) == (state.url, state.config_offset)
        assert read.assignment == decode_assignment(encode_assignment(previous, protocol))
    # Java's worker reads a v0 member's metadata with the v1 reader: no allocation is a null one
    assert decode_metadata(encode_metadata(state, EAGER)) == WorkerState(state.url, 41, None)
    assert decode_metadata(encode_metadata(WorkerState("u", 2), SESSIONED)) == WorkerState("u", 2, None)


def test_v0_assignment_reads_with_missing_fields_defaulted() -> None:
    v0 = encode_assignment(_assignment(connectors=("c",)), EAGER)
    assert decode_assignment(v0) == _assignment(connectors=("c",))
    # only the fixed header: the arrays are null (empty), the delay 0, as Java's tolerant schema reads
    header_only = bytes.fromhex("0001" "0000" "00014c" "0001" "75" "0000000000000009")
    assert decode_assignment(header_only) == Assignment("L", "u", 9)
    # null arrays written explicitly
    assert decode_assignment(header_only + bytes.fromhex("ffffffff" "ffffffff" "00000005")) == Assignment(
        "L", "u", 9, delay_ms=5)


def test_v0_cannot_carry_revocations_or_a_delay() -> None:
    with pytest.raises(ValueError, match="revocations or a scheduled delay"):
        encode_assignment(_assignment(revoked_connectors=("c",)), EAGER)
    with pytest.raises(ValueError, match="revocations or a scheduled delay"):
        encode_assignment(_assignment(delay_ms=5), EAGER)


@pytest.mark.parametrize(("hex_bytes", "message"), [
    ("ffff", "Unsupported subscription version: -1"),
    ("0001", "Error reading field 'error'"),
    ("00010000ffff", "String length -1 cannot be negative"),
    ("000100000005414243", "Error reading field 'leader'"),
    ("0001" "0000" "00014c" "000175" "0000000000000009" "00000003", "Error reading array of size 3"),
    ("0001" "0000" "00014c" "000175" "0000000000000009" "00000001" "000163" "ffffffff",
     "Array size -1 cannot be negative"),
    ("0001" "0000" "00014c" "000175" "0000000000000009" "00000000" "00000000" "0000", "Error reading field 'delay'"),
])
def test_bytes_java_refuses_are_refused(hex_bytes: str, message: str) -> None:
    with pytest.raises(JavaProtocolError, match=message):
        decode_assignment(bytes.fromhex(hex_bytes))


def test_metadata_with_a_truncated_allocation_is_refused() -> None:
    data = encode_metadata(WorkerState("u", 1, _assignment()), COMPATIBLE)
    with pytest.raises(JavaProtocolError, match="allocation"):
        decode_metadata(data[:-3])


def test_values_java_could_not_write_are_refused() -> None:
    with pytest.raises(ValueError, match="Java short"):
        encode_assignment(_assignment(error=1 << 15), SESSIONED)
    with pytest.raises(ValueError, match="Java int"):
        encode_assignment(_assignment(delay_ms=1 << 31), SESSIONED)
    with pytest.raises(ValueError, match="maximum string length"):
        encode_metadata(WorkerState("u" * 32768, 0), EAGER)


def test_java_string_hash_and_hash_set_order() -> None:
    # String.hashCode: "hello".hashCode() == 99162322, a non-BMP character hashes its two UTF-16 units
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("\U0001f600") == (31 * 0xD83D + 0xDE00)
    assert java_string_hash("polygenelubricants") == (-2147483648) & 0xFFFFFFFF
    assert java_hash_set_order(["b", "a", "c", "a"]) == ["a", "b", "c"]  # hashes 98, 97, 99: bucket order
    # 12 names: a table of 32 up to Java 18 (12 / .75 + 1 = 17), of 16 from Java 19: another order
    names = [f"connector-{i}" for i in range(12)]
    assert java_hash_set_order(names, jdk=17) != java_hash_set_order(names, jdk=21)
    assert sorted(java_hash_set_order(names, jdk=17)) == sorted(names)


WORK = {"MirrorSourceConnector": 3, "MirrorCheckpointConnector": 1}
EVERYTHING = ConnectorsAndTasks.of(WORK, (ConnectorTaskId(c, i) for c, n in WORK.items() for i in range(n)))


@pytest.mark.parametrize("value", [None, "", "sessioned", " Sessioned "])
def test_sessioned_or_unset_is_accepted_and_every_member_speaks_sessioned(value: str | None) -> None:
    extra = {} if value is None else {"connect.protocol": value}
    member = KafkaGroupMembership.from_worker_config(DistributedWorkerConfig(_worker_config(**extra)), "http://w/")
    assert member.protocol.protocol_name == "sessioned"


@pytest.mark.parametrize(("value", "why"), [("compatible", "'compatible' protocol has no request signing"),
                                            ("Default", "'default' \\(eager\\) protocol revokes all work"),
                                            ("eager", "only 'sessioned' is supported")])
def test_the_worker_config_refuses_java_protocols_we_do_not_speak_by_name(value: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"'{value}' for configuration connect.protocol: .*{why}.*; set it to "
                                          f"'sessioned' \\(Java's default\\) or delete the key$"):
        DistributedWorkerConfig(_worker_config(**{"connect.protocol": value}))


def test_member_metadata_is_java_sessioned_and_reads_back() -> None:
    owned = ConnectorsAndTasks.of({"MirrorSourceConnector"}, {ConnectorTaskId("MirrorSourceConnector", 2)})
    data = encode_member_metadata(MemberMetadata("http://w:8083/", 12, owned))
    assert header_version(data) == 2
    state = decode_metadata(data)  # what a Java leader reads
    assert (state.url, state.config_offset) == ("http://w:8083/", 12)
    assert state.assignment is not None
    assert (state.assignment.connectors, state.assignment.tasks) == (("MirrorSourceConnector",),
                                                                     (ConnectorTaskId("MirrorSourceConnector", 2),))
    assert decode_member_metadata(data) == MemberMetadata("http://w:8083/", 12, owned)


def test_a_member_owning_nothing_sends_a_null_allocation_as_java_does() -> None:
    data = encode_member_metadata(MemberMetadata("http://w:8083/", 3))
    assert data == encode_metadata(WorkerState("http://w:8083/", 3), JavaConnectProtocol.SESSIONED)
    assert decode_metadata(data).assignment is None


def test_a_member_sends_its_last_assignment_back_as_its_allocation_as_java_does() -> None:
    """Java's ``assignmentSnapshot``: the last assignment's leader, URL, offset, revocations and delay, with all
    the member runs as its connectors and tasks."""
    leader = _leader()
    data = encode_assignment(Assignment(
        "java-1", "http://java:8083/", 7, ("MirrorSourceConnector",), (ConnectorTaskId("MirrorSourceConnector", 0),),
        (), (ConnectorTaskId("MirrorSourceConnector", 2),), 10_000), JavaConnectProtocol.SESSIONED)
    leader._owned = ConnectorsAndTasks.of((), {ConnectorTaskId("MirrorSourceConnector", 1),
                                               ConnectorTaskId("MirrorSourceConnector", 2)})
    leader._coordinator = _Coordinator()  # type: ignore[assignment]
    leader._apply(_Completed(3, "py-1", data))
    allocation = decode_metadata(leader._join_metadata(False)).assignment
    assert allocation == Assignment(
        "java-1", "http://java:8083/", 7, ("MirrorSourceConnector",),
        (ConnectorTaskId("MirrorSourceConnector", 0), ConnectorTaskId("MirrorSourceConnector", 1)),
        (), (ConnectorTaskId("MirrorSourceConnector", 2),), 10_000)
    leader._fence("a test")  # dropped everything: a null allocation, as Java's after it revoked all
    assert decode_metadata(leader._join_metadata(False)).assignment is None


class _Coordinator:
    def request_rejoin(self) -> None:
        pass


def test_no_internal_rest_travels_as_javas_unusable_url() -> None:
    data = encode_member_metadata(MemberMetadata("http://w:8083/", 3, internal_rest=False))
    assert decode_metadata(data).url == NO_REST_URL
    assert decode_member_metadata(data) == MemberMetadata(None, 3, internal_rest=False)


def test_assignments_round_trip_through_javas_schema() -> None:
    assignment = WireAssignment(
        NO_ERROR, "member-1", "http://l:8083/", 9,
        ConnectorsAndTasks.of({"MirrorSourceConnector"}, {ConnectorTaskId("MirrorSourceConnector", 1)}),
        ConnectorsAndTasks.of((), {ConnectorTaskId("MirrorCheckpointConnector", 0)}), 2500)
    data = encode_member_assignment(assignment)
    got = decode_assignment(data)
    assert (got.leader, got.leader_url, got.config_offset, got.delay_ms) == ("member-1", "http://l:8083/", 9, 2500)
    assert got.revoked_tasks == (ConnectorTaskId("MirrorCheckpointConnector", 0),)
    assert decode_member_assignment(data) == assignment


def test_a_java_leaders_assignment_is_read_as_the_runtimes() -> None:
    """Bytes as a Java leader sends them (a connector with its tasks, a revocation, a delay)."""
    data = encode_assignment(Assignment(
        "java-1", "http://java:8083/", 41, ("MirrorSourceConnector",),
        (ConnectorTaskId("MirrorSourceConnector", 0), ConnectorTaskId("MirrorHeartbeatConnector", 0)),
        (), (ConnectorTaskId("MirrorSourceConnector", 2),), 10_000), JavaConnectProtocol.SESSIONED)
    assert decode_member_assignment(data) == WireAssignment(
        NO_ERROR, "java-1", "http://java:8083/", 41,
        ConnectorsAndTasks.of({"MirrorSourceConnector"}, {ConnectorTaskId("MirrorSourceConnector", 0),
                                                          ConnectorTaskId("MirrorHeartbeatConnector", 0)}),
        ConnectorsAndTasks.of((), {ConnectorTaskId("MirrorSourceConnector", 2)}), 10_000)


@pytest.mark.parametrize("data", [b"", b"\x00\x02\x00", b'{"version": 1}'])
def test_unreadable_java_payloads_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError, match="sessioned"):
        decode_member_metadata(data)
    with pytest.raises(ProtocolError, match="sessioned"):
        decode_member_assignment(data)


def _java_member(offset: int, owned: ConnectorsAndTasks = EMPTY, url: str = "http://java:8083/") -> bytes:
    """A Java worker's JoinGroup metadata for ``sessioned`` (its allocation: what it runs)."""
    allocation = (Assignment("old-leader", "http://old:8083/", offset, tuple(sorted(owned.connectors)),
                                  tuple(sorted(owned.tasks))) if owned else None)
    return encode_metadata(WorkerState(url, offset, allocation), JavaConnectProtocol.SESSIONED)


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
    out = leader._leader_assign("py-1", 5, {"py-1": encode_member_metadata(MemberMetadata("http://py:8083/", 7)),
                                            "java-1": _java_member(7, java_runs)})
    decoded = {m: decode_assignment(data) for m, data in out.items()}  # as a Java follower reads it
    assert all(a.error == NO_ERROR and a.leader == "py-1" and a.leader_url == "http://py:8083/"
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
    out = leader._leader_assign("py-1", 5, {"py-1": encode_member_metadata(MemberMetadata("http://py:8083/", 7)),
                                            "java-1": _java_member(7, url=NO_REST_URL)})
    decoded = {m: decode_assignment(data) for m, data in out.items()}
    assert set(decoded["py-1"].connectors) == set(WORK)
    assert decoded["java-1"].connectors == ()


def test_a_java_member_ahead_on_the_config_topic_gets_config_mismatch() -> None:
    out = _leader()._leader_assign("py-1", 5, {"py-1": encode_member_metadata(MemberMetadata("http://py/", 7)),
                                               "java-1": _java_member(9)})
    assert {decode_assignment(data).error for data in out.values()} == {CONFIG_MISMATCH}


def _worker_config(**extra: str) -> dict[str, str]:
    return {"bootstrap.servers": "h:9092", "group.id": "A-mm2", "config.storage.topic": "c",
            "offset.storage.topic": "o", "status.storage.topic": "s", **extra}
