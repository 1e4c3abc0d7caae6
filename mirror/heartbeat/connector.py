"""MirrorHeartbeatConnector: one task writing heartbeats into the target's ``heartbeats`` topic.

It deliberately ignores ``enabled``: the heartbeat-only reverse herder of every pair is how a
cluster learns which clusters are upstream of it, so heartbeats flow even when replication is off.
Only ``emit.heartbeats.enabled=false`` stops them (zero tasks).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.config import ConfigDef
from connect_runtime.api.connector import ExactlyOnceSupport, SourceConnector
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import Task
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.clients.factory import translate
from mirror.client.replication_policy import policy_from_config
from mirror.config.heartbeat import CONFIG_DEF, MirrorHeartbeatConfig
from mirror.connect_offset_keys import SOURCE_CLUSTER_ALIAS_KEY, TARGET_CLUSTER_ALIAS_KEY
from mirror.heartbeat.task import MirrorHeartbeatTask
from mirror.offset_validation import validate_offsets
from mirror.scheduler import Scheduler

logger = logging.getLogger(__name__)


class MirrorHeartbeatConnector(SourceConnector):
    """Creates the target's heartbeats topic and runs exactly one :class:`MirrorHeartbeatTask`."""

    def __init__(self, admin_factory: Any = None) -> None:
        #: Tests inject a fake; otherwise ``forwarding.admin.class`` decides, at start.
        self._admin_factory = admin_factory
        self._config: MirrorHeartbeatConfig | None = None
        self._admin: TopicAdmin | None = None
        self._scheduler: Scheduler | None = None

    @classmethod
    def config_def(cls) -> ConfigDef:
        return CONFIG_DEF

    def task_class(self) -> type[Task]:
        return MirrorHeartbeatTask

    def stored_task_class(self) -> str:
        """Java's name, as ``connector.class`` is: Java MirrorMaker starts the task configs we store."""
        return "org.apache.kafka.connect.mirror.MirrorHeartbeatTask"

    def start(self, config: Mapping[str, str]) -> None:
        self._config = cfg = MirrorHeartbeatConfig(config)
        timeout_s = cfg.admin_timeout_ms / 1000.0
        admin_factory = self._admin_factory or cfg.admin_class()
        self._admin = admin_factory(translate(cfg.target_admin_config(), "admin"), timeout_s=timeout_s)
        self._scheduler = Scheduler(f"{cfg.entity_label()}", timeout_s)
        self._scheduler.execute(self._create_internal_topics, "creating internal topics")

    def _create_internal_topics(self) -> None:
        assert self._config is not None and self._admin is not None
        topic = policy_from_config(self._config.replication_policy_config()).heartbeats_topic()
        self._admin.create_topic(topic, 1, self._config.heartbeats_topic_replication_factor, compacted=True)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._config is None or self._config.emit_heartbeats_interval_s < 0:
            return []
        return [self._config.originals()]

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.close()
            self._scheduler = None
        self._admin = None

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return ExactlyOnceSupport.SUPPORTED

    def alter_offsets(self, config: Mapping[str, str],
                      offsets: Mapping[str, tuple[SourceMap, Mapping[str, Any] | None]]) -> bool:
        validate_offsets(offsets, (SOURCE_CLUSTER_ALIAS_KEY, TARGET_CLUSTER_ALIAS_KEY), with_partition=False,
                         only_offset_zero=True)
        return True
