"""MirrorSourceConnector: decides what to replicate and splits it into tasks.

``start`` returns at once: it queues the initial work on the connector's :class:`~mirror.scheduler.Scheduler`
thread (a failed step is logged and the next one runs): create the offset-syncs topic, load the source and
target topic-partitions, create missing remote topics (in batches) and partitions, wait until the target's
metadata shows the created topics and added partitions (bounded by ``admin.timeout.ms``), refresh the
target view.
It must not wait for them: the runtime calls ``start`` on the herder's tick thread, which also keeps the
worker's group membership alive, and creating the remote topics of a large cluster takes longer than the
group's rebalance timeout. Until the initial work is done ``task_configs`` raises :class:`RetriableError`
(the runtime asks again with backoff); when it is, the connector asks for a task reconfiguration, so tasks
start once the target shows their remote topics (Java's ``start`` waits for the creation;
:mod:`mirror.source.topic_sync` says why tasks wait for the target to show them too). Then come the ACL
and config syncs (first run at once) and the topic refresh (first run after one interval), which asks for
a task reconfiguration when the set of source partitions changes (after what it created shows).

Tasks get the known source partitions round-robin as in MM2, or in contiguous runs of whole topics with
``task.assignment = by-topic`` (``task.assigned.partitions``, ``task.index``), except
partitions a ``mirror backfill`` is copying: the connector creates the flow's backfill marker topic
(``mm2-backfill.<source>.internal``), reads it at start and every :data:`BACKFILL_MARKER_POLL_S`, leaves
``backfilling`` partitions out and tells tasks where finished backfills ended (docs/backfill.md).
A disabled connector (``enabled=false``, the driver's default for unconfigured flows) does nothing and
has zero tasks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from connect_runtime.api.config import ConfigDef, ConfigValue
from connect_runtime.api.connector import ExactlyOnceSupport, SourceConnector
from connect_runtime.api.errors import RetriableError
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import Task
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.clients.factory import translate
from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import marker_topic
from mirror.client.offset_map import offset_map_topic
from mirror.client.replication_policy import policy_from_config
from mirror.config.source import (
    CONFIG_DEF,
    EMIT_OFFSET_SYNCS_ENABLED,
    TASK_ASSIGNMENT_BY_TOPIC,
    TASK_INDEX,
    TASK_TOPIC_PARTITIONS,
    MirrorSourceConfig,
    encode_topic_partition,
)
from mirror.connect_offset_keys import SOURCE_CLUSTER_KEY, TOPIC_KEY
from mirror.filters import (
    CONFIG_PROPERTY_FILTER_CLASS,
    TOPIC_FILTER_CLASS,
    filter_class_errors,
    load_config_property_filter,
    load_topic_filter,
)
from mirror.offset_validation import validate_offsets
from mirror.scheduler import Scheduler
from mirror.source.task import MirrorSourceTask
from mirror.source.topic_sync import VISIBILITY_POLL_S, TopicSync, assign_by_topic, assign_round_robin

logger = logging.getLogger(__name__)

#: Builds a TopicAdmin from a librdkafka config; tests pass a factory returning fakes.
AdminFactory = Callable[..., Any]

#: How often the backfill marker topic is re-read (a backfill waits for the tasks to let go).
BACKFILL_MARKER_POLL_S = 2.0


def _isolation_level(cfg: MirrorSourceConfig) -> str:
    return cfg.source_consumer_config().get("isolation.level", "read_uncommitted").strip().lower()


class MirrorSourceConnector(SourceConnector):
    """Replicates topics (data, configs, ACLs, partitions) from the source cluster to the target."""

    def __init__(self, admin_factory: AdminFactory | None = None) -> None:
        #: Tests inject a fake; otherwise ``forwarding.admin.class`` decides, at start.
        self._injected_admin_factory = admin_factory
        self._admin_factory: AdminFactory = admin_factory or TopicAdmin
        self._config: MirrorSourceConfig | None = None
        self._sync: TopicSync | None = None
        self._scheduler: Scheduler | None = None
        self._admins: list[Any] = []
        self._markers: MarkerLog | None = None
        #: Set on the scheduler thread once the initial steps of ``start`` ran; read by ``task_configs``.
        self._loaded = False
        #: Set by ``stop`` (the runtime's thread): a remote-topic creation in progress ends at its next batch,
        #: so that closing the scheduler does not wait for the rest of a large creation.
        self._stopping = threading.Event()
        self._backfill_view: tuple[frozenset[tuple[str, int]], tuple[tuple[tuple[str, int], int], ...]] = (
            frozenset(), ())

    @classmethod
    def config_def(cls) -> ConfigDef:
        return CONFIG_DEF

    def task_class(self) -> type[Task]:
        return MirrorSourceTask

    def stored_task_class(self) -> str:
        """Java's name, as ``connector.class`` is: Java MirrorMaker starts the task configs we store."""
        return "org.apache.kafka.connect.mirror.MirrorSourceTask"

    @property
    def topic_sync(self) -> TopicSync | None:
        """The replication state (for tests and diagnostics); None until started or when disabled."""
        return self._sync

    def start(self, config: Mapping[str, str]) -> None:
        self._config = cfg = MirrorSourceConfig(config)
        if not cfg.enabled:
            logger.info("%s->%s MirrorSourceConnector is disabled (enabled=false)", cfg.source_alias,
                        cfg.target_alias)
            return
        # What can still fail on the config (plugins that raise) comes before any client is opened: the
        # runtime does not stop a connector whose start raised (as in Java), so nothing may be left open.
        policy = policy_from_config(cfg.replication_policy_config())
        topic_filter = load_topic_filter(cfg.originals())
        config_property_filter = load_config_property_filter(cfg.originals())
        timeout_s = cfg.admin_timeout_ms / 1000.0
        self._admin_factory = self._injected_admin_factory or cfg.admin_class()
        source_admin = self._admin_factory(translate(cfg.source_admin_config(), "admin"), timeout_s=timeout_s)
        target_admin = self._admin_factory(translate(cfg.target_admin_config(), "admin"), timeout_s=timeout_s)
        self._admins = [source_admin, target_admin]
        self._stopping = threading.Event()
        self._sync = sync = TopicSync(
            cfg.source_alias, cfg.target_alias, policy, topic_filter, config_property_filter, source_admin,
            target_admin,
            replication_factor=cfg.replication_factor,
            heartbeats_replication_enabled=cfg.heartbeats_replication_enabled,
            raise_error=self._raise_error, stop=self._stopping)
        self._scheduler = scheduler = Scheduler(cfg.entity_label(), timeout_s)
        self._loaded = False
        scheduler.execute_async(self._create_offset_syncs_topic, "creating upstream offset-syncs topic")
        scheduler.execute_async(self._create_offset_map_topic, "creating the offset-map topic")
        scheduler.execute_async(sync.load_topic_partitions, "loading initial set of topic-partitions")
        scheduler.execute_async(sync.compute_and_create_topic_partitions, "creating downstream topic-partitions")
        scheduler.execute_async(lambda: sync.await_created_partitions(time.monotonic() + self._await_s(timeout_s)),
                                "waiting for the target's metadata to show the created remote topics")
        scheduler.execute_async(sync.refresh_known_target_topics, "refreshing known target topics")
        scheduler.execute_async(self._open_backfill_markers, "reading backfill markers")
        scheduler.execute_async(self._initial_work_done, "assigning the topic-partitions to tasks")
        scheduler.schedule_repeating_delayed(self._poll_backfill_markers, BACKFILL_MARKER_POLL_S,
                                             "reading backfill markers")
        scheduler.schedule_repeating(sync.sync_topic_acls, cfg.sync_topic_acls_interval_s,
                                     "syncing topic ACLs")
        scheduler.schedule_repeating(sync.sync_topic_configs, cfg.sync_topic_configs_interval_s,
                                     "syncing topic configs")
        scheduler.schedule_repeating_delayed(self._refresh_topic_partitions, cfg.refresh_topics_interval_s,
                                             "refreshing topics")
        logger.info("%s->%s started MirrorSourceConnector; loading the topic-partitions to replicate",
                    cfg.source_alias, cfg.target_alias)

    def _initial_work_done(self) -> None:
        """Scheduler thread, after the initial steps: the tasks can be configured now."""
        cfg, sync = self._config, self._sync
        if cfg is None or sync is None:
            return
        self._loaded = True
        logger.info("%s->%s MirrorSourceConnector ready with %d topic-partitions", cfg.source_alias,
                    cfg.target_alias, len(sync.known_source_topic_partitions))
        self.context.request_task_reconfiguration()

    def _raise_error(self, error: BaseException) -> None:
        self.context.raise_error(error)

    def _create_offset_syncs_topic(self) -> None:
        cfg = self._config
        if cfg is None or not cfg.emit_offset_syncs_enabled:
            return
        timeout_s = cfg.admin_timeout_ms / 1000.0
        admin_config = translate(cfg.offset_syncs_topic_admin_config(), "admin")
        admin = self._admin_factory(admin_config, timeout_s=timeout_s)
        topic = policy_from_config(cfg.replication_policy_config()).offset_syncs_topic(
            cfg.target_alias if cfg.offset_syncs_topic_location == "source" else cfg.source_alias)
        admin.create_topic(topic, 1, cfg.offset_syncs_topic_replication_factor, compacted=True)

    def _create_offset_map_topic(self) -> None:
        """``mm2-offset-map.<source>.internal`` on the target: one partition, compacted (one record per run)."""
        cfg = self._config
        if cfg is None or not cfg.emit_offset_map_enabled:
            return
        admin = self._admin_factory(translate(cfg.target_admin_config(), "admin"),
                                    timeout_s=cfg.admin_timeout_ms / 1000.0)
        topic = offset_map_topic(policy_from_config(cfg.replication_policy_config()), cfg.source_alias)
        admin.create_topic(topic, 1, cfg.offset_syncs_topic_replication_factor, compacted=True)

    def _open_backfill_markers(self) -> None:
        """Create the marker topic (tasks report start/stop there) and read it before the first assignment."""
        cfg = self._config
        if cfg is None or len(self._admins) < 2:
            return
        topic = marker_topic(cfg.source_alias)
        self._admins[1].create_topic(topic, 1, cfg.replication_factor, compacted=True)
        markers = MarkerLog(topic, translate(cfg.target_consumer_config("backfill-marker-consumer"), "consumer"),
                            keep_reader=True)  # read every BACKFILL_MARKER_POLL_S for as long as the connector runs
        try:
            self._backfill_view = self._view(markers)
        except BaseException:
            markers.close()
            raise
        if self._stopping.is_set():  # stop() ran meanwhile (its wait for this job ran out): it found no markers
            markers.close()
            return
        self._markers = markers

    @staticmethod
    def _view(markers: MarkerLog) -> tuple[frozenset[tuple[str, int]], tuple[tuple[tuple[str, int], int], ...]]:
        state = markers.read_to_end(timeout_s=10.0)
        return state.backfilling(), tuple(sorted(state.done_ends().items()))

    def _poll_backfill_markers(self) -> None:
        """A backfill claimed or handed back partitions: reassign the tasks."""
        if self._markers is None:
            self._open_backfill_markers()
            changed = self._markers is not None
        else:
            view = self._view(self._markers)
            changed = view != self._backfill_view
            self._backfill_view = view
        if changed:
            logger.info("backfill markers changed: %d partitions being backfilled; reconfiguring tasks",
                        len(self._backfill_view[0]))
            self.context.request_task_reconfiguration()

    def _refresh_topic_partitions(self) -> None:
        started = time.monotonic()
        if self._sync is not None and self._sync.refresh_topic_partitions():
            cfg = self._config
            if cfg is not None:  # tasks are reconfigured once the target shows what was created
                self._sync.await_created_partitions(started + self._await_s(cfg.admin_timeout_ms / 1000.0))
            self.context.request_task_reconfiguration()

    @staticmethod
    def _await_s(timeout_s: float) -> float:
        """How long a step waits for created partitions to show: within its ``admin.timeout.ms`` (a step
        that runs longer is logged as taking too long), leaving a poll's time for the rest of it."""
        return max(timeout_s - 2 * VISIBILITY_POLL_S, VISIBILITY_POLL_S)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        cfg, sync = self._config, self._sync
        if cfg is None or sync is None or not cfg.enabled:
            return []
        if not self._loaded:
            raise RetriableError("MirrorSourceConnector is still loading the topic-partitions to replicate "
                                 "and creating their remote topics")
        backfilling, _ = self._backfill_view
        partitions = [tp for tp in sync.known_source_topic_partitions if tp not in backfilling]
        assign = assign_by_topic if cfg.task_assignment == TASK_ASSIGNMENT_BY_TOPIC else assign_round_robin
        chunks = assign(partitions, max_tasks)
        configs = []
        for index, chunk in enumerate(chunks):
            # Java's task config, key for key: a Java node runs it as it is, and a Java leader finds it equal to
            # what its own connector computes. The tasks read the backfill markers from their topic.
            task_config = cfg.originals()
            task_config[TASK_TOPIC_PARTITIONS] = ",".join(encode_topic_partition(t, p) for t, p in chunk)
            task_config[TASK_INDEX] = str(index)
            configs.append(task_config)
        return configs

    def stop(self) -> None:
        self._loaded = False
        self._stopping.set()
        if self._scheduler is not None:
            self._scheduler.close()
            self._scheduler = None
        self._sync = None
        self._admins = []
        markers, self._markers = self._markers, None
        if markers is not None:  # after the scheduler: no poll of it runs now, or close() waits for it
            markers.close()

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        """ConfigDef checks, the filter classes, plus MM2's two cross-key rules."""
        result = super().validate(config)
        for key, message in filter_class_errors(config, (TOPIC_FILTER_CLASS, CONFIG_PROPERTY_FILTER_CLASS)).items():
            result.setdefault(key, ConfigValue(key, config.get(key))).errors.append(message)
        try:
            cfg = MirrorSourceConfig(config)
        except ValueError:
            return result  # the per-key errors above already say what is wrong
        if (str(config.get("exactly.once.support", "")).strip().lower() == "required"
                and _isolation_level(cfg) != "read_committed"):
            result["exactly.once.support"].errors.append(
                "MirrorSourceConnector can only provide exactly-once guarantees when its source consumer is "
                "configured with isolation.level set to 'read_committed'. If this is not done, then "
                "data from aborted and uncommitted transactions on the source cluster may be replicated "
                "to the target cluster.")
        if not cfg.emit_offset_syncs_enabled:
            offending = sorted(k for k in config if k.startswith(("offset-syncs-", "offset-syncs.topic.")))
            if offending:
                result[EMIT_OFFSET_SYNCS_ENABLED].errors.append(
                    "MirrorSourceConnector can't setup offset-syncs feature while "
                    f"{EMIT_OFFSET_SYNCS_ENABLED} is set to false (offending keys: {', '.join(offending)})")
        return result

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """SUPPORTED only when the source consumer reads committed data (else aborted data is copied)."""
        cfg = MirrorSourceConfig(config)
        if _isolation_level(cfg) == "read_committed":
            return ExactlyOnceSupport.SUPPORTED
        return ExactlyOnceSupport.UNSUPPORTED

    def alter_offsets(self, config: Mapping[str, str],
                      offsets: Mapping[str, tuple[SourceMap, Mapping[str, Any] | None]]) -> bool:
        """Offsets MM2 can use: cluster/topic strings, partition in [0, 2^31), offset a non-negative integer.

        Nothing else is needed: the source consumer never commits, the task seeks to stored offset + 1.
        """
        validate_offsets(offsets, (SOURCE_CLUSTER_KEY, TOPIC_KEY), with_partition=True,
                         only_offset_zero=False)
        return True
