"""DistributedHerder: one member of a Connect cluster (Java's ``DistributedHerder``), driven by one thread.

Design: a single *tick thread* owns every state change. It starts the stores, joins the group, then
loops over :meth:`DistributedHerder._tick`:

1. apply what the config topic told us (the config store's listener only sets flags and wakes us);
2. poll the group membership; a new assignment replaces the old one;
3. reconcile what the worker runs with (assignment x config snapshot): revoked or changed tasks and
   connectors are stopped first, then new ones are started (invariant "stop before start": a task
   never runs twice in one worker generation, and a Kafka group member can take the seat at once);
4. run restart requests and scheduled task reconfigurations (with exponential backoff);
5. run queued REST requests, one at a time, each against a consistent snapshot.

Mutating REST calls are closures queued for the tick thread; the caller blocks on a Future for up to
``rest.request.timeout.ms`` ("Request timed out" after that). Reads (statuses, configs, offsets) are
served from the stores directly: they are thread-safe and any worker may answer them (§11.3).

Writes to the config topic are leader-only (NotLeaderError carries the leader's URL so that the REST
layer forwards, §11.3), pause and resume included (Java lets any worker write those; here every config
write is fenced, see below); restarts of a connector instance or task are owner-only
(NotAssignedError with the owner's URL, taken from the worker id in the status store, so the REST layer
forwards there; a worker id is ``host:port`` of the owner's REST listener).
Config values are never logged: they may hold secrets or ``${provider:...}`` placeholders.

Leader fencing (a stale leader's config writes are refused). Chosen: a transactional producer with
one leader transactional id per group (Java's ``connect-cluster-<group.id>``, see
:func:`connect_runtime.storage.fenced_writer.leader_transactional_id`), created with
``KafkaConfigStore.claim_write_privileges`` whenever a *new assignment* makes this worker the leader.
Its ``init_transactions`` fences the previous leader's producer on the transaction coordinator, so a
leader that lost its membership without noticing (GC pause, network partition) gets PRODUCER_FENCED
on its next write instead of overwriting the new leader's configs. Why not generation checks: the
config topic is an ordinary topic, so a generation written into records could only be checked by
readers after the fact (every reader would have to agree which generation was current when each
record was written, which they cannot); the broker refuses a fenced producer's write at the source.
The config log reads ``read_committed`` (librdkafka's default): on Apache Kafka a transaction aborted
by fencing stays invisible. On Tansu a killed leader's open transaction blocks readers until the next
leader's ``init_transactions`` releases it; since only a leader writes, nothing is lost by waiting.
A write that fails fenced makes this worker request a rebalance, and it never re-claims until a new
assignment names it leader again (a re-claim by a stale leader would fence the real one).

KIP-618 groundwork (reference §10.3): task transactional ids ``<group.id>-<connector>-<task>``
(:func:`connect_runtime.storage.fenced_writer.task_transactional_id`) and :meth:`fence_zombies`, which
the leader runs for a connector: it fences the ids of every task of the previous and the current
generation, then writes ``tasks-fencing-<connector>`` with the current task count.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from connect_runtime.api.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConnectError,
    NotAssignedError,
    NotFoundError,
    NotLeaderError,
    RetriableError,
)
from connect_runtime.api.records import SourceMap
from connect_runtime.logging_context import carry_context
from connect_runtime.model import ConnectorTaskId, TargetState
from connect_runtime.runtime import connector_validation as validation
from connect_runtime.runtime.abstract_herder import AbstractHerder
from connect_runtime.runtime.herder import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStateInfo,
    Created,
    WorkerHealth,
)
from connect_runtime.runtime.herder_support import (
    ReconfigurationSchedule,
    WorkerRuntime,
    check_offsets_with_connector,
    forward_task_configs,
    new_session_key,
    restart_plan,
    restarting_view,
)
from connect_runtime.runtime.membership import Assignment, GroupMembership
from connect_runtime.runtime.plugins import Plugins
from connect_runtime.runtime.status_writer import StatusWriter
from connect_runtime.storage.config_records import RestartRequest
from connect_runtime.storage.config_store import ClusterConfigState, KafkaConfigStore, WritePrivilegesError
from connect_runtime.storage.fenced_writer import FencedError, task_transactional_id
from connect_runtime.storage.offset_store import OffsetStore
from connect_runtime.storage.status_store import KafkaStatusStore

logger = logging.getLogger(__name__)

T = TypeVar("T")

STOPPED_REQUIRED = ("Connectors must be in the STOPPED state before their offsets can be modified. "
                    "This can be done for the specified connector by issuing a 'PUT' request to the "
                    "'/connectors/{name}/stop' endpoint")

_RECONFIGURE_BACKOFF_INITIAL_S = 0.25
_RECONFIGURE_BACKOFF_MAX_S = 60.0
_IDLE_WAIT_S = 1.0


def _work_of(snapshot: ClusterConfigState) -> tuple[frozenset[str], frozenset[ConnectorTaskId]]:
    return frozenset(snapshot.connectors()), frozenset(snapshot.all_tasks())


class DistributedHerder(AbstractHerder):
    """A Connect cluster member; see the module docstring for the threading design."""

    def __init__(self, *, worker_id: str, worker: WorkerRuntime, plugins: Plugins,
                 config_store: KafkaConfigStore, status_store: KafkaStatusStore, offset_store: OffsetStore,
                 membership: GroupMembership, status_writer: StatusWriter,
                 kafka_cluster_id: str | None = None, request_timeout_s: float = 90.0,
                 task_shutdown_timeout_s: float = 5.0, start_timeout_s: float = 120.0,
                 start_offset_store: bool = False, session_key_ttl_s: float = 3600.0,
                 group_id: str = "connect-cluster",
                 fence_producers: Callable[[list[str]], None] | None = None,
                 rest_prefix: str = "") -> None:
        super().__init__(plugins, config_store, status_store, offset_store)
        #: This herder's REST namespace path on every node (``/A/B`` for an MM2 flow, ``""`` for plain
        #: Connect): internal requests to the leader go to ``<leader url><prefix>/connectors/...``, as
        #: Java's ``DistributedHerder.namespacedUrl`` does. Leader URLs themselves stay the server root
        #: because forwarded public requests repeat their full path (prefix included).
        self._rest_prefix = rest_prefix
        self._worker_id = worker_id
        self._worker = worker
        self._membership = membership
        self._status = status_writer
        self._cluster_id = kafka_cluster_id
        self._request_timeout_s = request_timeout_s
        self._task_timeout_s = task_shutdown_timeout_s
        self._start_timeout_s = start_timeout_s
        self._start_offset_store = start_offset_store
        self._session_key_ttl_s = session_key_ttl_s
        self._group_id = group_id
        self._fence_producers = fence_producers

        self._wake = threading.Condition()
        self._requests: list[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = []
        self._config_changed = True
        self._woken = False
        self._restart_requests: list[RestartRequest] = []
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._stops: list[Callable[[], None]] = []

        # Tick-thread state.
        self._snapshot = ClusterConfigState()
        #: Connectors and tasks as of the last rebalance request (what the group leader assigns).
        self._group_work: tuple[frozenset[str], frozenset[ConnectorTaskId]] = (frozenset(), frozenset())
        self._assignment: Assignment | None = None
        #: The current assignment made us leader and we have not yet claimed the config writer.
        self._claim_pending = False
        self._running_connectors: dict[str, Mapping[str, str]] = {}
        self._connector_states: dict[str, str] = {}
        self._running_tasks: dict[ConnectorTaskId, Mapping[str, str]] = {}
        self._task_states: dict[ConnectorTaskId, str] = {}
        self._reconfigurations = ReconfigurationSchedule(_RECONFIGURE_BACKOFF_INITIAL_S, _RECONFIGURE_BACKOFF_MAX_S)

    # ================================================================================ lifecycle ===
    def start(self) -> None:
        """Start the tick thread; returns at once (see :meth:`wait_until_ready`)."""
        self._thread = threading.Thread(target=self._run, name=f"herder-{self._worker_id}", daemon=True)
        self._thread.start()

    def wait_until_ready(self, timeout_s: float) -> bool:
        """True once started; raises the start failure if the herder could not start."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._failure is not None:
                raise ConnectError(f"Herder failed to start: {self._failure}") from self._failure
            if self._ready.wait(0.1):
                return True
        return self._ready.is_set()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop every task and connector, flush, leave the group and close the stores."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        self._membership.wakeup()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                logger.error("Herder tick thread did not stop within %.0fs", timeout_s)

    def _run(self) -> None:
        try:
            self._start_services()
            self._snapshot = self._config_store.snapshot()
            self._group_work = _work_of(self._snapshot)
            self._apply_assignment(self._membership.join(self._snapshot, self._start_timeout_s))
            self._ready.set()
            logger.info("Herder %s started", self._worker_id)
            while not self._stopping:
                try:
                    self._tick()
                except ConnectError:
                    # Java's tick loop: an error in one tick (e.g. the config topic briefly unwritable)
                    # is logged and the next tick tries again; the herder does not die of it.
                    logger.exception("Unexpected error during tick of herder %s", self._worker_id)
                    with self._wake:
                        self._wake.wait(_IDLE_WAIT_S)
        except BaseException as exc:
            self._failure = exc
            logger.exception("Herder %s failed", self._worker_id)
        finally:
            self._halt()

    def _start_services(self) -> None:
        """Start in dependency order, remembering each stop so a failed start undoes only what began."""
        if self._start_offset_store:
            self._offset_store.start()
            self._stops.append(self._offset_store.stop)
        self._status_store.start(self._start_timeout_s)
        self._stops += [self._status_store.stop, self._status_store.flush]
        self._config_store.set_update_listener(self)
        self._config_store.start(self._start_timeout_s)
        self._stops.append(self._config_store.stop)
        self._worker.start()
        self._stops += [self._worker.stop]

    def _halt(self) -> None:
        """Stop what runs here, then the services (offsets are flushed by the worker's task stops)."""
        self._fail_pending(ConnectError("The herder is shutting down"))
        try:
            self._stop_tasks(list(self._running_tasks))
            for name in list(self._running_connectors):
                self._stop_connector(name)
        except Exception:
            logger.exception("Error while stopping connectors and tasks")
        steps = list(reversed(self._stops))  # worker first, the stores it writes to last
        if self._ready.is_set():
            steps.insert(0, self._membership.leave)  # our work is stopped: others may take it at once
        for step in steps:
            try:
                step()
            except Exception:
                logger.exception("Error during herder shutdown")
        logger.info("Herder %s stopped", self._worker_id)

    # ======================================================================== config listener ===
    # Called on the config log's thread: record and wake, never block.
    def on_connector_config_update(self, connector: str) -> None:
        self._poke()

    def on_connector_config_remove(self, connector: str) -> None:
        self._poke()

    def on_task_config_update(self, connector: str, tasks: Sequence[ConnectorTaskId]) -> None:
        self._poke()

    def on_connector_target_state_change(self, connector: str) -> None:
        self._poke()

    def on_restart_request(self, request: RestartRequest) -> None:
        with self._wake:
            self._restart_requests.append(request)
        self._poke()

    def on_session_key_update(self) -> None:
        # A follower signs forwarded task configs with the snapshot's key. Without this refresh a
        # follower whose last snapshot predates the key (the leader writes its first key right after
        # joining, often after the connector configs) or a rotation never saw it, and retried forever.
        self._poke()

    def wakeup(self) -> None:
        """Make the tick thread run a tick now (thread-safe): e.g. the group membership's ``notify``
        when a rebalance completed on its IO thread."""
        with self._wake:
            self._woken = True
            self._wake.notify_all()

    def _poke(self) -> None:
        with self._wake:
            self._config_changed = True
            self._wake.notify_all()
        self._membership.wakeup()

    # ==================================================================================== tick ===
    def _tick(self) -> None:
        with self._wake:
            config_changed, self._config_changed = self._config_changed, False
            restarts, self._restart_requests = self._restart_requests, []
        previous = self._snapshot
        if config_changed:
            self._snapshot = self._config_store.snapshot()
        # Compared with the work the group last saw, not with the previous tick's snapshot: request
        # handlers refresh the snapshot themselves (e.g. a leader writing connector configs), and such
        # a change must still reach the group, or a Kafka group member never reassigns.
        work = _work_of(self._snapshot)
        if work != self._group_work:
            self._group_work = work
            self._membership.request_rebalance()
        assignment = self._membership.poll(self._snapshot, 0.0)
        if assignment is not None:
            self._apply_assignment(assignment)
        elif config_changed:
            self._reconcile()
        if config_changed:
            self._forget_deleted(previous)
        for request in restarts:
            self._process_restart(request)
        self._maybe_rotate_session_key()
        self._run_due_reconfigurations()
        self._run_requests()
        self._idle()

    def _idle(self) -> None:
        with self._wake:
            woken, self._woken = self._woken, False
            if woken or self._stopping or self._requests or self._config_changed or self._restart_requests:
                return
            timeout = _IDLE_WAIT_S
            next_due = self._reconfigurations.seconds_to_next()
            if next_due is not None:
                timeout = min(timeout, next_due)
            self._wake.wait(timeout)

    def _run_requests(self) -> None:
        with self._wake:
            requests, self._requests = self._requests, []
        for action, future in requests:
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(action())
            except BaseException as exc:
                future.set_exception(exc)

    def _fail_pending(self, error: Exception) -> None:
        with self._wake:
            requests, self._requests = self._requests, []
        for _action, future in requests:
            if future.set_running_or_notify_cancel():
                future.set_exception(error)

    def _submit(self, action: Callable[[], T]) -> T:
        """Run ``action`` on the tick thread and wait for its result (inline if already on it)."""
        if threading.current_thread() is self._thread:
            return action()
        if self._failure is not None or self._stopping:
            raise ConnectError("The herder is not running")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._wake:
            self._requests.append((action, future))
            self._wake.notify_all()
        self._membership.wakeup()
        try:
            return future.result(self._request_timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ConnectError("Request timed out") from None

    # ============================================================ assignment and reconciliation ===
    def _apply_assignment(self, assignment: Assignment) -> None:
        self._assignment = assignment
        self._status.set_generation(assignment.generation)
        if assignment.leader:
            if not self._config_store.has_write_privileges():
                self._claim_pending = True
                self._claim_write_privileges()
        else:
            self._claim_pending = False
            self._config_store.release_write_privileges()
        self._reconcile()

    def _claim_write_privileges(self) -> bool:
        """Fence the previous leader's config writer (only right after an assignment made us leader)."""
        if not self._claim_pending:
            return self._config_store.has_write_privileges()
        try:
            self._config_store.claim_write_privileges(min(30.0, self._request_timeout_s))
        except ConnectError as exc:
            logger.warning("Could not claim the config topic as leader (%s); retrying on the next write", exc)
            return False
        self._claim_pending = False
        return True

    def _is_leader(self) -> bool:
        return self._assignment is not None and self._assignment.leader

    def _leader_url(self) -> str | None:
        return None if self._assignment is None else self._assignment.leader_url

    def _target_state(self, name: str) -> TargetState:
        return self._snapshot.target_state(name) or TargetState.STARTED

    def _reconcile(self) -> None:
        """Make the worker run exactly (assignment x snapshot); revoked work stops before new starts."""
        snap, assignment = self._snapshot, self._assignment
        if assignment is None:
            return
        wanted_connectors = {c: snap.connector_configs[c] for c in assignment.connectors if snap.contains(c)}
        wanted_tasks: dict[ConnectorTaskId, Mapping[str, str]] = {}
        for task in assignment.tasks:
            config = snap.task_config(task)
            # A task runs wherever it is assigned, whether or not its connector instance runs here.
            if (config is not None and snap.contains(task.connector)
                    and task in snap.tasks(task.connector)
                    and self._target_state(task.connector) is not TargetState.STOPPED):
                wanted_tasks[task] = config
        # 1. stop revoked / changed tasks, then connectors
        self._stop_tasks([t for t, cfg in self._running_tasks.items() if wanted_tasks.get(t) != cfg])
        for name in [c for c, cfg in self._running_connectors.items() if wanted_connectors.get(c) != cfg]:
            self._stop_connector(name)
        # 2. start new connectors, then tasks
        for name, config in sorted(wanted_connectors.items()):
            if name not in self._running_connectors:
                self._start_connector(name, config)
            elif self._connector_states.get(name) != self._target_state(name).value:
                self._change_target_state(name)
        for task, config in sorted(wanted_tasks.items()):
            state = self._target_state(task.connector)
            if task not in self._running_tasks:
                self._start_task(task, config)
            elif self._task_states.get(task) != state.value:
                self._task_states[task] = state.value  # the worker propagated it with the connector's

    def _start_connector(self, name: str, config: Mapping[str, str]) -> None:
        state = self._target_state(name)
        logger.info("Starting connector %s (target state %s)", name, state.value)
        self._running_connectors[name] = config
        self._connector_states[name] = state.value
        try:
            started = self._worker.start_connector(name, config, state, self.request_task_reconfiguration)
        except Exception as exc:
            logger.exception("Connector %s failed to start", name)
            self._status.on_connector_failure(name, f"{type(exc).__name__}: {exc}")
            return
        if started and state is TargetState.STARTED:
            self._schedule_reconfiguration(name, 0.0)

    def _stop_connector(self, name: str) -> None:
        logger.info("Stopping connector %s", name)
        self._running_connectors.pop(name, None)
        self._connector_states.pop(name, None)
        self._reconfigurations.succeeded(name)
        try:
            self._worker.stop_connector(name)
        except Exception:
            logger.exception("Error stopping connector %s", name)

    def _start_task(self, task: ConnectorTaskId, config: Mapping[str, str]) -> None:
        state = self._target_state(task.connector)
        connector_config = self._snapshot.connector_configs[task.connector]
        self._running_tasks[task] = config
        self._task_states[task] = state.value
        logger.info("Starting task %s", task)
        try:
            self._worker.start_task(task, connector_config, config, state)
        except Exception as exc:
            logger.exception("Task %s failed to start", task)
            self._status.on_task_failure(task, f"{type(exc).__name__}: {exc}")

    def _stop_tasks(self, tasks: Sequence[ConnectorTaskId]) -> None:
        if not tasks:
            return
        logger.info("Stopping %d task(s): %s", len(tasks), ", ".join(str(t) for t in sorted(tasks)))
        for task in tasks:
            self._running_tasks.pop(task, None)
            self._task_states.pop(task, None)
        self._worker.stop_tasks(list(tasks), self._task_timeout_s)

    def _change_target_state(self, name: str) -> None:
        state = self._target_state(name)
        previous = self._connector_states.get(name)
        logger.info("Connector %s target state %s -> %s", name, previous, state.value)
        self._connector_states[name] = state.value
        self._worker.set_target_state(name, state)
        if state is TargetState.STARTED:
            self._schedule_reconfiguration(name, 0.0)

    def _forget_deleted(self, previous: ClusterConfigState) -> None:
        """Tombstone the statuses of deleted connectors and of tasks a new generation dropped (leader).

        Called after reconciling, so the worker's own "UNASSIGNED" reports come before the tombstones.
        """
        if not self._is_leader():
            return
        for name in previous.connectors():
            if not self._snapshot.contains(name):
                for status in self._status_store.get_all(name):
                    if status.task is not None:
                        self._status.on_task_deletion(ConnectorTaskId(name, status.task))
                self._status.on_connector_deletion(name)
            else:
                if name in self._snapshot.inconsistent:
                    continue  # the previous generation still counts
                kept = self._snapshot.task_count(name)
                for status in self._status_store.get_all(name):
                    if status.task is not None and status.task >= kept:
                        self._status.on_task_deletion(ConnectorTaskId(name, status.task))

    # ===================================================================== task reconfiguration ===
    def request_task_reconfiguration(self, name: str) -> None:
        """A connector asked for its task configs to be recomputed (any thread)."""
        with self._wake:
            self._schedule_reconfiguration(name, 0.0)
            self._wake.notify_all()
        self._membership.wakeup()

    def _schedule_reconfiguration(self, name: str, delay_s: float) -> None:
        self._reconfigurations.schedule(name, delay_s)

    def _run_due_reconfigurations(self) -> None:
        for name in self._reconfigurations.due():
            self._reconfigure(name)

    def _reconfigure(self, name: str) -> None:
        """Recompute ``name``'s task configs; write them (and a commit) only if they changed.

        KAFKA-18021: an empty list is a valid answer (zero tasks, the connector stays RUNNING). A
        RetriableError (or any other failure) is retried with exponential backoff up to 60 s.
        """
        if name not in self._running_connectors or self._target_state(name) is not TargetState.STARTED:
            return
        config = self._snapshot.connector_configs.get(name)
        if config is None:
            return
        try:
            configs = self._worker.connector_task_configs(name, validation.max_tasks(config))
        except Exception as exc:
            delay = self._reconfigurations.retry_later(name)
            level = logging.INFO if isinstance(exc, RetriableError) else logging.ERROR
            logger.log(level, "Connector %s: computing task configs failed (%s: %s); retrying in %.2fs", name,
                       type(exc).__name__, exc, delay)
            return
        self._reconfigurations.succeeded(name)
        current = [dict(c) for c in self._snapshot.task_config_list(name)]
        if configs == current and name not in self._snapshot.inconsistent and (
                self._snapshot.task_count(name) == len(configs)):
            logger.debug("Connector %s: task configs unchanged (%d task(s))", name, len(configs))
            return
        if not self._is_leader():
            self._forward_task_configs(name, configs)
            return
        logger.info("Connector %s: writing %d task config(s)", name, len(configs))
        try:
            self._config_write(lambda: self._config_store.put_task_configs(name, configs))
        except ConnectError as exc:
            logger.error("Connector %s: writing task configs failed (%s); retrying", name, exc)
            self._schedule_reconfiguration(name, _RECONFIGURE_BACKOFF_INITIAL_S * 4)
            return
        self._refresh_snapshot()

    def _refresh_snapshot(self) -> None:
        """Apply our own writes now rather than on the next tick (REST answers must reflect them)."""
        with self._wake:
            self._config_changed = False
        previous = self._snapshot
        self._snapshot = self._config_store.snapshot()
        assignment = self._membership.poll(self._snapshot, 0.0)
        if assignment is not None:
            self._apply_assignment(assignment)
        else:
            self._reconcile()
        self._forget_deleted(previous)

    def _forward_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """A follower hands new task configs to the leader, off the tick thread; retried on failure."""
        # The store's key, not the snapshot's: the freshest one read (the leader verifies with its own
        # freshest, so a key rotated since our last snapshot would be refused).
        leader_url, key = self._leader_url(), self._config_store.snapshot().session_key
        if leader_url is None or key is None:
            logger.info("Connector %s: no %s yet; retrying task configs later", name,
                        "leader URL" if leader_url is None else "session key")
            self._schedule_reconfiguration(name, _RECONFIGURE_BACKOFF_INITIAL_S * 4)
            return

        def send() -> None:
            try:
                forward_task_configs(leader_url.rstrip("/") + self._rest_prefix, name, configs, key,
                                     self._request_timeout_s)
                logger.info("Connector %s: sent %d task config(s) to the leader", name, len(configs))
            except ConnectError as exc:
                logger.warning("Connector %s: %s; retrying", name, exc)
                self.request_task_reconfiguration_after(name, _RECONFIGURE_BACKOFF_INITIAL_S * 4)

        threading.Thread(target=carry_context(send), name=f"forward-tasks-{name}", daemon=True).start()

    def request_task_reconfiguration_after(self, name: str, delay_s: float) -> None:
        with self._wake:
            self._schedule_reconfiguration(name, delay_s)
            self._wake.notify_all()

    def _maybe_rotate_session_key(self) -> None:
        """The leader writes a session key when there is none or it is older than its TTL (KIP-507;
        ``inter.worker.key.ttl.ms``, 0 = never rotate, as in Java)."""
        if not self._is_leader():
            return
        now_ms = int(time.time() * 1000)
        current = self._snapshot.session_key
        if current is not None and (self._session_key_ttl_s <= 0 or
                                    now_ms - current.creation_timestamp_ms < self._session_key_ttl_s * 1000):
            return
        logger.info("Writing a new session key (the previous one %s)", "expired" if current else "was missing")
        self._config_write(lambda: self._config_store.put_session_key(new_session_key(now_ms)))
        self._refresh_snapshot()

    # ================================================================================ restarts ===
    def _process_restart(self, request: RestartRequest) -> None:
        """Apply a restart request (read from the config topic) to what this worker runs."""
        if not self._snapshot.contains(request.connector):
            return
        restart_connector, tasks = restart_plan(self._status_store, self._snapshot, request)
        restart_connector = restart_connector and request.connector in self._running_connectors
        local_tasks = [t for t in tasks if t in self._running_tasks]
        if not restart_connector and not local_tasks:
            return
        logger.info("Restarting connector %s%s and %d task(s)", request.connector,
                    "" if restart_connector else " (tasks only)", len(local_tasks))
        if restart_connector:
            self._stop_connector(request.connector)
            self._status.on_connector_restart(request.connector)
        self._stop_tasks(local_tasks)
        for task in local_tasks:
            self._status.on_task_restart(task)
        self._reconcile()

    # ======================================================================== Herder: cluster ===
    def worker_id(self) -> str:
        return self._worker_id

    def kafka_cluster_id(self) -> str | None:
        return self._cluster_id

    def health(self) -> WorkerHealth:
        if self._failure is not None or (self._thread is not None and not self._thread.is_alive()
                                         and not self._stopping):
            return WorkerHealth("unhealthy", "Worker was unable to handle this request and may be unable to "
                                             "handle other requests.")
        if not self._ready.is_set():
            return WorkerHealth("starting", "Worker is still starting up.")
        return WorkerHealth("healthy", "Worker has completed startup and is ready to handle requests.")

    def generation(self) -> int:
        return self._status.generation

    # ===================================================================== Herder: connectors ===
    def _require_leader(self, what: str) -> None:
        if not self._is_leader():
            raise NotLeaderError(f"Cannot {what}: only the leader can do this.", self._leader_url())
        if not self._claim_write_privileges():
            if self._claim_pending:
                raise RetriableError(f"Cannot {what} yet: this leader has not claimed the config topic")
            self._on_write_refused(WritePrivilegesError(f"Cannot {what}: this leader's writer was fenced"))

    def _config_write(self, write: Callable[[], None]) -> None:
        """Run one config-topic write; a fenced one turns into NotLeaderError (see module docstring)."""
        if self._claim_pending and not self._claim_write_privileges():
            raise RetriableError("This leader has not claimed the config topic yet")
        try:
            write()
        except (FencedError, WritePrivilegesError) as exc:
            self._on_write_refused(exc)

    def _on_write_refused(self, exc: ConnectError) -> None:
        """A config write was fenced (a newer leader exists): stop acting as leader until reassigned."""
        if isinstance(exc, FencedError | WritePrivilegesError):
            logger.error("Config write refused (%s); this worker is no longer the leader, rejoining", exc)
            self._claim_pending = False
            self._config_store.release_write_privileges()
            if self._assignment is not None and self._assignment.leader:
                a = self._assignment
                self._assignment = Assignment(a.generation, False, None, a.connectors, a.tasks, a.config_offset)
            self._membership.request_rebalance()
            raise NotLeaderError("This worker was fenced as leader; the group is rebalancing", None) from exc

    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        validation.raise_if_invalid(self.validate_connector_config(config))

        def write() -> Created:
            self._require_leader("create or update a connector")
            exists = self._snapshot.contains(name)
            if exists and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            state = None if exists or initial_state is None else initial_state
            logger.info("%s connector %s", "Updating" if exists else "Creating", name)
            self._config_write(lambda: self._config_store.put_connector_config(name, dict(config), state))
            self._refresh_snapshot()
            return Created(not exists, self.connector_info(name))

        return self._submit(write)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        existing = dict(self._require(self._current(), name))
        for key, value in patch.items():
            if value is None:
                existing.pop(key, None)
            else:
                existing[key] = value
        return self.put_connector_config(name, existing, allow_replace=True).info

    def delete_connector(self, name: str) -> None:
        def delete() -> None:
            self._require_leader("delete a connector")
            self._require(self._snapshot, name)
            logger.info("Deleting connector %s", name)
            self._config_write(lambda: self._config_store.remove_connector_config(name))
            self._refresh_snapshot()

        self._submit(delete)

    def restart_connector(self, name: str, include_tasks: bool,
                          only_failed: bool) -> ConnectorStateInfo | None:
        if not include_tasks and not only_failed:
            def restart_instance() -> None:
                self._require(self._snapshot, name)
                if name not in self._running_connectors:
                    raise NotAssignedError(f"Cannot restart connector {name}: not assigned to this worker",
                                           self._owner_url(name, None))
                self._stop_connector(name)
                self._reconcile()

            self._submit(restart_instance)
            return None

        def restart() -> ConnectorStateInfo:
            self._require(self._snapshot, name)
            self._require_leader("restart a connector")
            current = self.connector_status(name)
            request = RestartRequest(name, include_tasks, only_failed)
            restart_connector, tasks = restart_plan(self._status_store, self._snapshot, request)
            self._config_write(lambda: self._config_store.put_restart_request(request))
            return restarting_view(current, restart_connector, tasks)

        return self._submit(restart)

    def restart_task(self, task: ConnectorTaskId) -> None:
        def restart() -> None:
            if task not in self._snapshot.tasks(task.connector):
                raise NotFoundError(f"Unknown task: {task}")
            if task not in self._running_tasks:
                raise NotAssignedError(f"Cannot restart task {task}: it is not assigned to this worker",
                                       self._owner_url(task.connector, task.task))
            self._stop_tasks([task])
            self._reconcile()

        self._submit(restart)

    def _owner_url(self, connector: str, task: int | None) -> str | None:
        """The REST URL of the worker running a connector or task, from its status (its worker id is
        the ``host:port`` of that worker's listener), else the leader's, which knows the assignment.

        The scheme is this cluster's (the leader's URL's): workers of one cluster share a listener
        protocol. A status written by this very worker is stale (we checked it does not run here).
        """
        status = (self._status_store.get(connector) if task is None
                  else self._status_store.get_task(connector, task))
        leader = self._leader_url()
        if status is None or not status.worker_id or status.worker_id == self._worker_id:
            return leader
        scheme = leader.split("://", 1)[0] if leader and "://" in leader else "http"
        return f"{scheme}://{status.worker_id}"

    def _set_target_state(self, name: str, state: TargetState) -> None:
        def write() -> None:
            self._require(self._snapshot, name)
            self._require_leader(f"change the state of connector {name} to {state.value}")
            logger.info("Connector %s: target state %s requested", name, state.value)
            if state is TargetState.STOPPED:
                # Task configs first (Java): a STARTED connector with zero tasks is harmless if we die
                # in between; a STOPPED one with tasks would confuse users.
                self._config_write(lambda: self._config_store.put_task_configs(name, []))
            self._config_write(lambda: self._config_store.put_target_state(name, state))
            self._refresh_snapshot()

        self._submit(write)

    def pause_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.STOPPED)

    # ============================================================ internal endpoints (KIP-507) ===
    def session_key(self) -> bytes | None:
        key = self._config_store.snapshot().session_key
        return None if key is None else key.key

    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        """Task configs a follower computed for a connector it runs (leader only)."""
        def write() -> None:
            self._require(self._snapshot, connector)
            self._require_leader("write task configs")
            if configs == [dict(c) for c in self._snapshot.task_config_list(connector)] and (
                    self._snapshot.task_count(connector) == len(configs)):
                return
            logger.info("Connector %s: writing %d task config(s) sent by a follower", connector, len(configs))
            self._config_write(lambda: self._config_store.put_task_configs(connector, configs))
            self._refresh_snapshot()

        self._submit(write)

    def task_transactional_ids(self, connector: str, task_count: int) -> list[str]:
        return [task_transactional_id(self._group_id, connector, t) for t in range(task_count)]

    def fence_zombies(self, connector: str) -> None:
        """KIP-618 zombie fencing (leader only): fence the producers of every task that the previous
        and the current task generation of ``connector`` may run, then record the current task count
        (``tasks-fencing-<connector>``), after which the new generation's tasks may start."""
        if self._fence_producers is None:
            raise ConnectError("Zombie fencing is not configured on this worker")
        fence = self._fence_producers

        def run() -> None:
            self._require(self._snapshot, connector)
            self._require_leader(f"fence zombies of connector {connector}")
            count = self._snapshot.task_count(connector)
            previous = self._snapshot.task_count_records.get(connector, 0)
            ids = self.task_transactional_ids(connector, max(count, previous))
            logger.info("Connector %s: fencing %d task producer(s) (previous task count %d, current %d)",
                        connector, len(ids), previous, count)
            fence(ids)
            self._config_write(lambda: self._config_store.put_task_count_record(connector, count))
            self._refresh_snapshot()

        self._submit(run)

    # ======================================================================== Herder: offsets ===
    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> None:
        if not offsets:
            raise BadRequestError("Partitions / offsets need to be provided for an alter offsets request")
        for entry in offsets:
            if entry.partition is None:
                raise BadRequestError("Source partitions may not be null")
        self._submit(lambda: self._modify_offsets(name, [(o.partition, o.offset) for o in offsets]))

    def reset_connector_offsets(self, name: str) -> None:
        self._submit(lambda: self._modify_offsets(name, None))

    def _modify_offsets(self, name: str,
                        offsets: list[tuple[SourceMap, Mapping[str, Any] | None]] | None) -> None:
        """KIP-875 PATCH (``offsets``) or DELETE (None) on the tick thread: the connector must be STOPPED."""
        config = self._require(self._snapshot, name)
        self._require_leader("modify connector offsets")
        stopped = self._snapshot.target_state(name) is TargetState.STOPPED
        if not stopped or self._snapshot.task_count(name) > 0:
            raise BadRequestError(STOPPED_REQUIRED.format(name=name))
        if offsets is None:
            self._offset_store.refresh()
            offsets = [(p, None) for p, _ in self._offset_store.connector_offsets(name)]
        connector = self._plugins.new_connector(config.get(validation.CONNECTOR_CLASS, ""))
        check_offsets_with_connector(connector, name, config, offsets)
        if offsets:
            self._offset_store.put(name, offsets)
        logger.info("Connector %s: %d offset(s) %s", name, len(offsets), "altered" if offsets else "reset")
