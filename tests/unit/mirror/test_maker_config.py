"""MirrorMakerConfig: the four derivations, their precedence, and which herders exist."""

from __future__ import annotations

import pytest

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.properties import parse_properties
from mirror.config.mirror_maker_config import (
    CHECKPOINT_CONNECTOR_CLASS,
    HEARTBEAT_CONNECTOR_CLASS,
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    parse_boolean,
)
from mirror.config.source import MirrorSourceConfig
from mirror.maker.config_check import check_mm2_properties

AB = SourceAndTarget("a", "b")


def make(text: str) -> MirrorMakerConfig:
    return MirrorMakerConfig(parse_properties(text, "mm2.properties"))


def checked(config: MirrorMakerConfig, clusters: list[str] | None = None, *,
            resolve_providers: bool = True) -> list[SourceAndTarget]:
    """The driver's check of the file's structure (no herders); its refusals raise, the herder pairs return."""
    report = check_mm2_properties(config, clusters, resolve_providers=resolve_providers, herders=False)
    report.raise_if_refused()
    return report.pairs


def pairs(config: MirrorMakerConfig) -> set[str]:
    return {str(p) for p in config.cluster_pairs()}


# ---- pairs (Java's MirrorMakerConfigTest) ----


def test_three_clusters_and_nothing_else_give_six_pairs() -> None:
    assert pairs(make("clusters = a, b, c")) == {"a->b", "a->c", "b->a", "b->c", "c->a", "c->b"}


def test_global_heartbeats_off_and_no_enabled_flow_give_no_pairs() -> None:
    assert pairs(make("clusters = a, b, c\nemit.heartbeats.enabled = false")) == set()


def test_heartbeats_off_for_two_flows_leave_four_pairs() -> None:
    config = make("clusters = a, b, c\n"
                  "a->b.emit.heartbeats.enabled = false\na->c.emit.heartbeats.enabled = false")
    assert pairs(config) == {"b->a", "b->c", "c->a", "c->b"}


def test_enabled_flow_survives_global_heartbeats_off() -> None:
    config = make("clusters = a, b\nemit.heartbeats.enabled = false\na->b.enabled = true")
    assert pairs(config) == {"a->b"}


def test_flow_level_heartbeats_override_global() -> None:
    config = make("clusters = a, b\nemit.heartbeats.enabled = false\nb->a.emit.heartbeats.enabled = TRUE")
    assert pairs(config) == {"b->a"}


def test_enabled_with_trailing_space_is_false_for_pairs_as_in_java() -> None:
    """Java's Boolean.parseBoolean does not trim, and properties files keep trailing spaces."""
    config = make("clusters = a, b\nemit.heartbeats.enabled = false\na->b.enabled = true \n")
    assert config.raw_properties()["a->b.enabled"] == "true "
    assert pairs(config) == set()
    assert parse_boolean("TRUE") and not parse_boolean("true ") and not parse_boolean(None)


def test_clusters_option_keeps_pairs_whose_target_is_listed() -> None:
    config = make("clusters = a, b, c")
    assert {str(p) for p in config.herder_pairs(["b"])} == {"a->b", "c->b"}
    assert len(config.herder_pairs(None)) == 6
    assert len(config.herder_pairs([])) == 6


def test_clusters_option_with_undeclared_alias_is_an_error() -> None:
    expected = r"--clusters names 'x', which is not declared in mm2\.properties:1 \(clusters = a, b\)"
    with pytest.raises(ConfigError, match=expected):
        make("clusters = a, b").herder_pairs(["x"])


def test_no_flows_left_is_an_error() -> None:
    with pytest.raises(ConfigError, match="No source->target replication flows"):
        make("clusters = a, b\nemit.heartbeats.enabled = false").herder_pairs()


def test_duplicate_aliases_are_ignored() -> None:
    assert make("clusters = a, b, a").clusters == ["a", "b"]


def test_source_and_target_string_and_parse() -> None:
    assert str(AB) == "a->b"
    assert SourceAndTarget.parse(" a -> b ") == AB
    with pytest.raises(ConfigError):
        SourceAndTarget.parse("a-b")


# ---- (a) cluster_props ----


def test_cluster_props_copy_connection_keys_to_clients_with_top_level_fallback() -> None:
    config = make("""clusters = a, b
a.bootstrap.servers = a:9092
a.consumer.bootstrap.servers = a-consumer:9092
a.foo = bar
security.protocol = SSL
bootstrap.servers = fallback:9092
sasl.mechanism = PLAIN
a.sasl.mechanism = SCRAM-SHA-256
""")
    props = config.cluster_props("a")
    assert props["bootstrap.servers"] == "a:9092"
    assert props["consumer.bootstrap.servers"] == "a-consumer:9092"  # explicit client key wins
    assert props["producer.bootstrap.servers"] == "a:9092"
    assert props["admin.bootstrap.servers"] == "a:9092"
    assert props["foo"] == "bar"  # non-client keys are kept but not copied
    assert "consumer.foo" not in props
    assert props["security.protocol"] == "SSL"  # top-level fallback
    assert props["admin.security.protocol"] == "SSL"
    assert props["sasl.mechanism"] == "SCRAM-SHA-256"  # cluster wins over top level
    assert props["producer.sasl.mechanism"] == "SCRAM-SHA-256"
    assert config.cluster_props("b")["bootstrap.servers"] == "fallback:9092"


# ---- (b) worker_config ----


def test_worker_config_talks_to_target_and_fills_defaults() -> None:
    config = make("""clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
b.producer.compression.type = lz4
b.exactly.once.source.support = enabled
""")
    worker = config.worker_config(AB)
    assert worker["bootstrap.servers"] == "b:9092"
    assert worker["producer.compression.type"] == "lz4"
    assert worker["exactly.once.source.support"] == "enabled"
    assert worker["client.id"] == "a->b"
    assert worker["group.id"] == "a-mm2"
    assert worker["offset.storage.topic"] == "mm2-offsets.a.internal"
    assert worker["status.storage.topic"] == "mm2-status.a.internal"
    assert worker["config.storage.topic"] == "mm2-configs.a.internal"
    for converter in ("key.converter", "value.converter", "header.converter"):
        assert worker[converter] == "org.apache.kafka.connect.converters.ByteArrayConverter"


def test_worker_prefixed_top_level_keys_override_target_cluster_keys() -> None:
    config = make("""clusters = a, b
b.bootstrap.servers = b:9092
b.offset.storage.replication.factor = 1
offset.storage.replication.factor = 3
tasks.max = 4
worker.sync.timeout.ms = 100
replication.policy.separator = _
topics = foo
b.group.id = custom
""")
    worker = config.worker_config(AB)
    assert worker["offset.storage.replication.factor"] == "3"  # top level wins (putAll)
    assert worker["tasks.max"] == "4"  # "task" prefix
    assert worker["worker.sync.timeout.ms"] == "100"
    assert worker["replication.policy.separator"] == "_"
    assert "topics" not in worker
    assert worker["group.id"] == "custom"  # defaults only where absent


def test_worker_config_resolves_providers_and_keeps_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM2_TEST_PASSWORD", "s3cret")
    config = make("""clusters = a, b
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
b.bootstrap.servers = b:9092
b.ssl.truststore.password = ${env:MM2_TEST_PASSWORD}
""")
    worker = config.worker_config(AB)
    assert worker["ssl.truststore.password"] == "s3cret"
    assert worker["consumer.ssl.truststore.password"] == "s3cret"
    assert worker["config.providers"] == "env"
    unresolved = config.worker_config(AB, resolve_providers=False)
    assert unresolved["ssl.truststore.password"] == "${env:MM2_TEST_PASSWORD}"
    # Connector configs are resolved later by the worker, not by the driver.
    connector = config.connector_base_config(AB, SOURCE_CONNECTOR_CLASS)
    assert connector["target.cluster.ssl.truststore.password"] == "${env:MM2_TEST_PASSWORD}"


# ---- (c) connector_base_config ----

CONNECTOR_PROPS = """clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a.consumer.isolation.level = read_committed
b.producer.linger.ms = 7
security.protocol = PLAINTEXT
topics = foo.*
tasks.max = 2
xxx = dropped
use.defaults.from = source
replication.policy.separator = _
a->b.enabled = true
a->b.topics = bar.*
a->b.producer.override.linger.ms = 9
a->b.unknown.key = kept
"""


def test_connector_base_config_filters_prefixes_and_overlays_flow_keys() -> None:
    config = make(CONNECTOR_PROPS)
    connector = config.connector_base_config(AB, SOURCE_CONNECTOR_CLASS)
    assert connector["name"] == "MirrorSourceConnector"
    assert connector["connector.class"] == "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert connector["source.cluster.alias"] == "a"
    assert connector["target.cluster.alias"] == "b"
    assert connector["tasks.max"] == "2"
    assert connector["topics"] == "bar.*"  # flow level wins over top level
    assert connector["enabled"] == "true"
    assert connector["producer.override.linger.ms"] == "9"
    assert connector["unknown.key"] == "kept"  # the flow overlay is unfiltered
    assert "xxx" not in connector and "use.defaults.from" not in connector  # not connector keys
    assert connector["replication.policy.separator"] == "_"
    assert connector["source.cluster.bootstrap.servers"] == "a:9092"
    assert connector["source.consumer.isolation.level"] == "read_committed"
    assert connector["source.admin.bootstrap.servers"] == "a:9092"
    assert connector["target.cluster.bootstrap.servers"] == "b:9092"
    assert connector["target.producer.linger.ms"] == "7"
    assert connector["security.protocol"] == "PLAINTEXT"
    assert connector["target.cluster.security.protocol"] == "PLAINTEXT"


def test_reverse_herder_connectors_are_disabled_by_default() -> None:
    config = make(CONNECTOR_PROPS)
    reverse = SourceAndTarget("b", "a")
    for cls in (SOURCE_CONNECTOR_CLASS, CHECKPOINT_CONNECTOR_CLASS, HEARTBEAT_CONNECTOR_CLASS):
        assert config.connector_base_config(reverse, cls)["enabled"] == "false"
    heartbeat = config.connector_base_config(reverse, HEARTBEAT_CONNECTOR_CLASS)
    assert heartbeat["name"] == "MirrorHeartbeatConnector"


def test_connector_base_config_feeds_the_connector_config_precedence() -> None:
    """End to end: mm2.properties -> connector config -> MirrorSourceConfig client configs."""
    config = make(CONNECTOR_PROPS + "a->b.consumer.max.poll.records = 5\na.consumer.max.poll.records = 50\n")
    source = MirrorSourceConfig(config.connector_base_config(AB, SOURCE_CONNECTOR_CLASS))
    consumer = source.source_consumer_config()
    assert consumer["bootstrap.servers"] == "a:9092"
    assert consumer["isolation.level"] == "read_committed"
    assert consumer["max.poll.records"] == "50"  # source.consumer.* beats connector consumer.*
    assert consumer["client.id"] == "a->b|MirrorSourceConnector|replication-consumer"
    assert source.topics == ["bar.*"]


def test_top_level_enabled_true_enables_every_connector_as_in_java() -> None:
    config = make("clusters = a, b\nenabled = true")
    assert config.connector_base_config(AB, SOURCE_CONNECTOR_CLASS)["enabled"] == "true"


# ---- (d) client_config ----


def test_client_config_has_all_top_level_keys_plus_cluster_props(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM2_TEST_JAAS", "secret-jaas")
    config = make("""clusters = a, b
config.providers = env
config.providers.env.class = EnvVarConfigProvider
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
a.bootstrap.servers = a:9092
a.sasl.jaas.config = ${env:MM2_TEST_JAAS}
""")
    client = config.client_config("a")
    assert client["replication.policy.class"] == "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    assert client["bootstrap.servers"] == "a:9092"
    assert client["sasl.jaas.config"] == "secret-jaas"
    assert client["admin.sasl.jaas.config"] == "secret-jaas"


# ---- driver keys ----


def test_driver_keys_are_parsed() -> None:
    config = make("clusters = a, b\ndedicated.mode.enable.internal.rest = TRUE")
    assert config.enable_internal_rest is True
    assert config.get("listeners") == ["http://:8083"]


def test_invalid_driver_key_names_file_and_line() -> None:
    with pytest.raises(ConfigError,
                       match=r"^mm2.properties:2: .*dedicated.mode.enable.internal.rest.*true or false"):
        make("clusters = a, b\ndedicated.mode.enable.internal.rest = yes")


def test_validate_returns_pairs_of_a_good_config() -> None:
    config = make(CONNECTOR_PROPS)
    assert [str(p) for p in checked(config, ["b"])] == ["a->b"]


def test_validate_reports_flow_level_origin_of_a_bad_value() -> None:
    config = make(CONNECTOR_PROPS + "a->b.offset.lag.max = lots\n")
    with pytest.raises(ConfigError) as err:
        checked(config)
    assert str(err.value).startswith(
        "mm2.properties:16: Invalid value 'lots' for configuration a->b.offset.lag.max")


def test_validate_reports_cluster_level_origin_of_a_bad_client_key() -> None:
    config = make(CONNECTOR_PROPS + "b.security.protocol = TLS\n")
    with pytest.raises(ConfigError, match=r"^mm2.properties:16: .*b.security.protocol"):
        checked(config)
