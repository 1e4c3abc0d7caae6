"""HerderSlot: the stable REST target of one MM2 flow whose herder may be rebuilt.

The node's REST app is built once, before any herder exists, and a herder that cannot reach its
cluster (at start, or later) is thrown away and built again with backoff. The slot is what stays: it
supervises the herder on its own thread, keeps the reason a flow is not running for ``/health`` and the
409 answers, and serves the :class:`Herder` contract by delegating to the running herder. Kept apart
from the node so that supervision (threads, backoff) reads on its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from connect_runtime.api.errors import ConflictError, ConnectError
from connect_runtime.logging_context import set_context
from connect_runtime.model import ConnectorTaskId, TargetState
from connect_runtime.runtime.herder import (
    ConfigInfos,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStateInfo,
    Created,
    Herder,
    PluginInfo,
    TaskInfo,
    TaskStateInfo,
    WorkerHealth,
)
from mirror.config.mirror_maker import SourceAndTarget
from mirror.maker.mirror_herder import MirrorHerder

logger = logging.getLogger(__name__)

BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
#: How long a built herder may take to start (internal topics read, first assignment) before it is rebuilt.
READY_TIMEOUT_S = 120.0
#: How long a herder's stop may take (tasks stopped, offsets flushed, group left).
STOP_TIMEOUT_S = 25.0


class HerderSlot(Herder):
    """A stable REST target for one flow whose herder may be rebuilt (cluster unreachable at start).

    Supervision runs on the slot's own thread: build, start, wait until ready; on a start failure log
    it, keep the reason for ``/health``, back off and build a new herder. Once a herder is ready the
    slot only watches it (a herder that dies later is rebuilt the same way).

    The REST app is built once, before any herder exists, so the slot is the :class:`Herder` REST
    sees: every method of the contract is written out and delegates to the running herder, which lets
    mypy check that nothing is missing.
    """

    def __init__(self, pair: SourceAndTarget, build: Callable[[], MirrorHerder]) -> None:
        self.pair = pair
        self._build = build
        self._herder: MirrorHerder | None = None
        self._ready = False
        self._problem = "starting"
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._supervise, name=f"supervisor-{pair}", daemon=True)

    # -- supervision -------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def _supervise(self) -> None:
        set_context(flow=str(self.pair))
        backoff = BACKOFF_INITIAL_S
        while not self._stopping.is_set():
            try:
                herder = self._build()
            except Exception as exc:
                if self._stopping.is_set():
                    return  # the build gave up because we stop: nothing to retry
                self._retry_later(f"cannot build the herder: {exc}", backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            with self._lock:
                self._herder, self._ready = herder, False
            herder.start()
            try:
                ready = herder.wait_until_ready(READY_TIMEOUT_S)
            except ConnectError as exc:
                ready = False
                reason = str(exc.__cause__ or exc)
            else:
                reason = f"not ready after {READY_TIMEOUT_S:.0f}s"
            if ready:
                with self._lock:
                    self._ready, self._problem = True, ""
                logger.info("%s: herder running", self.pair)
                backoff = BACKOFF_INITIAL_S
                first_record = herder.replicates
                if first_record:
                    herder.narrator.waiting_for(f"the first record replicated on {self.pair} by this node")
                while not self._stopping.wait(1.0):
                    if first_record and herder.replicated_records() > 0:
                        herder.narrator.reached("First record replicated on %s", self.pair)
                        first_record = False
                    if herder.failed():
                        break
                if self._stopping.is_set():
                    return
                reason = "the herder failed while running; see the log"
            herder.stop(STOP_TIMEOUT_S)
            with self._lock:
                self._herder, self._ready = None, False
            self._retry_later(reason, backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    def _retry_later(self, reason: str, backoff_s: float) -> None:
        with self._lock:
            self._problem = f"{reason}; retrying in {backoff_s:.0f}s"
        logger.warning("%s: %s; retrying in %.0fs", self.pair, reason, backoff_s)
        self._stopping.wait(backoff_s)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        self._stopping.set()
        with self._lock:
            herder = self._herder
        if herder is not None:
            herder.stop(timeout_s)
        if self._thread.ident is not None:  # a start that failed early never started the thread
            self._thread.join(timeout_s)

    @property
    def herder(self) -> MirrorHerder | None:
        with self._lock:
            return self._herder if self._ready else None

    def require(self) -> MirrorHerder:
        herder = self.herder
        if herder is None:
            raise ConflictError(f"The herder of flow {self.pair} is not running: {self._problem}")
        return herder

    # -- Herder: each method is served by the running herder ---------------------------------------
    # Until a herder is ready, calls that need one raise ConflictError (409, with the reason);
    # health and the session key answer for the slot itself; an optional capability answers what a
    # herder without it would (Herder's default), so the REST answer does not depend on timing.
    def health(self) -> WorkerHealth:
        herder = self.herder
        if herder is None:
            return WorkerHealth("starting", f"Flow {self.pair}: {self._problem}")
        return herder.health()

    def worker_id(self) -> str:
        return self.require().worker_id()

    def kafka_cluster_id(self) -> str | None:
        return self.require().kafka_cluster_id()

    def connectors(self) -> list[str]:
        return self.require().connectors()

    def connector_info(self, name: str) -> ConnectorInfo:
        return self.require().connector_info(name)

    def connector_config(self, name: str) -> dict[str, str]:
        return self.require().connector_config(name)

    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        return self.require().put_connector_config(name, config, allow_replace, initial_state)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        return self.require().patch_connector_config(name, patch)

    def delete_connector(self, name: str) -> None:
        self.require().delete_connector(name)

    def connector_status(self, name: str) -> ConnectorStateInfo:
        return self.require().connector_status(name)

    def task_status(self, task: ConnectorTaskId) -> TaskStateInfo:
        return self.require().task_status(task)

    def task_configs(self, name: str) -> list[TaskInfo]:
        return self.require().task_configs(name)

    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        return self.require().restart_connector(name, include_tasks, only_failed)

    def restart_task(self, task: ConnectorTaskId) -> None:
        self.require().restart_task(task)

    def pause_connector(self, name: str) -> None:
        self.require().pause_connector(name)

    def resume_connector(self, name: str) -> None:
        self.require().resume_connector(name)

    def stop_connector(self, name: str) -> None:
        self.require().stop_connector(name)

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        return self.require().connector_offsets(name)

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> None:
        self.require().alter_connector_offsets(name, offsets)

    def reset_connector_offsets(self, name: str) -> None:
        self.require().reset_connector_offsets(name)

    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        return self.require().connector_plugins(connectors_only)

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        return self.require().plugin_config(plugin)

    def validate_connector_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        return self.require().validate_connector_config(config, plugin)

    def connector_active_topics(self, name: str) -> Collection[str]:
        herder = self.herder
        return super().connector_active_topics(name) if herder is None else herder.connector_active_topics(name)

    def reset_connector_active_topics(self, name: str) -> None:
        herder = self.herder
        if herder is None:
            super().reset_connector_active_topics(name)
        else:
            herder.reset_connector_active_topics(name)

    def set_cluster_logger_level(self, namespace: str, level: str) -> bool:
        herder = self.herder
        return False if herder is None else herder.set_cluster_logger_level(namespace, level)

    # -- internal endpoints (KIP-507/KIP-710) -------------------------------------------------------
    def session_key(self) -> bytes | None:
        herder = self.herder
        return None if herder is None else herder.session_key()  # None: 503 until the key is known

    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        self.require().put_task_configs(connector, configs)

    def fence_zombies(self, connector: str) -> None:
        self.require().fence_zombies(connector)

    def verification_algorithms(self) -> Sequence[str]:
        herder = self.herder
        return super().verification_algorithms() if herder is None else herder.verification_algorithms()
