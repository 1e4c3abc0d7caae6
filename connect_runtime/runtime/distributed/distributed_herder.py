"""DistributedHerder: one member of a Connect cluster (Java's ``DistributedHerder``), driven by one thread.

Design: a single *tick thread* (:mod:`connect_runtime.runtime.distributed.tick_executor`) owns every state change.
It starts the stores, joins the group, then loops over :meth:`DistributedHerder._tick`:

1. apply what the config topic told us (the config store's listener only sets flags and wakes us);
2. poll the group membership; a new assignment replaces the old one;
3. reconcile what the worker runs with (assignment x config snapshot), see
   :mod:`connect_runtime.runtime.distributed.reconciler` (a pure plan, stops before starts) and
   :mod:`connect_runtime.runtime.distributed.local_work` (which applies it);
4. run restart requests and scheduled task reconfigurations (with exponential backoff);
5. run queued REST requests, one at a time, each against a consistent snapshot.

Each request a REST caller makes that changes state (create, update or delete a connector, restart, pause,
resume, stop, write task configs a follower sent, fence zombies, alter or reset offsets) is submitted to the
tick thread and runs there against a consistent snapshot.

Reads (statuses, configs, offsets) are served from the stores directly
(:class:`~connect_runtime.runtime.distributed.abstract_herder.AbstractHerder`): they are thread-safe and any worker
may answer them. Config writes are the leader's, fenced against stale leaders
(:mod:`connect_runtime.runtime.leader.leader_config_writer`); a follower hands new task configs to the leader
(:mod:`connect_runtime.runtime.leader.task_config_forwarding`). Restarts of a connector instance or task are
owner-only (NotAssignedError with the owner's URL, taken from the worker id in the status store, so the
REST layer forwards there; a worker id is ``host:port`` of the owner's REST listener).
Config values are never logged: they may hold secrets or ``${provider:...}`` placeholders.

KIP-875 offset changes (``PATCH``/``DELETE /connectors/<c>/offsets``): offsets may change only while the
connector is STOPPED with no tasks (nothing may commit over them), which the herder checks; then the
worker lets a source connector refuse them (``SourceConnector.alter_offsets``) before anything is written
(:meth:`.Worker.modify_connector_offsets`). Under exactly-once a source connector's tasks are fenced before
the write, as Java does: a zombie task of the stopped connector could otherwise still commit offsets over
the new ones.

Extension points (public, for herders built on this one, such as MM2's ``MirrorHerder``; all run on
the tick thread): :meth:`on_tick_thread_start`, :meth:`on_rebalance_completed`,
:meth:`on_leadership_gained`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from connect_runtime.api.client_overrides import ALLOW_ALL, OverridePolicy
from connect_runtime.api.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConnectError,
    NotAssignedError,
    NotFoundError,
    RetriableError,
)
from connect_runtime.api.records import SourceMap
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.logging_context import carry_context
from connect_runtime.runtime.coordination.membership import Assignment, GroupMembership
from connect_runtime.runtime.distributed.abstract_herder import AbstractHerder
from connect_runtime.runtime.distributed.local_work import LocalWork
from connect_runtime.runtime.distributed.restarts import RestartPlan, apply_restart, owner_url
from connect_runtime.runtime.distributed.startup_narrator import StartupNarrator
from connect_runtime.runtime.distributed.task_reconfiguration import TaskReconfiguration
from connect_runtime.runtime.distributed.tick_executor import TickExecutor
from connect_runtime.runtime.herder import (
    ConnectorOffset,
    ConnectorStateInfo,
    Created,
    TaskOffsetCommit,
    WorkerHealth,
)
from connect_runtime.runtime.leader.generation_fencing import GenerationFencing
from connect_runtime.runtime.leader.leader_config_writer import LeaderConfigWriter
from connect_runtime.runtime.leader.stalled_handoffs import StalledHandoffs
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.runtime.task.topic_tracking import TRACKING_OFF, TopicTracking
from connect_runtime.runtime.worker import connector_validation as validation
from connect_runtime.runtime.worker.log_levels import LOG_LEVELS
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.runtime.worker.worker_runtime import WorkerRuntime
from connect_runtime.storage.config_records import RestartRequest
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.config_topic_state import ClusterConfigState
from connect_runtime.storage.offset_store import OffsetStore
from connect_runtime.storage.status_store import KafkaStatusStore

logger = logging.getLogger(__name__)

_IDLE_WAIT_S = 1.0

#: A start or a stop of one of the services a herder runs (see :func:`start_together`).
Action = Callable[[], None]

#: How long ``GET /health`` waits for the tick thread (Java's fixed 10 s health-check timeout).
HEALTH_CHECK_TIMEOUT_S = 10.0
HEALTHY = "Worker has completed startup and is ready to handle requests."
STARTING = "Worker is still starting up."
UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests."
STALLED = "Worker runs work it cannot do its part for:"

STOPPED_REQUIRED = ("Connectors must be in the STOPPED state before their offsets can be modified. "
                    "This can be done for the specified connector by issuing a 'PUT' request to the "
                    "'/connectors/{name}/stop' endpoint")


class ConfigChangeInbox:
    """What the config store tells a herder, kept until the herder's tick thread takes it (Java's
    ``ConfigUpdateListener``, an inner class of its ``DistributedHerder``).

    The config store calls its listener (:class:`~connect_runtime.storage.config_store.ConfigUpdateListener`)
    on the config log's consumer thread, which must never block: the inbox only records (a flag, restart
    requests) and wakes the tick thread, which takes everything at the start of its next tick and acts on
    one consistent snapshot.
    """

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
                 rest_prefix: str = "", forwarder: TaskConfigForwarder | None = None,
                 override_policy: OverridePolicy = ALLOW_ALL,
                 health_check_timeout_s: float = HEALTH_CHECK_TIMEOUT_S,
                 topic_tracking: TopicTracking = TRACKING_OFF, exactly_once: bool = False,
                 stalls: StalledHandoffs | None = None) -> None:
        super().__init__(plugins, config_store, status_store, offset_store, override_policy, topic_tracking)
        self.exactly_once = exactly_once
        self._worker_id = worker_id
        self._worker = worker
        self._membership = membership
        self._status = status_writer
        self._cluster_id = kafka_cluster_id
        self._start_timeout_s = start_timeout_s
        self._start_offset_store = start_offset_store
        self._health_check_timeout_s = health_check_timeout_s
        self._ticks = TickExecutor(f"herder-{worker_id}", request_timeout_s, on_submit=membership.wakeup)
        self._forwarder = forwarder or TaskConfigForwarder(request_timeout_s, name=f"forward-tasks-{worker_id}")
        self._leader = LeaderConfigWriter(
            config_store, assignment=lambda: self._assignment, demote=self._demote,
            request_rebalance=membership.request_rebalance, claim_timeout_s=min(30.0, request_timeout_s),
            session_key_ttl_s=session_key_ttl_s, group_id=group_id, fence_producers=fence_producers)
        self.stalls = stalls or StalledHandoffs(on_change=status_writer.on_connector_stalled)  # /health, status
        self._fencing = GenerationFencing(exactly_once, self._leader, config_store, self._forwarder, rest_prefix,
                                          self.stalls)
        self._request_timeout_s = request_timeout_s
        self._work = LocalWork(worker, status_writer, self.request_task_reconfiguration, task_shutdown_timeout_s,
                               self._post_producer_check if exactly_once else None)
        self._reconfiguration = TaskReconfiguration(
            worker=worker, config_store=config_store, leader=self._leader, forwarder=self._forwarder,
            schedule=self._work.reconfigurations, snapshot=lambda: self._snapshot,
            runs_connector=self._work.runs_connector, refresh=self._refresh_snapshot, wake=self._wake_tick_thread,
            rest_prefix=rest_prefix, stalls=self.stalls)

        #: What the config store told us (on its log thread), taken by the tick thread.
        self._inbox = ConfigChangeInbox(self._wake_tick_thread)
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        #: Start-up milestones in the log (public: a herder built on this one adds its own, e.g. MM2's first record).
        self.narrator = StartupNarrator(worker_id, group_id)
        self._stops: list[Callable[[], None]] = [self.narrator.close]

        # Tick-thread state.
        self._snapshot = ClusterConfigState()
        #: Connectors and tasks as of the last rebalance request (what the group leader assigns).
        self._group_work: tuple[frozenset[str], frozenset[ConnectorTaskId]] = (frozenset(), frozenset())
        self._assignment: Assignment | None = None
        #: Whether the last assignment applied made us leader (not changed by fencing, see _demote).
        self._assigned_leader = False

    # ========================================================================== extension points ===
    def on_tick_thread_start(self) -> None:
        """First thing the tick thread runs, before any store starts (e.g. set a logging context)."""

    def on_rebalance_completed(self, assignment: Assignment) -> None:
        """An assignment was applied: the worker now runs what it names (Java's ``rebalanceSuccess``)."""

    def on_leadership_gained(self) -> None:
        """An applied assignment made this worker the leader when the previous one did not; the config
        topic may be written (e.g. MM2 writes its connector configs from mm2.properties)."""

    # ================================================================================ lifecycle ===
    def start(self) -> None:
        """Start the tick thread; returns at once (see :meth:`wait_until_ready`)."""
        self._ticks.start(self._run)

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
        self._ticks.request_stop()
        self._membership.wakeup()
        if not self._ticks.join(timeout_s):
            logger.error("Herder tick thread did not stop within %.0fs", timeout_s)

    def _run(self) -> None:
        try:
            self.on_tick_thread_start()
            self.narrator.starting()
            self._start_services()
            self.narrator.cluster_reached(self._cluster_id)
            self._snapshot = self._config_store.snapshot()
            self._group_work = self._snapshot.work()
            with self._ticks.stage("ensuring membership in the cluster"):
                assignment = self._membership.join(self._snapshot, self._start_timeout_s)
            self._apply_assignment(assignment)
            self._ready.set()
            logger.info("Herder %s started", self._worker_id)
            while not self._ticks.stopping:
                try:
                    self._tick()
                except ConnectError:
                    # Java's tick loop: an error in one tick (e.g. the config topic briefly unwritable)
                    # is logged and the next tick tries again; the herder does not die of it.
                    logger.exception("Unexpected error during tick of herder %s", self._worker_id)
                    self._ticks.idle(_IDLE_WAIT_S)
        except BaseException as exc:
            self._failure = exc
            self._ticks.mark_failed()
            logger.exception("Herder %s failed", self._worker_id)
        finally:
            self._halt()

    def _start_services(self) -> None:
        """Start the stores and the worker, remembering each stop so a failed start undoes only what began."""
        with self._ticks.stage("reading to the end of internal topics"):
            if self._start_offset_store:
                self._offset_store.start()
                self._stops.append(self._offset_store.stop)
            self._config_store.set_update_listener(self._inbox)
            status, config, timeout_s = self._status_store, self._config_store, self._start_timeout_s
            stops, failure = start_together([  # independent reads (the worker's reads the offsets topic)
                (lambda: status.start(timeout_s), [status.stop, status.flush]),
                (lambda: config.start(timeout_s), [config.stop]), (self._worker.start, [self._worker.stop])])
            self._stops += stops
            if failure is not None:
                raise failure

    def _halt(self) -> None:
        """Stop what runs here, then the services (offsets are flushed by the worker's task stops)."""
        self._ticks.fail_pending(ConnectError("The herder is shutting down"))
        self._forwarder.close()
        try:
            self._work.stop_all()
        except Exception:
            logger.exception("Error while stopping connectors and tasks")
        steps = list(reversed(self._stops))  # worker first, the stores it writes to last
        if self._ready.is_set():
            # Our work is stopped: others may take it at once. The UNASSIGNED statuses of that work
            # are flushed first: they tell the leader that we left cleanly, so it holds our work for
            # our return instead of reassigning it as a crashed member's (see assembly.released_work).
            steps[:0] = [self._status_store.flush, self._membership.leave]
        else:  # a start that failed joining still has a member client (IO thread, sockets): close it
            steps.append(self._membership.leave)
        for step in steps:
            try:
                step()
            except Exception:
                logger.exception("Error during herder shutdown")
        logger.info("Herder %s stopped", self._worker_id)

    def wakeup(self) -> None:
        """Make the tick thread run a tick now (thread-safe): e.g. the group membership's ``notify``
        when a rebalance completed on its IO thread."""
        self._ticks.wake()

    def _wake_tick_thread(self) -> None:
        self._ticks.wake()
        self._membership.wakeup()

    # ==================================================================================== tick ===
    def _tick(self) -> None:
        config_changed, restarts = self._inbox.take()
        previous = self._snapshot
        if config_changed:
            self._snapshot = self._config_store.snapshot()
        # Compared with the work the group last saw, not with the previous tick's snapshot: request
        # handlers refresh the snapshot themselves (e.g. a leader writing connector configs), and such
        # a change must still reach the group, or a Kafka group member never reassigns.
        work = self._snapshot.work()
        if work != self._group_work:
            self._group_work = work
            self._membership.request_rebalance(work_changed=True)
        stage = self._ticks.stage
        with stage("ensuring membership in the cluster"):
            assignment = self._membership.poll(self._snapshot, 0.0)
        if assignment is not None:
            self._apply_assignment(assignment)
        elif config_changed:
            self._reconcile()
        if config_changed:
            self._forget_deleted(previous)
        for request in restarts:
            self._process_restart(request)
        with stage("rotating the session key"):
            if self._leader.maybe_rotate_session_key(self._snapshot):
                self._refresh_snapshot()
        if self._fencing.retry_due():
            self._reconcile()
        with stage("reconfiguring connector tasks"):
            self._reconfiguration.run_due()
        self._ticks.run_pending()
        next_due = self._reconfiguration.seconds_to_next()
        self._ticks.idle(_IDLE_WAIT_S if next_due is None else min(_IDLE_WAIT_S, next_due))

    # ============================================================ assignment and reconciliation ===
    def _apply_assignment(self, assignment: Assignment) -> None:
        self._assignment = assignment
        self._status.set_generation(assignment.generation)
        self._leader.on_assignment(assignment)
        self._reconcile()
        self.narrator.assigned(assignment)
        gained = assignment.leader and not self._assigned_leader
        self._assigned_leader = assignment.leader
        self.on_rebalance_completed(assignment)
        if gained:
            self.on_leadership_gained()

    def _demote(self) -> None:
        """Our config write was fenced: act as a follower until the next assignment."""
        a = self._assignment
        if a is not None and a.leader:
            self._assignment = Assignment(a.generation, False, None, a.connectors, a.tasks, a.config_offset)

    def _is_leader(self) -> bool:
        return self._leader.is_leader()

    def _forget_deleted(self, previous: ClusterConfigState) -> None:
        """The leader forgets the statuses of what the snapshot deleted or dropped since ``previous``:
        tombstones in the status topic.

        When a connector is deleted its connector and task statuses are tombstoned (DESTROYED); when a new
        task generation has fewer tasks, the statuses of the dropped task numbers are. Only the leader does
        it (one writer, not one per worker), after reconciling, so the worker's own "UNASSIGNED" reports
        come before the tombstones.
        """
        if not self._is_leader():
            return
        current, statuses, status = self._snapshot, self._status_store, self._status
        for name in previous.connectors():
            if not current.contains(name):
                for task_status in statuses.get_all(name):
                    if task_status.task is not None:
                        status.on_task_deletion(ConnectorTaskId(name, task_status.task))
                status.on_connector_deletion(name)
            else:
                if name in current.inconsistent:
                    continue  # the previous generation still counts
                kept = current.task_count(name)
                for task_status in statuses.get_all(name):
                    if task_status.task is not None and task_status.task >= kept:
                        status.on_task_deletion(ConnectorTaskId(name, task_status.task))

    def _reconcile(self) -> None:
        """Make the worker run exactly (assignment x snapshot); revoked work stops before new starts; under
        exactly-once a new task generation waits for its fencing (:mod:`.generation_fencing`)."""
        if self._assignment is None:
            return
        pending = self._fencing.pending(self._snapshot)
        with self._ticks.stage("starting and stopping connectors and tasks"):
            self._work.reconcile(self._assignment.connectors,
                                 [t for t in self._assignment.tasks if t.connector not in pending], self._snapshot)
        if pending and self._is_leader():  # our own old tasks stopped above: fence, then start the new ones
            self._fencing.fence(self._snapshot, pending)
            self._inbox.clear_changed()
            self._snapshot = self._config_store.snapshot()
            pending = self._fencing.pending(self._snapshot)
            self._work.reconcile(self._assignment.connectors,
                                 [t for t in self._assignment.tasks if t.connector not in pending], self._snapshot)
        elif pending:  # a follower's tasks wait: it asks the leader over REST (PUT .../fence)
            self._fencing.ask_leader(pending & {t.connector for t in self._assignment.tasks})

    def _post_producer_check(self, task: ConnectorTaskId, snapshot: ClusterConfigState) -> Callable[[], None]:
        """Java's ``verifyTaskGenerationAndOwnership``: what an exactly-once task started from ``snapshot`` runs
        on its own thread once ``init_transactions`` fenced older holders of its id. It reads the config topic to
        its end and raises unless the task's generation is still the newest and the task still assigned here
        (exactly_once_task.py says why a generation's fencing needs this). A slow read is waited for, as Java
        waits without limit: failing the task would leave it FAILED until someone restarts it; a stopped config
        store ends the wait with its error."""
        generation = snapshot.task_config_generation(task.connector)

        def check() -> None:
            while True:
                try:
                    current = self._config_store.refresh(self._request_timeout_s)
                    break
                except RetriableError as exc:
                    logger.warning("%s may produce only once the config topic was read to its end; still reading "
                                   "(%s)", task, exc)
            if current.task_config_generation(task.connector) != generation:
                raise ConnectError(f"Cannot start source task {task} with exactly-once support: the connector has "
                                   "generated a new set of task configs since the task was started")
            assignment = self._assignment
            if assignment is None or task not in assignment.tasks:
                raise ConnectError(f"Cannot start source task {task}: it has been revoked from this worker")
        return check

    def _refresh_snapshot(self) -> None:
        """Apply our own writes now rather than on the next tick (REST answers must reflect them)."""
        self._inbox.clear_changed()
        previous = self._snapshot
        self._snapshot = self._config_store.snapshot()
        assignment = self._membership.poll(self._snapshot, 0.0)
        if assignment is not None:
            self._apply_assignment(assignment)
        else:
            self._reconcile()
        self._forget_deleted(previous)

    # ===================================================================== task reconfiguration ===
    def request_task_reconfiguration(self, name: str) -> None:
        """A connector asked for its task configs to be recomputed (any thread)."""
        self._reconfiguration.request(name)

    # ================================================================================ restarts ===
    def _process_restart(self, request: RestartRequest) -> None:
        """Apply a restart request (read from the config topic) to what this worker runs."""
        if apply_restart(request, self._snapshot, self._status_store, self._work, self._status):
            self._reconcile()

    # ===================================================================== Herder: connectors ===
    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        validation.raise_if_invalid(self.validate_connector_config(config))

        def write() -> Created:
            self._leader.require_leader("create or update a connector")
            exists = self._snapshot.contains(name)
            if exists and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            state = None if exists else initial_state
            logger.info("%s connector %s", "Updating" if exists else "Creating", name)
            self._leader.write(lambda: self._config_store.put_connector_config(name, dict(config), state))
            self._refresh_snapshot()
            return Created(not exists, self.connector_info(name))

        return self._ticks.submit(write)

    def delete_connector(self, name: str) -> None:
        def delete() -> None:
            self._leader.require_leader("delete a connector")
            self._require(self._snapshot, name)
            logger.info("Deleting connector %s", name)
            self._leader.write(lambda: self._config_store.remove_connector_config(name))
            self._refresh_snapshot()

        self._ticks.submit(delete)

    def restart_connector(self, name: str, include_tasks: bool,
                          only_failed: bool) -> ConnectorStateInfo | None:
        if not include_tasks and not only_failed:
            def restart_instance() -> None:
                self._require(self._snapshot, name)
                if not self._work.runs_connector(name):
                    raise NotAssignedError(f"Cannot restart connector {name}: not assigned to this worker",
                                           self._owner_url(name, None))
                self._work.stop_connector(name)
                self._reconcile()

            self._ticks.submit(restart_instance)
            return None

        def restart() -> ConnectorStateInfo:
            self._require(self._snapshot, name)
            self._leader.require_leader("restart a connector")
            current = self.connector_status(name)
            request = RestartRequest(name, include_tasks, only_failed)
            plan = RestartPlan.of(self._status_store, self._snapshot, request)
            self._leader.write(lambda: self._config_store.put_restart_request(request))
            return plan.restarting_view(current)

        return self._ticks.submit(restart)

    def restart_task(self, task: ConnectorTaskId) -> None:
        def restart() -> None:
            if task not in self._snapshot.tasks(task.connector):
                raise NotFoundError(f"Unknown task: {task}")
            if not self._work.runs_task(task):
                raise NotAssignedError(f"Cannot restart task {task}: it is not assigned to this worker",
                                       self._owner_url(task.connector, task.task))
            self._work.stop_tasks([task])
            self._reconcile()

        self._ticks.submit(restart)

    def _owner_url(self, connector: str, task: int | None) -> str | None:
        return owner_url(self._status_store, connector, task, self._worker_id, self._leader.leader_url())

    def _set_target_state(self, name: str, state: TargetState) -> None:
        def write() -> None:
            self._require(self._snapshot, name)
            self._leader.require_leader(f"change the state of connector {name} to {state.value}")
            logger.info("Connector %s: target state %s requested", name, state.value)
            if state is TargetState.STOPPED:
                # Task configs first (Java): a STARTED connector with zero tasks is harmless if we die
                # in between; a STOPPED one with tasks would confuse users.
                self._leader.write(lambda: self._config_store.put_task_configs(name, []))
            self._leader.write(lambda: self._config_store.put_target_state(name, state))
            self._refresh_snapshot()

        self._ticks.submit(write)

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
            self._leader.require_leader("write task configs")
            if configs == [dict(c) for c in self._snapshot.task_config_list(connector)] and (
                    self._snapshot.task_count(connector) == len(configs)):
                return
            logger.info("Connector %s: writing %d task config(s) sent by a follower", connector, len(configs))
            self._leader.write(lambda: self._config_store.put_task_configs(connector, configs))
            self._refresh_snapshot()

        self._ticks.submit(write)

    def task_transactional_ids(self, connector: str, task_count: int) -> list[str]:
        return self._leader.task_transactional_ids(connector, task_count)

    def fence_zombies(self, connector: str) -> None:
        """KIP-618 zombie fencing (leader only), see :meth:`LeaderConfigWriter.fence_zombies`."""
        self._leader.check_fencing_configured()

        def run() -> None:
            self._require(self._snapshot, connector)
            self._leader.require_leader(f"fence zombies of connector {connector}")
            if self._fencing.serve(self._config_store.snapshot(), connector):
                self._refresh_snapshot()

        self._ticks.submit(run)

    # ======================================================================== Herder: offsets ===
    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> None:
        # The body is checked before the request reaches the tick thread.
        if not offsets:
            raise BadRequestError("Partitions / offsets need to be provided for an alter offsets request")
        for entry in offsets:
            if entry.partition is None:
                raise BadRequestError("Source partitions may not be null")
        entries = [(o.partition, o.offset) for o in offsets]
        self._ticks.submit(lambda: self._modify_offsets(name, entries))

    def reset_connector_offsets(self, name: str) -> None:
        self._ticks.submit(lambda: self._modify_offsets(name, None))

    def commit_task_offsets(self, name: str, timeout_s: float) -> list[TaskOffsetCommit]:
        """This worker's tasks of ``name`` commit now; served off the tick thread (the wait is the tasks'),
        so a rebalance is never held up by it."""
        self._require(self._current(), name)
        return self._worker.commit_task_offsets(name, timeout_s)

    def _modify_offsets(self, name: str,
                        offsets: list[tuple[SourceMap, Mapping[str, Any] | None]] | None) -> None:
        """KIP-875 PATCH (``offsets``) or DELETE (None) on the tick thread, on the leader: the connector must
        be STOPPED and its (empty) task generation written; the worker has the connector check them, this
        herder's fencing runs (a source connector's zombies, under exactly-once), then the worker writes."""
        snapshot = self._snapshot
        self._require(snapshot, name)
        self._leader.require_leader("modify connector offsets")
        if snapshot.target_state(name) is not TargetState.STOPPED or snapshot.task_count(name) > 0:
            raise BadRequestError(STOPPED_REQUIRED.format(name=name))
        self._worker.modify_connector_offsets(name, snapshot.connector_configs[name], offsets,
                                              fence=lambda: self._fencing.fence_for_offsets(snapshot, name))

    # ======================================================================== Herder: cluster ===
    def worker_id(self) -> str:
        return self._worker_id

    def kafka_cluster_id(self) -> str | None:
        return self._cluster_id

    def failed(self) -> bool:
        """The tick thread died (start failure or crash): the process should give up on this herder.

        Unlike :meth:`health`, a tick thread that is only slow (a long rebalance or task stop) is not a
        failure, and the answer never waits."""
        return self._failure is not None or (self._ticks.started and not self._ticks.is_alive()
                                             and not self._ticks.stopping)

    def health(self) -> WorkerHealth:
        """``GET /health`` (KIP-1017, Java's ``healthCheck``): see :func:`probe_health`."""
        a = self._assignment  # stalls of connectors of which something still runs here
        here = set() if a is None else a.connectors | {t.connector for t in a.tasks}
        return probe_health(self._ticks, failed=self.failed(), ready=self._ready.is_set(),
                            timeout_s=self._health_check_timeout_s, stalled=self.stalls.problems(here.__contains__))


def start_together(steps: Sequence[tuple[Action, Sequence[Action]]]) -> tuple[list[Action], BaseException | None]:
    """Run every step's start at once. Returns the stops of the steps that started (in the order given,
    to be run in reverse) and the first failure in that order, or None.

    A worker reads three internal topics to their end before it joins its group (status, config, offsets).
    The reads do not depend on each other, and each one ends with an empty fetch per partition that waits
    ``fetch.wait.max.ms`` on the broker: one after the other they took ~0.7 s of a fresh start-up, at once
    ~0.3 s. Each start runs on its own thread with the caller's logging context; the caller learns which
    ones succeeded, so that a failed start undoes exactly what began (``DistributedHerder._start_services``).
    """
    with ThreadPoolExecutor(max_workers=max(1, len(steps)), thread_name_prefix="start") as pool:
        futures = [pool.submit(carry_context(start)) for start, _ in steps]
        errors = [future.exception() for future in futures]
    stops = [stop for (_, step_stops), error in zip(steps, errors, strict=True) if error is None
             for stop in step_stops]
    return stops, next((error for error in errors if error is not None), None)


def probe_health(ticks: TickExecutor, *, failed: bool, ready: bool, timeout_s: float,
                 stalled: Sequence[str] = ()) -> WorkerHealth:
    """``GET /health`` of a distributed herder (KIP-1017), in Java's words: healthy / starting / unhealthy;
    waits up to ``timeout_s`` for the tick thread when started. ``stalled``: one line per connector stalled
    here (unhealthy when there is any).

    Healthy means a no-op request got through the tick thread within the health-check timeout: a worker
    whose tick thread is stuck (a store that does not answer, a rebalance that never ends) answers 500
    "unhealthy", even though its REST server and its tasks may still run. Starting (503) and unhealthy
    messages end with what the tick thread is doing (Java's stage summary, see
    :class:`~connect_runtime.runtime.distributed.tick_executor.Stage`). While starting we answer at once
    rather than waiting out the timeout as Java does: a probe learns the same, sooner. A worker that runs a
    connector (or tasks) it cannot do its part for, because what it must hand to the leader does not reach
    it (:mod:`connect_runtime.runtime.leader.stalled_handoffs`), is unhealthy too, naming each connector: its
    flow stalls.
    """
    if failed:
        return WorkerHealth("unhealthy", _with_stage(ticks, UNHEALTHY))
    if not ready:
        return WorkerHealth("starting", _with_stage(ticks, STARTING))
    try:
        ticks.submit(lambda: None, timeout_s)
    except ConnectError:
        return WorkerHealth("unhealthy", _with_stage(ticks, UNHEALTHY))
    if stalled:
        return WorkerHealth("unhealthy", f"{STALLED} {'; '.join(stalled)}")
    return WorkerHealth("healthy", HEALTHY)


def _with_stage(ticks: TickExecutor, message: str) -> str:
    stage = ticks.current_stage
    return message if stage is None else f"{message} {stage.summarize()}"
