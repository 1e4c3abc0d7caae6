"""The configuration properties librdkafka 2.16.0 accepts, by client kind.

Generated from librdkafka's own property table (``rd_kafka_conf_properties_show``, the source of its
CONFIGURATION.md) of the library bundled with confluent-kafka 2; regenerate when
upgrading. A static set, because asking librdkafka at run time means constructing a client per key.
Both global and topic-level properties are listed: confluent-kafka accepts topic properties at top level.
"""

from __future__ import annotations

#: Properties valid for producers and consumers alike (C/P ``*``).
COMMON: frozenset[str] = frozenset({
    "allow.auto.create.topics", "api.version.fallback.ms", "api.version.request",
    "api.version.request.timeout.ms", "background_event_cb", "bootstrap.servers", "broker.address.family",
    "broker.address.ttl", "broker.version.fallback", "builtin.features", "client.dns.lookup", "client.id",
    "client.rack", "closesocket_cb", "connect_cb", "connections.max.idle.ms", "debug",
    "default_topic_conf", "enable.metrics.push", "enable.random.seed", "enable.sparse.connections",
    "enable.sasl.oauthbearer.unsecure.jwt", "enable.ssl.certificate.verification", "enabled_events",
    "error_cb", "https.ca.location", "https.ca.pem", "interceptors", "internal.termination.signal",
    "log.connection.close", "log.queue", "log.thread.name", "log_cb", "log_level", "max.in.flight",
    "max.in.flight.requests.per.connection", "message.copy.max.bytes", "message.max.bytes",
    "metadata.broker.list", "metadata.max.age.ms", "metadata.recovery.rebootstrap.trigger.ms",
    "metadata.recovery.strategy", "oauthbearer_token_refresh_cb", "opaque", "open_cb",
    "plugin.library.paths", "receive.message.max.bytes", "reconnect.backoff.jitter.ms",
    "reconnect.backoff.max.ms", "reconnect.backoff.ms", "resolve_cb", "retry.backoff.max.ms",
    "retry.backoff.ms", "sasl.kerberos.keytab", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal", "sasl.kerberos.service.name",
    "sasl.mechanism", "sasl.mechanisms", "sasl.oauthbearer.assertion.algorithm",
    "sasl.oauthbearer.assertion.claim.aud", "sasl.oauthbearer.assertion.claim.exp.seconds",
    "sasl.oauthbearer.assertion.claim.iss", "sasl.oauthbearer.assertion.claim.jti.include",
    "sasl.oauthbearer.assertion.claim.nbf.seconds", "sasl.oauthbearer.assertion.claim.sub",
    "sasl.oauthbearer.assertion.file", "sasl.oauthbearer.assertion.jwt.template.file",
    "sasl.oauthbearer.assertion.private.key.file", "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem", "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret", "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config", "sasl.oauthbearer.extensions",
    "sasl.oauthbearer.grant.type", "sasl.oauthbearer.metadata.authentication.type",
    "sasl.oauthbearer.method", "sasl.oauthbearer.scope", "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url", "sasl.password", "sasl.username", "security.protocol",
    "socket.blocking.max.ms", "socket.connection.setup.timeout.ms", "socket.keepalive.enable",
    "socket.max.fails", "socket.nagle.disable", "socket.receive.buffer.bytes", "socket.send.buffer.bytes",
    "socket.timeout.ms", "socket_cb", "ssl.ca.certificate.stores", "ssl.ca.location", "ssl.ca.pem",
    "ssl.certificate.location", "ssl.certificate.pem", "ssl.certificate.verify_cb", "ssl.cipher.suites",
    "ssl.crl.location", "ssl.curves.list", "ssl.endpoint.identification.algorithm", "ssl.engine.id",
    "ssl.engine.location", "ssl.key.location", "ssl.key.password", "ssl.key.pem", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.providers", "ssl.sigalgs.list", "ssl_ca", "ssl_certificate",
    "ssl_engine_callback_data", "ssl_key", "statistics.interval.ms", "stats_cb", "throttle_cb",
    "topic.blacklist", "topic.metadata.propagation.max.ms", "topic.metadata.refresh.fast.cnt",
    "topic.metadata.refresh.fast.interval.ms", "topic.metadata.refresh.interval.ms",
    "topic.metadata.refresh.sparse",
})

#: Consumer-only properties (C/P ``C``).
CONSUMER_ONLY: frozenset[str] = frozenset({
    "auto.commit.enable", "auto.commit.interval.ms", "auto.offset.reset", "check.crcs",
    "consume.callback.max.messages", "consume_cb", "coordinator.query.interval.ms", "enable.auto.commit",
    "enable.auto.offset.store", "enable.partition.eof", "fetch.error.backoff.ms", "fetch.max.bytes",
    "fetch.message.max.bytes", "fetch.min.bytes", "fetch.queue.backoff.ms", "fetch.wait.max.ms",
    "group.id", "group.instance.id", "group.protocol", "group.protocol.type", "group.remote.assignor",
    "heartbeat.interval.ms", "isolation.level", "max.partition.fetch.bytes", "max.poll.interval.ms",
    "max.poll.records", "offset.store.method", "offset.store.path", "offset.store.sync.interval.ms",
    "offset_commit_cb", "partition.assignment.strategy", "queued.max.messages.kbytes",
    "queued.min.messages", "rebalance_cb", "session.timeout.ms", "share.acknowledgement.mode",
})

#: Producer-only properties (C/P ``P``).
PRODUCER_ONLY: frozenset[str] = frozenset({
    "acks", "batch.num.messages", "batch.size", "compression.codec", "compression.level",
    "compression.type", "delivery.report.only.error", "delivery.timeout.ms", "dr_cb", "dr_msg_cb",
    "enable.gapless.guarantee", "enable.idempotence", "linger.ms", "message.send.max.retries",
    "message.timeout.ms", "msg_order_cmp", "partitioner", "partitioner_cb", "produce.offset.report",
    "queue.buffering.backpressure.threshold", "queue.buffering.max.kbytes", "queue.buffering.max.messages",
    "queue.buffering.max.ms", "queuing.strategy", "request.required.acks", "request.timeout.ms", "retries",
    "sticky.partitioning.linger.ms", "transaction.timeout.ms", "transactional.id",
})

#: Keys the Python client itself consumes (callbacks and its own options), not passed to librdkafka.
PYTHON_CLIENT: frozenset[str] = frozenset({
    "error_cb", "throttle_cb", "stats_cb", "oauth_cb", "on_delivery", "on_commit", "logger",
})
