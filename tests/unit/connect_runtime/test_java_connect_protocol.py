"""Java Connect's group protocols (coordination/java_connect_protocol.py): golden bytes and round trips.

The golden bytes were written by Java's own ``ConnectProtocol`` / ``IncrementalCooperativeConnectProtocol``
(connect-runtime 4.3.1 on JDK 17, through tests/kafka/mirrormaker/ConnectProtocolProbe.java); the Kafka
tier (tests/kafka/test_java_connect_protocol.py) compares many more cases with Java live.
"""

from __future__ import annotations

from typing import Any

import pytest

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.java_connect_protocol import (
    CONFIG_MISMATCH,
    PROTOCOLS_BY_PREFERENCE,
    Assignment,
    JavaConnectProtocol,
    JavaProtocolError,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    header_version,
    java_hash_set_order,
    java_string_hash,
    join_group_protocols,
)

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
