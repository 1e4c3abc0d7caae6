"""The config topic's record keys and values, byte-compatible with Java Connect (docs/migration.md).

Compact JSON as Java's JsonConverter writes it with schemas disabled, so a Java worker and this one can
read each other's topic:

=============================  ==========================================================
key                            value
=============================  ==========================================================
``connector-<name>``           ``{"properties":{...}}``; null = the connector was deleted
``task-<name>-<n>``            ``{"properties":{...}}``
``commit-<name>``              ``{"tasks":N}``
``target-state-<name>``        ``{"state":"STARTED"|"PAUSED","state.v2":"STARTED"|"PAUSED"|"STOPPED"}``
``restart-connector-<name>``   ``{"include-tasks":bool,"only-failed":bool}``
``tasks-fencing-<name>``       ``{"task-count":N}``
``session-key``                ``{"key":"<base64>","algorithm":"HmacSHA256","creation-timestamp":ms}``
=============================  ==========================================================

Invariant "STOPPED": Java 3.5+ writes a STOPPED target state as ``state=PAUSED, state.v2=STOPPED`` so
that older workers, which only read ``state``, at least keep the connector paused. Readers prefer
``state.v2``.

This is the format, what a Java peer must agree with; :mod:`connect_runtime.storage.config_store` reads
and writes the topic and :mod:`connect_runtime.storage.config_topic_state` applies its records.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.lifecycle import ConnectorTaskId, TargetState

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-connector-"
FENCING_PREFIX = "tasks-fencing-"
SESSION_KEY = "session-key"
LOGGER_CLUSTER_PREFIX = "logger-cluster-"


@dataclass(frozen=True, slots=True)
class RestartRequest:
    """A ``POST /connectors/<c>/restart`` that every worker applies to what it runs."""

    connector: str
    include_tasks: bool = False
    only_failed: bool = False


@dataclass(frozen=True, slots=True)
class SessionKey:
    """The cluster's shared secret for signing worker-to-worker requests (KIP-507); the leader rotates it."""

    key: bytes
    algorithm: str
    creation_timestamp_ms: int

    def __repr__(self) -> str:  # never print the key
        return f"SessionKey(algorithm={self.algorithm}, creation_timestamp_ms={self.creation_timestamp_ms})"


def dumps(value: Mapping[str, Any]) -> bytes:
    """Compact JSON, as Jackson writes it (no spaces, non-ASCII kept as UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# -- keys ------------------------------------------------------------------------------------------
def connector_key(name: str) -> bytes:
    return f"{CONNECTOR_PREFIX}{name}".encode()


def task_key(name: str, task: int) -> bytes:
    return f"{TASK_PREFIX}{name}-{task}".encode()


def commit_key(name: str) -> bytes:
    return f"{COMMIT_PREFIX}{name}".encode()


def target_state_key(name: str) -> bytes:
    return f"{TARGET_STATE_PREFIX}{name}".encode()


def restart_key(name: str) -> bytes:
    return f"{RESTART_PREFIX}{name}".encode()


def fencing_key(name: str) -> bytes:
    return f"{FENCING_PREFIX}{name}".encode()


def logger_cluster_key(namespace: str) -> bytes:
    return f"{LOGGER_CLUSTER_PREFIX}{namespace}".encode()


def parse_task_key(key: str) -> ConnectorTaskId | None:
    """``task-<name>-<n>`` -> the task id; connector names may contain dashes, the number may not."""
    body, sep, number = key[len(TASK_PREFIX):].rpartition("-")
    if not sep or not number.isdigit():
        return None
    return ConnectorTaskId(body, int(number))


# -- values ----------------------------------------------------------------------------------------
def properties_value(config: Mapping[str, str]) -> bytes:
    return dumps({"properties": dict(config)})


def parse_properties(value: Any) -> dict[str, str]:
    props = value["properties"]
    if not isinstance(props, dict):
        raise TypeError("properties is not an object")
    return {str(k): ("" if v is None else str(v)) for k, v in props.items()}


def commit_value(task_count: int) -> bytes:
    return dumps({"tasks": task_count})


def target_state_value(state: TargetState) -> bytes:
    """``{"state", "state.v2"}``: STOPPED is written as PAUSED for pre-3.5 readers (invariant "STOPPED")."""
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return dumps({"state": legacy.value, "state.v2": state.value})


def parse_target_state(value: Any) -> TargetState:
    """``state.v2`` if present, else ``state``; an unknown name raises ValueError."""
    return TargetState(value.get("state.v2") or value["state"])


def restart_value(request: RestartRequest) -> bytes:
    return dumps({"include-tasks": request.include_tasks, "only-failed": request.only_failed})


def parse_restart(connector: str, value: Any) -> RestartRequest:
    return RestartRequest(connector, bool(value.get("include-tasks", False)), bool(value.get("only-failed", False)))


def fencing_value(task_count: int) -> bytes:
    return dumps({"task-count": task_count})


def logger_level_value(level: str) -> bytes:
    """KIP-976's ``{"level": "<LEVEL>"}``."""
    return dumps({"level": level})


def session_key_value(session_key: SessionKey) -> bytes:
    return dumps({"key": base64.b64encode(session_key.key).decode("ascii"), "algorithm": session_key.algorithm,
                  "creation-timestamp": session_key.creation_timestamp_ms})


def parse_session_key(value: Any) -> SessionKey:
    return SessionKey(base64.b64decode(value["key"]), str(value["algorithm"]), int(value["creation-timestamp"]))
