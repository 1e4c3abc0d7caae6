"""A follower's requests to the leader: task configs (``POST .../tasks``, KIP-507) and zombie fencing
(``PUT .../fence``, KIP-618).

Only the leader writes the config topic, so a follower running a connector sends the new task configs
to the leader's internal endpoint, signed with the cluster's session key. Sends run off the tick
thread (the tick thread must not wait on another worker), one at a time on one worker thread, over one
pooled HTTP client: a connector that keeps asking does not make a thread and a connection per attempt.
A failed send is reported to the caller, which schedules a retry with its usual backoff.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from connect_runtime.api.errors import ConnectError
from connect_runtime.logging_context import carry_context
from connect_runtime.runtime.request_signing import DEFAULT_SIGNATURE_ALGORITHM, signature_headers
from connect_runtime.storage.config_records import SessionKey

if TYPE_CHECKING:
    # Imported with the first send: httpx drags click, rich and pygments in (~100 ms at start-up) and a
    # leader, or a single node, never forwards.
    import httpx

logger = logging.getLogger(__name__)


def forward_task_configs(client: httpx.Client, leader_url: str, connector: str, configs: Sequence[Mapping[str, str]],
                         session_key: SessionKey, timeout_s: float = 30.0) -> None:
    """A follower's ``POST /connectors/<c>/tasks`` to the leader, signed with the session key (KIP-507).

    Raises ConnectError if the leader cannot be reached or refuses; the caller retries later.
    """
    body = json.dumps([dict(c) for c in configs], separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json",
               **signature_headers(session_key.key, DEFAULT_SIGNATURE_ALGORITHM, body)}
    import httpx

    url = f"{leader_url.rstrip('/')}/connectors/{quote(connector, safe='')}/tasks?forward=true"
    try:
        response = client.post(url, content=body, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise ConnectError(f"Cannot send the task configs of {connector} to the leader at {leader_url}: "
                           f"{exc}") from exc
    if response.status_code >= 400:
        raise ConnectError(f"The leader at {leader_url} refused the task configs of {connector}: "
                           f"HTTP {response.status_code}")


def request_fencing(client: httpx.Client, leader_url: str, connector: str, session_key: SessionKey,
                    timeout_s: float = 30.0) -> None:
    """A follower's ``PUT /connectors/<c>/fence`` to the leader (KIP-618), signed over its empty body.

    Raises ConnectError if the leader cannot be reached or refuses (a 404: the leader serves no internal
    endpoints, e.g. MM2 without ``dedicated.mode.enable.internal.rest``); the caller retries later.
    """
    headers = signature_headers(session_key.key, DEFAULT_SIGNATURE_ALGORITHM, b"")
    import httpx

    url = f"{leader_url.rstrip('/')}/connectors/{quote(connector, safe='')}/fence?forward=true"
    try:
        response = client.put(url, content=b"", headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise ConnectError(f"Cannot ask the leader at {leader_url} to fence the previous task generation of "
                           f"{connector}: {exc}") from exc
    if response.status_code == 404:
        raise ConnectError(f"The leader at {leader_url} does not serve the internal endpoints, which exactly-once "
                           "source tasks need (in MM2 dedicated mode set dedicated.mode.enable.internal.rest = true)")
    if response.status_code >= 400:
        raise ConnectError(f"The leader at {leader_url} refused to fence the previous task generation of "
                           f"{connector}: HTTP {response.status_code} {response.text[:200]}")


class TaskConfigForwarder:
    """Sends task configs to the leader on one daemon thread through one HTTP client (one per herder).

    The thread starts with the first send (a leader never forwards) and closes the client when the
    forwarder is closed; sends still queued then are dropped (the herder is stopping).
    """

    def __init__(self, timeout_s: float, name: str = "forward-tasks", client: httpx.Client | None = None) -> None:
        self._timeout_s = timeout_s
        self._name = name
        #: Made by the sending thread on its first send (no connection pool for a herder that never forwards).
        self._client = client
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    #: Whether a follower can reach the leader at all (False: MM2 without internal REST, whose leader
    #: fences exactly-once generations on its own, see :mod:`.generation_fencing`).
    reaches_leader = True

    def forward(self, leader_url: str, connector: str, configs: list[dict[str, str]], session_key: SessionKey,
                on_failure: Callable[[], None], on_outcome: Callable[[str | None], None] | None = None) -> None:
        """Queue one send (returns at once); ``on_failure`` runs on the sending thread if it fails, after
        ``on_outcome`` (None on success, else why it failed)."""

        def send() -> None:
            try:
                self.send(leader_url, connector, configs, session_key)
                logger.info("Connector %s: sent %d task config(s) to the leader", connector, len(configs))
            except ConnectError as exc:
                logger.warning("Connector %s: %s; retrying", connector, exc)
                if on_outcome is not None:
                    on_outcome(str(exc))
                on_failure()
            else:
                if on_outcome is not None:
                    on_outcome(None)

        self._submit(send)

    def fence(self, leader_url: str, connector: str, session_key: SessionKey,
              on_done: Callable[[ConnectError | None], None]) -> None:
        """Queue one fencing request (returns at once); ``on_done`` runs on the sending thread."""

        def send() -> None:
            try:
                self.send_fencing(leader_url, connector, session_key)
            except ConnectError as exc:
                on_done(exc)
            else:
                on_done(None)

        self._submit(send)

    def _submit(self, send: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put(carry_context(send))

    def send(self, leader_url: str, connector: str, configs: list[dict[str, str]], session_key: SessionKey) -> None:
        """One signed POST (on the calling thread); raises ConnectError on failure."""
        if self._client is None:
            import httpx

            self._client = httpx.Client()
        forward_task_configs(self._client, leader_url, connector, configs, session_key, self._timeout_s)

    def send_fencing(self, leader_url: str, connector: str, session_key: SessionKey) -> None:
        """One signed PUT .../fence (on the calling thread); raises ConnectError on failure."""
        if self._client is None:
            import httpx

            self._client = httpx.Client()
        request_fencing(self._client, leader_url, connector, session_key, self._timeout_s)

    def close(self) -> None:
        """Stop taking sends; the thread finishes the one under way, if any, then closes the client."""
        with self._lock:
            self._closed = True
            started = self._thread is not None
        if started:
            self._queue.put(None)
        elif self._client is not None:
            self._client.close()

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None or self._closed:
                break
            try:
                item()
            except Exception:  # a send must not end the thread
                logger.exception("Forwarding task configs failed")
        if self._client is not None:
            self._client.close()
