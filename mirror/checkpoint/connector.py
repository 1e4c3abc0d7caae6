"""MirrorCheckpointConnector: finds the consumer groups to checkpoint and splits them into tasks.

A group qualifies when the group filter accepts it AND it has a committed offset on at least one topic
the topic filter accepts (KAFKA-14837): groups of unrelated applications get no task. Groups are dealt
to tasks in contiguous chunks (Connect's ``groupPartitions``: the first ``n % k`` tasks get one more).

No qualifying group means zero tasks, and a disabled connector (``enabled=false``) also has zero tasks
rather than failing for ever (KAFKA-18021). ``start`` returns at once and lists the groups on the
connector's scheduler thread (one offset request per group: a thousand groups take longer than the
herder's tick thread, which calls ``start`` and keeps the group membership alive, may be away). Until that
first listing finished, ``task_configs`` raises :class:`RetriableError` so the runtime asks again later;
when it has, the connector asks for a task reconfiguration.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from connect_runtime.api.config import ConfigDef, ConfigValue
from connect_runtime.api.connector import ExactlyOnceSupport, SourceConnector
from connect_runtime.api.errors import RetriableError
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import Task
from connect_runtime.clients.factory import translate
from mirror.checkpoint.task import MirrorCheckpointTask
from mirror.client.replication_policy import policy_from_config
from mirror.config.checkpoint import (
    CONFIG_DEF,
    EMIT_CHECKPOINTS_ENABLED,
    TASK_CONSUMER_GROUPS,
    TASK_INDEX,
    MirrorCheckpointConfig,
)
from mirror.connect_offset_keys import CONSUMER_GROUP_ID_KEY, TOPIC_KEY
from mirror.filters import (
    GROUP_FILTER_CLASS,
    TOPIC_FILTER_CLASS,
    GroupFilter,
    TopicFilter,
    filter_class_errors,
    load_group_filter,
    load_topic_filter,
)
from mirror.offset_validation import validate_offsets
from mirror.scheduler import Scheduler

logger = logging.getLogger(__name__)

T = TypeVar("T")

EMIT_OFFSET_SYNCS_ENABLED = "emit.offset-syncs.enabled"


def group_partitions(elements: Sequence[T], num_groups: int) -> list[list[T]]:
    """Contiguous chunks, the first ``len % num_groups`` one longer (Connect ``groupPartitions``)."""
    if num_groups <= 0:
        raise ValueError("number of groups must be positive")
    per_group, leftover = divmod(len(elements), num_groups)
    result: list[list[T]] = []
    assigned = 0
    for group in range(num_groups):
        size = per_group + 1 if group < leftover else per_group
        result.append(list(elements[assigned:assigned + size]))
        assigned += size
    return result


def find_consumer_groups(admin: Any, group_filter: GroupFilter, topic_filter: TopicFilter) -> set[str]:
    """Groups the filter accepts that have an offset on a topic the topic filter accepts (KAFKA-14837)."""
    candidates = [g for g in admin.list_consumer_groups() if group_filter.should_replicate_group(g)]
    offsets: Mapping[str, Mapping[tuple[str, int], Any]] = admin.list_consumer_group_offsets(candidates)
    relevant = set()
    for group in candidates:
        if any(topic_filter.should_replicate_topic(topic) for topic, _ in offsets.get(group, {})):
            relevant.add(group)
    logger.debug("Ignoring groups without offsets on replicated topics: %s",
                 sorted(set(candidates) - relevant))
    return relevant


class MirrorCheckpointConnector(SourceConnector):
    """Creates the checkpoints topic and assigns consumer groups to checkpoint tasks."""

    def __init__(self, admin_factory: Callable[..., Any] | None = None) -> None:
        #: Tests inject a fake; otherwise ``forwarding.admin.class`` decides, at start.
        self._admin_factory: Callable[..., Any] | None = admin_factory
        self._config: MirrorCheckpointConfig | None = None
        self._scheduler: Scheduler | None = None
        self._source_admin: Any = None
        self._target_admin: Any = None
        self._group_filter: GroupFilter | None = None
        self._topic_filter: TopicFilter | None = None
        self._known_groups: list[str] | None = None

    @classmethod
    def config_def(cls) -> ConfigDef:
        return CONFIG_DEF

    def task_class(self) -> type[Task]:
        return MirrorCheckpointTask

    def stored_task_class(self) -> str:
        """Java's name, as ``connector.class`` is: Java MirrorMaker starts the task configs we store."""
        return "org.apache.kafka.connect.mirror.MirrorCheckpointTask"

    @property
    def known_consumer_groups(self) -> list[str] | None:
        return self._known_groups

    def start(self, config: Mapping[str, str]) -> None:
        self._config = cfg = MirrorCheckpointConfig(config)
        if not cfg.enabled:
            logger.info("%s->%s MirrorCheckpointConnector is disabled (enabled=false)", cfg.source_alias,
                        cfg.target_alias)
            return
        # The filters (plugins that may raise) before any client: the runtime does not stop a connector
        # whose start raised (as in Java), so nothing may be left open.
        self._group_filter = load_group_filter(cfg.originals())
        self._topic_filter = load_topic_filter(cfg.originals())
        timeout_s = cfg.admin_timeout_ms / 1000.0
        admin_factory = self._admin_factory or cfg.admin_class()
        self._source_admin = admin_factory(translate(cfg.source_admin_config(), "admin"), timeout_s=timeout_s)
        self._target_admin = admin_factory(translate(cfg.target_admin_config(), "admin"), timeout_s=timeout_s)
        self._scheduler = scheduler = Scheduler(cfg.entity_label(), timeout_s)
        scheduler.execute_async(self._create_internal_topics, "creating internal topics")
        scheduler.execute_async(self._load_initial_consumer_groups, "loading initial consumer groups")
        scheduler.schedule_repeating_delayed(self._refresh_consumer_groups, cfg.refresh_groups_interval_s,
                                             "refreshing consumer groups")
        logger.info("%s->%s started MirrorCheckpointConnector; loading the consumer groups", cfg.source_alias,
                    cfg.target_alias)

    def _create_internal_topics(self) -> None:
        cfg = self._config
        assert cfg is not None
        topic = policy_from_config(cfg.replication_policy_config()).checkpoints_topic(cfg.source_alias)
        self._target_admin.create_topic(topic, 1, cfg.checkpoints_topic_replication_factor, compacted=True)

    def _find_groups(self) -> list[str]:
        assert self._group_filter is not None and self._topic_filter is not None
        return sorted(find_consumer_groups(self._source_admin, self._group_filter, self._topic_filter))

    def _load_initial_consumer_groups(self) -> None:
        self._known_groups = groups = self._find_groups()
        if self._config is not None:
            logger.info("%s->%s MirrorCheckpointConnector ready with %d consumer groups", self._config.source_alias,
                        self._config.target_alias, len(groups))
        self.context.request_task_reconfiguration()

    def _refresh_consumer_groups(self) -> None:
        groups = self._find_groups()
        known = self._known_groups
        if known is not None and groups == known:
            return
        added = sorted(set(groups) - set(known or []))
        removed = sorted(set(known or []) - set(groups))
        logger.info("Found %d consumer groups for %s->%s: %d new %s, %d dead %s", len(groups),
                    self._config.source_alias if self._config else "?",
                    self._config.target_alias if self._config else "?", len(added), added, len(removed),
                    removed)
        self._known_groups = groups
        self.context.request_task_reconfiguration()

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        cfg = self._config
        if cfg is None or not cfg.enabled or cfg.emit_checkpoints_interval_s < 0:
            return []
        groups = self._known_groups
        if groups is None:
            raise RetriableError("Timeout while loading consumer groups.")
        if not groups:
            return []
        configs = []
        for index, chunk in enumerate(group_partitions(groups, min(max_tasks, len(groups)))):
            task_config = cfg.originals()
            task_config[TASK_CONSUMER_GROUPS] = ",".join(chunk)
            task_config[TASK_INDEX] = str(index)
            configs.append(task_config)
        return configs

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.close()
            self._scheduler = None
        self._source_admin = self._target_admin = None

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        """ConfigDef checks and the filter classes; an enabled connector also needs checkpoints and offset
        syncs on."""
        result = super().validate(config)
        for key, message in filter_class_errors(config, (GROUP_FILTER_CLASS, TOPIC_FILTER_CLASS)).items():
            result.setdefault(key, ConfigValue(key, config.get(key))).errors.append(message)
        if str(config.get("enabled", "")).strip().lower() != "false":
            if str(config.get(EMIT_CHECKPOINTS_ENABLED, "")).strip().lower() == "false":
                result[EMIT_CHECKPOINTS_ENABLED].errors.append(
                    "MirrorCheckpointConnector can't run with emit.checkpoints.enabled set to false")
            if str(config.get(EMIT_OFFSET_SYNCS_ENABLED, "")).strip().lower() == "false":
                value = result.get(EMIT_OFFSET_SYNCS_ENABLED)
                if value is None:
                    value = result[EMIT_OFFSET_SYNCS_ENABLED] = ConfigValue(EMIT_OFFSET_SYNCS_ENABLED,
                                                                            config[EMIT_OFFSET_SYNCS_ENABLED])
                value.errors.append("MirrorCheckpointConnector can't run without offset syncs")
        return result

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return ExactlyOnceSupport.SUPPORTED

    def alter_offsets(self, config: Mapping[str, str],
                      offsets: Mapping[str, tuple[SourceMap, Mapping[str, Any] | None]]) -> bool:
        """Offsets MM2 can use: group/topic strings, a valid partition, and the offset must be exactly 0."""
        validate_offsets(offsets, (CONSUMER_GROUP_ID_KEY, TOPIC_KEY), with_partition=True,
                         only_offset_zero=True)
        return True
