"""Wire format of our Connect group protocol: JoinGroup member metadata and SyncGroup assignments.

The group has protocol type ``connect`` (as Java's) and one protocol, :data:`PROTOCOL_NAME`. Both
payloads are UTF-8 JSON objects; the format is ours, so JSON keeps it readable in broker dumps.

Member metadata (JoinGroup, one per member)::

    {"version": 1, "url": "http://host:8083/", "config_offset": 41, "internal_rest": true,
     "connectors": ["a"], "tasks": [["a", 0], ["a", 1]]}

``connectors`` / ``tasks`` are what the member *owns* (runs) when it joins: the leader's incremental
cooperative assignor needs them (Java's ``ExtendedWorkerState`` carries the same). ``internal_rest``:
whether the member, as a follower, can hand task configs and fencing requests to the leader over
internal REST (MM2: ``dedicated.mode.enable.internal.rest``). A member that says false, or says nothing
(a version before the key), makes the leader keep every connector on itself (the assignor's invariant F).

Assignment (SyncGroup, one per member)::

    {"version": 1, "error": 0, "leader": "<member id>", "leader_url": "http://...", "config_offset": 41,
     "assigned": {"connectors": [...], "tasks": [[c, i], ...]},
     "revoked": {"connectors": [...], "tasks": [...]}, "delay_ms": 0}

``error`` 1 (:data:`CONFIG_MISMATCH`) means the leader had read less of the config topic than some
member: nothing changes, the members catch up and rejoin (Java's ``Assignment.CONFIG_MISMATCH``).

Java workers cannot share a group with us: Java's protocols (``default``, ``compatible``,
``sessioned``) use a binary schema (``ConnectProtocol`` / ``IncrementalCooperativeConnectProtocol``).
Our protocol has a name of its own on purpose: the broker then finds no protocol common to a Java
and a Python member and rejects the later one with INCONSISTENT_GROUP_PROTOCOL, a clean error,
instead of one side failing to parse the other's bytes. Sharing a group would need Java's schema
copied byte for byte, plus its session-key and request-signing behaviour.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from connect_runtime.api.errors import ConnectError
from connect_runtime.model import ConnectorTaskId
from connect_runtime.runtime.coordination.assignor import EMPTY, ConnectorsAndTasks

PROTOCOL_TYPE = "connect"
PROTOCOL_NAME = "json-cooperative-v1"
VERSION = 1
NO_ERROR = 0
CONFIG_MISMATCH = 1


class ProtocolError(ConnectError):
    """A group member sent metadata or an assignment we cannot read."""


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """What a member tells the leader when it joins."""

    url: str | None
    config_offset: int
    owned: ConnectorsAndTasks = EMPTY
    join_seq: int = 0
    #: Whether this member can reach the leader over internal REST (see the module docstring).
    internal_rest: bool = True


@dataclass(frozen=True, slots=True)
class WireAssignment:
    """What the leader tells one member in SyncGroup."""

    error: int
    leader: str
    leader_url: str | None
    config_offset: int
    assigned: ConnectorsAndTasks = EMPTY
    revoked: ConnectorsAndTasks = EMPTY
    delay_ms: int = 0


def _work_to_json(work: ConnectorsAndTasks) -> dict[str, Any]:
    tasks = [[t.connector, t.task] for t in sorted(work.tasks)]
    return {"connectors": sorted(work.connectors), "tasks": tasks}


def _work_from_json(connectors: Iterable[Any], tasks: Iterable[Any]) -> ConnectorsAndTasks:
    return ConnectorsAndTasks.of((str(c) for c in connectors),
                                 (ConnectorTaskId(str(c), int(t)) for c, t in tasks))


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"unreadable {what} ({len(data)} bytes): not {PROTOCOL_NAME} JSON") from exc
    if not isinstance(obj, dict) or not isinstance(obj.get("version"), int) or obj["version"] < VERSION:
        raise ProtocolError(f"unreadable {what}: no {PROTOCOL_NAME} version")
    return obj


def encode_metadata(metadata: MemberMetadata) -> bytes:
    body = {"version": VERSION, "url": metadata.url, "config_offset": metadata.config_offset,
            "join_seq": metadata.join_seq, "internal_rest": metadata.internal_rest, **_work_to_json(metadata.owned)}
    return json.dumps(body, separators=(",", ":")).encode()


def decode_metadata(data: bytes) -> MemberMetadata:
    """Later versions may add keys; unknown keys are ignored so that a mixed-version group still works."""
    obj = _load(data, "member metadata")
    try:
        return MemberMetadata(obj.get("url"), int(obj["config_offset"]),
                              _work_from_json(obj.get("connectors", ()), obj.get("tasks", ())),
                              int(obj.get("join_seq", 0)), obj.get("internal_rest") is True)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed member metadata: {exc!r}") from exc


def encode_assignment(assignment: WireAssignment) -> bytes:
    body = {"version": VERSION, "error": assignment.error, "leader": assignment.leader,
            "leader_url": assignment.leader_url, "config_offset": assignment.config_offset,
            "assigned": _work_to_json(assignment.assigned), "revoked": _work_to_json(assignment.revoked),
            "delay_ms": assignment.delay_ms}
    return json.dumps(body, separators=(",", ":")).encode()


def decode_assignment(data: bytes) -> WireAssignment:
    obj = _load(data, "assignment")
    try:
        assigned, revoked = obj.get("assigned", {}), obj.get("revoked", {})
        return WireAssignment(
            int(obj["error"]), str(obj["leader"]), obj.get("leader_url"), int(obj["config_offset"]),
            _work_from_json(assigned.get("connectors", ()), assigned.get("tasks", ())),
            _work_from_json(revoked.get("connectors", ()), revoked.get("tasks", ())),
            int(obj.get("delay_ms", 0)))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"malformed assignment: {exc!r}") from exc
