"""Which configuration keys exist, and at which level of ``mm2.properties`` MM2 applies each.

The model :mod:`mirror.maker.config_lint` checks a file against. MM2's four derivations (the driver's
``MirrorMakerConfig``) decide where a key is read:

* top level: the driver's own keys; client connection and security keys (a fallback for every
  cluster); the connectors' declared keys (every flow); and worker keys only under the prefixes of
  :data:`~mirror.config.mirror_maker_config.WORKER_PREFIXES` (``offset.storage*``, ``task*``...);
* ``<alias>.``: connection and security keys, ``<client>.`` client keys, and worker keys of the flows
  into that cluster;
* ``<source>-><target>.``: connector keys (unfiltered), connector-level client keys and overrides.

Known keys are this project's ConfigDefs plus every key of Kafka's own ConfigDefs (the ``KAFKA_*`` sets):
a real Kafka key must never be reported as a typo, even where this port does not use it. Their names were
taken from the ``define(...)`` calls of Kafka's ``ProducerConfig``, ``ConsumerConfig``,
``AdminClientConfig``, ``SslConfigs``, ``SaslConfigs``, ``DistributedConfig``, ``WorkerConfig``,
``RestServerConfig``, ``ConnectorConfig``, ``SourceConnectorConfig``, MirrorMaker's configs and
``TopicConfig`` (apache/kafka, 4.0 line), plus the keys added since (the OAuth ``sasl.oauthbearer.*`` keys
of KIP-1139, ``metadata.recovery.rebootstrap.trigger.ms``, ``share.acknowledgement.mode``); the project's
own ConfigDefs are added to them below, where each set is used.
"""

from __future__ import annotations

from connect_runtime.api.rest_config import REST_SECURITY_CONFIG_DEF
from connect_runtime.clients import factory
from connect_runtime.clients import librdkafka_properties as rdkafka
from connect_runtime.clients.factory import ClientKind
from connect_runtime.runtime.worker_config import DISTRIBUTED_CONFIG_DEF
from mirror.config.client_keys import CLIENT_CONFIG_NAMES
from mirror.config.mirror_maker_config import ALL_CONNECTOR_CONFIG_NAMES, CONFIG_DEF, WORKER_PREFIXES
from mirror.health.collector import REFRESH_INTERVAL
from mirror.health.flow_health import THRESHOLD_KEYS

# ---- Apache Kafka 4.x's configuration keys, by kind (names only) ----------------------------------------


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Client connection security: ``security.protocol``, ``security.providers``, every client ``ssl.*`` and ``sasl.*``.
KAFKA_SECURITY: frozenset[str] = _names("""
    sasl.client.callback.handler.class sasl.jaas.config sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.service.name sasl.kerberos.ticket.renew.jitter
    sasl.kerberos.ticket.renew.window.factor sasl.login.callback.handler.class sasl.login.class
    sasl.login.connect.timeout.ms sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
    sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
    sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms sasl.login.retry.backoff.ms
    sasl.mechanism sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
    sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
    sasl.oauthbearer.assertion.claim.jti.include sasl.oauthbearer.assertion.claim.nbf.seconds
    sasl.oauthbearer.assertion.claim.sub sasl.oauthbearer.assertion.file
    sasl.oauthbearer.assertion.private.key.file sasl.oauthbearer.assertion.private.key.passphrase
    sasl.oauthbearer.assertion.template.file sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.clock.skew.seconds
    sasl.oauthbearer.expected.audience sasl.oauthbearer.expected.issuer
    sasl.oauthbearer.header.urlencode sasl.oauthbearer.jwks.endpoint.refresh.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms sasl.oauthbearer.jwks.endpoint.retry.backoff.ms
    sasl.oauthbearer.jwks.endpoint.url sasl.oauthbearer.jwt.retriever.class
    sasl.oauthbearer.jwt.validator.class sasl.oauthbearer.scope sasl.oauthbearer.scope.claim.name
    sasl.oauthbearer.sub.claim.name sasl.oauthbearer.token.endpoint.url security.protocol
    security.providers ssl.cipher.suites ssl.enabled.protocols ssl.endpoint.identification.algorithm
    ssl.engine.factory.class ssl.key.password ssl.keymanager.algorithm ssl.keystore.certificate.chain
    ssl.keystore.key ssl.keystore.location ssl.keystore.password ssl.keystore.type ssl.protocol
    ssl.provider ssl.secure.random.implementation ssl.trustmanager.algorithm ssl.truststore.certificates
    ssl.truststore.location ssl.truststore.password ssl.truststore.type
""")

#: ``ProducerConfig`` (security keys aside).
KAFKA_PRODUCER: frozenset[str] = _names("""
    acks batch.size bootstrap.servers buffer.memory client.dns.lookup client.id compression.gzip.level
    compression.lz4.level compression.type compression.zstd.level connections.max.idle.ms
    delivery.timeout.ms enable.idempotence enable.metrics.push interceptor.classes key.serializer
    linger.ms max.block.ms max.in.flight.requests.per.connection max.request.size metadata.max.age.ms
    metadata.max.idle.ms metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy
    metric.reporters metrics.num.samples metrics.recording.level metrics.sample.window.ms
    partitioner.adaptive.partitioning.enable partitioner.availability.timeout.ms partitioner.class
    partitioner.ignore.keys receive.buffer.bytes reconnect.backoff.max.ms reconnect.backoff.ms
    request.timeout.ms retries retry.backoff.max.ms retry.backoff.ms send.buffer.bytes
    socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms transaction.timeout.ms
    transactional.id value.serializer
""")

#: ``ConsumerConfig`` (security keys aside).
KAFKA_CONSUMER: frozenset[str] = _names("""
    allow.auto.create.topics auto.commit.interval.ms auto.offset.reset bootstrap.servers check.crcs
    client.dns.lookup client.id client.rack connections.max.idle.ms default.api.timeout.ms
    enable.auto.commit enable.metrics.push exclude.internal.topics fetch.max.bytes fetch.max.wait.ms
    fetch.min.bytes group.id group.instance.id group.protocol group.remote.assignor
    heartbeat.interval.ms interceptor.classes internal.leave.group.on.close
    internal.throw.on.fetch.stable.offset.unsupported isolation.level key.deserializer
    max.partition.fetch.bytes max.poll.interval.ms max.poll.records metadata.max.age.ms
    metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy metric.reporters
    metrics.num.samples metrics.recording.level metrics.sample.window.ms partition.assignment.strategy
    receive.buffer.bytes reconnect.backoff.max.ms reconnect.backoff.ms request.timeout.ms
    retry.backoff.max.ms retry.backoff.ms send.buffer.bytes session.timeout.ms
    share.acknowledgement.mode socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms
    value.deserializer
""")

#: ``AdminClientConfig`` (security keys aside).
KAFKA_ADMIN: frozenset[str] = _names("""
    bootstrap.servers client.dns.lookup client.id connections.max.idle.ms default.api.timeout.ms
    enable.metrics.push metadata.max.age.ms metadata.recovery.rebootstrap.trigger.ms
    metadata.recovery.strategy metric.reporters metrics.num.samples metrics.recording.level
    metrics.sample.window.ms receive.buffer.bytes reconnect.backoff.max.ms reconnect.backoff.ms
    request.timeout.ms retries retry.backoff.max.ms retry.backoff.ms send.buffer.bytes
    socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms
""")

#: Connect's ``DistributedConfig`` and ``WorkerConfig`` (a distributed worker's keys).
KAFKA_WORKER: frozenset[str] = _names("""
    bootstrap.servers client.dns.lookup client.id config.providers
    config.storage.replication.factor config.storage.topic connect.protocol
    connections.max.idle.ms connector.client.config.override.policy exactly.once.source.support group.id
    header.converter heartbeat.interval.ms inter.worker.key.generation.algorithm inter.worker.key.size
    inter.worker.key.ttl.ms inter.worker.signature.algorithm inter.worker.verification.algorithms
    internal.key.converter internal.value.converter key.converter metadata.max.age.ms
    metadata.recovery.strategy metric.reporters metrics.num.samples metrics.recording.level
    metrics.sample.window.ms offset.flush.interval.ms offset.flush.timeout.ms offset.storage.partitions
    offset.storage.replication.factor offset.storage.topic plugin.discovery plugin.path
    rebalance.timeout.ms receive.buffer.bytes reconnect.backoff.max.ms reconnect.backoff.ms
    request.timeout.ms retry.backoff.max.ms retry.backoff.ms scheduled.rebalance.max.delay.ms
    send.buffer.bytes session.timeout.ms socket.connection.setup.timeout.max.ms
    socket.connection.setup.timeout.ms status.storage.partitions status.storage.replication.factor
    status.storage.topic task.shutdown.graceful.timeout.ms topic.creation.enable
    topic.tracking.allow.reset topic.tracking.enable value.converter worker.sync.timeout.ms
    worker.unsync.backoff.ms
""")

#: Connect's ``RestServerConfig`` (the listener's own ``ssl.*`` aside).
KAFKA_REST: frozenset[str] = _names("""
    access.control.allow.methods access.control.allow.origin admin.listeners listeners
    response.http.headers.config rest.advertised.host.name rest.advertised.listener rest.advertised.port
    rest.extension.classes ssl.client.auth
""")

#: Connect's ``ConnectorConfig``, ``SourceConnectorConfig``; MM2's connector configs, filters, ``MirrorClientConfig``.
KAFKA_CONNECTOR: frozenset[str] = _names("""
    admin.timeout.ms bootstrap.servers checkpoints.topic.replication.factor config.action.reload
    config.properties.exclude config.property.filter.class connector.class consumer.poll.timeout.ms
    enabled errors.log.enable errors.log.include.messages errors.retry.delay.max.ms errors.retry.timeout
    errors.tolerance exactly.once.support forwarding.admin.class group.filter.class groups
    groups.exclude header.converter heartbeats.topic.replication.factor key.converter metric.reporters
    name offset.lag.max offsets.storage.topic predicates replication.factor
    replication.policy.class replication.policy.internal.topic.separator.enabled
    replication.policy.separator source.cluster.alias target.cluster.alias tasks.max tasks.max.enforce
    topic.creation.groups topics topics.exclude transaction.boundary transaction.boundary.interval.ms
    transforms use.defaults.from value.converter
""")

#: ``MirrorMakerConfig``'s own keys.
KAFKA_DRIVER: frozenset[str] = _names("""
    clusters config.providers dedicated.mode.enable.internal.rest
""")

#: ``TopicConfig``: topic-level settings.
KAFKA_TOPIC: frozenset[str] = _names("""
    cleanup.policy compression.gzip.level compression.lz4.level compression.type compression.zstd.level
    delete.retention.ms file.delete.delay.ms flush.messages flush.ms index.interval.bytes
    local.retention.bytes local.retention.ms max.compaction.lag.ms max.message.bytes
    message.downconversion.enable message.format.version message.timestamp.after.max.ms
    message.timestamp.before.max.ms message.timestamp.difference.max.ms message.timestamp.type
    min.cleanable.dirty.ratio min.compaction.lag.ms min.insync.replicas preallocate
    remote.log.copy.disable remote.log.delete.on.disable remote.storage.enable retention.bytes
    retention.ms segment.bytes segment.index.bytes segment.jitter.ms segment.ms
    unclean.leader.election.enable
""")

# ---- the levels of mm2.properties ---------------------------------------------------------------------

CLIENT_KINDS: tuple[ClientKind, ...] = ("consumer", "producer", "admin")

#: Connection and security keys: MM2 copies them from ``<alias>.`` (or the top level) into every client.
CONNECTION: frozenset[str] = frozenset(CLIENT_CONFIG_NAMES | KAFKA_SECURITY)

#: The worker keys of a Connect distributed worker (this runtime's and Java's).
WORKER: frozenset[str] = frozenset(DISTRIBUTED_CONFIG_DEF.names() | KAFKA_WORKER) - CONNECTION
#: Worker keys this runtime reads (the others are Java Connect keys with no effect here).
WORKER_USED: frozenset[str] = frozenset(DISTRIBUTED_CONFIG_DEF.names())

#: The health thresholds (``mirror status``, /health, the status page): top level, or per flow (wins).
HEALTH_THRESHOLDS: frozenset[str] = frozenset(THRESHOLD_KEYS)

#: Keys only the driver reads, from the top level: its own, the REST server's and its security, health.
DRIVER: frozenset[str] = frozenset(
    (CONFIG_DEF.names() | KAFKA_DRIVER | KAFKA_REST | REST_SECURITY_CONFIG_DEF.names()
     | HEALTH_THRESHOLDS | {REFRESH_INTERVAL}) - CONNECTION)
DRIVER_PREFIXES = ("config.providers.", "listeners.https.")

#: Connector keys: declared by the three connectors, or by Java's connector configs.
CONNECTOR: frozenset[str] = frozenset(ALL_CONNECTOR_CONFIG_NAMES | KAFKA_CONNECTOR) - CONNECTION
#: Prefixes the connectors read from their config, so only a flow key (unfiltered) can carry them.
CONNECTOR_PREFIXES = ("transforms.", "predicates.", "producer.override.", "consumer.override.", "admin.override.",
                      "source.cluster.", "target.cluster.", "source.consumer.", "source.producer.", "source.admin.",
                      "target.consumer.", "target.producer.", "target.admin.", "replication.policy.")

TOPIC: frozenset[str] = KAFKA_TOPIC

_JAVA_CLIENT = {"producer": KAFKA_PRODUCER, "consumer": KAFKA_CONSUMER, "admin": KAFKA_ADMIN}
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
