"""What the config store tells a herder, kept until the herder's tick thread takes it.

The config store calls its listener on the config log's consumer thread, which must never block: the
inbox only records (a flag, restart requests) and wakes the tick thread, which takes everything at the
start of its next tick and acts on one consistent snapshot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.worker.log_levels import LOG_LEVELS
from connect_runtime.storage.config_records import RestartRequest


class ConfigChangeInbox:
    """A :class:`~connect_runtime.storage.config_store.ConfigUpdateListener` that records and wakes."""

    def __init__(self, wake: Callable[[], None],
                 on_logging_level: Callable[[str, str], None] = LOG_LEVELS.apply_cluster_level) -> None:
        self._wake = wake
        self._on_logging_level = on_logging_level
        self._lock = threading.Lock()
        self._changed = True  # the first tick reads the snapshot
        self._restarts: list[RestartRequest] = []

    def take(self) -> tuple[bool, list[RestartRequest]]:
        """(whether the config changed, restart requests) since the last take (tick thread)."""
        with self._lock:
            changed, self._changed = self._changed, False
            restarts, self._restarts = self._restarts, []
        return changed, restarts

    def clear_changed(self) -> None:
        """The herder read a fresh snapshot itself (after its own write)."""
        with self._lock:
            self._changed = False

    def _poke(self) -> None:
        with self._lock:
            self._changed = True
        self._wake()

    def on_connector_config_update(self, connector: str) -> None:
        self._poke()

    def on_connector_config_remove(self, connector: str) -> None:
        self._poke()

    def on_task_config_update(self, connector: str, tasks: Sequence[ConnectorTaskId]) -> None:
        self._poke()

    def on_connector_target_state_change(self, connector: str) -> None:
        self._poke()

    def on_fencing_update(self, connector: str) -> None:
        # Under exactly-once a follower's tasks wait for this record (generation_fencing.py).
        self._poke()

    def on_restart_request(self, request: RestartRequest) -> None:
        with self._lock:
            self._restarts.append(request)
        self._poke()

    def on_session_key_update(self) -> None:
        # A follower signs forwarded task configs with the snapshot's key. Without this refresh a
        # follower whose last snapshot predates the key (the leader writes its first key right after
        # joining, often after the connector configs) or a rotation never saw it, and retried forever.
        self._poke()

    def on_logging_level_update(self, namespace: str, level: str) -> None:
        # Applied at once on the log thread (cheap, and nothing the tick thread owns): Java does the same.
        self._on_logging_level(namespace, level)
