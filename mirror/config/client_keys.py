"""Kafka client connection and security keys (``CommonClientConfigs``, ``SslConfigs``, ``SaslConfigs``).

These keys flow from a cluster's settings into every client MM2 builds for it, so the driver, the
connector configs and ``mirror config docs`` must agree on exactly which names they are: a name missing
here would not reach the clients. Defaults and documentation are Kafka's; each key's validator refuses
the values no client here can enforce (``connect_runtime.clients.security_keys``, docs/security-keys.md).
"""

from __future__ import annotations

from typing import Any

from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type, one_of
from connect_runtime.clients import security_keys

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
    + [ConfigKey(n, t, d, Importance.LOW, doc, security_keys.validator(n), group="Security")
       for n, t, d, doc in _SSL_KEYS + _SASL_KEYS]
)

#: Kafka's ``MirrorClientConfig.CLIENT_CONFIG_DEF``: the connection keys that flow between client configs.
CLIENT_CONFIG_DEF = ConfigDef(
    [ConfigKey(BOOTSTRAP_SERVERS, Type.LIST, None, Importance.HIGH,
               "A list of host/port pairs used to establish the initial connection to the Kafka cluster.")]
).merge(CLIENT_SECURITY_CONFIG_DEF)

#: Names of the client connection keys: bootstrap.servers, security.protocol, ssl.*, sasl.*.
CLIENT_CONFIG_NAMES: frozenset[str] = frozenset(CLIENT_CONFIG_DEF.names())
