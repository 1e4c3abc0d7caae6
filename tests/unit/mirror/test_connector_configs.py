"""The three connector configs: defaults, validation, interval flags and client-config precedence."""

from __future__ import annotations

import pytest

from connect_runtime.api.connector_config import TASKS_MAX
from connect_runtime.api.errors import ConfigError
from mirror.config import checkpoint as ckpt
from mirror.config import heartbeat as hb
from mirror.config import source as src
from mirror.config.checkpoint import MirrorCheckpointConfig, MirrorCheckpointTaskConfig
from mirror.config.client_keys import CLIENT_CONFIG_NAMES, CLIENT_SECURITY_CONFIG_DEF
from mirror.config.connector_base import ADMIN_TASK_TIMEOUT_MILLIS
from mirror.config.heartbeat import MirrorHeartbeatConfig
from mirror.config.source import MirrorSourceConfig, MirrorSourceTaskConfig, decode_topic_partition


def props(**extra: str) -> dict[str, str]:
    base = {
        "name": "MirrorSourceConnector",
        "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        "source.cluster.alias": "A",
        "target.cluster.alias": "B",
        "source.cluster.bootstrap.servers": "a:9092",
        "target.cluster.bootstrap.servers": "b:9092",
    }
    base.update({k.replace("__", "."): v for k, v in extra.items()})
    return base


def test_source_defaults_match_java_mm2() -> None:
    config = MirrorSourceConfig(props())
    assert config.topics == [".*"]
    assert config.topics_exclude == [r".*[\-\.]internal", r".*\.replica", "__.*"]
    assert "min\\.insync\\.replicas" in config.config_properties_exclude
    assert config.offset_lag_max == 100
    assert config.refresh_topics_interval_s == 600
    assert config.replication_factor == 2
    assert config.offset_syncs_topic_replication_factor == 3
    assert config.offset_syncs_topic_location == "source"
    assert config.replication_policy_class == "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
    assert config.replication_policy_separator == "."
    assert config.emit_offset_syncs_enabled and config.heartbeats_replication_enabled
    assert config.use_defaults_from == "target"
    assert config.get(TASKS_MAX) == 1
    assert config.enabled is True  # the ConfigDef default; the driver injects false


def test_disabled_interval_flags_become_negative_intervals() -> None:
    config = MirrorSourceConfig(props(**{"refresh.topics.enabled": "false",
                                         "sync.topic.acls.enabled": "FALSE"}))
    assert config.refresh_topics_interval_s == -1
    assert config.sync_topic_acls_interval_s == -1
    assert config.sync_topic_configs_interval_s == 600
    checkpoint = MirrorCheckpointConfig(props(**{"emit.checkpoints.enabled": "false"}))
    assert checkpoint.emit_checkpoints_interval_s == -1
    assert checkpoint.sync_group_offsets_interval_s == -1  # sync.group.offsets.enabled defaults to false
    heartbeat = MirrorHeartbeatConfig(props(**{"emit.heartbeats.enabled": "false"}))
    assert heartbeat.emit_heartbeats_interval_s == -1


def test_source_alias_is_required() -> None:
    raw = props()
    del raw["source.cluster.alias"]
    with pytest.raises(ConfigError) as err:
        MirrorSourceConfig(raw)
    assert err.value.key == "source.cluster.alias"


@pytest.mark.parametrize(("key", "value"), [
    (src.TOPICS, "ok, bad("),
    (src.TOPICS_EXCLUDE, "[oops"),
    (src.CONFIG_PROPERTIES_EXCLUDE, "*x"),
])
def test_source_regex_lists_must_compile(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match="not a valid regular expression") as err:
        MirrorSourceConfig({**props(), key: value})
    assert err.value.key == key


@pytest.mark.parametrize(("key", "value"), [(ckpt.GROUPS, "a, (b"), (ckpt.GROUPS_EXCLUDE, "+x")])
def test_checkpoint_group_regex_lists_must_compile(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        MirrorCheckpointConfig({**props(), key: value})


def test_checkpoint_validates_topics_read_from_originals() -> None:
    """Java's TopicFilter reads topics from the originals; a bad regex there must still be reported."""
    assert MirrorCheckpointConfig({**props(), "topics": "foo.*, bar"}).topics == ["foo.*", "bar"]
    with pytest.raises(ConfigError, match="topics"):
        MirrorCheckpointConfig({**props(), "topics": "foo("})


@pytest.mark.parametrize(("key", "value"), [
    (src.OFFSET_LAG_MAX, "1.5"),
    (src.REFRESH_TOPICS_INTERVAL_SECONDS, "10m"),
    (src.CONSUMER_POLL_TIMEOUT_MILLIS, ""),
    (ADMIN_TASK_TIMEOUT_MILLIS, "sixty"),
])
def test_source_intervals_reject_non_integers(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match="expected an integer") as err:
        MirrorSourceConfig({**props(), key: value})
    assert err.value.key == key


@pytest.mark.parametrize(("config_class", "key"), [
    (MirrorCheckpointConfig, ckpt.EMIT_CHECKPOINTS_INTERVAL_SECONDS),
    (MirrorCheckpointConfig, ckpt.SYNC_GROUP_OFFSETS_INTERVAL_SECONDS),
    (MirrorCheckpointConfig, ckpt.REFRESH_GROUPS_INTERVAL_SECONDS),
    (MirrorHeartbeatConfig, hb.EMIT_HEARTBEATS_INTERVAL_SECONDS),
])
def test_checkpoint_and_heartbeat_intervals_reject_non_integers(config_class: type, key: str) -> None:
    with pytest.raises(ConfigError, match="expected an integer"):
        config_class({**props(), key: "0.5"})


def test_intervals_reject_negative_values() -> None:
    with pytest.raises(ConfigError, match="at least 0"):
        MirrorSourceConfig({**props(), src.OFFSET_LAG_MAX: "-1"})


def test_offset_syncs_topic_location_accepts_only_source_or_target() -> None:
    config = MirrorSourceConfig(props(**{"offset-syncs.topic.location": "TARGET"}))
    assert config.offset_syncs_topic_location == "target"
    with pytest.raises(ConfigError, match="expected one of source, target"):
        MirrorSourceConfig(props(**{"offset-syncs.topic.location": "middle"}))


def test_security_protocol_is_validated() -> None:
    with pytest.raises(ConfigError, match=r"security\.protocol"):
        MirrorHeartbeatConfig(props(**{"security.protocol": "TLS"}))


def test_source_consumer_precedence_and_forced_settings() -> None:
    """Lowest first: source.cluster.* (connection keys only), consumer.*, source.consumer.*."""
    config = MirrorSourceConfig(props(**{
        "source.cluster.security.protocol": "SSL",
        "source.cluster.isolation.level": "read_uncommitted",  # not a connection key: dropped
        "consumer.fetch.min.bytes": "10",
        "consumer.max.poll.records": "5",
        "source.consumer.max.poll.records": "50",
        "source.consumer.enable.auto.commit": "true",  # forced off
        "consumer.auto.offset.reset": "latest",  # kept: only defaulted when absent
    }))
    consumer = config.source_consumer_config()
    assert consumer == {
        "bootstrap.servers": "a:9092",
        "security.protocol": "SSL",
        "fetch.min.bytes": "10",
        "max.poll.records": "50",
        "enable.auto.commit": "false",
        "auto.offset.reset": "latest",
        "client.id": "A->B|MirrorSourceConnector|replication-consumer",
    }


def test_client_ids_follow_kafka_14838_roles() -> None:
    config = MirrorSourceConfig(props())
    assert config.source_admin_config()["client.id"] == "A->B|MirrorSourceConnector|replication-source-admin"
    assert config.target_admin_config()["client.id"] == "A->B|MirrorSourceConnector|replication-target-admin"
    assert config.offset_syncs_producer_config()["client.id"] == \
        "A->B|MirrorSourceConnector|offset-syncs-source-producer"
    assert config.offset_syncs_topic_admin_config()["client.id"].endswith("|offset-syncs-source-admin")
    checkpoint = MirrorCheckpointConfig(props(name="MirrorCheckpointConnector"))
    assert checkpoint.target_consumer_config()["client.id"] == \
        "A->B|MirrorCheckpointConnector|checkpoints-target-consumer"
    assert checkpoint.source_admin_config()["client.id"].endswith("|checkpoint-source-admin")
    assert checkpoint.target_admin_config()["client.id"].endswith("|checkpoint-target-admin")
    assert checkpoint.offset_syncs_consumer_config()["client.id"].endswith("|offset-syncs-source-consumer")
    heartbeat = MirrorHeartbeatConfig(props(name="MirrorHeartbeatConnector"))
    assert heartbeat.target_admin_config()["client.id"] == \
        "A->B|MirrorHeartbeatConnector|heartbeats-target-admin"


def test_user_client_id_is_prefixed_and_task_index_appended() -> None:
    config = MirrorSourceTaskConfig(props(**{"source.consumer.client.id": "ops", "task.index": "3",
                                             "task.assigned.partitions": "t-0,my-topic-12"}))
    assert config.source_consumer_config()["client.id"] == \
        "ops|A->B|MirrorSourceConnector-3|replication-consumer"
    assert config.task_topic_partitions == [("t", 0), ("my-topic", 12)]


def test_offset_syncs_clients_follow_location_target() -> None:
    config = MirrorSourceConfig(props(**{"offset-syncs.topic.location": "target", "producer.linger.ms": "5",
                                         "target.producer.acks": "1"}))
    producer = config.offset_syncs_producer_config()
    assert producer["bootstrap.servers"] == "b:9092"
    assert producer["linger.ms"] == "5" and producer["acks"] == "1"
    assert producer["client.id"].endswith("|offset-syncs-target-producer")
    assert config.offset_syncs_topic_cluster_alias == "B"
    checkpoint = MirrorCheckpointConfig(props(**{"offset-syncs.topic.location": "target"}))
    assert checkpoint.offset_syncs_consumer_config()["bootstrap.servers"] == "b:9092"


def test_checkpoint_task_groups() -> None:
    config = MirrorCheckpointTaskConfig(props(**{"task.assigned.groups": "g1, g2"}))
    assert config.task_consumer_groups == ["g1", "g2"]
    assert config.groups_exclude == ["console-consumer-.*", "connect-.*", "__.*"]


def test_decode_topic_partition_uses_last_dash() -> None:
    assert decode_topic_partition("a-b-c-7") == ("a-b-c", 7)


def test_client_security_keys_are_declared_with_kafka_types() -> None:
    names = CLIENT_CONFIG_NAMES
    for key in ("bootstrap.servers", "security.protocol", "ssl.truststore.location", "sasl.mechanism",
                "sasl.jaas.config", "ssl.keystore.password", "ssl.key.password"):
        assert key in names
    assert CLIENT_SECURITY_CONFIG_DEF["sasl.jaas.config"].type.value == "PASSWORD"
    assert all(CLIENT_SECURITY_CONFIG_DEF[k].type.value == "PASSWORD"
               for k in CLIENT_SECURITY_CONFIG_DEF.names() if k.endswith(".password"))


def test_connect_base_keys_are_part_of_every_connector_def() -> None:
    for definition in (src.CONFIG_DEF, ckpt.CONFIG_DEF, hb.CONFIG_DEF):
        for key in ("name", "connector.class", "tasks.max", "tasks.max.enforce", "key.converter",
                    "value.converter", "header.converter", "transforms", "predicates",
                    "config.action.reload", "errors.retry.timeout", "errors.retry.delay.max.ms",
                    "errors.tolerance", "errors.log.enable", "errors.log.include.messages",
                    "exactly.once.support", "transaction.boundary", "offsets.storage.topic", "enabled",
                    "source.cluster.alias", "replication.policy.class"):
            assert key in definition, key
    assert "topic.filter.class" not in hb.CONFIG_DEF
    assert "task.assigned.partitions" not in src.CONFIG_DEF
    assert "task.assigned.partitions" in src.TASK_CONFIG_DEF


def test_tasks_max_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        MirrorHeartbeatConfig(props(**{"tasks.max": "0"}))
