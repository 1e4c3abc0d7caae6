"""Every key a ConfigDef declares either works or is refused at start: no key is accepted and ignored.

The table below is the decision for each declared key of the worker config, the three connector
configs (Connect's keys included) and ``MirrorMakerConfig``. A key added to a ConfigDef without a
decision here fails ``test_every_declared_key_is_decided``. Each decision is then checked:

* ``Works(module, token)``: the key is read outside its definition, in ``module`` (the token is the
  constant or accessor that reads it: the inventory's "grep each key's constant", made executable);
  behaviour tests for the keys this issue implemented follow further down and in the integration tests.
* ``Refused(value)``: ``mirror config show`` / ``connect-mirror-maker`` reject a file setting the key to
  ``value`` with exit 2 and one line naming the key (and REST's validation answers 400, see
  ``test_rest_validation_refuses_unsupported_keys``).
* ``Client``: a client connection/security key, handed to every client of the cluster through the
  client factory (``connect_runtime/clients/factory.py``): each ``ssl.*`` / ``sasl.*`` key is mapped or its
  value refused, key by key, in ``connect_runtime/clients/security_keys.py``, tested in
  ``test_security_key_decisions.py``.
* ``Owned(why)``: a key whose behaviour another part of the runtime builds (REST safety, error tolerance);
  listed so that the table stays complete, with the owner named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from connect_runtime.api.config import ConfigDef
from connect_runtime.api.errors import ConfigError
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.runtime.worker_config import DISTRIBUTED_CONFIG_DEF
from mirror.config import checkpoint, heartbeat, mirror_maker_config, source
from mirror.config.client_keys import CLIENT_CONFIG_NAMES, CLIENT_SECURITY_CONFIG_DEF
from mirror.config.connector_base import forwarding_admin_class
from mirror.maker.config_check import NOTICE, check_mm2_properties

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Works:
    module: str
    token: str


@dataclass(frozen=True)
class Refused:
    value: str


@dataclass(frozen=True)
class Owned:
    why: str


CLIENT = "client"
REST = Owned("the REST server's safety settings (connect_runtime/rest): internal endpoints, CORS, response headers")

WORKER: dict[str, Works | Refused | Owned | str] = {
    "group.id": Works("connect_runtime/runtime/distributed/assembly.py", "config.group_id"),
    "bootstrap.servers": Works("connect_runtime/runtime/worker_config.py", "props[BOOTSTRAP_SERVERS]"),
    "client.id": Works("connect_runtime/runtime/worker_config.py", "self.client_id_prefix"),
    "config.storage.topic": Works("connect_runtime/runtime/distributed/assembly.py", "wc.CONFIG_TOPIC"),
    "config.storage.replication.factor": Works("connect_runtime/runtime/distributed/assembly.py", "wc.CONFIG_RF"),
    "offset.storage.topic": Works("connect_runtime/runtime/distributed/assembly.py", "wc.OFFSET_TOPIC"),
    "offset.storage.replication.factor": Works("connect_runtime/runtime/distributed/assembly.py", "wc.OFFSET_RF"),
    "offset.storage.partitions": Works("connect_runtime/runtime/distributed/assembly.py", "wc.OFFSET_PARTITIONS"),
    "status.storage.topic": Works("connect_runtime/runtime/distributed/assembly.py", "wc.STATUS_TOPIC"),
    "status.storage.replication.factor": Works("connect_runtime/runtime/distributed/assembly.py", "wc.STATUS_RF"),
    "status.storage.partitions": Works("connect_runtime/runtime/distributed/assembly.py", "wc.STATUS_PARTITIONS"),
    "offset.flush.interval.ms": Works("connect_runtime/runtime/distributed/assembly.py", "wc.OFFSET_FLUSH_INTERVAL_MS"),
    "offset.flush.timeout.ms": Works("connect_runtime/runtime/distributed/assembly.py", "wc.OFFSET_FLUSH_TIMEOUT_MS"),
    "listeners": Works("connect_runtime/cli/connect_distributed.py", "config.listeners"),
    "rest.advertised.host.name": Works("connect_runtime/runtime/worker_config.py", "config[ADVERTISED_HOST]"),
    "rest.advertised.port": Works("connect_runtime/runtime/worker_config.py", "config[ADVERTISED_PORT]"),
    "rest.advertised.listener": Works("connect_runtime/runtime/worker_config.py", "config[ADVERTISED_LISTENER]"),
    "rest.request.timeout.ms": Works("connect_runtime/runtime/distributed/assembly.py", "wc.REST_REQUEST_TIMEOUT_MS"),
    "scheduled.rebalance.max.delay.ms": Works("connect_runtime/runtime/coordination/kafka_membership.py",
                                              "wc.SCHEDULED_REBALANCE_MAX_DELAY_MS"),
    "scheduled.rebalance.crash.delay.ms": Works("connect_runtime/runtime/coordination/kafka_membership.py",
                                                "wc.SCHEDULED_REBALANCE_CRASH_DELAY_MS"),
    "session.timeout.ms": Works("connect_runtime/runtime/coordination/kafka_membership.py", "wc.SESSION_TIMEOUT_MS"),
    "heartbeat.interval.ms": Works("connect_runtime/runtime/coordination/kafka_membership.py",
                                   "wc.HEARTBEAT_INTERVAL_MS"),
    "rebalance.timeout.ms": Works("connect_runtime/runtime/coordination/kafka_membership.py",
                                  "wc.REBALANCE_TIMEOUT_MS"),
    "worker.sync.timeout.ms": Works("connect_runtime/runtime/coordination/kafka_membership.py",
                                    "wc.WORKER_SYNC_TIMEOUT_MS"),
    # one value, Java's default 'sessioned', which every member speaks; 'compatible' and 'default' refused by name
    "connect.protocol": Works("connect_runtime/runtime/worker_config.py", "check_group_protocol, _GROUP"),
    "exactly.once.source.support": Works("connect_runtime/runtime/distributed/assembly.py",
                                         "config.exactly_once_source_enabled"),
    "config.providers": Works("connect_runtime/api/config_provider.py", '"config.providers"'),
    "task.shutdown.graceful.timeout.ms": Works("connect_runtime/runtime/distributed/assembly.py",
                                               "wc.TASK_SHUTDOWN_TIMEOUT_MS"),
    "inter.worker.key.ttl.ms": Works("connect_runtime/runtime/distributed/assembly.py", "wc.INTER_WORKER_KEY_TTL_MS"),
    "topic.tracking.enable": Works("connect_runtime/runtime/distributed/assembly.py", "wc.TOPIC_TRACKING_ENABLE"),
    "topic.tracking.allow.reset": Works("connect_runtime/runtime/distributed/assembly.py",
                                        "wc.TOPIC_TRACKING_ALLOW_RESET"),
    "connector.client.config.override.policy": Works("connect_runtime/runtime/distributed/assembly.py",
                                                     "config.override_policy"),
    "connector.client.config.override.allowlist": Works("connect_runtime/runtime/worker_config.py",
                                                        "self.values[CONNECTOR_CLIENT_ALLOWLIST]"),
    "plugin.allowlist": Works("connect_runtime/api/plugin_allowlist.py", "props.get(PLUGIN_ALLOWLIST"),
}

CONNECTOR: dict[str, Works | Refused | Owned | str] = {
    # Connect's keys (connect_runtime/api/connector_config.py)
    "name": Works("mirror/config/connector_base.py", "Text(NAME)"),
    "connector.class": Works("connect_runtime/runtime/worker/worker.py", "CONNECTOR_CLASS"),
    "tasks.max": Works("connect_runtime/runtime/worker/connector_validation.py", "TASKS_MAX"),
    "tasks.max.enforce": Works("connect_runtime/runtime/worker/worker_connector.py", "TASKS_MAX_ENFORCE"),
    "key.converter": Refused("org.apache.kafka.connect.json.JsonConverter"),
    "value.converter": Refused("org.apache.kafka.connect.json.JsonConverter"),
    "header.converter": Refused("org.apache.kafka.connect.storage.SimpleHeaderConverter"),
    "transforms": Works("connect_runtime/api/transforms/chain.py", "TRANSFORMS"),
    "predicates": Works("connect_runtime/api/transforms/chain.py", "PREDICATES"),
    "config.action.reload": Refused("sometimes"),  # none|restart: no provider reports a change (no TTLs)
    "errors.retry.timeout": Refused("30000"),
    "errors.retry.delay.max.ms": Refused("1000"),
    "errors.tolerance": Works("connect_runtime/runtime/task/error_policy.py", "ERRORS_TOLERANCE"),
    "errors.log.enable": Works("connect_runtime/runtime/task/error_policy.py", "ERRORS_LOG_ENABLE"),
    "errors.log.include.messages": Works("connect_runtime/runtime/task/error_policy.py", "ERRORS_LOG_INCLUDE_MESSAGES"),
    # required: refused unless the worker has exactly.once.source.support=enabled (tests below)
    "exactly.once.support": Works("connect_runtime/runtime/worker/connector_validation.py", "EXACTLY_ONCE_SUPPORT"),
    "transaction.boundary": Refused("connector"),  # poll and interval work; no MM2 connector defines boundaries
    "transaction.boundary.interval.ms": Works("connect_runtime/runtime/task/exactly_once_task.py",
                                              "TRANSACTION_BOUNDARY_INTERVAL_MS"),
    "offsets.storage.topic": Refused("my-offsets"),
    "topic.creation.groups": Refused("compacted"),
    # MM2's shared keys (mirror/config/connector_base.py)
    "enabled": Works("mirror/source/connector.py", "cfg.enabled"),
    "source.cluster.alias": Works("mirror/config/connector_base.py", "self.source_alias"),
    "target.cluster.alias": Works("mirror/config/connector_base.py", "self.target_alias"),
    "admin.timeout.ms": Works("mirror/source/connector.py", "cfg.admin_timeout_ms"),
    "replication.policy.class": Works("mirror/client/replication_policy.py", "REPLICATION_POLICY_CLASS"),
    "replication.policy.separator": Works("mirror/client/replication_policy.py", "REPLICATION_POLICY_SEPARATOR"),
    "replication.policy.internal.topic.separator.enabled": Works("mirror/client/replication_policy.py",
                                                                 "INTERNAL_TOPIC_SEPARATOR_ENABLED"),
    "forwarding.admin.class": Works("mirror/source/connector.py", "cfg.admin_class()"),
    "metric.reporters": Refused("io.confluent.metrics.reporter.ConfluentMetricsReporter"),
    # MirrorSourceConnector
    "topics": Works("mirror/filters.py", "TOPICS"),
    "topics.exclude": Works("mirror/filters.py", "TOPICS_EXCLUDE"),
    "config.properties.exclude": Works("mirror/filters.py", "CONFIG_PROPERTIES_EXCLUDE"),
    "topic.filter.class": Works("mirror/filters.py", "TOPIC_FILTER_CLASS"),
    "config.property.filter.class": Works("mirror/filters.py", "CONFIG_PROPERTY_FILTER_CLASS"),
    "consumer.poll.timeout.ms": Works("mirror/checkpoint/task.py", "cfg.consumer_poll_timeout_ms"),
    "refresh.topics.enabled": Works("mirror/source/connector.py", "refresh_topics_interval_s"),
    "refresh.topics.interval.seconds": Works("mirror/source/connector.py", "refresh_topics_interval_s"),
    "sync.topic.configs.enabled": Works("mirror/source/connector.py", "sync_topic_configs_interval_s"),
    "sync.topic.configs.interval.seconds": Works("mirror/source/connector.py", "sync_topic_configs_interval_s"),
    "sync.topic.acls.enabled": Works("mirror/source/connector.py", "sync_topic_acls_interval_s"),
    "sync.topic.acls.interval.seconds": Works("mirror/source/connector.py", "sync_topic_acls_interval_s"),
    "replication.factor": Works("mirror/source/topic_sync.py", "replication_factor"),
    "offset-syncs.topic.replication.factor": Works("mirror/source/connector.py",
                                                   "offset_syncs_topic_replication_factor"),
    "offset-syncs.topic.location": Works("mirror/config/connector_base.py", "self.offset_syncs_topic_location"),
    "offset.lag.max": Works("mirror/source/task.py", "offset_lag_max"),
    "metric.names.formats": Works("mirror/source/task.py", "cfg.metric_names_formats"),
    "metrics.partition.series": Works("mirror/source/task.py", "cfg.metrics_partition_series"),
    "emit.offset-syncs.enabled": Works("mirror/source/connector.py", "emit_offset_syncs_enabled"),
    "emit.offset-map.enabled": Works("mirror/source/task.py", "cfg.emit_offset_map_enabled"),
    "heartbeats.replication.enabled": Works("mirror/source/connector.py", "heartbeats_replication_enabled"),
    "replication.loss.policy": Works("mirror/source/task.py", "cfg.replication_loss_policy"),
    "task.assignment": Works("mirror/source/connector.py", "cfg.task_assignment"),
    "task.assigned.partitions": Works("mirror/source/connector.py", "TASK_TOPIC_PARTITIONS"),
    "task.index": Works("mirror/config/connector_base.py", '"task.index"'),
    # MirrorCheckpointConnector
    "groups": Works("mirror/filters.py", "GROUPS"),
    "groups.exclude": Works("mirror/filters.py", "GROUPS_EXCLUDE"),
    "group.filter.class": Works("mirror/filters.py", "GROUP_FILTER_CLASS"),
    "refresh.groups.enabled": Works("mirror/checkpoint/connector.py", "refresh_groups_interval_s"),
    "refresh.groups.interval.seconds": Works("mirror/checkpoint/connector.py", "refresh_groups_interval_s"),
    "emit.checkpoints.enabled": Works("mirror/checkpoint/connector.py", "EMIT_CHECKPOINTS_ENABLED"),
    "emit.checkpoints.interval.seconds": Works("mirror/checkpoint/task.py", "emit_checkpoints_interval_s"),
    "sync.group.offsets.enabled": Works("mirror/checkpoint/task.py", "sync_group_offsets_interval_s"),
    "sync.group.offsets.interval.seconds": Works("mirror/checkpoint/task.py", "sync_group_offsets_interval_s"),
    "checkpoints.topic.replication.factor": Works("mirror/checkpoint/connector.py",
                                                  "checkpoints_topic_replication_factor"),
    "task.assigned.groups": Works("mirror/checkpoint/connector.py", "TASK_CONSUMER_GROUPS"),
    # MirrorHeartbeatConnector
    "emit.heartbeats.enabled": Works("mirror/config/mirror_maker_config.py", "EMIT_HEARTBEATS_ENABLED"),
    "emit.heartbeats.interval.seconds": Works("mirror/heartbeat/task.py", '"emit.heartbeats.interval.seconds"'),
    "heartbeats.topic.replication.factor": Works("mirror/heartbeat/connector.py",
                                                 "heartbeats_topic_replication_factor"),
}

DRIVER: dict[str, Works | Refused | Owned | str] = {
    "clusters": Works("mirror/config/mirror_maker_config.py", "self._values[CLUSTERS]"),
    "config.strict": Works("mirror/maker/config_check.py", "config.get(STRICT)"),
    "dedicated.mode.enable.internal.rest": Works("mirror/maker/mirror_maker.py", "self.config.enable_internal_rest"),
    "config.providers": Works("mirror/config/mirror_maker_config.py", "build_providers(self._raw)"),
    "listeners": Works("mirror/maker/rest_wiring.py", '"listeners"'),
    "rest.advertised.host.name": Works("mirror/maker/mirror_maker.py", '"rest.advertised.host.name"'),
    "rest.advertised.port": REST,
    "rest.advertised.listener": REST,
    "response.http.headers.config": Works("connect_runtime/rest/security.py", "RESPONSE_HTTP_HEADERS_CONFIG"),
    "plugin.allowlist": Works("mirror/maker/rest_wiring.py", "operator_policy(config.raw_properties())"),
    "configs.topic.compatibility": Works("mirror/config/mirror_maker_config.py",
                                         "stores_secrets_in_clear(self.get(CONFIGS_TOPIC_COMPATIBILITY))"),
}

SECURITY = CLIENT_SECURITY_CONFIG_DEF.names()

DEFS: dict[str, tuple[ConfigDef, dict[str, Works | Refused | Owned | str]]] = {
    "worker": (DISTRIBUTED_CONFIG_DEF, WORKER),
    "MirrorSourceConnector task": (source.TASK_CONFIG_DEF, CONNECTOR),
    "MirrorCheckpointConnector task": (checkpoint.TASK_CONFIG_DEF, CONNECTOR),
    "MirrorHeartbeatConnector": (heartbeat.CONFIG_DEF, CONNECTOR),
    "MirrorMakerConfig": (mirror_maker_config.CONFIG_DEF, DRIVER),
}


#: The REST listener's security keys, the same in the worker config and mm2.properties.
REST_SECURITY: dict[str, Works | Refused | Owned | str] = {
    "rest.extension.classes": Works("connect_runtime/rest/security.py", "rc.REST_EXTENSION_CLASSES"),
    "rest.basic.auth.jaas.config": Works("connect_runtime/rest/security.py", "rc.REST_BASIC_AUTH_JAAS_CONFIG"),
    "rest.mutations.allow.unauthenticated": Works("connect_runtime/rest/security.py",
                                                  "rc.REST_MUTATIONS_ALLOW_UNAUTHENTICATED"),
    "rest.config.providers.allowlist": Works("connect_runtime/rest/security.py", "rc.REST_CONFIG_PROVIDERS_ALLOWLIST"),
    "rest.allowed.paths": Works("connect_runtime/rest/security.py", "values[path_allowlist.REST_ALLOWED_PATHS]"),
    "access.control.allow.origin": Works("connect_runtime/rest/security.py", "rc.ACCESS_CONTROL_ALLOW_ORIGIN"),
    "access.control.allow.methods": Works("connect_runtime/rest/security.py", "rc.ACCESS_CONTROL_ALLOW_METHODS"),
    "rest.reads.allow.unauthenticated": Works("connect_runtime/rest/security.py",
                                              "rc.REST_READS_ALLOW_UNAUTHENTICATED"),
    "rest.request.max.bytes": Works("connect_runtime/rest/security.py", "rc.REST_REQUEST_MAX_BYTES"),
    "rest.internal.request.max.bytes": Works("connect_runtime/rest/security.py", "rc.REST_INTERNAL_REQUEST_MAX_BYTES"),
    "secrets.keys": Works("connect_runtime/api/secrets.py", "props.get(SECRETS_KEYS)"),
}
#: ``listeners.https.ssl.*``: read by the listener's TLS set-up under its prefix.
HTTPS_LISTENER = Works("connect_runtime/rest/tls.py", "k.startswith(HTTPS_PREFIX)")


def _decision(table: dict[str, Works | Refused | Owned | str], key: str) -> Works | Refused | Owned | str | None:
    if key in SECURITY:
        return CLIENT
    if key.startswith("listeners.https.ssl."):
        return HTTPS_LISTENER
    return table.get(key, REST_SECURITY.get(key))


def _declared() -> list[tuple[str, str]]:
    return sorted((name, key) for name, (definition, _) in DEFS.items() for key in definition.names())


@pytest.mark.parametrize(("definition", "key"), _declared())
def test_every_declared_key_is_decided(definition: str, key: str) -> None:
    decision = _decision(DEFS[definition][1], key)
    assert decision is not None, (f"{definition} declares {key!r} with no decision: make it work or refuse it "
                                  "(a validator naming the key), then add it to the table in this file")
    if isinstance(decision, Works):
        text = (ROOT / decision.module).read_text()
        assert decision.token in text, f"{key}: {decision.module} no longer reads it ({decision.token!r})"
    elif decision == CLIENT:
        assert key in CLIENT_CONFIG_NAMES  # what the driver copies into every client of the cluster


def _file(tmp_path: Path, *lines: str) -> mirror_maker_config.MirrorMakerConfig:
    path = tmp_path / "mm2.properties"
    path.write_text("\n".join(["clusters = A, B", "A.bootstrap.servers = a:9092", "B.bootstrap.servers = b:9092",
                               "A->B.enabled = true", *lines]) + "\n")
    return mirror_maker_config.MirrorMakerConfig.from_file(str(path))


def checked(config: mirror_maker_config.MirrorMakerConfig) -> list[str]:
    """Every stage of the driver's check; its refusals raise (FileRefused, a ConfigError), its notices return."""
    report = check_mm2_properties(config)
    report.raise_if_refused()
    return [f.message for f in report.findings if f.severity is NOTICE]


REFUSED_CONNECTOR = sorted(k for k, d in CONNECTOR.items() if isinstance(d, Refused))


@pytest.mark.parametrize("key", REFUSED_CONNECTOR)
def test_refused_connector_key_fails_the_file_naming_it(tmp_path: Path, key: str) -> None:
    decision = CONNECTOR[key]
    assert isinstance(decision, Refused)
    config = _file(tmp_path, f"A->B.{key} = {decision.value}")
    with pytest.raises(ConfigError) as error:
        checked(config)
    message = str(error.value)
    assert f"A->B.{key}" in message and "mm2.properties:5" in message
    assert "\n" not in message


@pytest.mark.parametrize("value", ["compatible", "default"])
def test_a_java_group_protocol_we_do_not_speak_fails_the_file_naming_it(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as error:
        checked(_file(tmp_path, f"B.connect.protocol = {value}"))
    message = str(error.value)
    assert "mm2.properties:5" in message and "B.connect.protocol" in message and f"Java's '{value}'" in message
    assert "\n" not in message


def test_the_group_protocol_may_be_javas_default_or_unset(tmp_path: Path) -> None:
    checked(_file(tmp_path, "B.connect.protocol = sessioned"))
    checked(_file(tmp_path))


def test_exactly_once_required_needs_the_worker_setting_and_read_committed(tmp_path: Path) -> None:
    """Connect's pre-flight check: one line naming the key and what is missing."""
    with pytest.raises(ConfigError, match=r"mm2.properties:5: .*exactly\.once\.support.*does not have exactly-once"):
        checked(_file(tmp_path, "A->B.exactly.once.support = required",
                             "A.consumer.isolation.level = read_committed"))
    with pytest.raises(ConfigError, match=r"exactly\.once\.support.*read_committed") as error:
        checked(_file(tmp_path, "A->B.exactly.once.support = required",
                             "B.exactly.once.source.support = enabled"))
    assert "\n" not in str(error.value)
    checked(_file(tmp_path, "A->B.exactly.once.support = required", "B.exactly.once.source.support = enabled",
                         "A.consumer.isolation.level = read_committed"))


def test_exactly_once_keys_are_accepted(tmp_path: Path) -> None:
    checked(_file(tmp_path, "B.exactly.once.source.support = enabled", "A->B.transaction.boundary = interval",
                         "A->B.transaction.boundary.interval.ms = 500"))
    with pytest.raises(ConfigError, match=r"exactly\.once\.source\.support.*expected one of"):
        checked(_file(tmp_path, "B.exactly.once.source.support = sometimes"))


def test_error_tolerance_keys_are_accepted(tmp_path: Path) -> None:
    """errors.tolerance and its logging work (tests/integration/test_bulk_copy.py shows what they do)."""
    config = _file(tmp_path, "errors.tolerance = all", "errors.log.enable = true",
                   "errors.log.include.messages = true", "errors.retry.timeout = 0")
    checked(config)


def test_defaults_and_java_defaults_written_out_are_accepted(tmp_path: Path) -> None:
    """A Java file that spells out the defaults of refused features still starts."""
    config = _file(tmp_path, "key.converter = org.apache.kafka.connect.converters.ByteArrayConverter",
                   "transforms = ", "metric.reporters = org.apache.kafka.common.metrics.JmxReporter",
                   "forwarding.admin.class = org.apache.kafka.clients.admin.ForwardingAdmin",
                   "transaction.boundary = poll", "config.action.reload = none", "tasks.max.enforce = false",
                   "B.exactly.once.source.support = preparing")
    assert checked(config) == []


def test_switched_off_checkpoint_connector_is_a_notice_not_an_error(tmp_path: Path) -> None:
    """emit.checkpoints.enabled=false is how Java users turn checkpoints off: MM2 logs it and runs the rest."""
    notices = checked(_file(tmp_path, "emit.checkpoints.enabled = false"))
    assert notices and "MirrorCheckpointConnector of flow A->B will not run" in notices[0]


def test_consumer_and_admin_overrides_reach_mm2s_own_clients_on_both_clusters(tmp_path: Path) -> None:
    """``consumer.override.*`` / ``admin.override.*`` win over every other source of the key; the
    ``producer.override.*`` keys go to the runtime's task producer only, never to MM2's own producers."""
    config = _file(tmp_path, "A.consumer.fetch.min.bytes = 1", "A->B.consumer.override.fetch.min.bytes = 7",
                   "A->B.admin.override.request.timeout.ms = 1234", "A->B.producer.override.linger.ms = 99")
    props = config.connector_base_config(mirror_maker_config.SourceAndTarget("A", "B"),
                                         mirror_maker_config.SOURCE_CONNECTOR_CLASS)
    cfg = source.MirrorSourceConfig(props)
    assert cfg.source_consumer_config()["fetch.min.bytes"] == "7"
    assert cfg.target_consumer_config("x")["fetch.min.bytes"] == "7"
    assert cfg.source_admin_config()["request.timeout.ms"] == "1234"
    assert cfg.target_admin_config()["request.timeout.ms"] == "1234"
    producer = cfg.offset_syncs_producer_config()
    assert "linger.ms" not in producer and not any(k.startswith("override.") for k in producer)


def test_forwarding_admin_class_resolves_java_default_and_python_subclasses() -> None:
    assert forwarding_admin_class("org.apache.kafka.clients.admin.ForwardingAdmin") is TopicAdmin
    assert forwarding_admin_class(f"{__name__}:CountingAdmin") is CountingAdmin
    with pytest.raises(ConfigError, match=r"forwarding\.admin\.class"):
        forwarding_admin_class("com.acme.ProvisioningAdmin")
    with pytest.raises(ConfigError, match="not a subclass"):
        forwarding_admin_class("collections.OrderedDict")


class CountingAdmin(TopicAdmin):
    """A forwarding admin for the tests: counts the topics MM2 asks it to create."""

    created: list[str] = []

    def create_topic(self, name: str, *args: object, **kwargs: object) -> bool:
        CountingAdmin.created.append(name)
        return super().create_topic(name, *args, **kwargs)  # type: ignore[arg-type]


def test_transforms_set_per_flow_reach_the_connectors_and_validate(tmp_path: Path) -> None:
    """``A->B.transforms`` and its keys reach the flow's connector configs, as in Java MM2."""
    config = _file(tmp_path, "A->B.transforms = dropTombstones",
                   "A->B.transforms.dropTombstones.type = org.apache.kafka.connect.transforms.Filter",
                   "A->B.transforms.dropTombstones.predicate = isTombstone", "A->B.predicates = isTombstone",
                   "A->B.predicates.isTombstone.type = "
                   "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone")
    assert checked(config) == []
    props = config.connector_base_config(mirror_maker_config.SourceAndTarget("A", "B"),
                                         mirror_maker_config.SOURCE_CONNECTOR_CLASS)
    assert props["transforms"] == "dropTombstones"
    assert props["predicates.isTombstone.type"].endswith("RecordIsTombstone")


@pytest.mark.parametrize(("line", "expected"), [
    ("A->B.transforms.r.type = Nope",
     r"mm2.properties:6: Invalid value Nope for configuration A->B\.transforms\.r\.type: "
     r"class Nope could not be found"),
    ("A->B.transforms.r.type = org.apache.kafka.connect.transforms.InsertField$Value",
     r"mm2.properties:6: .*A->B\.transforms\.r\.type.*reads fields of a structured key or value"),
])
def test_a_bad_transformation_fails_the_file_in_one_line(tmp_path: Path, line: str, expected: str) -> None:
    config = _file(tmp_path, "A->B.transforms = r", line)
    with pytest.raises(ConfigError, match=expected) as error:
        checked(config)
    assert "\n" not in str(error.value)
