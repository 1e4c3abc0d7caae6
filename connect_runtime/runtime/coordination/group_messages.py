"""What a Connect group member says when it joins and what the leader tells it, as the runtime reads them.

The group has protocol type ``connect`` and speaks Java Connect's ``sessioned`` protocol, the one Java
workers choose by default: :mod:`.group_wire` turns these messages into Java's bytes and back
(:mod:`.java_connect_protocol`). They are the content the leader's assignor needs, independent of how
it travels: the member's advertised URL, how far it read the config topic, what it runs (Java's
``ExtendedWorkerState``), and each member's share (Java's ``ExtendedAssignment``).
"""

from __future__ import annotations

from dataclasses import dataclass

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.coordination.assignor import EMPTY, ConnectorsAndTasks
from connect_runtime.runtime.coordination.java_connect_protocol import CONFIG_MISMATCH, NO_ERROR, PROTOCOL_TYPE

__all__ = ["CONFIG_MISMATCH", "NO_ERROR", "PROTOCOL_TYPE", "MemberMetadata", "ProtocolError", "WireAssignment"]


class ProtocolError(ConnectError):
    """A group member sent metadata or an assignment we cannot read."""


@dataclass(frozen=True, slots=True)
class WireAssignment:
    """What the leader tells one member in SyncGroup.

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
    """What a member tells the leader when it joins."""

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
