"""Keys and config view shared by the three MM2 connectors (Kafka's ``MirrorConnectorConfig``).

Everything here is data on top of :mod:`connect_runtime.api.config`, so the same definitions drive
parsing, REST validation and the generated reference (``mirror config docs``). The driver
(:mod:`mirror.config.mirror_maker_config`) uses the *names* of these keys to decide which top-level properties
reach a connector, so a key missing here would be silently dropped from every flow: keep the
set complete, as Java MM2 defines it. Connect's own connector keys come from the runtime's API
(:mod:`connect_runtime.api.connector_config`), the client keys from :mod:`mirror.config.client_keys`.

:class:`MirrorConnectorConfig` is the typed view the connector/task configs extend. Its client
config builders follow Java's precedence exactly (lowest first): ``<side>.cluster.*`` restricted to
connection/security keys, then connector-level ``<client>.*``, then ``<side>.<client>.*``.

``forwarding.admin.class`` (KIP-787) is the admin client every MM2 admin call goes through. Java MM2 lets
an operator route topic creation, config and ACL changes through their own ``Admin`` (e.g. to create
topics through a provisioning service instead of the brokers) by naming a subclass of ``ForwardingAdmin``.
Here the equivalent is a subclass of :class:`connect_runtime.clients.admin.TopicAdmin`, named by a dotted
Python path (``package.module.Class`` or ``package.module:Class``) and built as
``cls(librdkafka_admin_config, timeout_s=...)``; override the methods to intercept. Java's default class
name maps to :class:`TopicAdmin` itself, so an unmodified Java ``mm2.properties`` works; any other Java
class name is refused at start, naming the key, because it cannot run here.
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
from connect_runtime.api.connector_config import CONNECTOR_CONFIG_DEF, NAME
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.clients.admin import TopicAdmin
from mirror.client.plugins import load_class
from mirror.client.replication_policy import load_policy_class
from mirror.config.client_keys import CLIENT_CONFIG_NAMES, CLIENT_ID, CLIENT_SECURITY_CONFIG_DEF
from mirror.config.settings import Choice, Flag, Integer, Text, TextList

logger = logging.getLogger(__name__)

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
METRIC_NAMES_FORMATS = "metric.names.formats"
METRIC_NAMES_FORMATS_DEFAULT = "legacy,new"
METRICS_PARTITION_SERIES = "metrics.partition.series"
METRICS_PARTITION_SERIES_DEFAULT = "auto"

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

_FORWARDING_ADMIN_ALIASES: dict[str, type[TopicAdmin]] = {
    FORWARDING_ADMIN_CLASS_DEFAULT: TopicAdmin,
    "ForwardingAdmin": TopicAdmin,
}


def forwarding_admin_class(name: str | None) -> type[TopicAdmin]:
    """The admin class named by ``forwarding.admin.class``; ConfigError naming the key if it cannot load."""
    try:
        return load_class(name or FORWARDING_ADMIN_CLASS_DEFAULT, TopicAdmin, _FORWARDING_ADMIN_ALIASES,
                          "forwarding admin")
    except ValueError as exc:
        raise ConfigError(f"Invalid value {name!r} for configuration {FORWARDING_ADMIN_CLASS}: expected "
                          f"{FORWARDING_ADMIN_CLASS_DEFAULT} or a Python subclass of "
                          f"connect_runtime.clients.admin.TopicAdmin ({exc})", FORWARDING_ADMIN_CLASS) from exc


def validate_forwarding_admin_class(name: str, value: Any) -> None:
    """ConfigDef validator: the class must load (a typo fails at start, not at the first admin call)."""
    if value is not None:
        forwarding_admin_class(str(value))


validate_forwarding_admin_class.__doc__ = "a TopicAdmin subclass (dotted Python path)"


def _replication_factor(name: str, value: Any) -> None:
    if value is not None and value != -1 and value < 1:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: must be -1 (broker default) or at least 1",
            name)


_replication_factor.__doc__ = "-1 or [1,...]"


def _metric_names_formats(name: str, value: Any) -> None:
    formats = [v.strip().lower() for v in value or []]
    if not formats or any(f not in ("legacy", "new") for f in formats):
        raise ConfigError(f"Invalid value {','.join(value or [])} for configuration {name}: expected legacy, new "
                          "or legacy,new", name)


_metric_names_formats.__doc__ = "legacy, new or legacy,new"


def _metric_reporters(name: str, value: Any) -> None:
    unsupported = [v for v in value or [] if v not in (METRIC_REPORTERS_DEFAULT, "")]
    if unsupported:
        raise ConfigError(f"Invalid value {','.join(unsupported)} for configuration {name}: not supported: metric "
                          "reporter classes cannot run here; metrics are served in Prometheus format at /metrics "
                          f"(remove the key, or keep {METRIC_REPORTERS_DEFAULT})", name)


_metric_reporters.__doc__ = f"{METRIC_REPORTERS_DEFAULT} or empty"
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
              "Class of the admin client used for every MM2 admin call (KIP-787): a Python subclass of "
              "connect_runtime.clients.admin.TopicAdmin (dotted path), built with the librdkafka admin config "
              "and timeout_s; Java's default ForwardingAdmin means TopicAdmin itself.",
              validate_forwarding_admin_class, "Mirror"),
    ConfigKey(METRIC_REPORTERS, Type.LIST, METRIC_REPORTERS_DEFAULT, Importance.LOW,
              "Classes to use as metrics reporters. Metrics are exposed in Prometheus format at /metrics "
              "(see docs/metrics.md); only Java's default JmxReporter (meaning: the built-in exposition) or "
              "an empty list is accepted, other reporters are refused.", _metric_reporters, "Mirror"),
])

#: Every connector's base definition: Connect's keys, MM2's shared keys, client security keys.
BASE_CONNECTOR_CONFIG_DEF = CONNECTOR_CONFIG_DEF.merge(MIRROR_SHARED_CONFIG_DEF).merge(
    CLIENT_SECURITY_CONFIG_DEF)

TOPIC_FILTER_CLASS_KEY = ConfigKey(
    TOPIC_FILTER_CLASS, Type.CLASS, TOPIC_FILTER_CLASS_DEFAULT, Importance.LOW,
    "TopicFilter to use. Selects topics to replicate.", group="Mirror")
OFFSET_SYNCS_TOPIC_LOCATION_KEY = ConfigKey(
    OFFSET_SYNCS_TOPIC_LOCATION, Type.STRING, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT, Importance.LOW,
    "The location (source/target) of the offset-syncs topic.", one_of("source", "target"), "Mirror")


def _without_overrides(props: dict[str, str]) -> dict[str, str]:
    """Drop ``override.*`` entries: under ``producer.`` they are ``producer.override.*`` keys, not client keys."""
    return {k: v for k, v in props.items() if not k.startswith("override.")}


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
        return with_prefix_stripped(self._originals, prefix)

    def get(self, name: str) -> Any:
        """The parsed value of a defined key."""
        return self._values[name]

    # ---- shared keys ----

    connector_name = Text(NAME)
    enabled = Flag(ENABLED)
    source_alias = Text(SOURCE_CLUSTER_ALIAS)
    target_alias = Text(TARGET_CLUSTER_ALIAS)
    admin_timeout_ms = Integer(ADMIN_TASK_TIMEOUT_MILLIS)
    replication_policy_class = Text(REPLICATION_POLICY_CLASS)
    replication_policy_separator = Text(REPLICATION_POLICY_SEPARATOR)
    internal_topic_separator_enabled = Flag(INTERNAL_TOPIC_SEPARATOR_ENABLED)
    forwarding_admin_class = Text(FORWARDING_ADMIN_CLASS)

    def admin_class(self) -> type[Any]:
        """The ``forwarding.admin.class`` every admin client of this connector is built with."""
        return forwarding_admin_class(self.forwarding_admin_class)

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
        ``<client>.*``, then ``<side>.<client>.*``, then, for consumers and admins, the connector's
        ``consumer.override.*`` / ``admin.override.*`` (on both clusters; the worker's
        ``connector.client.config.override.policy`` has vetted them before the connector starts).
        ``producer.override.*`` goes to the runtime's task producer only, as in Connect: MM2's own
        producers (offset syncs on the source cluster) never take it. Consumers never auto-commit and
        start at ``earliest`` unless configured, because MM2 tracks its own positions.
        """
        if side not in ("source", "target") or client not in ("admin", "consumer", "producer"):
            raise ValueError(f"unknown client {side}/{client}")
        config = {k: v for k, v in self.originals_with_prefix(f"{side}.cluster.").items()
                  if k in CLIENT_CONFIG_NAMES}
        config.update(_without_overrides(self.originals_with_prefix(f"{client}.")))
        config.update(_without_overrides(self.originals_with_prefix(f"{side}.{client}.")))
        if client != "producer":  # producer.override.* is the runtime's task producer's (Connect's rule)
            config.update(with_prefix_stripped(self._originals, f"{client}.override."))
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

#: KIP-1280 (Kafka 4.3): which names the source and checkpoint metrics are exported under.
METRIC_NAMES_FORMATS_KEY = ConfigKey(
    METRIC_NAMES_FORMATS, Type.LIST, METRIC_NAMES_FORMATS_DEFAULT, Importance.LOW,
    "The names the MM2 task metrics are exported under (KIP-1280): legacy (mirror_source_*, "
    "mirror_checkpoint_*: Java's kafka.connect.mirror:type=MirrorSourceConnector/MirrorCheckpointConnector), new "
    "(kafka_connect_plugins_*, with connector and task labels: Java's kafka.connect:type=plugins), or both. Java's "
    "default is legacy; here both, so that dashboards can move to the new names before Kafka 5.0 removes the old "
    "ones (see docs/metrics.md).", _metric_names_formats, "Mirror")


#: Ours (MM2 has no such key): how finely the source and checkpoint metrics are labelled (docs/metrics.md).
METRICS_PARTITION_SERIES_KEY = ConfigKey(
    METRICS_PARTITION_SERIES, Type.STRING, METRICS_PARTITION_SERIES_DEFAULT, Importance.LOW,
    "How finely the source and checkpoint task metrics are labelled: partition (MM2's tags: one series per "
    "remote topic and partition, and per consumer group, topic and partition), topic (counters and gauges "
    "summed per topic, histograms per flow; the partition label empty), none (summed per flow and group, "
    "topic and partition labels empty) or auto (partition for a task of at most 1,000 partitions, topic above; "
    "checkpoint tasks partition). Each partition costs about 100 series with both metric.names.formats, so "
    "that a scrape of thousands of partitions would outlast its interval (see docs/metrics.md).",
    one_of("auto", "partition", "topic", "none"), "Mirror")


class OffsetSyncsLocationMixin(MirrorConnectorConfig):
    """``offset-syncs.topic.location`` handling shared by the source and checkpoint configs, and the other
    keys only those two define (``metric.names.formats``, ``metrics.partition.series``)."""

    offset_syncs_topic_location = Choice(OFFSET_SYNCS_TOPIC_LOCATION)
    metric_names_formats = TextList(METRIC_NAMES_FORMATS)
    metrics_partition_series = Choice(METRICS_PARTITION_SERIES)

    @property
    def offset_syncs_topic_cluster_alias(self) -> str:
        """Alias of the cluster that hosts the offset-syncs topic (its name embeds this alias)."""
        return self.source_alias if self.offset_syncs_topic_location == "source" else self.target_alias

    def offset_syncs_topic_admin_config(self) -> dict[str, str]:
        if self.offset_syncs_topic_location == "source":
            return self.source_admin_config("offset-syncs-source-admin")
        return self.target_admin_config("offset-syncs-target-admin")
