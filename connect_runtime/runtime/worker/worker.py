"""Worker: the container that runs this process's connectors and source tasks (Connect's ``Worker``).

The herder decides *what* runs here; the worker *runs* it. Interface the herder relies on (stable;
every method is blocking, thread-safe, and called from the herder thread unless noted)::

    Worker(worker_id: str, offset_store: OffsetStore, plugins: Plugins, metrics: ConnectMetrics,
           status_listener: StatusListener, producer_config: Mapping[str, str],
           offset_flush_interval_ms: int = 60000, task_shutdown_timeout_ms: int = 5000,
           config_transformer: Callable[[Mapping[str, str]], dict[str, str]] | None = None,
           *, max_outstanding_records: int = 100_000, offset_flush_timeout_ms: int = 5000,
           producer_factory: Callable[[dict[str, str]], Producer] = confluent_kafka.Producer,
           metrics_registry: MetricsRegistry | None = None, log_flow: str | None = None,
           override_policy: OverridePolicy = ALLOW_ALL,
           topic_recorder: Callable[[ConnectorTaskId], ActiveTopicRecorder | None] = lambda _: None,
           exactly_once_group: str | None = None, producer_properties: Mapping[str, str] | None = None)

    start() -> None                      # starts the offset store (as Java's Worker.start does)
    stop() -> None                       # stops connectors and tasks (tasks flush + commit), then the store
    start_connector(name, config, target_state, on_reconfigure: Callable[[str], None]) -> bool
        # False if it could not be created/started: FAILED with its trace went to the listener.
        # A connector created PAUSED/STOPPED is initialized but not started. ConflictError if already here.
    connector_task_configs(name, max_tasks) -> list[dict[str, str]]
        # Each config gets "task.class". May raise RetriableError (retry later) or ConnectError.
    stop_connector(name) -> None         # Connector.stop(), UNASSIGNED reported (not if FAILED)
    start_task(ConnectorTaskId, connector_config, task_config, target_state, post_producer_check=None) -> bool
        # False: FAILED with its trace went to the listener. The task then runs on its own thread.
    stop_tasks(ids, timeout_s) -> None   # stop all in parallel, wait up to timeout_s (+ the offset flush
                                         # timeout for the final commit) in total; each flushes and
                                         # commits. Tasks still running then are cancelled (they report
                                         # nothing more) and forgotten.
    set_target_state(name, TargetState)  # pause/resume/stop the connector and pause/resume its tasks
    commit_task_offsets(name, timeout_s) -> list[TaskOffsetCommit]
        # every local task of the connector commits now; waits for them (any thread, not the tick thread)
    modify_connector_offsets(name, config, offsets | None, fence=None) -> None
        # KIP-875 alter (offsets) or reset (None) of a stopped connector's offsets: the connector checks
        # them, ``fence`` runs (a source connector only), then they are written
    connector_names() -> list[str]; task_ids() -> list[ConnectorTaskId]; is_running(name) -> bool

Status changes reach ``status_listener`` (see :mod:`~connect_runtime.runtime.status`) from the herder
thread for connectors and from each task's thread for tasks. ``on_reconfigure(name)`` is called from
whatever thread the connector calls ``context.request_task_reconfiguration()`` on: keep it cheap.

``config_transformer`` resolves ``${provider:...}`` placeholders (``connect_runtime.api.config_provider``)
in connector and task configs when they start, so resolved secrets live only in this process's memory.
``producer_config`` is a librdkafka mapping (bootstrap servers, security); each task adds Connect's
safety defaults, its connector's ``producer.override.*`` keys (when ``override_policy``, the worker's
``connector.client.config.override.policy``, allows them: otherwise the connector or task FAILS
naming the key) and its own client id (``worker_source_task.task_producer_config``). Overrides are
merged with ``producer_properties`` (the same settings as Java properties) *before* translation, as
Java merges them, so a principal override (``producer.override.sasl.jaas.config``, ``.ssl.keystore.*``)
is read with the worker's ``security.protocol`` and mechanism and replaces the worker's login whole.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry

from connect_runtime.api import plugin_allowlist
from connect_runtime.api.client_overrides import (
    ALLOW_ALL,
    PRODUCER_OVERRIDES_PREFIX,
    OverridePolicy,
    unread_principal_overrides,
)
from connect_runtime.api.config import redact
from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.connector_config import CONNECTOR_CLASS
from connect_runtime.api.errors import ConfigError, ConflictError, ConnectError, NotFoundError
from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.api.records import SourceMap, canonical_partition_json
from connect_runtime.api.task import SourceTask, Task
from connect_runtime.api.transforms import build_chain
from connect_runtime.clients.factory import new_producer, translate
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.herder import TaskOffsetCommit
from connect_runtime.runtime.status import StatusListener, trace_of
from connect_runtime.runtime.task.error_policy import ErrorPolicy
from connect_runtime.runtime.task.exactly_once_task import ExactlyOnceWorkerSourceTask, exactly_once_settings
from connect_runtime.runtime.task.topic_tracking import ActiveTopicRecorder
from connect_runtime.runtime.task.worker_source_task import (
    DEFAULT_MAX_OUTSTANDING_RECORDS,
    ProducerFactory,
    SourceTaskSettings,
    WorkerSourceTask,
)
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.worker_connector import TASK_CLASS, WorkerConnector
from connect_runtime.storage.kafka_offset_store import OffsetStoreReader
from connect_runtime.storage.offset_store import OffsetStore

logger = logging.getLogger(__name__)

ConfigTransformer = Callable[[Mapping[str, str]], dict[str, str]]


class Worker:
    """Runs connectors and source tasks for one worker process (see the module docstring)."""

    def __init__(self, worker_id: str, offset_store: OffsetStore, plugins: Plugins, metrics: ConnectMetrics,
                 status_listener: StatusListener, producer_config: Mapping[str, str],
                 offset_flush_interval_ms: int = 60_000, task_shutdown_timeout_ms: int = 5_000,
                 config_transformer: ConfigTransformer | None = None, *,
                 max_outstanding_records: int = DEFAULT_MAX_OUTSTANDING_RECORDS,
                 offset_flush_timeout_ms: int = 5_000, producer_factory: ProducerFactory = new_producer,
                 metrics_registry: MetricsRegistry | None = None, log_flow: str | None = None,
                 override_policy: OverridePolicy = ALLOW_ALL,
                 topic_recorder: Callable[[ConnectorTaskId], ActiveTopicRecorder | None] = lambda _: None,
                 exactly_once_group: str | None = None,
                 producer_properties: Mapping[str, str] | None = None) -> None:
        self.worker_id = worker_id
        #: KIP-558: each source task's recorder of the topics it produces to (None: tracking is off).
        self._topic_recorder = topic_recorder
        #: The group.id when exactly.once.source.support=enabled: tasks then run transactional with ids
        #: <group.id>-<connector>-<task> (exactly_once_task); None: at least once.
        self.exactly_once_group = exactly_once_group
        self.override_policy = override_policy
        self.offset_store = offset_store
        self.plugins = plugins
        self.metrics = metrics
        self._listener = status_listener
        self._producer_config = dict(producer_config)
        #: The Java properties ``producer_config`` was translated from (None: only the translation is
        #: known, and overrides are translated on their own).
        self._producer_properties = None if producer_properties is None else dict(producer_properties)
        # In seconds, as every task's SourceTaskSettings holds them.
        self._flush_interval_s = offset_flush_interval_ms / 1000
        self._flush_timeout_s = offset_flush_timeout_ms / 1000
        self._shutdown_timeout_s = task_shutdown_timeout_ms / 1000
        self._transform = config_transformer
        self._max_outstanding = max_outstanding_records
        self._producer_factory = producer_factory
        #: Given to every connector and task context (see WorkerSourceTask), with the flow name that
        #: task threads put in their log lines: what lets several herders share one process. Without
        #: one (a worker nobody scrapes, in tests) its plugins get a private registry of their own.
        self.metrics_registry: MetricsRegistry = (
            metrics_registry if metrics_registry is not None else CollectorRegistry())
        self.log_flow = log_flow
        self._lock = threading.RLock()
        self._connectors: dict[str, WorkerConnector] = {}
        self._tasks: dict[ConnectorTaskId, WorkerSourceTask] = {}
        metrics.worker.connector_count.set_function(lambda: len(self.connector_names()))
        metrics.worker.task_count.set_function(lambda: len(self.task_ids()))

    # -- worker lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        logger.info("worker %s starting", self.worker_id)
        self.offset_store.start()

    def stop(self) -> None:
        logger.info("worker %s stopping", self.worker_id)
        for name in self.connector_names():
            self.stop_connector(name)
        self.stop_tasks(self.task_ids(), self._shutdown_timeout_s)
        self.offset_store.stop()
        logger.info("worker %s stopped", self.worker_id)

    # -- connectors ----------------------------------------------------------------------------------
    def start_connector(self, name: str, config: Mapping[str, str], target_state: TargetState,
                        on_reconfigure: Callable[[str], None]) -> bool:
        with self._lock:
            if name in self._connectors:
                raise ConflictError(f"Connector {name} is already running on worker {self.worker_id}")
        try:
            resolved = self._resolve(config)
            self.override_policy.check(resolved, name)
            connector = self.plugins.new_connector(resolved.get(CONNECTOR_CLASS, ""))
            worker_connector = WorkerConnector(name, connector, resolved, self._listener, on_reconfigure,
                                               OffsetStoreReader(self.offset_store, name),
                                               metrics_registry=self.metrics_registry)
        except Exception as exc:
            logger.error("connector %s could not be created: %s", name, exc)
            self._listener.on_connector_failure(name, trace_of(exc))
            self.metrics.worker.connector_started(False)
            return False
        with self._lock:
            self._connectors[name] = worker_connector
        logger.info("starting connector %s (%s) in state %s: %s", name, type(connector).__name__,
                    target_state.value, redact(config))
        started = worker_connector.transition_to(target_state)
        self.metrics.worker.connector_started(started)
        return started

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        worker_connector = self._connector(name)
        try:
            return worker_connector.task_configs(max_tasks)
        except ConnectError:
            raise
        except Exception as exc:
            raise ConnectError(f"Connector {name} failed to compute task configs: {exc}") from exc

    def stop_connector(self, name: str) -> None:
        with self._lock:
            worker_connector = self._connectors.pop(name, None)
        if worker_connector is None:
            logger.warning("stop of connector %s ignored: not running on worker %s", name, self.worker_id)
            return
        worker_connector.shutdown()

    def set_target_state(self, name: str, state: TargetState) -> None:
        """Pause, resume or stop a connector here, and pause/resume its tasks running here.

        STOPPED tasks are only paused: the herder removes them (``stop_tasks``) with zero task configs.
        """
        with self._lock:
            worker_connector = self._connectors.get(name)
            tasks = [t for tid, t in self._tasks.items() if tid.connector == name]
        if worker_connector is not None:
            worker_connector.transition_to(state)
        for task in tasks:
            task.transition_to(TargetState.STARTED if state is TargetState.STARTED else TargetState.PAUSED)

    def connector_names(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def commit_task_offsets(self, name: str, timeout_s: float) -> list[TaskOffsetCommit]:
        """Every local task of ``name`` commits now (all asked at once), each awaited within one deadline
        (:meth:`WorkerSourceTask.commit_offsets`). Called from any thread: it waits on the tasks, never on
        the tick thread."""
        began = time.monotonic()
        with self._lock:
            tasks = sorted(((tid, t) for tid, t in self._tasks.items() if tid.connector == name), key=lambda i: i[0])
        tickets = [(tid, task, task.request_commit()) for tid, task in tasks]
        deadline = began + timeout_s
        outcomes = []
        for tid, task, ticket in tickets:
            error = task.await_commit(ticket, max(0.0, deadline - time.monotonic()))
            outcomes.append(TaskOffsetCommit(tid, error, time.monotonic() - began))
        return outcomes

    def modify_connector_offsets(self, name: str, config: Mapping[str, str],
                                 offsets: Sequence[tuple[SourceMap, Mapping[str, Any] | None]] | None,
                                 fence: Callable[[], None] | None = None) -> None:
        """KIP-875 alter (``offsets``) or reset (None: every offset the connector has) of a connector's
        offsets (Java's ``modifyConnectorOffsets``); the herder checked that it is STOPPED with no tasks.

        A source connector may refuse them first (``SourceConnector.alter_offsets``, it raises): its own
        ConnectError (BadRequestError: 400) passes through; anything else is its bug and becomes a
        ConnectError (500), as Java's ``ConnectUtils.maybeWrap`` does. Then, for a source connector,
        ``fence`` runs (under exactly-once the herder fences its tasks' zombies there: a failure raises and
        nothing is written); then the offsets are written.
        """
        if offsets is None:
            self.offset_store.refresh()
            offsets = [(p, None) for p, _ in self.offset_store.connector_offsets(name)]
        connector = self.plugins.new_connector(config.get(CONNECTOR_CLASS, ""))
        if isinstance(connector, SourceConnector):
            keyed = {canonical_partition_json(p): (p, o) for p, o in offsets}
            try:
                connector.alter_offsets(dict(config), keyed)
            except ConnectError:
                raise
            except Exception as exc:
                raise ConnectError(f"Failed to alter the offsets for connector {name}: {exc}") from exc
            if fence is not None:
                fence()
        if offsets:
            self.offset_store.put(name, offsets)
        logger.info("Connector %s: %d offset(s) %s", name, len(offsets), "altered" if offsets else "reset")

    def is_running(self, name: str) -> bool:
        with self._lock:
            worker_connector = self._connectors.get(name)
        return worker_connector is not None and worker_connector.is_running()

    # -- tasks ---------------------------------------------------------------------------------------
    def start_task(self, task_id: ConnectorTaskId, connector_config: Mapping[str, str],
                   task_config: Mapping[str, str], target_state: TargetState,
                   post_producer_check: Callable[[], None] | None = None) -> bool:
        """Create and start a task. ``post_producer_check`` is the herder's check that an exactly-once source
        task may still start, run once its transactional producer fenced older ones (unused by other tasks)."""
        with self._lock:
            if task_id in self._tasks:
                raise ConflictError(f"Task {task_id} is already running on worker {self.worker_id}")
        metrics = self.metrics.for_task(task_id.connector, task_id.task)
        try:
            resolved_task = self._resolve(task_config)
            resolved_connector = self._resolve(connector_config)
            task = self._new_task(resolved_connector, resolved_task)
            settings = exactly_once_settings(SourceTaskSettings(
                self.worker_id, offset_flush_interval_s=self._flush_interval_s,
                offset_flush_timeout_s=self._flush_timeout_s, shutdown_timeout_s=self._shutdown_timeout_s,
                max_outstanding_records=self._max_outstanding, log_flow=self.log_flow,
                error_policy=ErrorPolicy.from_config({**resolved_connector, **resolved_task}),
            ), self.exactly_once_group, task_id, resolved_connector)
            new_task: Callable[..., WorkerSourceTask] = (
                WorkerSourceTask if settings.transactions is None
                else partial(ExactlyOnceWorkerSourceTask, post_producer_check=post_producer_check))
            worker_task = new_task(
                task_id, task, resolved_task, settings, offset_store=self.offset_store,
                producer_config=self.task_producer_base(task_id.connector, resolved_connector),
                status_listener=self._listener, metrics=metrics, metrics_registry=self.metrics_registry,
                target_state=target_state, producer_factory=self._producer_factory,
                transforms=build_chain(resolved_connector),  # Connect builds them from the connector config
                active_topics=self._topic_recorder(task_id))
        except Exception as exc:
            logger.error("task %s could not be created: %s", task_id, exc)
            metrics.set_state(State.FAILED.value)
            self._listener.on_task_failure(task_id, trace_of(exc))
            self.metrics.worker.task_started(False)
            return False
        with self._lock:
            self._tasks[task_id] = worker_task
        logger.info("starting task %s in state %s", task_id, target_state.value)
        worker_task.start()
        self.metrics.worker.task_started(True)
        return True

    def stop_tasks(self, ids: Iterable[ConnectorTaskId], timeout_s: float) -> None:
        """Signal every task at once, then wait for all within one shared deadline.

        Each task flushes within ``task_shutdown_timeout_ms`` of the stop request and then commits; the
        deadline adds ``offset_flush_timeout_ms`` to ``timeout_s`` for that final commit, so a task that
        merely had records to flush is not cancelled while storing its offsets.
        """
        with self._lock:
            stopping = [(tid, self._tasks[tid]) for tid in ids if tid in self._tasks]
        for _, task in stopping:
            task.stop()
        deadline = time.monotonic() + timeout_s + self._flush_timeout_s
        for task_id, task in stopping:
            if not task.join(max(0.0, deadline - time.monotonic())):
                logger.error("task %s did not stop within %.1fs; cancelling it (no further status reports, "
                             "offsets of unacknowledged records not committed)", task_id, timeout_s)
                task.cancel()
        with self._lock:
            for task_id, task in stopping:
                if self._tasks.get(task_id) is task:
                    del self._tasks[task_id]

    def task_ids(self) -> list[ConnectorTaskId]:
        with self._lock:
            return sorted(self._tasks)

    def task(self, task_id: ConnectorTaskId) -> WorkerSourceTask | None:
        """The running task object (state, failure, metrics), for tests and diagnostics."""
        with self._lock:
            return self._tasks.get(task_id)

    # -- helpers -------------------------------------------------------------------------------------
    def task_producer_base(self, connector: str, connector_config: Mapping[str, str]) -> dict[str, str]:
        """The worker's producer settings with the connector's ``producer.override.*`` on top (Java's
        ``Worker.baseProducerConfigs`` + ``connectorClientConfigOverrides``); ConfigError naming the first
        override key the worker's policy refuses."""
        self.override_policy.check(connector_config, connector)
        connector_overrides = with_prefix_stripped(connector_config, PRODUCER_OVERRIDES_PREFIX)
        if not connector_overrides:
            return dict(self._producer_config)
        if self._producer_properties is None:  # only the translation is known (embedding, tests)
            return {**self._producer_config, **translate(connector_overrides, "producer")}
        merged = {**self._producer_properties, **connector_overrides}  # Java's merge, then one translation
        unread = unread_principal_overrides(connector_overrides, merged)
        if unread:
            key = PRODUCER_OVERRIDES_PREFIX + unread[0]
            raise ConfigError(f"Connector {connector}: {key} has no effect with security.protocol "
                              f"{merged.get('security.protocol', 'PLAINTEXT')}: override "
                              f"{PRODUCER_OVERRIDES_PREFIX}security.protocol too, or remove it", key)
        return translate(merged, "producer")

    def _connector(self, name: str) -> WorkerConnector:
        with self._lock:
            worker_connector = self._connectors.get(name)
        if worker_connector is None:
            raise NotFoundError(f"Connector {name} is not running on worker {self.worker_id}")
        return worker_connector

    def _resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        return self._transform(config) if self._transform is not None else dict(config)

    def _new_task(self, connector_config: Mapping[str, str], task_config: Mapping[str, str]) -> SourceTask:
        """Instantiate the task from ``task.class``, or else from the connector's ``task_class()``.

        The fallback also covers task configs written by Java Connect (``task.class`` is then a Java
        class name such as ``org.apache.kafka.connect.mirror.MirrorSourceTask``).
        """
        class_name = (task_config.get(TASK_CLASS) or "").strip()
        task_class: type[Task] | None = None
        if class_name and plugin_allowlist.permits(class_name):
            try:
                task_class = self.plugins.task_class(class_name)
            except NotFoundError:
                logger.info("task.class %s is not a class here (a Java name, as MM2's connectors store); "
                            "starting the connector's task class", class_name)
        if task_class is None:  # also a task.class the code policy does not let a config name: the
            # connector's own task class is what the worker stored there
            connector_class = self.plugins.connector_class(connector_config.get(CONNECTOR_CLASS, ""))
            task_class = connector_class().task_class()
        task = task_class()
        if not isinstance(task, SourceTask):
            raise ConnectError(f"{type(task).__name__} is not a SourceTask; only source tasks are supported")
        return task
