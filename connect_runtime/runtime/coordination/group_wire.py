"""Which group protocol a worker speaks on the wire: ours (JSON) or Java's ``sessioned`` (``connect.protocol``).

Why a choice. Our protocol (:mod:`.protocol`) is JSON under a name of its own, so a Java worker and ours
refuse each other (INCONSISTENT_GROUP_PROTOCOL). ``connect.protocol = sessioned`` makes this worker speak
Java's ``sessioned`` protocol byte for byte (:mod:`.java_connect_protocol`), so that it can join a group of
Java Connect / MirrorMaker 2 workers, lead it or follow a Java leader (issue 31: replacing a Java fleet
node by node). Unset, the worker speaks ours, as before.

Only ``sessioned`` is offered, not Java's fall-backs. ``compatible`` has no request signing, and a leader of
ours always verifies signed internal requests; ``default`` (eager) revokes everything at every rebalance,
which our members do not do. A Java worker set to either then fails to join with INCONSISTENT_GROUP_PROTOCOL
rather than share a group whose rules it does not keep.

What Java's schema cannot carry. Ours says whether a member can reach the leader over internal REST (MM2's
``dedicated.mode.enable.internal.rest``; the assignor keeps connectors on the leader when one cannot). Java's
metadata holds only a URL, and a Java MirrorMaker without internal REST advertises no usable one
(``NOTUSED``), so on Java's wire a member can reach the leader when its URL is an http(s) URL, and this
worker advertises :data:`NO_REST_URL` when it cannot. ``join_seq`` (a debugging counter) is not carried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.coordination import java_connect_protocol as java
from connect_runtime.runtime.coordination import protocol as own
from connect_runtime.runtime.coordination.assignor import ConnectorsAndTasks
from connect_runtime.runtime.worker.worker_config import CONNECT_PROTOCOL, check_group_protocol

#: The URL a member without internal REST advertises on Java's wire (what Java's MirrorMaker sends then).
NO_REST_URL = "NOTUSED"


class GroupWire(Protocol):
    """Encodes and decodes member metadata and assignments of one group protocol."""

    @property
    def name(self) -> str: ...

    def encode_metadata(self, metadata: own.MemberMetadata) -> bytes: ...

    def decode_metadata(self, data: bytes) -> own.MemberMetadata: ...

    def encode_assignment(self, assignment: own.WireAssignment) -> bytes: ...

    def decode_assignment(self, data: bytes) -> own.WireAssignment: ...


class OwnWire:
    """Our JSON protocol (:mod:`.protocol`)."""

    name = own.PROTOCOL_NAME

    def encode_metadata(self, metadata: own.MemberMetadata) -> bytes:
        return own.encode_metadata(metadata)

    def decode_metadata(self, data: bytes) -> own.MemberMetadata:
        return own.decode_metadata(data)

    def encode_assignment(self, assignment: own.WireAssignment) -> bytes:
        return own.encode_assignment(assignment)

    def decode_assignment(self, data: bytes) -> own.WireAssignment:
        return own.decode_assignment(data)


@dataclass(frozen=True)
class JavaWire:
    """Java's ``sessioned`` protocol: the same content in ``IncrementalCooperativeConnectProtocol``'s schema."""

    protocol: java.JavaConnectProtocol = java.JavaConnectProtocol.SESSIONED

    @property
    def name(self) -> str:
        return self.protocol.protocol_name

    def encode_metadata(self, metadata: own.MemberMetadata) -> bytes:
        url = metadata.url if metadata.internal_rest and metadata.url else NO_REST_URL
        owned = metadata.owned
        # Java sends its accumulated assignment as the allocation; a member that owns nothing and was never
        # assigned anything sends null. Its leader fields are not read by any assignor.
        allocation = (java.Assignment("", "", metadata.config_offset, tuple(sorted(owned.connectors)),
                                      tuple(sorted(owned.tasks))) if owned else None)
        return java.encode_metadata(java.WorkerState(url, metadata.config_offset, allocation), self.protocol)

    def decode_metadata(self, data: bytes) -> own.MemberMetadata:
        try:
            state = java.decode_metadata(data)
        except ConnectError as exc:
            raise own.ProtocolError(f"unreadable {self.name} member metadata ({len(data)} bytes): {exc}") from exc
        reachable = state.url.startswith(("http://", "https://"))
        return own.MemberMetadata(state.url if reachable else None, state.config_offset,
                                  _owned(state.assignment), internal_rest=reachable)

    def encode_assignment(self, assignment: own.WireAssignment) -> bytes:
        return java.encode_assignment(java.Assignment(
            assignment.leader, assignment.leader_url or NO_REST_URL, assignment.config_offset,
            tuple(sorted(assignment.assigned.connectors)), tuple(sorted(assignment.assigned.tasks)),
            tuple(sorted(assignment.revoked.connectors)), tuple(sorted(assignment.revoked.tasks)),
            assignment.delay_ms, assignment.error), self.protocol)

    def decode_assignment(self, data: bytes) -> own.WireAssignment:
        try:
            got = java.decode_assignment(data)
        except ConnectError as exc:
            raise own.ProtocolError(f"unreadable {self.name} assignment ({len(data)} bytes): {exc}") from exc
        leader_url = got.leader_url if got.leader_url.startswith(("http://", "https://")) else None
        return own.WireAssignment(got.error, got.leader, leader_url, got.config_offset,
                                  ConnectorsAndTasks.of(got.connectors, got.tasks),
                                  ConnectorsAndTasks.of(got.revoked_connectors, got.revoked_tasks), got.delay_ms)


def _owned(allocation: java.Assignment | None) -> ConnectorsAndTasks:
    """What a member runs: its allocation's assigned connectors and tasks (Java's leader reads only those)."""
    if allocation is None:
        return ConnectorsAndTasks()
    return ConnectorsAndTasks.of(allocation.connectors, allocation.tasks)


OWN_WIRE: GroupWire = OwnWire()


def wire_for(setting: str | None) -> GroupWire:
    """The wire of a ``connect.protocol`` setting: unset or empty, ours; ``sessioned``, Java's (anything else
    is refused by the worker config's own check, reused here)."""
    if setting is None or not setting.strip():
        return OWN_WIRE
    check_group_protocol(CONNECT_PROTOCOL, setting)
    return JavaWire()
