"""Recomputing a connector's task configs and publishing them (Java's ``reconfigureConnectorTasks...``).

A connector running here asks (any thread) for its task configs to be recomputed; the tick thread
asks the connector when due and, only if they changed, the leader writes them with their commit
record, while a follower hands them to the leader (:mod:`connect_runtime.runtime.leader.task_config_forwarding`).
KAFKA-18021: an empty list is a valid answer (zero tasks, the connector stays RUNNING). A failure to
compute is retried with exponential backoff up to 60 s; a failed write or forward after 1 s.

A connector may answer RetriableError until it has loaded what its tasks are made of (MM2's source
connector lists and creates thousands of topics after its ``start`` returned, the checkpoint connector
lists its groups): that is the API's "not known yet", not a failure, so from the connector's (re)start
until its first answer it is one INFO line ("waiting for ... to load") and its repeats are DEBUG, but for
one INFO line every :data:`LOAD_REMINDER_S` (a connector that never loads is not silent); the line that
ends the wait says how long it took. A RetriableError after that first answer is logged at INFO each
time, any other error at ERROR.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from connect_runtime.api.config_provider import reverse_transform
from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.lifecycle import TargetState
from connect_runtime.runtime.distributed.reconciler import target_state
from connect_runtime.runtime.leader.leader_config_writer import LeaderConfigWriter
from connect_runtime.runtime.leader.stalled_handoffs import TASK_CONFIGS, StalledHandoffs
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.runtime.worker import connector_validation as validation
from connect_runtime.runtime.worker.worker_runtime import WorkerRuntime
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.config_topic_state import ClusterConfigState

logger = logging.getLogger(__name__)

#: After a failed write or forward of task configs (the leader may be moving).
RECONFIGURE_RETRY_S = 1.0
#: While a connector loads, its "not known yet" answers are logged at INFO at most this often.
LOAD_REMINDER_S = 300.0


class ReconfigurationSchedule:
    """When to recompute which connector's task configs: a thread-safe timer heap of connector names plus
    per-connector exponential backoff (0.25 s doubling up to 60 s by default, Java's values).

    A connector asks for new task configs from any thread; the herder's tick thread runs the due ones. A
    failed attempt is retried after a backoff that doubles up to the maximum; a success (or the connector
    stopping) resets it. It also knows which connectors are loading: (re)started here and not answered
    yet (see the module docstring).
    """

    def __init__(self, initial_backoff_s: float = 0.25, max_backoff_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._backoff: dict[str, float] = {}
        self._initial_s = initial_backoff_s
        self._max_s = max_backoff_s
        self._clock = clock
        #: Connectors (re)started here that have not answered yet -> (when they started, when their wait
        #: was last logged at INFO, or None).
        self._loading: dict[str, tuple[float, float | None]] = {}

    def started(self, name: str) -> None:
        """``name`` (re)started or resumed here: due now, and loading until it answers."""
        with self._lock:
            self._loading[name] = (self._clock(), None)
        self.schedule(name)

    def stopped(self, name: str) -> None:
        """``name`` stopped here: its backoff and load are forgotten."""
        with self._lock:
            self._backoff.pop(name, None)
            self._loading.pop(name, None)

    def waiting_for_load(self, name: str) -> tuple[float, bool] | None:
        """``name`` answered "not known yet": None if it is not loading (it answered since its start), else
        the seconds since its start and whether this answer is logged at INFO (the first one and one every
        :data:`LOAD_REMINDER_S`; the others at DEBUG)."""
        with self._lock:
            if name not in self._loading:
                return None
            now = self._clock()
            started_at, logged_at = self._loading[name]
            at_info = logged_at is None or now - logged_at >= LOAD_REMINDER_S
            if at_info:
                self._loading[name] = (started_at, now)
            return now - started_at, at_info

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

    def succeeded(self, name: str) -> float | None:
        """``name`` answered: its backoff resets and its load is over. Returns the seconds since its start
        if it was waited for, else None."""
        with self._lock:
            self._backoff.pop(name, None)
            loading = self._loading.pop(name, None)
        return None if loading is None or loading[1] is None else self._clock() - loading[0]


class TaskReconfiguration:
    """The schedule of task-config recomputations and what runs when one is due (tick thread)."""

    def __init__(self, *, worker: WorkerRuntime, config_store: KafkaConfigStore, leader: LeaderConfigWriter,
                 forwarder: TaskConfigForwarder, schedule: ReconfigurationSchedule,
                 snapshot: Callable[[], ClusterConfigState],
                 runs_connector: Callable[[str], bool], refresh: Callable[[], None],
                 wake: Callable[[], None], rest_prefix: str, stalls: StalledHandoffs | None = None) -> None:
        self.schedule = schedule
        #: Connectors whose task configs could not reach the leader (reported by /health and a metric).
        self.stalls = stalls or StalledHandoffs()
        self._worker = worker
        self._config_store = config_store
        self._leader = leader
        self._forwarder = forwarder
        self._snapshot = snapshot
        self._runs_connector = runs_connector
        #: Re-read the config store after our own write (the herder's snapshot refresh).
        self._refresh = refresh
        #: Wake the tick thread (and a membership poll it may be blocked in).
        self._wake = wake
        #: This herder's REST namespace path on every node (``/A/B`` for an MM2 flow, ``""`` for plain
        #: Connect): internal requests to the leader go to ``<leader url><prefix>/connectors/...``, as
        #: Java's ``DistributedHerder.namespacedUrl`` does. Leader URLs themselves stay the server root
        #: because forwarded public requests repeat their full path (prefix included).
        self._rest_prefix = rest_prefix

    def request(self, name: str, delay_s: float = 0.0) -> None:
        """Recompute ``name``'s task configs after ``delay_s`` (thread-safe)."""
        self.schedule.schedule(name, delay_s)
        self._wake()

    def run_due(self) -> None:
        for name in self.schedule.due():
            self._reconfigure(name)

    def seconds_to_next(self) -> float | None:
        return self.schedule.seconds_to_next()

    def _reconfigure(self, name: str) -> None:
        """Recompute ``name``'s task configs; write them (and a commit) only if they changed."""
        snapshot = self._snapshot()
        if not self._runs_connector(name) or target_state(snapshot, name) is not TargetState.STARTED:
            self.stalls.cleared(name, running=self._runs_connector(name))
            return
        config = snapshot.connector_configs.get(name)
        if config is None:
            return
        try:
            configs = self._worker.connector_task_configs(name, validation.max_tasks(config))
        except Exception as exc:
            delay = self.schedule.retry_later(name)
            loading = self.schedule.waiting_for_load(name) if isinstance(exc, RetriableError) else None
            if loading is not None:
                logger.log(logging.INFO if loading[1] else logging.DEBUG, "Connector %s: waiting for it to load "
                           "before its task configs are known (%s; %.0f s since its start); asking again in %.2fs",
                           name, exc, loading[0], delay)
                return
            level = logging.INFO if isinstance(exc, RetriableError) else logging.ERROR
            logger.log(level, "Connector %s: computing task configs failed (%s: %s); retrying in %.2fs", name,
                       type(exc).__name__, exc, delay)
            return
        waited_s = self.schedule.succeeded(name)
        if waited_s is not None:
            logger.info("Connector %s: loaded after %.1f s; %d task config(s)", name, waited_s, len(configs))
        # Placeholders back in place of what they resolved to: no resolved secret is stored or forwarded.
        configs = [reverse_transform(config, c) for c in configs]
        current = [dict(c) for c in snapshot.task_config_list(name)]
        if configs == current and name not in snapshot.inconsistent and snapshot.task_count(name) == len(configs):
            logger.debug("Connector %s: task configs unchanged (%d task(s))", name, len(configs))
            self.stalls.cleared(name)
            return
        if not self._leader.is_leader():
            self._forward(name, configs)
            return
        logger.info("Connector %s: writing %d task config(s)", name, len(configs))
        try:
            self._leader.write(lambda: self._config_store.put_task_configs(name, configs))
        except ConnectError as exc:
            logger.error("Connector %s: writing task configs failed (%s); retrying", name, exc)
            self.schedule.schedule(name, RECONFIGURE_RETRY_S)
            return
        self.stalls.cleared(name)
        self._refresh()

    def _forward(self, name: str, configs: list[dict[str, str]]) -> None:
        """A follower hands new task configs to the leader, off the tick thread; retried on failure."""
        # The store's key, not the snapshot's: the freshest one read (the leader verifies with its own
        # freshest, so a key rotated since our last snapshot would be refused).
        leader_url, key = self._leader.leader_url(), self._config_store.snapshot().session_key
        if leader_url is None or key is None:
            logger.info("Connector %s: no %s yet; retrying task configs later", name,
                        "leader URL" if leader_url is None else "session key")
            self.schedule.schedule(name, RECONFIGURE_RETRY_S)
            return
        def outcome(error: str | None) -> None:
            if error is None:
                self.stalls.cleared(name)
            else:
                self.stalls.failed(name, TASK_CONFIGS, error)

        self._forwarder.forward(leader_url.rstrip("/") + self._rest_prefix, name, configs, key,
                                lambda: self.request(name, RECONFIGURE_RETRY_S), outcome)
