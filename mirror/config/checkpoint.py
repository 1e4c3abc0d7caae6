"""``MirrorCheckpointConnector`` / ``MirrorCheckpointTask`` config (Kafka ``MirrorCheckpointConfig``).

The checkpoint connector also honours ``topics`` / ``topics.exclude``: Java's TopicFilter reads them from
the originals without declaring them here, and so do we (:attr:`MirrorCheckpointConfig.topics`).
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_runtime.api.config import (
    ConfigDef,
    ConfigKey,
    Importance,
    Type,
    at_least,
    parse_value,
    regex_list,
)
from mirror.config.connector_base import (
    BASE_CONNECTOR_CONFIG_DEF,
    METRIC_NAMES_FORMATS_KEY,
    METRICS_PARTITION_SERIES_KEY,
    OFFSET_SYNCS_TOPIC_LOCATION_KEY,
    TOPIC_FILTER_CLASS,
    TOPIC_FILTER_CLASS_KEY,
    OffsetSyncsLocationMixin,
    replication_factor,
)
from mirror.config.settings import Flag, Integer, Period, Text, TextList
from mirror.config.source import TOPICS, TOPICS_DEFAULT, TOPICS_EXCLUDE, TOPICS_EXCLUDE_DEFAULT

GROUPS = "groups"
GROUPS_DEFAULT = ".*"
GROUPS_EXCLUDE = "groups.exclude"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"
GROUP_FILTER_CLASS = "group.filter.class"
GROUP_FILTER_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultGroupFilter"
CONSUMER_POLL_TIMEOUT_MILLIS = "consumer.poll.timeout.ms"
CONSUMER_POLL_TIMEOUT_MILLIS_DEFAULT = 1000
REFRESH_GROUPS_ENABLED = "refresh.groups.enabled"
REFRESH_GROUPS_INTERVAL_SECONDS = "refresh.groups.interval.seconds"
REFRESH_GROUPS_INTERVAL_SECONDS_DEFAULT = 600
EMIT_CHECKPOINTS_ENABLED = "emit.checkpoints.enabled"
EMIT_CHECKPOINTS_INTERVAL_SECONDS = "emit.checkpoints.interval.seconds"
EMIT_CHECKPOINTS_INTERVAL_SECONDS_DEFAULT = 60
SYNC_GROUP_OFFSETS_ENABLED = "sync.group.offsets.enabled"
SYNC_GROUP_OFFSETS_INTERVAL_SECONDS = "sync.group.offsets.interval.seconds"
SYNC_GROUP_OFFSETS_INTERVAL_SECONDS_DEFAULT = 60
CHECKPOINTS_TOPIC_REPLICATION_FACTOR = "checkpoints.topic.replication.factor"
CHECKPOINTS_TOPIC_REPLICATION_FACTOR_DEFAULT = 3

# Task-only keys, added by the connector to each task config.
TASK_CONSUMER_GROUPS = "task.assigned.groups"
TASK_INDEX = "task.index"

_GROUP = "Mirror Checkpoint"

CONFIG_DEF: ConfigDef = BASE_CONNECTOR_CONFIG_DEF.merge(ConfigDef([
    ConfigKey(GROUPS, Type.LIST, GROUPS_DEFAULT, Importance.HIGH,
              "Consumer groups to replicate. Supports comma-separated group IDs and regexes.",
              regex_list, _GROUP),
    ConfigKey(GROUPS_EXCLUDE, Type.LIST, GROUPS_EXCLUDE_DEFAULT, Importance.HIGH,
              "Exclude groups. Supports comma-separated group IDs and regexes.", regex_list, _GROUP),
    ConfigKey(GROUP_FILTER_CLASS, Type.CLASS, GROUP_FILTER_CLASS_DEFAULT, Importance.LOW,
              "GroupFilter to use. Selects consumer groups to replicate.", group=_GROUP),
    TOPIC_FILTER_CLASS_KEY,
    ConfigKey(CONSUMER_POLL_TIMEOUT_MILLIS, Type.LONG, CONSUMER_POLL_TIMEOUT_MILLIS_DEFAULT, Importance.LOW,
              "Timeout when polling source cluster.", at_least(0), _GROUP),
    ConfigKey(REFRESH_GROUPS_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to periodically check for new consumer groups.", group=_GROUP),
    ConfigKey(REFRESH_GROUPS_INTERVAL_SECONDS, Type.LONG, REFRESH_GROUPS_INTERVAL_SECONDS_DEFAULT,
              Importance.LOW, "Frequency of group refresh.", at_least(0), _GROUP),
    ConfigKey(EMIT_CHECKPOINTS_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to replicate consumer offsets to the target cluster.", group=_GROUP),
    ConfigKey(EMIT_CHECKPOINTS_INTERVAL_SECONDS, Type.LONG, EMIT_CHECKPOINTS_INTERVAL_SECONDS_DEFAULT,
              Importance.LOW, "Frequency of checkpoints.", at_least(0), _GROUP),
    ConfigKey(SYNC_GROUP_OFFSETS_ENABLED, Type.BOOLEAN, False, Importance.LOW,
              "Whether to periodically write the translated offsets to __consumer_offsets on the target, "
              "for groups with no active consumers there.", group=_GROUP),
    ConfigKey(SYNC_GROUP_OFFSETS_INTERVAL_SECONDS, Type.LONG, SYNC_GROUP_OFFSETS_INTERVAL_SECONDS_DEFAULT,
              Importance.LOW, "Frequency of consumer group offset sync.", at_least(0), _GROUP),
    ConfigKey(CHECKPOINTS_TOPIC_REPLICATION_FACTOR, Type.INT, CHECKPOINTS_TOPIC_REPLICATION_FACTOR_DEFAULT,
              Importance.LOW, "Replication factor for the checkpoints topic.", replication_factor, _GROUP),
    OFFSET_SYNCS_TOPIC_LOCATION_KEY,
    METRIC_NAMES_FORMATS_KEY,
    METRICS_PARTITION_SERIES_KEY,
]))

TASK_CONFIG_DEF: ConfigDef = CONFIG_DEF.merge(ConfigDef([
    ConfigKey(TASK_CONSUMER_GROUPS, Type.LIST, None, Importance.LOW,
              "Consumer groups assigned to this task to replicate (task-only).", group=_GROUP),
    ConfigKey(TASK_INDEX, Type.INT, None, Importance.LOW,
              "The index of the task (task-only).", at_least(0), _GROUP),
]))


class MirrorCheckpointConfig(OffsetSyncsLocationMixin):
    """Typed view of a ``MirrorCheckpointConnector`` config."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self, props: Mapping[str, str], config_def: ConfigDef | None = None) -> None:
        super().__init__(props, config_def or type(self).CONFIG_DEF)
        # Read from the originals like Java's TopicFilter, but still validated as regex lists.
        self._topics: list[str] = parse_value(TOPICS, Type.LIST, self._originals.get(TOPICS, TOPICS_DEFAULT))
        regex_list(TOPICS, self._topics)
        self._topics_exclude: list[str] = parse_value(
            TOPICS_EXCLUDE, Type.LIST, self._originals.get(TOPICS_EXCLUDE, TOPICS_EXCLUDE_DEFAULT))
        regex_list(TOPICS_EXCLUDE, self._topics_exclude)

    groups = TextList(GROUPS)
    groups_exclude = TextList(GROUPS_EXCLUDE)
    group_filter_class = Text(GROUP_FILTER_CLASS)
    topic_filter_class = Text(TOPIC_FILTER_CLASS)
    consumer_poll_timeout_ms = Integer(CONSUMER_POLL_TIMEOUT_MILLIS)
    #: Seconds between group refreshes; ``-1`` when ``refresh.groups.enabled=false``.
    refresh_groups_interval_s = Period(REFRESH_GROUPS_ENABLED, REFRESH_GROUPS_INTERVAL_SECONDS)
    emit_checkpoints_enabled = Flag(EMIT_CHECKPOINTS_ENABLED)
    #: Seconds between checkpoint emissions; ``-1`` when ``emit.checkpoints.enabled=false``.
    emit_checkpoints_interval_s = Period(EMIT_CHECKPOINTS_ENABLED, EMIT_CHECKPOINTS_INTERVAL_SECONDS)
    sync_group_offsets_enabled = Flag(SYNC_GROUP_OFFSETS_ENABLED)
    #: Seconds between group-offset syncs; ``-1`` when ``sync.group.offsets.enabled=false``.
    sync_group_offsets_interval_s = Period(SYNC_GROUP_OFFSETS_ENABLED, SYNC_GROUP_OFFSETS_INTERVAL_SECONDS)
    checkpoints_topic_replication_factor = Integer(CHECKPOINTS_TOPIC_REPLICATION_FACTOR)

    @property
    def topics(self) -> list[str]:
        return list(self._topics)

    @property
    def topics_exclude(self) -> list[str]:
        return list(self._topics_exclude)

    # ---- clients (one per role: source/target consumer, producer, admin) ----

    def source_admin_config(self, role: str | None = "checkpoint-source-admin") -> dict[str, str]:
        return self.client_config("source", "admin", role)

    def target_admin_config(self, role: str | None = "checkpoint-target-admin") -> dict[str, str]:
        return self.client_config("target", "admin", role)

    def target_consumer_config(self, role: str | None = "checkpoints-target-consumer") -> dict[str, str]:
        return self.client_config("target", "consumer", role)

    def offset_syncs_consumer_config(self) -> dict[str, str]:
        """Consumer of the offset-syncs topic, on the cluster named by ``offset-syncs.topic.location``."""
        if self.offset_syncs_topic_location == "source":
            return self.source_consumer_config("offset-syncs-source-consumer")
        return self.target_consumer_config("offset-syncs-target-consumer")


class MirrorCheckpointTaskConfig(MirrorCheckpointConfig):
    """Typed view of a ``MirrorCheckpointTask`` config: the connector config plus the task-only keys."""

    CONFIG_DEF = TASK_CONFIG_DEF

    task_consumer_groups = TextList(TASK_CONSUMER_GROUPS)
