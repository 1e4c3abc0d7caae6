"""Keys shared by the three MM2 connectors (Kafka's ``MirrorConnectorConfig`` + ``ConnectorConfig``).

Everything here is data on top of :mod:`connect_runtime.api.config`, so the same definitions drive
parsing, REST validation and the generated reference (``mirror config docs``). The driver
(:mod:`mirror.maker.config`) uses the *names* of these keys to decide which top-level properties reach a
connector (§1.3(c)), so a key missing here would be silently dropped from every flow: keep the set
complete, as Java MM2 defines it.

:class:`MirrorConnectorConfig` is the typed accessor the connector/task configs extend. Its client
config builders follow Java's precedence exactly (lowest first): ``<side>.cluster.*`` restricted to
connection/security keys, then connector-level ``<client>.*``, then ``<side>.<client>.*``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    Importance,
    Type,
    Validator,
    at_least,
    non_empty_string,
    one_of,
)
from connect_runtime.api.errors import ConfigError
from mirror.client.replication_policy import load_policy_class

logger = logging.getLogger(__name__)

# ---- client connection and security keys (CommonClientConfigs, SslConfigs, SaslConfigs) ----------------

BOOTSTRAP_SERVERS = "bootstrap.servers"
CLIENT_ID = "client.id"
SECURITY_PROTOCOL = "security.protocol"
SECURITY_PROTOCOL_DEFAULT = "PLAINTEXT"

_SSL_KEYS: list[tuple[str, Type, Any, str]] = [
    ("ssl.protocol", Type.STRING, "TLSv1.3", "The SSL protocol used to generate the SSLContext."),
    ("ssl.provider", Type.STRING, None, "The name of the security provider used for SSL connections."),
    ("ssl.cipher.suites", Type.LIST, None, "A list of cipher suites."),
    ("ssl.enabled.protocols", Type.LIST, "TLSv1.2,TLSv1.3", "The protocols enabled for SSL connections."),
    ("ssl.keystore.type", Type.STRING, "JKS", "The file format of the key store file."),
    ("ssl.keystore.location", Type.STRING, None, "The location of the key store file."),
    ("ssl.keystore.password", Type.PASSWORD, None, "The store password for the key store file."),
    ("ssl.key.password", Type.PASSWORD, None, "The password of the private key in the key store file."),
    ("ssl.keystore.key", Type.PASSWORD, None, "Private key in the format specified by ssl.keystore.type."),
    ("ssl.keystore.certificate.chain", Type.PASSWORD, None, "Certificate chain in the key store format."),
    ("ssl.truststore.certificates", Type.PASSWORD, None, "Trusted certificates in the trust store format."),
    ("ssl.truststore.type", Type.STRING, "JKS", "The file format of the trust store file."),
    ("ssl.truststore.location", Type.STRING, None, "The location of the trust store file."),
    ("ssl.truststore.password", Type.PASSWORD, None, "The password for the trust store file."),
    ("ssl.keymanager.algorithm", Type.STRING, "SunX509", "The key manager factory algorithm."),
    ("ssl.trustmanager.algorithm", Type.STRING, "PKIX", "The trust manager factory algorithm."),
    ("ssl.endpoint.identification.algorithm", Type.STRING, "https",
     "The endpoint identification algorithm used to validate the server hostname."),
    ("ssl.secure.random.implementation", Type.STRING, None, "The SecureRandom PRNG implementation."),
    ("ssl.engine.factory.class", Type.CLASS, None, "An SslEngineFactory class."),
]

_SASL_KEYS: list[tuple[str, Type, Any, str]] = [
    ("sasl.mechanism", Type.STRING, "GSSAPI", "SASL mechanism used for client connections."),
    ("sasl.jaas.config", Type.PASSWORD, None, "JAAS login context parameters for SASL connections."),
    ("sasl.client.callback.handler.class", Type.CLASS, None, "A SASL client callback handler class."),
    ("sasl.login.callback.handler.class", Type.CLASS, None, "A SASL login callback handler class."),
    ("sasl.login.class", Type.CLASS, None, "A class that implements the Login interface."),
    ("sasl.kerberos.service.name", Type.STRING, None, "The Kerberos principal name that Kafka runs as."),
    ("sasl.kerberos.kinit.cmd", Type.STRING, "/usr/bin/kinit", "Kerberos kinit command path."),
    ("sasl.kerberos.ticket.renew.window.factor", Type.DOUBLE, 0.8, "Kerberos ticket renew window factor."),
    ("sasl.kerberos.ticket.renew.jitter", Type.DOUBLE, 0.05, "Random jitter added to the renewal time."),
    ("sasl.kerberos.min.time.before.relogin", Type.LONG, 60000, "Login thread sleep time between refreshes."),
    ("sasl.login.refresh.window.factor", Type.DOUBLE, 0.8, "Login refresh window factor (OAUTHBEARER)."),
    ("sasl.login.refresh.window.jitter", Type.DOUBLE, 0.05, "Login refresh jitter (OAUTHBEARER)."),
    ("sasl.login.refresh.min.period.seconds", Type.INT, 60, "Minimum time between credential refreshes."),
    ("sasl.login.refresh.buffer.seconds", Type.INT, 300, "Buffer time before credential expiration."),
    ("sasl.login.connect.timeout.ms", Type.INT, None, "Connect timeout of the external login provider."),
    ("sasl.login.read.timeout.ms", Type.INT, None, "Read timeout of the external login provider."),
    ("sasl.login.retry.backoff.max.ms", Type.LONG, 10000, "Maximum wait between login attempts."),
    ("sasl.login.retry.backoff.ms", Type.LONG, 100, "Initial wait between login attempts."),
    ("sasl.oauthbearer.scope.claim.name", Type.STRING, "scope", "The OAuth claim for the scope."),
    ("sasl.oauthbearer.sub.claim.name", Type.STRING, "sub", "The OAuth claim for the subject."),
    ("sasl.oauthbearer.token.endpoint.url", Type.STRING, None, "The OAuth/OIDC token endpoint URL."),
    ("sasl.oauthbearer.jwks.endpoint.url", Type.STRING, None, "The OAuth/OIDC JWKS endpoint URL."),
    ("sasl.oauthbearer.jwks.endpoint.refresh.ms", Type.LONG, 3600000, "JWKS cache refresh period."),
    ("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Type.LONG, 10000, "Maximum JWKS retry wait."),
    ("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Type.LONG, 100, "Initial JWKS retry wait."),
    ("sasl.oauthbearer.clock.skew.seconds", Type.INT, 30, "Allowed clock skew for OAuth tokens."),
    ("sasl.oauthbearer.expected.audience", Type.LIST, None, "Expected JWT audiences."),
    ("sasl.oauthbearer.expected.issuer", Type.STRING, None, "Expected JWT issuer."),
]

#: ``security.protocol`` plus every client ``ssl.*`` and ``sasl.*`` key, as Kafka defines them.
CLIENT_SECURITY_CONFIG_DEF = ConfigDef(
    [ConfigKey(SECURITY_PROTOCOL, Type.STRING, SECURITY_PROTOCOL_DEFAULT, Importance.MEDIUM,
               "Protocol used to communicate with brokers.",
               one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), group="Security")]
    + [ConfigKey(n, t, d, Importance.LOW, doc, group="Security") for n, t, d, doc in _SSL_KEYS + _SASL_KEYS]
)

#: Kafka's ``MirrorClientConfig.CLIENT_CONFIG_DEF``: the connection keys that flow between client configs.
CLIENT_CONFIG_DEF = ConfigDef(
    [ConfigKey(BOOTSTRAP_SERVERS, Type.LIST, None, Importance.HIGH,
               "A list of host/port pairs used to establish the initial connection to the Kafka cluster.")]
).merge(CLIENT_SECURITY_CONFIG_DEF)

#: Names of the client connection keys: bootstrap.servers, security.protocol, ssl.*, sasl.*.
CLIENT_CONFIG_NAMES: frozenset[str] = frozenset(CLIENT_CONFIG_DEF.names())

# ---- Kafka Connect ConnectorConfig / SourceConnectorConfig base keys ----------------------------------

NAME = "name"
CONNECTOR_CLASS = "connector.class"
TASKS_MAX = "tasks.max"
TASKS_MAX_ENFORCE = "tasks.max.enforce"
KEY_CONVERTER = "key.converter"
VALUE_CONVERTER = "value.converter"
HEADER_CONVERTER = "header.converter"
TRANSFORMS = "transforms"
PREDICATES = "predicates"
CONFIG_ACTION_RELOAD = "config.action.reload"
ERRORS_RETRY_TIMEOUT = "errors.retry.timeout"
ERRORS_RETRY_DELAY_MAX_MS = "errors.retry.delay.max.ms"
ERRORS_TOLERANCE = "errors.tolerance"
ERRORS_LOG_ENABLE = "errors.log.enable"
ERRORS_LOG_INCLUDE_MESSAGES = "errors.log.include.messages"
EXACTLY_ONCE_SUPPORT = "exactly.once.support"
TRANSACTION_BOUNDARY = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL_MS = "transaction.boundary.interval.ms"
OFFSETS_STORAGE_TOPIC = "offsets.storage.topic"
TOPIC_CREATION_GROUPS = "topic.creation.groups"

#: Connect's connector-level keys (``ConnectorConfig`` + ``SourceConnectorConfig``).
CONNECT_CONNECTOR_CONFIG_DEF = ConfigDef([
    ConfigKey(NAME, Type.STRING, NO_DEFAULT, Importance.HIGH,
              "Globally unique name to use for this connector.", non_empty_string, "Common"),
    ConfigKey(CONNECTOR_CLASS, Type.STRING, NO_DEFAULT, Importance.HIGH,
              "Name or alias of the class for this connector.", group="Common"),
    ConfigKey(TASKS_MAX, Type.INT, 1, Importance.HIGH,
              "Maximum number of tasks to use for this connector.", at_least(1), "Common"),
    ConfigKey(TASKS_MAX_ENFORCE, Type.BOOLEAN, True, Importance.LOW,
              "Fail tasks when the connector generates more task configs than tasks.max (deprecated).",
              group="Common"),
    ConfigKey(KEY_CONVERTER, Type.CLASS, None, Importance.LOW,
              "Converter for record keys; the worker's converter when unset.", group="Common"),
    ConfigKey(VALUE_CONVERTER, Type.CLASS, None, Importance.LOW,
              "Converter for record values; the worker's converter when unset.", group="Common"),
    ConfigKey(HEADER_CONVERTER, Type.CLASS, None, Importance.LOW,
              "Converter for record headers; the worker's converter when unset.", group="Common"),
    ConfigKey(TRANSFORMS, Type.LIST, [], Importance.LOW,
              "Aliases for the transformations to apply to records.", group="Transforms"),
    ConfigKey(PREDICATES, Type.LIST, [], Importance.LOW,
              "Aliases for the predicates used by transformations.", group="Predicates"),
    ConfigKey(CONFIG_ACTION_RELOAD, Type.STRING, "restart", Importance.LOW,
              "What to do when external configuration providers report a change.",
              one_of("none", "restart"), "Common"),
    ConfigKey(ERRORS_RETRY_TIMEOUT, Type.LONG, 0, Importance.MEDIUM,
              "Maximum duration in ms a failed operation is retried; 0 means no retries, -1 infinite.",
              group="Error Handling"),
    ConfigKey(ERRORS_RETRY_DELAY_MAX_MS, Type.LONG, 60000, Importance.MEDIUM,
              "Maximum duration in ms between consecutive retries.", group="Error Handling"),
    ConfigKey(ERRORS_TOLERANCE, Type.STRING, "none", Importance.MEDIUM,
              "Behaviour for errors during operation: 'none' fails the task, 'all' skips bad records.",
              one_of("none", "all"), "Error Handling"),
    ConfigKey(ERRORS_LOG_ENABLE, Type.BOOLEAN, False, Importance.MEDIUM,
              "Log each error and the details of the failed operation.", group="Error Handling"),
    ConfigKey(ERRORS_LOG_INCLUDE_MESSAGES, Type.BOOLEAN, False, Importance.MEDIUM,
              "Include the failing record in the error log.", group="Error Handling"),
    ConfigKey(EXACTLY_ONCE_SUPPORT, Type.STRING, "requested", Importance.MEDIUM,
              "Whether the connector must support exactly-once semantics ('required') or not.",
              one_of("requested", "required"), "Exactly Once Support"),
    ConfigKey(TRANSACTION_BOUNDARY, Type.STRING, "poll", Importance.MEDIUM,
              "Transaction boundaries for exactly-once source tasks.",
              one_of("poll", "interval", "connector"), "Exactly Once Support"),
    ConfigKey(TRANSACTION_BOUNDARY_INTERVAL_MS, Type.LONG, None, Importance.LOW,
              "Transaction commit interval when transaction.boundary=interval.", at_least(0),
              "Exactly Once Support"),
    ConfigKey(OFFSETS_STORAGE_TOPIC, Type.STRING, None, Importance.LOW,
              "A separate offsets topic for this connector; the worker's when unset.", group="Offsets Topic"),
    ConfigKey(TOPIC_CREATION_GROUPS, Type.LIST, [], Importance.LOW,
              "Groups of configurations for topics created by source connectors.", group="Topic Creation"),
])

# ---- MM2 keys shared by the three connectors ---------------------------------------------------------

ENABLED = "enabled"
SOURCE_CLUSTER_ALIAS = "source.cluster.alias"
TARGET_CLUSTER_ALIAS = "target.cluster.alias"
TARGET_CLUSTER_ALIAS_DEFAULT = "target"
ADMIN_TASK_TIMEOUT_MILLIS = "admin.timeout.ms"
ADMIN_TASK_TIMEOUT_MILLIS_DEFAULT = 60000
REPLICATION_POLICY_CLASS = "replication.policy.class"
REPLICATION_POLICY_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
REPLICATION_POLICY_SEPARATOR = "replication.policy.separator"
REPLICATION_POLICY_SEPARATOR_DEFAULT = "."
INTERNAL_TOPIC_SEPARATOR_ENABLED = "replication.policy.internal.topic.separator.enabled"
FORWARDING_ADMIN_CLASS = "forwarding.admin.class"
FORWARDING_ADMIN_CLASS_DEFAULT = "org.apache.kafka.clients.admin.ForwardingAdmin"
METRIC_REPORTERS = "metric.reporters"
METRIC_REPORTERS_DEFAULT = "org.apache.kafka.common.metrics.JmxReporter"

# Defined on the source and checkpoint connectors (not heartbeat), declared once here.
TOPIC_FILTER_CLASS = "topic.filter.class"
TOPIC_FILTER_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultTopicFilter"
OFFSET_SYNCS_TOPIC_LOCATION = "offset-syncs.topic.location"
OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT = "source"

SOURCE_CLUSTER_PREFIX = "source.cluster."
TARGET_CLUSTER_PREFIX = "target.cluster."
SOURCE_PREFIX = "source."
TARGET_PREFIX = "target."
PRODUCER_CLIENT_PREFIX = "producer."
CONSUMER_CLIENT_PREFIX = "consumer."
ADMIN_CLIENT_PREFIX = "admin."


def validate_replication_policy_class(name: str, value: Any) -> None:
    """Reject a replication policy class that cannot be loaded, naming the key.

    Accepts Java's ``org.apache.kafka.connect.mirror.*ReplicationPolicy`` names (mapped by the loader)
    and dotted Python paths.
    """
    if value is None:
        return
    try:
        load_policy_class(str(value))
    except ValueError as exc:
        raise ConfigError(
            f"Invalid value {value!r} for configuration {name}: expected a ReplicationPolicy class such as "
            f"{REPLICATION_POLICY_CLASS_DEFAULT} or "
            f"org.apache.kafka.connect.mirror.IdentityReplicationPolicy ({exc})", name) from exc


validate_replication_policy_class.__doc__ = "a ReplicationPolicy class"


def _replication_factor(name: str, value: Any) -> None:
    if value is not None and value != -1 and value < 1:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: must be -1 (broker default) or at least 1",
            name)


_replication_factor.__doc__ = "-1 or [1,...]"
replication_factor: Validator = _replication_factor

#: The MM2 keys every connector defines (``MirrorConnectorConfig.BASE_CONNECTOR_CONFIG_DEF`` minus Connect's).
MIRROR_SHARED_CONFIG_DEF = ConfigDef([
    ConfigKey(ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to replicate source->target. The driver sets false unless the flow enables it.",
              group="Mirror"),
    ConfigKey(SOURCE_CLUSTER_ALIAS, Type.STRING, NO_DEFAULT, Importance.HIGH,
              "Alias of the source cluster.", non_empty_string, "Mirror"),
    ConfigKey(TARGET_CLUSTER_ALIAS, Type.STRING, TARGET_CLUSTER_ALIAS_DEFAULT, Importance.HIGH,
              "Alias of the target cluster. Used in metrics and naming.", group="Mirror"),
    ConfigKey(ADMIN_TASK_TIMEOUT_MILLIS, Type.LONG, ADMIN_TASK_TIMEOUT_MILLIS_DEFAULT, Importance.LOW,
              "Timeout for administrative tasks, e.g. detecting new topics.", at_least(0), "Mirror"),
    ConfigKey(REPLICATION_POLICY_CLASS, Type.CLASS, REPLICATION_POLICY_CLASS_DEFAULT, Importance.LOW,
              "Class which defines the remote topic naming convention.",
              validate_replication_policy_class, "Mirror"),
    ConfigKey(REPLICATION_POLICY_SEPARATOR, Type.STRING, REPLICATION_POLICY_SEPARATOR_DEFAULT, Importance.LOW,
              "Separator used in remote topic naming convention.", group="Mirror"),
    ConfigKey(INTERNAL_TOPIC_SEPARATOR_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether replication.policy.separator is also used in the names of the checkpoints and "
              "offset-syncs topics; false keeps the pre-3.1 names.", group="Mirror"),
    ConfigKey(FORWARDING_ADMIN_CLASS, Type.CLASS, FORWARDING_ADMIN_CLASS_DEFAULT, Importance.LOW,
              "Class of the Admin client used for every MM2 admin call (KIP-787).", group="Mirror"),
    ConfigKey(METRIC_REPORTERS, Type.LIST, METRIC_REPORTERS_DEFAULT, Importance.LOW,
              "Classes to use as metrics reporters.", group="Mirror"),
])

#: Every connector's base definition: Connect's keys, MM2's shared keys, client security keys.
BASE_CONNECTOR_CONFIG_DEF = CONNECT_CONNECTOR_CONFIG_DEF.merge(MIRROR_SHARED_CONFIG_DEF).merge(
    CLIENT_SECURITY_CONFIG_DEF)

TOPIC_FILTER_CLASS_KEY = ConfigKey(
    TOPIC_FILTER_CLASS, Type.CLASS, TOPIC_FILTER_CLASS_DEFAULT, Importance.LOW,
    "TopicFilter to use. Selects topics to replicate.", group="Mirror")
OFFSET_SYNCS_TOPIC_LOCATION_KEY = ConfigKey(
    OFFSET_SYNCS_TOPIC_LOCATION, Type.STRING, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT, Importance.LOW,
    "The location (source/target) of the offset-syncs topic.", one_of("source", "target"), "Mirror")


def entries_with_prefix(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Entries whose key starts with ``prefix``, prefix stripped (Kafka ``originalsWithPrefix``)."""
    return {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}


def seconds_or_never(enabled: bool, seconds: int) -> int:
    """A period in seconds, or ``-1`` ("never schedule") when the matching ``*.enabled`` flag is false."""
    return seconds if enabled else -1


class MirrorConnectorConfig:
    """Typed view of one connector's or task's config map (Kafka ``MirrorConnectorConfig``).

    ``props`` are the raw strings the connector receives; they are kept unchanged because client
    configs are built from the originals, not from parsed values (a Password stays a string here).
    """

    CONFIG_DEF: ConfigDef = BASE_CONNECTOR_CONFIG_DEF

    def __init__(self, props: Mapping[str, str], config_def: ConfigDef | None = None) -> None:
        self._originals: dict[str, str] = dict(props)
        self._values: dict[str, Any] = (config_def or self.CONFIG_DEF).parse(self._originals)

    # ---- raw access ----

    def originals(self) -> dict[str, str]:
        return dict(self._originals)

    def originals_with_prefix(self, prefix: str) -> dict[str, str]:
        return entries_with_prefix(self._originals, prefix)

    def get(self, name: str) -> Any:
        """The parsed value of a defined key."""
        return self._values[name]

    # ---- shared keys ----

    @property
    def connector_name(self) -> str:
        return str(self._values[NAME])

    @property
    def enabled(self) -> bool:
        return bool(self._values[ENABLED])

    @property
    def source_alias(self) -> str:
        return str(self._values[SOURCE_CLUSTER_ALIAS])

    @property
    def target_alias(self) -> str:
        return str(self._values[TARGET_CLUSTER_ALIAS])

    @property
    def admin_timeout_ms(self) -> int:
        return int(self._values[ADMIN_TASK_TIMEOUT_MILLIS])

    @property
    def replication_policy_class(self) -> str:
        return str(self._values[REPLICATION_POLICY_CLASS])

    @property
    def replication_policy_separator(self) -> str:
        return str(self._values[REPLICATION_POLICY_SEPARATOR])

    @property
    def internal_topic_separator_enabled(self) -> bool:
        return bool(self._values[INTERNAL_TOPIC_SEPARATOR_ENABLED])

    @property
    def forwarding_admin_class(self) -> str:
        return str(self._values[FORWARDING_ADMIN_CLASS])

    @property
    def task_index(self) -> int | None:
        """``task.index`` for task configs (used in client ids); ``None`` for connector configs."""
        raw = self._originals.get("task.index")
        return None if raw is None or raw.strip() == "" else int(raw.strip())

    def replication_policy_config(self) -> dict[str, str]:
        """The originals, which is what Java passes to ``ReplicationPolicy.configure``."""
        return dict(self._originals)

    # ---- client configs ----

    def entity_label(self) -> str:
        """``<src>-><tgt>|<connector name>[-<task index>]`` (KAFKA-14838)."""
        label = f"{self.source_alias}->{self.target_alias}|{self._originals.get(NAME, '')}"
        index = self.task_index
        return label if index is None else f"{label}-{index}"

    def add_client_id(self, config: dict[str, str], role: str | None) -> dict[str, str]:
        """Set ``client.id`` to ``[<user client.id>|]<entity label>|<role>``, as Java's ``addClientId``."""
        client_id = self.entity_label() + ("" if role is None else f"|{role}")
        if CLIENT_ID in config:
            client_id = f"{config[CLIENT_ID]}|{client_id}"
        config[CLIENT_ID] = client_id
        return config

    def client_config(self, side: str, client: str, role: str | None) -> dict[str, str]:
        """Config for a ``client`` (admin/consumer/producer) of cluster ``side`` (source/target).

        Lowest precedence first: ``<side>.cluster.*`` (connection/security keys only), connector-level
        ``<client>.*``, then ``<side>.<client>.*``. Consumers never auto-commit and start at ``earliest``
        unless configured, because MM2 tracks its own positions.
        """
        if side not in ("source", "target") or client not in ("admin", "consumer", "producer"):
            raise ValueError(f"unknown client {side}/{client}")
        config = {k: v for k, v in self.originals_with_prefix(f"{side}.cluster.").items()
                  if k in CLIENT_CONFIG_NAMES}
        config.update(self.originals_with_prefix(f"{client}."))
        config.update(self.originals_with_prefix(f"{side}.{client}."))
        if client == "consumer":
            config["enable.auto.commit"] = "false"
            config.setdefault("auto.offset.reset", "earliest")
        return self.add_client_id(config, role)

    def source_admin_config(self, role: str | None) -> dict[str, str]:
        return self.client_config("source", "admin", role)

    def target_admin_config(self, role: str | None) -> dict[str, str]:
        return self.client_config("target", "admin", role)

    def source_consumer_config(self, role: str | None) -> dict[str, str]:
        return self.client_config("source", "consumer", role)

    def target_consumer_config(self, role: str | None) -> dict[str, str]:
        return self.client_config("target", "consumer", role)

    def source_producer_config(self, role: str | None) -> dict[str, str]:
        return self.client_config("source", "producer", role)

    def target_producer_config(self, role: str | None) -> dict[str, str]:
        return self.client_config("target", "producer", role)


class OffsetSyncsLocationMixin(MirrorConnectorConfig):
    """``offset-syncs.topic.location`` handling shared by the source and checkpoint configs."""

    @property
    def offset_syncs_topic_location(self) -> str:
        return str(self._values[OFFSET_SYNCS_TOPIC_LOCATION]).lower()

    @property
    def offset_syncs_topic_cluster_alias(self) -> str:
        """Alias of the cluster that hosts the offset-syncs topic (its name embeds this alias)."""
        return self.source_alias if self.offset_syncs_topic_location == "source" else self.target_alias

    def offset_syncs_topic_admin_config(self) -> dict[str, str]:
        if self.offset_syncs_topic_location == "source":
            return self.source_admin_config("offset-syncs-source-admin")
        return self.target_admin_config("offset-syncs-target-admin")
