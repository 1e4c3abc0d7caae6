"""``MirrorSourceConnector`` / ``MirrorSourceTask`` configuration (Kafka ``MirrorSourceConfig``).

Defaults are Java MM2's, so an unmodified ``mm2.properties`` replicates the same topics with the same
settings. The filter lists are regexes matched against the *whole* name by the filters; here they are
only checked to compile, so a typo fails at startup rather than silently matching nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type, at_least, one_of, regex_list
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
from mirror.config.settings import Choice, Flag, Integer, Period, Text, TextList

TOPICS = "topics"
TOPICS_DEFAULT = ".*"
TOPICS_EXCLUDE = "topics.exclude"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
CONFIG_PROPERTIES_EXCLUDE = "config.properties.exclude"
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, unclean\.leader\.election\.enable, "
    r"min\.insync\.replicas"
)
#: Read by ``DefaultConfigPropertyFilter`` from the originals; deliberately not in CONFIG_DEF,
#: so that, as in Java, only the flow-level ``A->B.use.defaults.from`` reaches the connector.
USE_DEFAULTS_FROM = "use.defaults.from"
USE_DEFAULTS_FROM_DEFAULT = "target"
CONFIG_PROPERTY_FILTER_CLASS = "config.property.filter.class"
CONFIG_PROPERTY_FILTER_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"
CONSUMER_POLL_TIMEOUT_MILLIS = "consumer.poll.timeout.ms"
CONSUMER_POLL_TIMEOUT_MILLIS_DEFAULT = 1000
REFRESH_TOPICS_ENABLED = "refresh.topics.enabled"
REFRESH_TOPICS_INTERVAL_SECONDS = "refresh.topics.interval.seconds"
REFRESH_TOPICS_INTERVAL_SECONDS_DEFAULT = 600
SYNC_TOPIC_CONFIGS_ENABLED = "sync.topic.configs.enabled"
SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS = "sync.topic.configs.interval.seconds"
SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS_DEFAULT = 600
SYNC_TOPIC_ACLS_ENABLED = "sync.topic.acls.enabled"
SYNC_TOPIC_ACLS_INTERVAL_SECONDS = "sync.topic.acls.interval.seconds"
SYNC_TOPIC_ACLS_INTERVAL_SECONDS_DEFAULT = 600
REPLICATION_FACTOR = "replication.factor"
REPLICATION_FACTOR_DEFAULT = 2
OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR = "offset-syncs.topic.replication.factor"
OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR_DEFAULT = 3
OFFSET_LAG_MAX = "offset.lag.max"
OFFSET_LAG_MAX_DEFAULT = 100
EMIT_OFFSET_SYNCS_ENABLED = "emit.offset-syncs.enabled"
EMIT_OFFSET_MAP_ENABLED = "emit.offset-map.enabled"
HEARTBEATS_REPLICATION_ENABLED = "heartbeats.replication.enabled"
REPLICATION_LOSS_POLICY = "replication.loss.policy"
REPLICATION_LOSS_POLICY_DEFAULT = "warn"
TASK_ASSIGNMENT = "task.assignment"
TASK_ASSIGNMENT_ROUND_ROBIN = "round-robin"
TASK_ASSIGNMENT_BY_TOPIC = "by-topic"

# Task-only keys, added by the connector to each task config.
TASK_TOPIC_PARTITIONS = "task.assigned.partitions"
TASK_INDEX = "task.index"

_GROUP = "Mirror Source"

CONFIG_DEF: ConfigDef = BASE_CONNECTOR_CONFIG_DEF.merge(ConfigDef([
    ConfigKey(TOPICS, Type.LIST, TOPICS_DEFAULT, Importance.HIGH,
              "Topics to replicate. Supports comma-separated topic names and regexes.", regex_list, _GROUP),
    ConfigKey(TOPICS_EXCLUDE, Type.LIST, TOPICS_EXCLUDE_DEFAULT, Importance.HIGH,
              "List of topics and/or regexes that should not be replicated.", regex_list, _GROUP),
    ConfigKey(CONFIG_PROPERTIES_EXCLUDE, Type.LIST, CONFIG_PROPERTIES_EXCLUDE_DEFAULT, Importance.HIGH,
              "Topic config properties that should not be replicated. Supports comma-separated property "
              "names and regexes.", regex_list, _GROUP),
    TOPIC_FILTER_CLASS_KEY,
    ConfigKey(CONFIG_PROPERTY_FILTER_CLASS, Type.CLASS, CONFIG_PROPERTY_FILTER_CLASS_DEFAULT, Importance.LOW,
              "ConfigPropertyFilter to use. Selects topic config properties to replicate.", group=_GROUP),
    ConfigKey(CONSUMER_POLL_TIMEOUT_MILLIS, Type.LONG, CONSUMER_POLL_TIMEOUT_MILLIS_DEFAULT, Importance.LOW,
              "Timeout when polling source cluster.", at_least(0), _GROUP),
    ConfigKey(REFRESH_TOPICS_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to periodically check for new topics and partitions.", group=_GROUP),
    ConfigKey(REFRESH_TOPICS_INTERVAL_SECONDS, Type.LONG, REFRESH_TOPICS_INTERVAL_SECONDS_DEFAULT,
              Importance.LOW, "Frequency of topic refresh.", at_least(0), _GROUP),
    ConfigKey(SYNC_TOPIC_CONFIGS_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to periodically configure remote topics to match their corresponding upstream topics.",
              group=_GROUP),
    ConfigKey(SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS, Type.LONG, SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS_DEFAULT,
              Importance.LOW, "Frequency of topic config sync.", at_least(0), _GROUP),
    ConfigKey(SYNC_TOPIC_ACLS_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to periodically configure remote topic ACLs to match their upstream topics.",
              group=_GROUP),
    ConfigKey(SYNC_TOPIC_ACLS_INTERVAL_SECONDS, Type.LONG, SYNC_TOPIC_ACLS_INTERVAL_SECONDS_DEFAULT,
              Importance.LOW, "Frequency of topic ACL sync.", at_least(0), _GROUP),
    ConfigKey(REPLICATION_FACTOR, Type.INT, REPLICATION_FACTOR_DEFAULT, Importance.LOW,
              "Replication factor for newly created remote topics.", replication_factor, _GROUP),
    ConfigKey(OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR, Type.INT, OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR_DEFAULT,
              Importance.LOW, "Replication factor for the offset-syncs topic.", replication_factor, _GROUP),
    OFFSET_SYNCS_TOPIC_LOCATION_KEY,
    METRIC_NAMES_FORMATS_KEY,
    METRICS_PARTITION_SERIES_KEY,
    ConfigKey(OFFSET_LAG_MAX, Type.LONG, OFFSET_LAG_MAX_DEFAULT, Importance.LOW,
              "How out-of-sync a remote partition can be before it is resynced.", at_least(0), _GROUP),
    ConfigKey(EMIT_OFFSET_SYNCS_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to store the new offset of the replicated records in the offset-syncs topic.",
              group=_GROUP),
    ConfigKey(EMIT_OFFSET_MAP_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to write the exact offset map (mm2-offset-map.<source>.internal on the target): runs of "
              "(upstream start, downstream start, count) that make checkpoints and failover translation exact "
              "at any consumer lag. Not in Apache MM2; the offset syncs are still written, as Apache MM2 writes "
              "them. The topic uses offset-syncs.topic.replication.factor. See docs/failover.md.", group=_GROUP),
    ConfigKey(HEARTBEATS_REPLICATION_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to replicate the heartbeats topics even when the topic filter does not include them.",
              group=_GROUP),
    ConfigKey(REPLICATION_LOSS_POLICY, Type.STRING, REPLICATION_LOSS_POLICY_DEFAULT, Importance.MEDIUM,
              "What a task does when it finds records lost before they were replicated: source records "
              "deleted first (retention, DeleteRecords), a source topic re-created below the replicated "
              "offset, or a remote partition truncated or re-created on the target. 'warn': log the loss "
              "once with its count, count it in mirror_source_records_lost_total and go on from the source "
              "log start (Apache MM2 goes on silently). 'fail': the task fails with the loss in its trace, "
              "nothing after it is replicated until it is restarted. Not in Apache MM2.",
              one_of("warn", "fail"), _GROUP),
    ConfigKey(TASK_ASSIGNMENT, Type.STRING, TASK_ASSIGNMENT_ROUND_ROBIN, Importance.LOW,
              "How the source partitions are split into tasks. 'round-robin': MM2's, partition i of the "
              "connector's list to task i % tasks; with topics of as many partitions as tasks, every task gets "
              "one partition of every topic, and each task's consumer and producer hold librdkafka state for "
              "every partition of every topic. "
              "'by-topic': each task a contiguous run of the partitions grouped by topic, sizes within one "
              "of each other, so a task knows 1/tasks of the topics. A Java MM2 node computes round-robin: "
              "in a fleet with Java nodes, each move of the connector between a Java node and ours then "
              "rewrites the task configs (one task restart). Not in Apache MM2. See docs/performance.md.",
              one_of(TASK_ASSIGNMENT_ROUND_ROBIN, TASK_ASSIGNMENT_BY_TOPIC), _GROUP),
]))

TASK_CONFIG_DEF: ConfigDef = CONFIG_DEF.merge(ConfigDef([
    ConfigKey(TASK_TOPIC_PARTITIONS, Type.LIST, None, Importance.LOW,
              "Topic-partitions assigned to this task to replicate (task-only).", group=_GROUP),
    ConfigKey(TASK_INDEX, Type.INT, None, Importance.LOW,
              "The index of the task (task-only).", at_least(0), _GROUP),
]))


def encode_topic_partition(topic: str, partition: int) -> str:
    """``topic-partition``, as Java's ``TopicPartition.toString``."""
    return f"{topic}-{partition}"


def decode_topic_partition(encoded: str) -> tuple[str, int]:
    """Inverse of :func:`encode_topic_partition`; the partition follows the *last* dash."""
    topic, _, partition = encoded.rpartition("-")
    return topic, int(partition)


class MirrorSourceConfig(OffsetSyncsLocationMixin):
    """Typed view of a ``MirrorSourceConnector`` config."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self, props: Mapping[str, str], config_def: ConfigDef | None = None) -> None:
        super().__init__(props, config_def or type(self).CONFIG_DEF)

    topics = TextList(TOPICS)
    topics_exclude = TextList(TOPICS_EXCLUDE)
    config_properties_exclude = TextList(CONFIG_PROPERTIES_EXCLUDE)
    topic_filter_class = Text(TOPIC_FILTER_CLASS)
    config_property_filter_class = Text(CONFIG_PROPERTY_FILTER_CLASS)
    consumer_poll_timeout_ms = Integer(CONSUMER_POLL_TIMEOUT_MILLIS)
    #: Seconds between topic refreshes; ``-1`` when ``refresh.topics.enabled=false``.
    refresh_topics_interval_s = Period(REFRESH_TOPICS_ENABLED, REFRESH_TOPICS_INTERVAL_SECONDS)
    #: Seconds between topic-config syncs; ``-1`` when ``sync.topic.configs.enabled=false``.
    sync_topic_configs_interval_s = Period(SYNC_TOPIC_CONFIGS_ENABLED, SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS)
    #: Seconds between ACL syncs; ``-1`` when ``sync.topic.acls.enabled=false``.
    sync_topic_acls_interval_s = Period(SYNC_TOPIC_ACLS_ENABLED, SYNC_TOPIC_ACLS_INTERVAL_SECONDS)
    sync_topic_configs_enabled = Flag(SYNC_TOPIC_CONFIGS_ENABLED)
    sync_topic_acls_enabled = Flag(SYNC_TOPIC_ACLS_ENABLED)
    replication_factor = Integer(REPLICATION_FACTOR)
    offset_syncs_topic_replication_factor = Integer(OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR)
    offset_lag_max = Integer(OFFSET_LAG_MAX)
    emit_offset_syncs_enabled = Flag(EMIT_OFFSET_SYNCS_ENABLED)
    emit_offset_map_enabled = Flag(EMIT_OFFSET_MAP_ENABLED)
    heartbeats_replication_enabled = Flag(HEARTBEATS_REPLICATION_ENABLED)
    replication_loss_policy = Choice(REPLICATION_LOSS_POLICY)
    task_assignment = Choice(TASK_ASSIGNMENT)

    @property
    def use_defaults_from(self) -> str:
        return self._originals.get(USE_DEFAULTS_FROM, USE_DEFAULTS_FROM_DEFAULT).strip().lower()

    # ---- clients (one per role: source/target consumer, producer, admin) ----

    def source_admin_config(self, role: str | None = "replication-source-admin") -> dict[str, str]:
        return self.client_config("source", "admin", role)

    def target_admin_config(self, role: str | None = "replication-target-admin") -> dict[str, str]:
        return self.client_config("target", "admin", role)

    def source_consumer_config(self, role: str | None = "replication-consumer") -> dict[str, str]:
        return self.client_config("source", "consumer", role)

    def offset_syncs_producer_config(self) -> dict[str, str]:
        """Producer of the offset-syncs topic, on the cluster named by ``offset-syncs.topic.location``."""
        if self.offset_syncs_topic_location == "source":
            return self.source_producer_config("offset-syncs-source-producer")
        return self.target_producer_config("offset-syncs-target-producer")


    def offset_map_producer_config(self) -> dict[str, str]:
        """Producer of the offset-map topic, which always lives on the target."""
        return self.target_producer_config("offset-map-target-producer")


class MirrorSourceTaskConfig(MirrorSourceConfig):
    """Typed view of a ``MirrorSourceTask`` config: the connector config plus the task-only keys."""

    CONFIG_DEF = TASK_CONFIG_DEF

    @property
    def task_topic_partitions(self) -> list[tuple[str, int]]:
        return [decode_topic_partition(tp) for tp in self.get(TASK_TOPIC_PARTITIONS) or []]
