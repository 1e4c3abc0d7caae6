"""The group protocol on the wire: Java Connect's ``sessioned``, for every member of every group.

Java's workers offer ``sessioned`` first by default (``connect.protocol``), so a node of ours joins a group
of Java Connect / MirrorMaker 2 workers with the user's file unchanged, leads it or follows a Java leader,
and a Java fleet is replaced node by node. Every herder speaks it, including MM2's heartbeat-only herders
of flows that are not enabled, which share groups with Java nodes started the same way.

``sessioned`` is the only protocol offered, not Java's fall-backs. ``compatible`` has no request signing,
and a leader of ours always verifies signed internal requests; ``default`` (eager) revokes everything at
every rebalance, which our members do not do. A Java worker set to either fails to join with
INCONSISTENT_GROUP_PROTOCOL rather than share a group whose rules it does not keep, and the worker config
refuses either by name (``worker_config.check_group_protocol``).

What Java's schema cannot carry goes where Java keeps it. Whether a member can reach the leader over
internal REST (MM2's ``dedicated.mode.enable.internal.rest``; the assignor keeps connectors on the leader
when one cannot) is its URL: a Java MirrorMaker without internal REST advertises no usable one
(``NOTUSED``), so a member can reach the leader when its URL is an http(s) URL, and this worker
advertises :data:`NO_REST_URL` when it cannot. KIP-507's session key is in the config topic, as Java's.
"""

from __future__ import annotations

from dataclasses import dataclass

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.coordination import java_connect_protocol as java
from connect_runtime.runtime.coordination.assignor import ConnectorsAndTasks
from connect_runtime.runtime.coordination.group_messages import MemberMetadata, ProtocolError, WireAssignment

#: The URL a member without internal REST advertises on Java's wire (what Java's MirrorMaker sends then).
NO_REST_URL = "NOTUSED"


@dataclass(frozen=True)
class JavaWire:
    """Member metadata and assignments in ``IncrementalCooperativeConnectProtocol``'s schema (``sessioned``)."""

    protocol: java.JavaConnectProtocol = java.JavaConnectProtocol.SESSIONED

    @property
    def name(self) -> str:
        return self.protocol.protocol_name

    def encode_metadata(self, metadata: MemberMetadata) -> bytes:
        url = metadata.url if metadata.internal_rest and metadata.url else NO_REST_URL
        owned, previous = metadata.owned, metadata.previous
        # Java sends its last assignment as the allocation, its connectors and tasks being all it runs; a
        # member that was never assigned anything (or dropped its work since) sends null.
        if previous is not None:
            allocation: java.Assignment | None = java.Assignment(
                previous.leader, previous.leader_url or NO_REST_URL, previous.config_offset,
                tuple(sorted(owned.connectors)), tuple(sorted(owned.tasks)),
                tuple(sorted(previous.revoked.connectors)), tuple(sorted(previous.revoked.tasks)),
                previous.delay_ms, previous.error)
        elif owned:
            allocation = java.Assignment("", "", metadata.config_offset, tuple(sorted(owned.connectors)),
                                         tuple(sorted(owned.tasks)))
        else:
            allocation = None
        return java.encode_metadata(java.WorkerState(url, metadata.config_offset, allocation), self.protocol)

    def decode_metadata(self, data: bytes) -> MemberMetadata:
        try:
            state = java.decode_metadata(data)
        except ConnectError as exc:
            raise ProtocolError(f"unreadable {self.name} member metadata ({len(data)} bytes): {exc}") from exc
        reachable = state.url.startswith(("http://", "https://"))
        return MemberMetadata(state.url if reachable else None, state.config_offset, _owned(state.assignment),
                              internal_rest=reachable)

    def encode_assignment(self, assignment: WireAssignment) -> bytes:
        return java.encode_assignment(java.Assignment(
            assignment.leader, assignment.leader_url or NO_REST_URL, assignment.config_offset,
            tuple(sorted(assignment.assigned.connectors)), tuple(sorted(assignment.assigned.tasks)),
            tuple(sorted(assignment.revoked.connectors)), tuple(sorted(assignment.revoked.tasks)),
            assignment.delay_ms, assignment.error), self.protocol)

    def decode_assignment(self, data: bytes) -> WireAssignment:
        try:
            got = java.decode_assignment(data)
        except ConnectError as exc:
            raise ProtocolError(f"unreadable {self.name} assignment ({len(data)} bytes): {exc}") from exc
        leader_url = got.leader_url if got.leader_url.startswith(("http://", "https://")) else None
        return WireAssignment(got.error, got.leader, leader_url, got.config_offset,
                              ConnectorsAndTasks.of(got.connectors, got.tasks),
                              ConnectorsAndTasks.of(got.revoked_connectors, got.revoked_tasks), got.delay_ms)


def _owned(allocation: java.Assignment | None) -> ConnectorsAndTasks:
    """What a member runs: its allocation's assigned connectors and tasks (Java's leader reads only those)."""
    if allocation is None:
        return ConnectorsAndTasks()
    return ConnectorsAndTasks.of(allocation.connectors, allocation.tasks)


#: The wire every member speaks.
WIRE = JavaWire()
