"""Java Connect's group protocols, byte for byte: member metadata (JoinGroup) and assignments (SyncGroup),
and what a member of ours says in them (Java's ``ConnectProtocol`` / ``IncrementalCooperativeConnectProtocol``).

Pure: no Kafka client, bytes in and out. The group has protocol type ``connect``.

The protocol every member speaks
--------------------------------
Java Connect's ``sessioned``, for every member of every group (:data:`PROTOCOL`). Java's workers offer
``sessioned`` first by default (``connect.protocol``), so a node of ours joins a group of Java Connect /
MirrorMaker 2 workers with the user's file unchanged, leads it or follows a Java leader, and a Java fleet
is replaced node by node. Every herder speaks it, including MM2's heartbeat-only herders of flows that are
not enabled, which share groups with Java nodes started the same way.

``sessioned`` is the only protocol offered, not Java's fall-backs. ``compatible`` has no request signing,
and a leader of ours always verifies signed internal requests; ``default`` (eager) revokes everything at
every rebalance, which our members do not do. A Java worker set to either fails to join with
INCONSISTENT_GROUP_PROTOCOL rather than share a group whose rules it does not keep, and the worker config
refuses either by name (``worker_config.check_group_protocol``).

The runtime reads a member's JoinGroup as :class:`MemberMetadata` (Java's ``ExtendedWorkerState``: its
advertised URL, how far it read the config topic, what it runs) and each member's share as
:class:`WireAssignment` (Java's ``ExtendedAssignment``): the content the leader's assignor needs.
:func:`encode_member_metadata`, :func:`decode_member_metadata`, :func:`encode_member_assignment` and
:func:`decode_member_assignment` put them on Java's wire and back. What Java's schema cannot carry goes
where Java keeps it. Whether a member can reach the leader over internal REST (MM2's
``dedicated.mode.enable.internal.rest``; the assignor keeps connectors on the leader when one cannot) is
its URL: a Java MirrorMaker without internal REST advertises no usable one (``NOTUSED``), so a member can
reach the leader when its URL is an http(s) URL, and this worker advertises :data:`NO_REST_URL` when it
cannot.

Java's wire
-----------
Java's worker offers, in preference order (``WorkerCoordinator.metadata()``, :func:`join_group_protocols`),
``sessioned`` (v2), ``compatible`` (v1) and ``default`` (v0), cut at its ``connect.protocol`` setting.
Every integer is big-endian; a string is an int16 length and UTF-8; an array an int32 count (-1: null);
bytes an int32 length (-1: null). ``ConnectProtocol`` (v0)::

    Metadata   => Version:int16 Url:string ConfigOffset:int64
    Assignment => Version:int16 Error:int16 Leader:string LeaderUrl:string ConfigOffset:int64
                  Assignment:[Connector:string Tasks:[int32]]

Task -1 in ``Tasks`` is the connector itself. ``IncrementalCooperativeConnectProtocol`` (v1 ``compatible``;
v2 ``sessioned`` has the same schema, only the version says KIP-507 request signing is on)::

    Metadata   => Version Url ConfigOffset Allocation:bytes   (the previous assignment, v1 encoded; null if none)
    Assignment => v0's fields, then Revoked:[Connector Tasks] ScheduledDelay:int32

A v1 reader tolerates missing trailing fields (``TOLERATE_MISSING_FIELDS_WITH_DEFAULTS``): the allocation
is null, the arrays null (empty), the delay 0. Java's worker and its two assignors read every metadata and
assignment with the v1 reader, v0 ones included; :func:`decode_metadata` and :func:`decode_assignment` are
that reader. KIP-507's session key is not in the protocol: the leader writes it to the config topic
(``session-key`` record, ``KafkaConfigBackingStore``); the protocol only says, by ``sessioned`` being the
one the group chose, that every member verifies signed internal requests.

Java groups an assignment's connectors by iterating a ``java.util.HashSet`` of them, so the order of the
entries on the wire is the JDK's hash order; :func:`encode_assignment` reproduces it (``jdk``: HashSet's
sizing changed in Java 19) so the bytes are Java's. No reader depends on that order.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from connect_runtime.api.errors import ConnectError
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.assignor import EMPTY, ConnectorsAndTasks

PROTOCOL_TYPE = "connect"
NO_ERROR = 0
#: The leader read less of the config topic than a member: catch up and rejoin (``Assignment.CONFIG_MISMATCH``).
CONFIG_MISMATCH = 1
#: The task id that stands for the connector itself (``ConnectProtocol.CONNECTOR_TASK``).
CONNECTOR_TASK = -1
#: The Java release whose ``HashSet`` order :func:`encode_assignment` reproduces unless told otherwise.
DEFAULT_JDK = 21


class JavaConnectProtocol(enum.Enum):
    """Java's ``ConnectProtocolCompatibility``: the protocol name and the version its header carries."""

    EAGER = ("default", 0)
    COMPATIBLE = ("compatible", 1)
    SESSIONED = ("sessioned", 2)

    @property
    def protocol_name(self) -> str:
        return self.value[0]

    @property
    def version(self) -> int:
        return self.value[1]

    @classmethod
    def from_name(cls, name: str) -> JavaConnectProtocol:
        """The protocol a JoinGroup names (case-insensitive, as ``fromProtocol``)."""
        for protocol in cls:
            if protocol.protocol_name == name.lower():
                return protocol
        raise JavaProtocolError(f"not a Java Connect protocol: {name!r}")


#: Java's preference order, the most capable first.
PROTOCOLS_BY_PREFERENCE = (JavaConnectProtocol.SESSIONED, JavaConnectProtocol.COMPATIBLE, JavaConnectProtocol.EAGER)
#: The protocol every member of ours offers and speaks (module doc).
PROTOCOL = JavaConnectProtocol.SESSIONED
#: The URL a member without internal REST advertises on Java's wire (what Java's MirrorMaker sends then).
NO_REST_URL = "NOTUSED"


class JavaProtocolError(ConnectError):
    """Bytes that Java's Connect protocol reader would refuse (its ``SchemaException``)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """Java's ``ExtendedAssignment`` (v0's ``Assignment`` is the same without revocations and delay)."""

    leader: str
    leader_url: str
    config_offset: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()
    revoked_connectors: tuple[str, ...] = ()
    revoked_tasks: tuple[ConnectorTaskId, ...] = ()
    delay_ms: int = 0
    error: int = NO_ERROR


@dataclass(frozen=True, slots=True)
class WorkerState:
    """Java's ``ExtendedWorkerState``: what a member says when it joins.

    ``assignment``: what it runs from its previous assignment (v1/v2 only); None is Java's empty assignment,
    sent as a null allocation (a member that has not been assigned anything yet).
    """

    url: str
    config_offset: int
    assignment: Assignment | None = None


class ProtocolError(ConnectError):
    """A group member sent metadata or an assignment we cannot read."""


@dataclass(frozen=True, slots=True)
class WireAssignment:
    """What the leader tells one member in SyncGroup, as the runtime reads it.

    ``error`` :data:`CONFIG_MISMATCH` means the leader had read less of the config topic than some member:
    nothing changes, the members catch up and rejoin (Java's ``Assignment.CONFIG_MISMATCH``).
    """

    error: int
    leader: str
    leader_url: str | None
    config_offset: int
    assigned: ConnectorsAndTasks = EMPTY
    revoked: ConnectorsAndTasks = EMPTY
    delay_ms: int = 0


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """What a member tells the leader when it joins, as the runtime reads it."""

    url: str | None
    config_offset: int
    #: What the member runs: the leader's incremental cooperative assignor never assigns it elsewhere.
    owned: ConnectorsAndTasks = EMPTY
    #: Whether this member, as a follower, can hand task configs and fencing requests to the leader over
    #: internal REST (MM2: ``dedicated.mode.enable.internal.rest``). A member that cannot makes the leader
    #: keep every connector on itself (the assignor's invariant F). On the wire: an http(s) URL or not.
    internal_rest: bool = True
    #: The last assignment this member received (None: none, or it dropped its work since). Java's worker
    #: sends it back as its allocation, with ``owned`` as its connectors and tasks, and so does ours; no
    #: assignor reads more of it than ``owned``, so decoding leaves it None. Besides being Java's bytes,
    #: it makes a rejoin after a scheduled delay differ from the join before it, which a broker that starts
    #: no new generation for unchanged metadata (Tansu) needs to deliver the leader's next plan.
    previous: WireAssignment | None = None


def encode_member_metadata(metadata: MemberMetadata) -> bytes:
    """A member's JoinGroup metadata in :data:`PROTOCOL`'s schema."""
    url = metadata.url if metadata.internal_rest and metadata.url else NO_REST_URL
    owned, previous = metadata.owned, metadata.previous
    # Java sends its last assignment as the allocation, its connectors and tasks being all it runs; a
    # member that was never assigned anything (or dropped its work since) sends null.
    if previous is not None:
        allocation: Assignment | None = Assignment(
            previous.leader, previous.leader_url or NO_REST_URL, previous.config_offset,
            tuple(sorted(owned.connectors)), tuple(sorted(owned.tasks)),
            tuple(sorted(previous.revoked.connectors)), tuple(sorted(previous.revoked.tasks)),
            previous.delay_ms, previous.error)
    elif owned:
        allocation = Assignment("", "", metadata.config_offset, tuple(sorted(owned.connectors)),
                                tuple(sorted(owned.tasks)))
    else:
        allocation = None
    return encode_metadata(WorkerState(url, metadata.config_offset, allocation), PROTOCOL)


def decode_member_metadata(data: bytes) -> MemberMetadata:
    """A member's JoinGroup metadata, ours or a Java worker's; ProtocolError if unreadable."""
    try:
        state = decode_metadata(data)
    except ConnectError as exc:
        raise ProtocolError(f"unreadable {PROTOCOL.protocol_name} member metadata ({len(data)} bytes): "
                            f"{exc}") from exc
    reachable = state.url.startswith(("http://", "https://"))
    return MemberMetadata(state.url if reachable else None, state.config_offset, _owned(state.assignment),
                          internal_rest=reachable)


def encode_member_assignment(assignment: WireAssignment) -> bytes:
    """One member's share in SyncGroup in :data:`PROTOCOL`'s schema."""
    return encode_assignment(Assignment(
        assignment.leader, assignment.leader_url or NO_REST_URL, assignment.config_offset,
        tuple(sorted(assignment.assigned.connectors)), tuple(sorted(assignment.assigned.tasks)),
        tuple(sorted(assignment.revoked.connectors)), tuple(sorted(assignment.revoked.tasks)),
        assignment.delay_ms, assignment.error), PROTOCOL)


def decode_member_assignment(data: bytes) -> WireAssignment:
    """A share as our leader or a Java leader sends it; ProtocolError if unreadable."""
    try:
        got = decode_assignment(data)
    except ConnectError as exc:
        raise ProtocolError(f"unreadable {PROTOCOL.protocol_name} assignment ({len(data)} bytes): "
                            f"{exc}") from exc
    leader_url = got.leader_url if got.leader_url.startswith(("http://", "https://")) else None
    return WireAssignment(got.error, got.leader, leader_url, got.config_offset,
                          ConnectorsAndTasks.of(got.connectors, got.tasks),
                          ConnectorsAndTasks.of(got.revoked_connectors, got.revoked_tasks), got.delay_ms)


def _owned(allocation: Assignment | None) -> ConnectorsAndTasks:
    """What a member runs: its allocation's assigned connectors and tasks (Java's leader reads only those)."""
    if allocation is None:
        return ConnectorsAndTasks()
    return ConnectorsAndTasks.of(allocation.connectors, allocation.tasks)


def join_group_protocols(state: WorkerState, mode: JavaConnectProtocol, *,
                         jdk: int = DEFAULT_JDK) -> list[tuple[str, bytes]]:
    """The (name, metadata) pairs Java's worker sends in JoinGroup with ``connect.protocol = mode``."""
    offered = PROTOCOLS_BY_PREFERENCE[PROTOCOLS_BY_PREFERENCE.index(mode):]
    return [(protocol.protocol_name, encode_metadata(state, protocol, jdk=jdk)) for protocol in offered]


def encode_metadata(state: WorkerState, protocol: JavaConnectProtocol, *, jdk: int = DEFAULT_JDK) -> bytes:
    """``ConnectProtocol.serializeMetadata`` (v0, no allocation) or the incremental one (v1, v2)."""
    out = _Writer()
    out.int16(protocol.version)
    out.string(state.url)
    out.int64(state.config_offset)
    if protocol is not JavaConnectProtocol.EAGER:
        allocation = None if state.assignment is None else encode_assignment(state.assignment, protocol, jdk=jdk)
        out.nullable_bytes(allocation)
    return out.getvalue()


def decode_metadata(data: bytes) -> WorkerState:
    """``IncrementalCooperativeConnectProtocol.deserializeMetadata``: any version, v0 with no allocation."""
    reader = _Reader(data)
    _read_version(reader)
    url = reader.string("url")
    config_offset = reader.int64("config-offset")
    allocation = reader.nullable_bytes("allocation") if reader.remaining else None
    return WorkerState(url, config_offset, None if allocation is None else decode_assignment(allocation))


def encode_assignment(assignment: Assignment, protocol: JavaConnectProtocol, *, jdk: int = DEFAULT_JDK) -> bytes:
    """``ConnectProtocol.serializeAssignment`` (v0) or ``IncrementalCooperativeConnectProtocol``'s (v1, v2).

    v0 has no field for revocations or a delay: an assignment with either is refused rather than cut.
    """
    eager = protocol is JavaConnectProtocol.EAGER
    if eager and (assignment.revoked_connectors or assignment.revoked_tasks or assignment.delay_ms):
        raise ValueError("the 'default' (v0) protocol cannot carry revocations or a scheduled delay")
    out = _Writer()
    out.int16(protocol.version)
    out.int16(assignment.error)
    out.string(assignment.leader)
    out.string(assignment.leader_url)
    out.int64(assignment.config_offset)
    connectors = java_hash_set_order(assignment.connectors, jdk=jdk)
    _write_connector_assignments(out, _by_connector(connectors, assignment.tasks))
    if not eager:
        revoked = _by_connector(dict.fromkeys(assignment.revoked_connectors), assignment.revoked_tasks)
        _write_connector_assignments(out, revoked)
        out.int32(assignment.delay_ms)
    return out.getvalue()


def decode_assignment(data: bytes) -> Assignment:
    """``IncrementalCooperativeConnectProtocol.deserializeAssignment``: any version; missing v1 fields default."""
    reader = _Reader(data)
    _read_version(reader)
    error = reader.int16("error")
    leader = reader.string("leader")
    leader_url = reader.string("leader-url")
    config_offset = reader.int64("config-offset")
    assigned = _read_connector_assignments(reader, "assignment")
    revoked = _read_connector_assignments(reader, "revoked")
    delay_ms = reader.int32("delay") if reader.remaining else 0
    return Assignment(leader, leader_url, config_offset, *_split(assigned), *_split(revoked),
                      delay_ms=delay_ms, error=error)


def header_version(data: bytes) -> int:
    """The version a metadata or assignment says it is (the header's int16)."""
    return _read_version(_Reader(data))


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit value (over UTF-16 code units)."""
    units = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for i in range(0, len(units), 2):
        value = (31 * value + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return value


def java_hash_set_order(items: Sequence[str], *, jdk: int = DEFAULT_JDK) -> list[str]:
    """The iteration order of ``new HashSet<>(items)``: buckets in index order, each in insertion order.

    The table's size is ``HashSet(Collection)``'s: ``max(n / .75 + 1, 16)`` up to Java 18,
    ``ceil(max(n, 12) / .75)`` from Java 19, rounded up to a power of two. A bucket reaching nine entries
    doubles a table smaller than 64 (``treeifyBin``); in a larger one Java makes the bucket a tree, whose
    order this does not reproduce (nine connector names in one bucket of 64 or more).
    """
    unique = list(dict.fromkeys(items))
    wanted = max(int(len(unique) / 0.75) + 1, 16) if jdk < 19 else -(-max(len(unique), 12) * 4 // 3)
    capacity = 1 << max(wanted - 1, 0).bit_length()
    spread = [(h ^ (h >> 16)) for h in map(java_string_hash, unique)]
    buckets: dict[int, int] = {}
    for position, value in enumerate(spread):
        index = value & (capacity - 1)
        buckets[index] = buckets.get(index, 0) + 1
        if buckets[index] > 8 and capacity < 64:
            capacity *= 2
            buckets = {}
            for placed in spread[:position + 1]:
                buckets[placed & (capacity - 1)] = buckets.get(placed & (capacity - 1), 0) + 1
    order = sorted(range(len(unique)), key=lambda i: spread[i] & (capacity - 1))
    return [unique[i] for i in order]


def _by_connector(connectors: Iterable[str], tasks: Iterable[ConnectorTaskId]) -> dict[str, list[int]]:
    """Java's ``asMap``: each connector's -1 entry first, then tasks appended under their connector."""
    grouped: dict[str, list[int]] = {connector: [CONNECTOR_TASK] for connector in connectors}
    for task in tasks:
        grouped.setdefault(task.connector, []).append(task.task)
    return grouped


def _split(entries: list[tuple[str, list[int]]] | None) -> tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]]:
    """Java's ``extractConnectors`` / ``extractTasks``: -1 entries are connectors, the rest tasks."""
    entries = entries or []
    connectors = tuple(name for name, ids in entries for task in ids if task == CONNECTOR_TASK)
    tasks = tuple(ConnectorTaskId(name, task) for name, ids in entries for task in ids if task != CONNECTOR_TASK)
    return connectors, tasks


def _write_connector_assignments(out: _Writer, grouped: dict[str, list[int]]) -> None:
    out.int32(len(grouped))
    for connector, ids in grouped.items():
        out.string(connector)
        out.int32(len(ids))
        for task in ids:
            out.int32(task)


def _read_connector_assignments(reader: _Reader, field: str) -> list[tuple[str, list[int]]] | None:
    """A nullable array of (connector, tasks); absent at the end of the buffer is null (tolerated)."""
    if not reader.remaining:
        return None
    count = reader.int32(field)
    if count < 0:
        return None
    reader.check_count(count, field)
    entries = []
    for _ in range(count):
        connector = reader.string("connector")
        size = reader.int32("tasks")
        if size < 0:
            raise JavaProtocolError(f"Error reading field 'tasks': Array size {size} cannot be negative")
        reader.check_count(size, "tasks")
        entries.append((connector, [reader.int32("tasks") for _ in range(size)]))
    return entries


def _read_version(reader: _Reader) -> int:
    version = reader.int16("version")
    if version < 0:
        raise JavaProtocolError(f"Unsupported subscription version: {version}")
    return version


class _Writer:
    """Kafka's ``Type`` encodings; out-of-range values are a ValueError (Java would not build them)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def _pack(self, fmt: str, value: int, name: str) -> None:
        try:
            self._parts.append(struct.pack(fmt, value))
        except struct.error as exc:
            raise ValueError(f"{value!r} does not fit a Java {name}") from exc

    def int16(self, value: int) -> None:
        self._pack(">h", value, "short")

    def int32(self, value: int) -> None:
        self._pack(">i", value, "int")

    def int64(self, value: int) -> None:
        self._pack(">q", value, "long")

    def string(self, value: str) -> None:
        encoded = value.encode("utf-8")
        if len(encoded) > 0x7FFF:
            raise ValueError(f"String length {len(encoded)} is larger than the maximum string length.")
        self.int16(len(encoded))
        self._parts.append(encoded)

    def nullable_bytes(self, value: bytes | None) -> None:
        if value is None:
            self.int32(-1)
            return
        self.int32(len(value))
        self._parts.append(value)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


class _Reader:
    """Reads Kafka's ``Type`` encodings; errors read as Java's (``Error reading field ...``)."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._pos = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, size: int, field: str) -> bytes:
        if size > self.remaining:
            raise JavaProtocolError(f"Error reading field '{field}': {size} bytes needed, {self.remaining} left")
        chunk = self._data[self._pos:self._pos + size]
        self._pos += size
        return chunk

    def _unpack(self, fmt: str, field: str) -> int:
        value: int = struct.unpack(fmt, self._take(struct.calcsize(fmt), field))[0]
        return value

    def int16(self, field: str) -> int:
        return self._unpack(">h", field)

    def int32(self, field: str) -> int:
        return self._unpack(">i", field)

    def int64(self, field: str) -> int:
        return self._unpack(">q", field)

    def check_count(self, count: int, field: str) -> None:
        if count > self.remaining:
            raise JavaProtocolError(f"Error reading field '{field}': Error reading array of size {count}, "
                                    f"only {self.remaining} bytes available")

    def string(self, field: str) -> str:
        length = self.int16(field)
        if length < 0:
            raise JavaProtocolError(f"Error reading field '{field}': String length {length} cannot be negative")
        return self._take(length, field).decode("utf-8", "replace")

    def nullable_bytes(self, field: str) -> bytes | None:
        size = self.int32(field)
        return None if size < 0 else self._take(size, field)
