"""The REST server's security keys, defined once for ``connect-distributed`` and the MM2 driver.

They live in the API layer so that both the worker config and ``mm2.properties`` (whose ConfigDef
may not import the REST package) declare, parse and document the same keys. What they do is in
:mod:`connect_runtime.rest.security`.
"""

from __future__ import annotations

from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type, at_least, one_of
from connect_runtime.api.path_allowlist import REST_ALLOWED_PATHS, REST_ALLOWED_PATHS_DOC
from connect_runtime.api.secrets import SECRETS_KEYS

REST_EXTENSION_CLASSES = "rest.extension.classes"
REST_BASIC_AUTH_JAAS_CONFIG = "rest.basic.auth.jaas.config"
REST_MUTATIONS_ALLOW_UNAUTHENTICATED = "rest.mutations.allow.unauthenticated"
REST_CONFIG_PROVIDERS_ALLOWLIST = "rest.config.providers.allowlist"
ACCESS_CONTROL_ALLOW_ORIGIN = "access.control.allow.origin"
ACCESS_CONTROL_ALLOW_METHODS = "access.control.allow.methods"
REST_READS_ALLOW_UNAUTHENTICATED = "rest.reads.allow.unauthenticated"
REST_REQUEST_MAX_BYTES = "rest.request.max.bytes"
REST_INTERNAL_REQUEST_MAX_BYTES = "rest.internal.request.max.bytes"
#: 1 MiB: a connector config is a few KiB; nothing a caller sends to the public API comes near.
DEFAULT_REQUEST_MAX_BYTES = 1 << 20
#: 128 MiB: the signed task configs of a 100,000-partition MirrorSourceConnector flow are ~25 MiB with
#: 249-character (maximum length) topic names (tests/unit/connect_runtime/rest/test_request_guards.py sends them).
DEFAULT_INTERNAL_REQUEST_MAX_BYTES = 128 << 20
HTTPS_PREFIX = "listeners.https."

_GROUP = "REST security"


def _https(name: str, type_: Type, doc: str) -> ConfigKey:
    return ConfigKey(HTTPS_PREFIX + name, type_, None, Importance.LOW, doc, group=_GROUP)


REST_SECURITY_CONFIG_DEF = ConfigDef([
    ConfigKey(REST_EXTENSION_CLASSES, Type.LIST, [], Importance.LOW,
              "REST extensions. Only Kafka's "
              "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension is "
              "understood: state-changing requests then need HTTP basic authentication against the "
              "PropertyFileLoginModule credentials file of the JAAS 'KafkaConnect' section. Any other "
              "class is refused at start.", group=_GROUP),
    ConfigKey(REST_BASIC_AUTH_JAAS_CONFIG, Type.STRING, None, Importance.LOW,
              "Path of the JAAS file for basic authentication. Default: the key "
              "java.security.auth.login.config, else -Djava.security.auth.login.config in KAFKA_OPTS.",
              group=_GROUP),
    ConfigKey(REST_MUTATIONS_ALLOW_UNAUTHENTICATED, Type.BOOLEAN, False, Importance.HIGH,
              "Whether anyone who can reach the REST listener may create, change, pause, resume, "
              "restart, stop or delete connectors, change their offsets and set log levels without "
              "credentials. Off by default: such requests are refused (403) unless basic authentication "
              "is configured. Turn it on only on a network where every client is trusted.", group=_GROUP),
    ConfigKey(REST_CONFIG_PROVIDERS_ALLOWLIST, Type.LIST, [], Importance.MEDIUM,
              "Config providers (names from config.providers) that connector configs submitted through "
              "REST may use in ${provider:...} placeholders. Empty by default, so a REST caller cannot make "
              "the worker read files or environment variables (CVE-2024-31141). Configs the MM2 driver "
              "writes from mm2.properties are not restricted.", group=_GROUP),
    ConfigKey(REST_ALLOWED_PATHS, Type.LIST, [], Importance.MEDIUM, REST_ALLOWED_PATHS_DOC, group=_GROUP),
    ConfigKey(REST_READS_ALLOW_UNAUTHENTICATED, Type.BOOLEAN, False, Importance.MEDIUM,
              "With basic authentication configured, whether reads (GET, HEAD, OPTIONS: statuses, configs "
              "with secrets masked, /metrics, /ui) stay open to callers without credentials. Off by default: "
              "as with Kafka's BasicAuthSecurityRestExtension every request needs credentials, except GET "
              "/health (for probes) and the internal endpoints between workers, which carry a session-key "
              "signature instead. Without basic authentication reads are open either way.", group=_GROUP),
    ConfigKey(REST_REQUEST_MAX_BYTES, Type.LONG, DEFAULT_REQUEST_MAX_BYTES, Importance.LOW,
              "Largest request body the public REST API reads (bytes); a larger one is refused with 413 "
              "as soon as its Content-Length or the bytes read so far exceed it, before it is buffered.",
              at_least(1024), _GROUP),
    ConfigKey(REST_INTERNAL_REQUEST_MAX_BYTES, Type.LONG, DEFAULT_INTERNAL_REQUEST_MAX_BYTES, Importance.LOW,
              "Largest body of the internal (KIP-507 signed) task-config and fencing requests between "
              "workers (bytes). The default holds the task configs of a 100,000-partition flow.",
              at_least(1024), _GROUP),
    ConfigKey(SECRETS_KEYS, Type.LIST, [], Importance.MEDIUM,
              "Regular expressions (searched in the key name, case-insensitive) of further configuration "
              "keys whose values are secrets, under any prefix: masked in REST answers, statuses and "
              "'mirror config show', scrubbed from logs. Added to the built-in rule (Kafka's PASSWORD keys "
              "and names holding password, pwd, secret, credential, token, private key...). Example: "
              "secrets.keys=\\.pin$,my\\.custom\\.", group="Secrets"),
    ConfigKey(ACCESS_CONTROL_ALLOW_ORIGIN, Type.STRING, "", Importance.LOW,
              "CORS: origins allowed to call the REST API from a browser ('*' or a comma-separated list). "
              "Empty: no CORS headers.", group=_GROUP),
    ConfigKey(ACCESS_CONTROL_ALLOW_METHODS, Type.STRING, "", Importance.LOW,
              "CORS: methods allowed for cross-origin requests (comma-separated). Default GET,POST,HEAD "
              "as Jetty's. Only used with access.control.allow.origin.", group=_GROUP),
    _https("ssl.keystore.type", Type.STRING, "HTTPS listener key store type (PEM; JKS/PKCS12 where a store "
           "loader is installed)."),
    _https("ssl.keystore.location", Type.STRING, "HTTPS listener key store file (PEM: key and chain)."),
    _https("ssl.keystore.password", Type.PASSWORD, "HTTPS listener key store password."),
    _https("ssl.key.password", Type.PASSWORD, "Password of the HTTPS listener's private key."),
    _https("ssl.keystore.key", Type.PASSWORD, "Inline PEM private key of the HTTPS listener."),
    _https("ssl.keystore.certificate.chain", Type.PASSWORD, "Inline PEM certificate chain of the listener."),
    _https("ssl.truststore.type", Type.STRING, "HTTPS listener trust store type."),
    _https("ssl.truststore.location", Type.STRING, "HTTPS listener trust store (client certificates, and "
           "the certificates other workers' listeners are checked against when forwarding)."),
    _https("ssl.truststore.password", Type.PASSWORD, "HTTPS listener trust store password."),
    _https("ssl.truststore.certificates", Type.PASSWORD, "Inline PEM trust certificates."),
    ConfigKey(HTTPS_PREFIX + "ssl.client.auth", Type.STRING, None, Importance.LOW,
              "Client certificates on the HTTPS listener: none, requested or required.",
              one_of("none", "requested", "required"), _GROUP),
    _https("ssl.endpoint.identification.algorithm", Type.STRING, "Empty to skip the host name check when "
           "forwarding to another worker's HTTPS listener (default https)."),
])
