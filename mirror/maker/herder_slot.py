"""HerderSlot: the stable REST target of one MM2 flow whose herder may be rebuilt.

The node's REST app is built once, before any herder exists, and a herder that cannot reach its
cluster (at start, or later) is thrown away and built again with backoff. The slot is what stays: it
supervises the herder on its own thread, keeps the reason a flow is not running for ``/health`` and the
409 answers, and serves the :class:`Herder` contract by delegating to the running herder. Building a
herder is the node's (:class:`~mirror.maker.mirror_maker.MirrorMaker`); supervising it (its thread, the
backoff) is the slot's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Concatenate, ParamSpec, TypeVar

from connect_runtime.api.errors import ConflictError, ConnectError
from connect_runtime.logging_context import set_context
from connect_runtime.runtime.herder import (
    Herder,
    WorkerHealth,
)
from mirror.config.mirror_maker_config import SourceAndTarget
from mirror.maker.mirror_herder import MirrorHerder

logger = logging.getLogger(__name__)

BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
#: How long a built herder may take to start (internal topics read, first assignment) before it is rebuilt.
READY_TIMEOUT_S = 120.0
#: How long a herder's stop may take (tasks stopped, offsets flushed, group left).
STOP_TIMEOUT_S = 25.0


P = ParamSpec("P")
R = TypeVar("R")


def _served_by_running_herder(method: Callable[Concatenate[Herder, P], R]) -> Callable[Concatenate[HerderSlot, P], R]:
    """The slot's version of a :class:`Herder` method: served by the running herder, ConflictError (409,
    with the reason) while none runs. Typed from the contract's own signature, so it cannot drift from it."""
    name = method.__name__

    def served(slot: HerderSlot, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = getattr(slot.require(), name)(*args, **kwargs)
        return result

    served.__name__ = served.__qualname__ = name
    served.__doc__ = method.__doc__
    return served


class HerderSlot(Herder):
    """A stable REST target for one flow whose herder may be rebuilt (cluster unreachable at start).

    Supervision runs on the slot's own thread: build, start, wait until ready; on a start failure log
    it, keep the reason for ``/health``, back off and build a new herder. Once a herder is ready the
    slot only watches it (a herder that dies later is rebuilt the same way).

    The REST app is built once, before any herder exists, so the slot is the :class:`Herder` REST
    sees: each method of the contract either answers for the slot while no herder runs (health, the
    session key, optional capabilities) or is :func:`_served_by_running_herder`, typed from the
    contract's signature; an abstract method left out makes the slot impossible to build.
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

    worker_id = _served_by_running_herder(Herder.worker_id)
    kafka_cluster_id = _served_by_running_herder(Herder.kafka_cluster_id)
    connectors = _served_by_running_herder(Herder.connectors)
    connector_info = _served_by_running_herder(Herder.connector_info)
    connector_config = _served_by_running_herder(Herder.connector_config)
    put_connector_config = _served_by_running_herder(Herder.put_connector_config)
    patch_connector_config = _served_by_running_herder(Herder.patch_connector_config)
    delete_connector = _served_by_running_herder(Herder.delete_connector)
    connector_status = _served_by_running_herder(Herder.connector_status)
    task_status = _served_by_running_herder(Herder.task_status)
    task_configs = _served_by_running_herder(Herder.task_configs)
    restart_connector = _served_by_running_herder(Herder.restart_connector)
    restart_task = _served_by_running_herder(Herder.restart_task)
    pause_connector = _served_by_running_herder(Herder.pause_connector)
    resume_connector = _served_by_running_herder(Herder.resume_connector)
    stop_connector = _served_by_running_herder(Herder.stop_connector)
    connector_offsets = _served_by_running_herder(Herder.connector_offsets)
    alter_connector_offsets = _served_by_running_herder(Herder.alter_connector_offsets)
    reset_connector_offsets = _served_by_running_herder(Herder.reset_connector_offsets)
    commit_task_offsets = _served_by_running_herder(Herder.commit_task_offsets)
    connector_plugins = _served_by_running_herder(Herder.connector_plugins)
    plugin_config = _served_by_running_herder(Herder.plugin_config)
    validate_connector_config = _served_by_running_herder(Herder.validate_connector_config)

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

    put_task_configs = _served_by_running_herder(Herder.put_task_configs)
    fence_zombies = _served_by_running_herder(Herder.fence_zombies)

    def verification_algorithms(self) -> Sequence[str]:
        herder = self.herder
        return super().verification_algorithms() if herder is None else herder.verification_algorithms()
