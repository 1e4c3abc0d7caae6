"""The distributed worker's configuration (Kafka's ``DistributedConfig`` + ``WorkerConfig``), as data.

Every key is defined once in :data:`DISTRIBUTED_CONFIG_DEF`; :class:`DistributedWorkerConfig` parses a
``worker.properties`` map against it and derives the three librdkafka client configs the runtime needs:

* keys given at top level (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``...)
  apply to every client, as in Java;
* ``producer.*`` / ``consumer.*`` / ``admin.*`` override them for one client kind.

The client factory (:mod:`connect_runtime.clients.factory`) turns the Java names into librdkafka
ones and drops worker-only keys, logging key names only.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from connect_runtime.api import client_overrides, plugin_allowlist
from connect_runtime.api.client_overrides import OverridePolicy
from connect_runtime.api.config import (
    ConfigDef,
    ConfigKey,
    Importance,
    Type,
    at_least,
    non_empty_string,
    one_of,
)
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.rest_config import REST_SECURITY_CONFIG_DEF
from connect_runtime.clients import factory, security_keys
from connect_runtime.clients.factory import ClientKind

logger = logging.getLogger(__name__)

GROUP_ID = "group.id"
BOOTSTRAP_SERVERS = "bootstrap.servers"
CLIENT_ID = "client.id"
CONFIG_TOPIC = "config.storage.topic"
CONFIG_RF = "config.storage.replication.factor"
OFFSET_TOPIC = "offset.storage.topic"
OFFSET_RF = "offset.storage.replication.factor"
OFFSET_PARTITIONS = "offset.storage.partitions"
STATUS_TOPIC = "status.storage.topic"
STATUS_RF = "status.storage.replication.factor"
STATUS_PARTITIONS = "status.storage.partitions"
OFFSET_FLUSH_INTERVAL_MS = "offset.flush.interval.ms"
OFFSET_FLUSH_TIMEOUT_MS = "offset.flush.timeout.ms"
LISTENERS = "listeners"
ADVERTISED_HOST = "rest.advertised.host.name"
ADVERTISED_PORT = "rest.advertised.port"
ADVERTISED_LISTENER = "rest.advertised.listener"
SCHEDULED_REBALANCE_MAX_DELAY_MS = "scheduled.rebalance.max.delay.ms"
SCHEDULED_REBALANCE_CRASH_DELAY_MS = "scheduled.rebalance.crash.delay.ms"
SESSION_TIMEOUT_MS = "session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "heartbeat.interval.ms"
REBALANCE_TIMEOUT_MS = "rebalance.timeout.ms"
EXACTLY_ONCE_SOURCE_SUPPORT = "exactly.once.source.support"
CONFIG_PROVIDERS = "config.providers"
TASK_SHUTDOWN_TIMEOUT_MS = "task.shutdown.graceful.timeout.ms"
WORKER_SYNC_TIMEOUT_MS = "worker.sync.timeout.ms"
CONNECT_PROTOCOL = "connect.protocol"
REST_REQUEST_TIMEOUT_MS = "rest.request.timeout.ms"
INTER_WORKER_KEY_TTL_MS = "inter.worker.key.ttl.ms"
TOPIC_TRACKING_ENABLE = "topic.tracking.enable"
TOPIC_TRACKING_ALLOW_RESET = "topic.tracking.allow.reset"
CONNECTOR_CLIENT_POLICY = client_overrides.POLICY
CONNECTOR_CLIENT_ALLOWLIST = client_overrides.ALLOWLIST

_CONNECT = "Connect"
_REST = "REST"
_GROUP = "Group membership"
_STORAGE = "Internal topics"


#: The one value ``connect.protocol`` takes: Java's default, ``sessioned`` (coordination/connect_protocol.py).
JAVA_GROUP_PROTOCOL = "sessioned"
#: Java's other protocols, refused by name: why each cannot be offered.
_REFUSED_GROUP_PROTOCOLS = {
    "compatible": "Java's 'compatible' protocol has no request signing, which every member here requires",
    "default": "Java's 'default' (eager) protocol revokes all work at every rebalance, which members here do not do",
}


def check_group_protocol(name: str, value: Any) -> None:
    """``connect.protocol``: unset, or Java's ``sessioned``; ``compatible`` and ``default`` refused by name."""
    if value is None or str(value).strip().lower() in ("", JAVA_GROUP_PROTOCOL):
        return
    why = _REFUSED_GROUP_PROTOCOLS.get(str(value).strip().lower(), "only 'sessioned' is supported")
    raise ConfigError(f"Invalid value {value!r} for configuration {name}: {why}; set it to 'sessioned' (Java's "
                      f"default) or delete the key", name)


def _rf(name: str, topic: str) -> ConfigKey:
    return ConfigKey(name, Type.INT, 3, Importance.LOW,
                     f"Replication factor of the {topic} topic when created; -1 means the broker default.",
                     _rf_valid, _STORAGE)


def _rf_valid(name: str, value: Any) -> None:
    if value is not None and value != -1 and value < 1:
        raise ConfigError(f"Invalid value {value} for configuration {name}: must be at least 1 or -1", name)


_rf_valid.__doc__ = "positive number, or -1 to use the broker's default"


DISTRIBUTED_CONFIG_DEF = ConfigDef([
    ConfigKey(GROUP_ID, Type.STRING, importance=Importance.HIGH, validator=non_empty_string, group=_GROUP,
              doc="A unique string that identifies the Connect cluster group this worker belongs to."),
    ConfigKey(BOOTSTRAP_SERVERS, Type.LIST, ["localhost:9092"], Importance.HIGH,
              "host:port pairs of the Kafka cluster that holds the internal topics and receives the data.",
              group=_CONNECT),
    ConfigKey(CLIENT_ID, Type.STRING, "", Importance.LOW,
              "Prefix of the client.id of the worker's internal clients; empty derives it from group.id.",
              group=_CONNECT),
    ConfigKey(CONFIG_TOPIC, Type.STRING, importance=Importance.HIGH, validator=non_empty_string,
              group=_STORAGE, doc="The compacted single-partition topic of connector and task configs."),
    _rf(CONFIG_RF, "configuration storage"),
    ConfigKey(OFFSET_TOPIC, Type.STRING, importance=Importance.HIGH, validator=non_empty_string,
              group=_STORAGE, doc="The compacted topic that stores source connector offsets."),
    _rf(OFFSET_RF, "offset storage"),
    ConfigKey(OFFSET_PARTITIONS, Type.INT, 25, Importance.LOW,
              "Partitions of the offset storage topic when it is created.", at_least(1), _STORAGE),
    ConfigKey(STATUS_TOPIC, Type.STRING, importance=Importance.HIGH, validator=non_empty_string,
              group=_STORAGE, doc="The compacted topic that stores connector and task statuses."),
    _rf(STATUS_RF, "status storage"),
    ConfigKey(STATUS_PARTITIONS, Type.INT, 5, Importance.LOW,
              "Partitions of the status storage topic when it is created.", at_least(1), _STORAGE),
    ConfigKey(OFFSET_FLUSH_INTERVAL_MS, Type.LONG, 60000, Importance.LOW,
              "Interval between source offset commits: the at-least-once replay window after a crash.",
              at_least(0), _CONNECT),
    ConfigKey(OFFSET_FLUSH_TIMEOUT_MS, Type.LONG, 5000, Importance.LOW,
              "How long an offset commit waits for outstanding records before it is cancelled.",
              at_least(0), _CONNECT),
    ConfigKey(LISTENERS, Type.LIST, ["http://:8083"], Importance.LOW,
              "Comma-separated URIs the REST API listens on (http:// or https:// with listeners.https.ssl.*); "
              "port 0 picks a free port.",
              group=_REST),
    ConfigKey(ADVERTISED_HOST, Type.STRING, None, Importance.LOW,
              "Host name given to other workers (and used in the worker id); default: the listener's host.",
              group=_REST),
    ConfigKey(ADVERTISED_PORT, Type.INT, None, Importance.LOW,
              "Port given to other workers; default: the bound listener port.", group=_REST),
    ConfigKey(ADVERTISED_LISTENER, Type.STRING, None, Importance.LOW,
              "Protocol (http or https) given to other workers; default: the listener's.", group=_REST),
    ConfigKey(REST_REQUEST_TIMEOUT_MS, Type.LONG, 90000, Importance.LOW,
              "How long a REST request waits for the herder before answering 500 'Request timed out'.",
              at_least(1), _REST),
    ConfigKey(SCHEDULED_REBALANCE_MAX_DELAY_MS, Type.INT, 300000, Importance.LOW,
              "How long the leader holds the work of a worker that shut down cleanly (a rolling restart) "
              "before reassigning it; a worker that joins empty meanwhile gets it at once.",
              at_least(0), _GROUP),
    ConfigKey(SCHEDULED_REBALANCE_CRASH_DELAY_MS, Type.INT, 0, Importance.LOW,
              "How long the leader holds the work of a worker that left without stopping it (crash, kill -9, "
              "lost machine or network: its statuses still say RUNNING) before reassigning it. Not in Java "
              "Connect, which holds all lost work for scheduled.rebalance.max.delay.ms; set both to the same "
              "value for Java's behaviour.",
              at_least(0), _GROUP),
    ConfigKey(SESSION_TIMEOUT_MS, Type.INT, 10000, Importance.HIGH,
              "Group session timeout: a worker silent for this long is removed from the group.",
              at_least(1), _GROUP),
    ConfigKey(HEARTBEAT_INTERVAL_MS, Type.INT, 1000, Importance.HIGH,
              "Expected time between heartbeats to the group coordinator. 1000 (Java Connect: 3000): a "
              "surviving worker hears of a rebalance at its next heartbeat, so a crashed worker's work moves "
              "within session.timeout.ms + 1 s instead of + 3 s; it costs one heartbeat a second per worker. "
              "Each member's JoinGroup carries its own value: a Java worker in the group keeps its 3000.",
              at_least(1), _GROUP),
    ConfigKey(REBALANCE_TIMEOUT_MS, Type.INT, 60000, Importance.HIGH,
              "How long each worker may take to join the group during a rebalance.", at_least(1), _GROUP),
    ConfigKey(CONNECT_PROTOCOL, Type.STRING, None, Importance.LOW,
              "The group protocol: 'sessioned', Java Connect's default (KIP-507 signed requests), byte for byte, "
              "so that this worker shares a group with Java Connect or MirrorMaker 2 workers, leads it or follows a "
              "Java leader (docs/migration.md). The only value: Java's 'compatible' and 'default' are refused, and "
              "a Java worker set to either is refused by the group (INCONSISTENT_GROUP_PROTOCOL).",
              check_group_protocol, _GROUP),
    ConfigKey(WORKER_SYNC_TIMEOUT_MS, Type.INT, 3000, Importance.MEDIUM,
              "How long a newly elected leader waits to fence the previous leader's config writer and catch "
              "up with the config topic; when it cannot, it retries on its next config write.",
              at_least(1), _GROUP),
    ConfigKey(EXACTLY_ONCE_SOURCE_SUPPORT, Type.STRING, "disabled", Importance.HIGH,
              "Exactly-once source support (KIP-618). 'enabled': every source task writes its records and "
              "their source offsets in one transaction on the target (transactional.id "
              "<group.id>-<connector>-<task>), so a crash never duplicates; the target cluster must support "
              "transactions. 'preparing' (the first step of a rolling upgrade: the leader fences the previous "
              "leader's config writes, as this runtime always does) and 'disabled' deliver at least once.",
              one_of("disabled", "preparing", "enabled"), _CONNECT),
    ConfigKey(CONNECTOR_CLIENT_POLICY, Type.STRING, client_overrides.POLICY_DEFAULT, Importance.MEDIUM,
              "Which client settings connectors may override with producer.override.*, consumer.override.* "
              "and admin.override.*: Allowlist (the default, KIP-1188: the keys of "
              "connector.client.config.override.allowlist), All (any, Connect's default before; a caller "
              "could then point a connector at another cluster or principal), None, or Principal "
              "(sasl.jaas.config, sasl.mechanism, security.protocol).",
              client_overrides.validate_policy_name, _CONNECT),
    ConfigKey(CONNECTOR_CLIENT_ALLOWLIST, Type.LIST, list(client_overrides.ALLOWLIST_DEFAULT), Importance.MEDIUM,
              "Client settings connectors may override under the Allowlist policy (KIP-1188). The default "
              "lists tuning keys only (batching, fetching, timeouts, buffers; no host, principal, file or "
              "class); empty: none, Kafka's default.", group=_CONNECT),
    ConfigKey(plugin_allowlist.PLUGIN_ALLOWLIST, Type.LIST, [], Importance.HIGH,
              plugin_allowlist.PLUGIN_ALLOWLIST_DOC, group=_CONNECT),
    ConfigKey(CONFIG_PROVIDERS, Type.LIST, [], Importance.LOW,
              "Names of config providers resolving ${provider:path:key} placeholders.", group=_CONNECT),
    ConfigKey(TASK_SHUTDOWN_TIMEOUT_MS, Type.LONG, 5000, Importance.LOW,
              "How long to wait for tasks to stop gracefully.", at_least(0), _CONNECT),
    ConfigKey(INTER_WORKER_KEY_TTL_MS, Type.INT, 3600000, Importance.LOW,
              "How long the leader uses one session key (KIP-507) for signed internal requests before "
              "writing a new one.", at_least(0), _GROUP),
    ConfigKey(TOPIC_TRACKING_ENABLE, Type.BOOLEAN, True, Importance.LOW,
              "Track the topics each connector produces to (KIP-558): tasks record them in the status topic "
              "and GET /connectors/<c>/topics lists them; false answers that endpoint with 403.",
              group=_CONNECT),
    ConfigKey(TOPIC_TRACKING_ALLOW_RESET, Type.BOOLEAN, True, Importance.LOW,
              "Whether PUT /connectors/<c>/topics/reset may forget a connector's active topics; false "
              "answers it with 403.", group=_CONNECT),
]).merge(REST_SECURITY_CONFIG_DEF)

#: Worker settings that are not client settings: kept away from the client factory (which would log
#: each as "not a librdkafka property"). Group timeouts belong to the membership client, not to these.
_WORKER_ONLY_KEYS = DISTRIBUTED_CONFIG_DEF.names() - {BOOTSTRAP_SERVERS, CLIENT_ID}
_WORKER_ONLY_PREFIXES = ("config.providers.", "rest.", "key.converter", "value.converter", "header.converter",
                         "internal.", "plugin.", "admin.listeners", "worker.", "inter.worker.", "metric",
                         "connector.client.config.override.", "topic.creation.", "access.control.",
                         "response.http.headers.", "listeners.", "java.security.")


@dataclass(frozen=True)
class Listener:
    """One parsed ``listeners`` entry: ``http://host:port`` (empty host = all interfaces)."""

    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, uri: str) -> Listener:
        parts = urlsplit(uri.strip())
        if parts.scheme not in ("http", "https"):
            raise ConfigError(f"Invalid value {uri!r} for configuration {LISTENERS}: expected http://host:port",
                              LISTENERS)
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is None:
            raise ConfigError(f"Invalid value {uri!r} for configuration {LISTENERS}: a port is required",
                              LISTENERS)
        return cls(parts.scheme, parts.hostname or "", port)


class DistributedWorkerConfig:
    """A parsed, validated worker config (provider placeholders must already be resolved)."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self.originals: dict[str, str] = dict(props)
        self.values: dict[str, Any] = DISTRIBUTED_CONFIG_DEF.parse(props)
        for prefix in ("", "producer.", "consumer.", "admin."):  # the clients' ssl.* / sasl.* keys
            security_keys.check(props, prefix)
        # the group membership client gets the admin client's keys: what it cannot apply is refused here
        refused = security_keys.group_client_refusals(self.client_properties("admin"))
        if refused:
            key, why = next(iter(refused.items()))
            raise security_keys.group_client_error(f"admin.{key}" if f"admin.{key}" in props else key, why)
        self.listeners = [Listener.parse(uri) for uri in self.values[LISTENERS]]
        if not self.listeners:
            raise ConfigError(f"Configuration {LISTENERS} must name at least one listener", LISTENERS)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def override_policy(self) -> OverridePolicy:
        """``connector.client.config.override.policy`` (with its allowlist): what connectors may override."""
        return client_overrides.parse_policy(self.values[CONNECTOR_CLIENT_POLICY],
                                             self.values[CONNECTOR_CLIENT_ALLOWLIST])

    @property
    def exactly_once_source_enabled(self) -> bool:
        """``exactly.once.source.support=enabled``: source tasks run transactional (KIP-618)."""
        return str(self.values[EXACTLY_ONCE_SOURCE_SUPPORT]).strip().lower() == "enabled"

    @property
    def group_id(self) -> str:
        return str(self.values[GROUP_ID])

    @property
    def client_id_prefix(self) -> str:
        return str(self.values[CLIENT_ID] or f"connect-{self.group_id}")

    def client_config(self, role: ClientKind, suffix: str = "") -> dict[str, str]:
        """librdkafka config for one client kind, from the worker's Java-style properties.

        Top-level keys apply to every client and ``<role>.`` keys override them (Java's rule); the
        client factory renames or drops what librdkafka does not understand. ``suffix`` is appended
        to the client id so that the worker's clients are told apart in broker logs.
        """
        return factory.translate(self.client_properties(role, suffix), role)

    def client_properties(self, role: ClientKind, suffix: str = "") -> dict[str, str]:
        """The Java properties :meth:`client_config` translates (what a connector's overrides merge into)."""
        props = {k: v for k, v in self.originals.items()
                 if k not in _WORKER_ONLY_KEYS and not k.startswith(_WORKER_ONLY_PREFIXES)}
        props[BOOTSTRAP_SERVERS] = ",".join(self.values[BOOTSTRAP_SERVERS])
        props[CLIENT_ID] = self.client_id_prefix + (f"-{suffix}" if suffix else "")
        return factory.client_properties(props, role + ".")

    def producer_config(self, suffix: str = "") -> dict[str, str]:
        return self.client_config("producer", suffix)

    def consumer_config(self, suffix: str = "") -> dict[str, str]:
        return self.client_config("consumer", suffix)

    def admin_config(self, suffix: str = "") -> dict[str, str]:
        return self.client_config("admin", suffix)

    def group_client_config(self, suffix: str = "") -> dict[str, Any]:
        """The group membership client's config (kafka-python keywords), from the Java properties the admin
        client is built from, through the same TLS and SASL translation."""
        # Imported here: kafka-python is loaded by a worker that joins a group, not by every reader of the
        # worker config (``mirror config show``, the config checks).
        from connect_runtime.clients.group_client import group_client_config

        return group_client_config(self.client_properties("admin", suffix))


def worker_id(config: DistributedWorkerConfig, bound_port: int) -> str:
    """Connect's worker id: ``<advertised host>:<advertised port>`` (what status records carry).

    ``bound_port`` is the port the REST server actually bound (it differs from the listener's when
    the listener asks for port 0).
    """
    listener = config.listeners[0]
    host = config[ADVERTISED_HOST] or listener.host or socket.getfqdn()
    port = config[ADVERTISED_PORT] or bound_port
    return f"{host}:{port}"


def advertised_url(config: DistributedWorkerConfig, bound_port: int) -> str:
    """The URL other workers use to reach this one (forwarding to the leader)."""
    scheme = config[ADVERTISED_LISTENER] or config.listeners[0].scheme
    return f"{scheme}://{worker_id(config, bound_port)}"
