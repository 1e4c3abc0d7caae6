"""Which configuration keys exist, and at which level of ``mm2.properties`` MM2 applies each.

The model :mod:`mirror.maker.config_lint` checks a file against. MM2's four derivations (the driver's
``MirrorMakerConfig``) decide where a key is read:

* top level: the driver's own keys; client connection and security keys (a fallback for every
  cluster); the connectors' declared keys (every flow); and worker keys only under the prefixes of
  :data:`~mirror.config.mirror_maker_config.WORKER_PREFIXES` (``offset.storage*``, ``task*``...);
* ``<alias>.``: connection and security keys, ``<client>.`` client keys, and worker keys of the flows
  into that cluster;
* ``<source>-><target>.``: connector keys (unfiltered), connector-level client keys and overrides.

Known keys are this project's ConfigDefs plus every key of Kafka's own ConfigDefs
(:mod:`mirror.config.kafka_keys`), so a real Kafka key is never taken for a typo.
"""

from __future__ import annotations

from connect_runtime.api.rest_config import REST_SECURITY_CONFIG_DEF
from connect_runtime.clients import factory
from connect_runtime.clients import librdkafka_properties as rdkafka
from connect_runtime.clients.factory import ClientKind
from connect_runtime.runtime.worker_config import DISTRIBUTED_CONFIG_DEF
from mirror.config import kafka_keys
from mirror.config.client_keys import CLIENT_CONFIG_NAMES
from mirror.config.mirror_maker_config import ALL_CONNECTOR_CONFIG_NAMES, CONFIG_DEF, WORKER_PREFIXES
from mirror.health.collector import REFRESH_INTERVAL
from mirror.health.flow_health import THRESHOLD_KEYS

CLIENT_KINDS: tuple[ClientKind, ...] = ("consumer", "producer", "admin")

#: Connection and security keys: MM2 copies them from ``<alias>.`` (or the top level) into every client.
CONNECTION: frozenset[str] = frozenset(CLIENT_CONFIG_NAMES | kafka_keys.SECURITY)

#: The worker keys of a Connect distributed worker (this runtime's and Java's).
WORKER: frozenset[str] = frozenset(DISTRIBUTED_CONFIG_DEF.names() | kafka_keys.WORKER) - CONNECTION
#: Worker keys this runtime reads (the others are Java Connect keys with no effect here).
WORKER_USED: frozenset[str] = frozenset(DISTRIBUTED_CONFIG_DEF.names())

#: The health thresholds (``mirror status``, /health, the status page): top level, or per flow (wins).
HEALTH_THRESHOLDS: frozenset[str] = frozenset(THRESHOLD_KEYS)

#: Keys only the driver reads, from the top level: its own, the REST server's and its security, health.
DRIVER: frozenset[str] = frozenset(
    (CONFIG_DEF.names() | kafka_keys.DRIVER | kafka_keys.REST | REST_SECURITY_CONFIG_DEF.names()
     | HEALTH_THRESHOLDS | {REFRESH_INTERVAL}) - CONNECTION)
DRIVER_PREFIXES = ("config.providers.", "listeners.https.")

#: Connector keys: declared by the three connectors, or by Java's connector configs.
CONNECTOR: frozenset[str] = frozenset(ALL_CONNECTOR_CONFIG_NAMES | kafka_keys.CONNECTOR) - CONNECTION
#: Prefixes the connectors read from their config, so only a flow key (unfiltered) can carry them.
CONNECTOR_PREFIXES = ("transforms.", "predicates.", "producer.override.", "consumer.override.", "admin.override.",
                      "source.cluster.", "target.cluster.", "source.consumer.", "source.producer.", "source.admin.",
                      "target.consumer.", "target.producer.", "target.admin.", "replication.policy.")

TOPIC: frozenset[str] = kafka_keys.TOPIC

_JAVA_CLIENT = {"producer": kafka_keys.PRODUCER, "consumer": kafka_keys.CONSUMER, "admin": kafka_keys.ADMIN}
_LIBRDKAFKA = {"producer": rdkafka.COMMON | rdkafka.PRODUCER_ONLY, "consumer": rdkafka.COMMON | rdkafka.CONSUMER_ONLY,
               "admin": rdkafka.COMMON}

# ---- keys whose loss weakens a guarantee: written where MM2 drops them, they refuse the start ----

EXACTLY_ONCE = frozenset({"exactly.once.source.support", "exactly.once.support", "transaction.boundary",
                          "transaction.boundary.interval.ms"})
COMMIT = frozenset({"offset.flush.interval.ms", "offset.flush.timeout.ms"})
REST_GUARDS = frozenset({"rest.extension.classes", "rest.basic.auth.jaas.config", "rest.config.providers.allowlist",
                         "connector.client.config.override.policy", "connector.client.config.override.allowlist"})
SECURITY: frozenset[str] = CONNECTION - {"bootstrap.servers"}
ENABLED = "enabled"


def guarantee(setting: str) -> str | None:
    """What is lost when ``setting`` is dropped, or None when nothing a user relies on is."""
    if setting in EXACTLY_ONCE:
        return "exactly-once would silently be off"
    if setting in COMMIT:
        return "source offsets would be committed every 60 s, the default: a wider replay window"
    if setting in SECURITY or setting in REST_GUARDS or setting.startswith("listeners.https."):
        return "a security setting would silently not apply"
    if setting == ENABLED:
        return "the flow would not run"
    return None


def is_driver_key(setting: str) -> bool:
    return setting in DRIVER or setting.startswith(DRIVER_PREFIXES)


def applies_at_top_level(key: str) -> bool:
    """Whether MM2 reads ``key`` written without a prefix (by the driver, every client, connector or worker)."""
    if is_driver_key(key) or key in CLIENT_CONFIG_NAMES or key in ALL_CONNECTOR_CONFIG_NAMES:
        return True
    if key.startswith(WORKER_PREFIXES):
        return (key in WORKER or key in CONNECTOR or key.startswith(("replication.policy.", "key.converter.",
                                                                     "value.converter.", "header.converter.")))
    return False


def client_key(kind: ClientKind, setting: str) -> bool:
    """A key a ``kind`` client knows: Kafka's Java name, a librdkafka name, or a security key."""
    return setting in _JAVA_CLIENT[kind] or setting in _LIBRDKAFKA[kind] or setting in CONNECTION


def client_keys(kind: ClientKind) -> frozenset[str]:
    return frozenset(_JAVA_CLIENT[kind] | _LIBRDKAFKA[kind] | CONNECTION)


def plain_client_kinds(setting: str) -> list[ClientKind]:
    """The client kinds ``setting`` is a (non-security) key of, in Kafka's or librdkafka's names."""
    return [k for k in CLIENT_KINDS if setting not in CONNECTION and client_key(k, setting)]


#: Java consumer keys librdkafka lacks that MM2's source task reads itself from its consumer config:
#: ``max.poll.records`` bounds the records one poll hands over, as in Java.
READ_BY_SOURCE_TASK = frozenset({"max.poll.records"})


def librdkafka_equivalent(kind: ClientKind, setting: str, *, source_consumer: bool = False) -> bool:
    """False for a Java client key that the client factory drops (interceptors, serializers...), unless
    it reaches MM2's source consumer, whose task reads :data:`READ_BY_SOURCE_TASK` itself."""
    if source_consumer and kind == "consumer" and setting in READ_BY_SOURCE_TASK:
        return True
    return setting in CONNECTION or factory.has_librdkafka_equivalent(setting, kind)


def split_client(setting: str) -> tuple[ClientKind | None, str]:
    """``consumer.max.poll.records`` -> (``consumer``, ``max.poll.records``); (None, setting) otherwise."""
    for kind in CLIENT_KINDS:
        if setting.startswith(kind + "."):
            return kind, setting[len(kind) + 1:]
    return None, setting


def known_anywhere(setting: str) -> bool:
    """A real key of some kind (Kafka's or this project's), whatever the level it is written at."""
    kind, rest = split_client(setting)
    if kind is not None and (client_key(kind, rest) or rest.startswith("override.")):
        return True
    return (setting in CONNECTION or setting in WORKER or is_driver_key(setting) or setting in CONNECTOR
            or setting in TOPIC or bool(plain_client_kinds(setting)) or setting.startswith(CONNECTOR_PREFIXES))
