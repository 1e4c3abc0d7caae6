"""The configuration keys of Apache Kafka 4.x, by kind: names only, for ``mm2.properties`` checks.

A real Kafka key must never be reported as a typo, even where this port does not use it, so the
checks of :mod:`mirror.maker.config_lint` know every key Kafka's own ConfigDefs define, not only the
ones this project's ConfigDefs declare. The names were taken from the ``define(...)`` calls of Kafka's
``ProducerConfig``, ``ConsumerConfig``, ``AdminClientConfig``, ``SslConfigs``, ``SaslConfigs``,
``DistributedConfig``, ``WorkerConfig``, ``RestServerConfig``, ``ConnectorConfig``,
``SourceConnectorConfig``, MirrorMaker's configs and ``TopicConfig`` (apache/kafka, 4.0 line), plus the
keys added since (the OAuth ``sasl.oauthbearer.*`` keys of KIP-1139, ``metadata.recovery.rebootstrap.trigger.ms``,
``share.acknowledgement.mode``). The project's own ConfigDefs are added to these sets where they are used.
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Client connection security: ``security.protocol``, ``security.providers``, every client ``ssl.*`` and ``sasl.*``.
SECURITY: frozenset[str] = _names("""
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
PRODUCER: frozenset[str] = _names("""
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
CONSUMER: frozenset[str] = _names("""
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
ADMIN: frozenset[str] = _names("""
    bootstrap.servers client.dns.lookup client.id connections.max.idle.ms default.api.timeout.ms
    enable.metrics.push metadata.max.age.ms metadata.recovery.rebootstrap.trigger.ms
    metadata.recovery.strategy metric.reporters metrics.num.samples metrics.recording.level
    metrics.sample.window.ms receive.buffer.bytes reconnect.backoff.max.ms reconnect.backoff.ms
    request.timeout.ms retries retry.backoff.max.ms retry.backoff.ms send.buffer.bytes
    socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms
""")

#: Connect's ``DistributedConfig`` and ``WorkerConfig`` (a distributed worker's keys).
WORKER: frozenset[str] = _names("""
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
REST: frozenset[str] = _names("""
    access.control.allow.methods access.control.allow.origin admin.listeners listeners
    response.http.headers.config rest.advertised.host.name rest.advertised.listener rest.advertised.port
    rest.extension.classes ssl.client.auth
""")

#: Connect's ``ConnectorConfig``, ``SourceConnectorConfig``; MM2's connector configs, filters, ``MirrorClientConfig``.
CONNECTOR: frozenset[str] = _names("""
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
DRIVER: frozenset[str] = _names("""
    clusters config.providers dedicated.mode.enable.internal.rest
""")

#: ``TopicConfig``: topic-level settings.
TOPIC: frozenset[str] = _names("""
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
