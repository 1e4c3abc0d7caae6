"""Pieces of the distributed herder that need none of its state: the Worker seam, restart plans and
KIP-875 offset validation. Kept apart so that :mod:`distributed_herder` holds only the tick-thread logic.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import hmac
import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from connect_runtime.api.connector import Connector, SourceConnector
from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceMap
from connect_runtime.model import ConnectorTaskId, State, TargetState
from connect_runtime.runtime.herder import ConnectorStateInfo, TaskStateInfo
from connect_runtime.storage.config_records import RestartRequest, SessionKey
from connect_runtime.storage.config_store import ClusterConfigState
from connect_runtime.storage.status_store import KafkaStatusStore


class WorkerRuntime(Protocol):
    """What the herder needs from :class:`connect_runtime.runtime.worker.Worker`."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def start_connector(self, name: str, config: Mapping[str, str], target_state: TargetState,
                        on_reconfigure: Callable[[str], None]) -> bool: ...

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]: ...

    def stop_connector(self, name: str) -> None: ...

    def start_task(self, task: ConnectorTaskId, connector_config: Mapping[str, str],
                   task_config: Mapping[str, str], target_state: TargetState) -> bool: ...

    def stop_tasks(self, ids: Sequence[ConnectorTaskId], timeout_s: float) -> None: ...

    def set_target_state(self, name: str, state: TargetState) -> None: ...


def partition_key(partition: SourceMap) -> str:
    """Canonical JSON of a source partition: how ``SourceConnector.alter_offsets`` keys its argument."""
    return json.dumps(dict(partition), sort_keys=True, separators=(",", ":"))



def restart_plan(statuses: KafkaStatusStore, snapshot: ClusterConfigState,
                 request: RestartRequest) -> tuple[bool, list[ConnectorTaskId]]:
    """Which of the connector and its tasks a request restarts (Java's ``RestartPlan``): all of them,
    or with ``only_failed`` those whose current status is FAILED; tasks only with ``include_tasks``."""
    status = statuses.get(request.connector)
    restart_connector = not request.only_failed or (status is not None and status.state is State.FAILED)
    tasks: list[ConnectorTaskId] = []
    if request.include_tasks:
        for task in snapshot.tasks(request.connector):
            task_status = statuses.get_task(task.connector, task.task)
            if not request.only_failed or (task_status is not None and task_status.state is State.FAILED):
                tasks.append(task)
    return restart_connector, tasks


def restarting_view(current: ConnectorStateInfo, restart_connector: bool,
                    tasks: Sequence[ConnectorTaskId]) -> ConnectorStateInfo:
    """The 202 body of a restart: what will restart is shown as RESTARTING, the rest as it is."""
    restarting = {t.task for t in tasks}
    return ConnectorStateInfo(
        current.name, State.RESTARTING if restart_connector else current.connector_state,
        current.connector_worker_id,
        [TaskStateInfo(t.id, State.RESTARTING if t.id in restarting else t.state, t.worker_id,
                       None if t.id in restarting else t.trace) for t in current.tasks],
        current.type, None if restart_connector else current.connector_trace)


def check_offsets_with_connector(connector: Connector, name: str, config: Mapping[str, str],
                                 offsets: Sequence[tuple[SourceMap, Mapping[str, Any] | None]]) -> None:
    """Let a source connector validate KIP-875 offsets before they are written (it raises to refuse).

    A connector's own ConnectError (BadRequestError: 400) passes through; anything else is its bug and
    becomes a ConnectError (500), as Java's ``ConnectUtils.maybeWrap`` does.
    """
    if not isinstance(connector, SourceConnector):
        return
    keyed = {partition_key(p): (p, o) for p, o in offsets}
    try:
        connector.alter_offsets(dict(config), keyed)
    except ConnectError:
        raise
    except Exception as exc:
        raise ConnectError(f"Failed to alter the offsets for connector {name}: {exc}") from exc


#: The signature algorithm workers use for internal requests (Connect's ``inter.worker.signature.algorithm``).
SIGNATURE_ALGORITHM = "HmacSHA256"


def new_session_key(now_ms: int) -> SessionKey:
    """A fresh 256-bit HmacSHA256 key (Java's KeyGenerator default for that algorithm)."""
    import secrets

    return SessionKey(secrets.token_bytes(32), "HmacSHA256", now_ms)


def forward_task_configs(leader_url: str, connector: str, configs: Sequence[Mapping[str, str]],
                         session_key: SessionKey, timeout_s: float = 30.0) -> None:
    """A follower's ``POST /connectors/<c>/tasks`` to the leader, signed with the session key (KIP-507).

    Raises ConnectError if the leader cannot be reached or refuses; the caller retries later.
    """
    body = json.dumps([dict(c) for c in configs], separators=(",", ":")).encode()
    signature = hmac.new(session_key.key, body, hashlib.sha256).digest()
    headers = {"Content-Type": "application/json",
               "X-Connect-Authorization": base64.b64encode(signature).decode("ascii"),
               "X-Connect-Request-Signature-Algorithm": SIGNATURE_ALGORITHM}
    url = f"{leader_url.rstrip('/')}/connectors/{quote(connector, safe='')}/tasks?forward=true"
    try:
        response = httpx.post(url, content=body, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise ConnectError(f"Cannot send the task configs of {connector} to the leader at {leader_url}: "
                           f"{exc}") from exc
    if response.status_code >= 400:
        raise ConnectError(f"The leader at {leader_url} refused the task configs of {connector}: "
                           f"HTTP {response.status_code}")


class ReconfigurationSchedule:
    """When to recompute which connector's task configs: a thread-safe timer heap plus per-connector
    exponential backoff (Java's ``reconfigureConnectorTasksWithExponentialBackoffRetries``)."""

    def __init__(self, initial_backoff_s: float = 0.25, max_backoff_s: float = 60.0) -> None:
        self._lock = threading.Lock()
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._backoff: dict[str, float] = {}
        self._initial_s = initial_backoff_s
        self._max_s = max_backoff_s

    def schedule(self, name: str, delay_s: float = 0.0) -> None:
        with self._lock:
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._seq), name))

    def due(self) -> list[str]:
        """Connectors whose time has come, each once, in due order."""
        now = time.monotonic()
        names: list[str] = []
        with self._lock:
            while self._heap and self._heap[0][0] <= now:
                names.append(heapq.heappop(self._heap)[2])
        return list(dict.fromkeys(names))

    def seconds_to_next(self) -> float | None:
        with self._lock:
            return None if not self._heap else max(0.0, self._heap[0][0] - time.monotonic())

    def retry_later(self, name: str) -> float:
        """Schedule a retry after a doubled backoff; returns the delay."""
        with self._lock:
            delay = min(self._backoff.get(name, self._initial_s / 2) * 2, self._max_s)
            self._backoff[name] = delay
        self.schedule(name, delay)
        return delay

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._backoff.pop(name, None)
