"""Client factory: Java client properties in, librdkafka configs and confluent-kafka clients out.

Worker and MM2 configs are written with Java client property names (reference §1.3), while librdkafka
rejects any property it does not know with "No such configuration property" and the client is never
built. So every client config passes through :func:`translate`:

* Java names that librdkafka spells differently are renamed (``max.request.size`` ->
  ``message.max.bytes``, ``fetch.max.wait.ms`` -> ``fetch.wait.max.ms``, ``buffer.memory`` ->
  ``queue.buffering.max.kbytes`` ...), and values that differ are converted (``auto.offset.reset=none``
  -> ``error``, Java assignor class names -> ``range`` / ``roundrobin`` / ``cooperative-sticky``).
* ``sasl.jaas.config`` is parsed: PLAIN / SCRAM logins become ``sasl.username`` / ``sasl.password``,
  Kerberos ``principal`` / ``keyTab`` become ``sasl.kerberos.principal`` / ``sasl.kerberos.keytab``.
* PEM truststores / keystores map to ``ssl.ca.location`` / ``ssl.certificate.location`` etc.; JKS
  stores cannot be read by librdkafka, so they are dropped with one WARNING naming the key.
* Anything else librdkafka does not know for that client kind (serializers, ``max.poll.records``,
  worker-only keys such as ``offset.storage.topic``...) is dropped and logged ONCE per process at INFO,
  by key name only. Values are never logged: they may be secrets.

The set of valid names is the static table in :mod:`connect_runtime.clients.librdkafka_properties`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Any, Literal

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import librdkafka_properties as props_table

logger = logging.getLogger(__name__)

ClientKind = Literal["producer", "consumer", "admin"]

_VALID: dict[str, frozenset[str]] = {
    "producer": props_table.COMMON | props_table.PRODUCER_ONLY | props_table.PYTHON_CLIENT,
    "consumer": props_table.COMMON | props_table.CONSUMER_ONLY | props_table.PYTHON_CLIENT,
    "admin": props_table.COMMON | props_table.PYTHON_CLIENT,
}

#: Java name -> librdkafka name, where they differ but mean the same thing.
_RENAMES = {
    "max.request.size": "message.max.bytes",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}

_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
    "range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky",
}

#: Java keys handled by the TLS / SASL translation below, never passed through by name.
_SPECIAL = frozenset({
    "sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password",
})

#: Java keys whose librdkafka namesake means something else (``max.poll.records`` limits librdkafka's
#: *share* consumer only): dropped like unknown keys.
_NOT_EQUIVALENT = frozenset({"max.poll.records"})

_JAAS_OPTION = re.compile(r'([A-Za-z_][\w.\-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;"]+)')
_JAAS_MODULE = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b", re.I)

_logged: set[tuple[str, str]] = set()
_logged_lock = threading.Lock()

#: Client prefixes of a worker config: their keys are per-client overrides, never base properties.
CLIENT_PREFIXES = ("producer.", "consumer.", "admin.")


def _once(kind: str, key: str) -> bool:
    with _logged_lock:
        if (kind, key) in _logged:
            return False
        _logged.add((kind, key))
        return True


def _drop(key: str, why: str = "not a librdkafka property") -> None:
    if _once("drop", key):
        logger.info("Ignoring client property '%s': %s", key, why)


def _warn(key: str, message: str) -> None:
    if _once("warn", key):
        logger.warning("Client property '%s': %s", key, message)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "value") and callable(value.value):  # api.config.Password
        return str(value.value())
    return str(value)


def parse_jaas(jaas: str) -> tuple[str, dict[str, str]]:
    """Split a JAAS login line into (login module class, options). Quoted values are unescaped.

    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";``
    -> ``("org.apache...PlainLoginModule", {"username": "u", "password": "p"})``. Raises ConfigError
    (naming the key, never the value) when it cannot be parsed.
    """
    match = _JAAS_MODULE.match(jaas)
    if match is None:
        raise ConfigError("sasl.jaas.config is not a JAAS login line: expected '<LoginModule> required ...;'",
                          "sasl.jaas.config")
    options: dict[str, str] = {}
    for name, raw in _JAAS_OPTION.findall(jaas[match.end():]):
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        options[name] = raw
    return match.group(1), options


def _translate_jaas(jaas: str, out: dict[str, str]) -> None:
    module, options = parse_jaas(jaas)
    short = module.rsplit(".", 1)[-1]
    if short in ("PlainLoginModule", "ScramLoginModule"):
        if "username" in options:
            out.setdefault("sasl.username", options["username"])
        if "password" in options:
            out.setdefault("sasl.password", options["password"])
    elif short == "Krb5LoginModule":
        if "principal" in options:
            out.setdefault("sasl.kerberos.principal", options["principal"])
        if "keyTab" in options:
            out.setdefault("sasl.kerberos.keytab", options["keyTab"])
    else:
        _warn("sasl.jaas.config", f"login module {short} has no librdkafka equivalent; configure the "
                                  "librdkafka sasl.* properties directly")


def _translate_tls(java: Mapping[str, str], out: dict[str, str]) -> None:
    trust_type = java.get("ssl.truststore.type", "").upper()
    location = java.get("ssl.truststore.location")
    if location:
        is_pem = trust_type == "PEM" or (not trust_type and location.lower().endswith((".pem", ".crt")))
        if is_pem:
            out.setdefault("ssl.ca.location", location)
        else:
            _warn("ssl.truststore.location", f"a {trust_type or 'JKS'} truststore cannot be read by "
                                             "librdkafka; convert it to PEM and set ssl.truststore.type=PEM "
                                             "(or ssl.ca.location)")
    if java.get("ssl.truststore.certificates"):
        out.setdefault("ssl.ca.pem", java["ssl.truststore.certificates"])

    key_type = java.get("ssl.keystore.type", "").upper()
    keystore = java.get("ssl.keystore.location")
    if keystore:
        if key_type == "PKCS12" or (not key_type and keystore.lower().endswith((".p12", ".pfx"))):
            out.setdefault("ssl.keystore.location", keystore)
            if java.get("ssl.keystore.password"):
                out.setdefault("ssl.keystore.password", java["ssl.keystore.password"])
        elif key_type == "PEM" or (not key_type and keystore.lower().endswith(".pem")):
            out.setdefault("ssl.certificate.location", keystore)
            out.setdefault("ssl.key.location", keystore)
        else:
            _warn("ssl.keystore.location", f"a {key_type or 'JKS'} keystore cannot be read by librdkafka; "
                                           "convert it to PKCS12 or PEM")
    if java.get("ssl.keystore.certificate.chain"):
        out.setdefault("ssl.certificate.pem", java["ssl.keystore.certificate.chain"])
    if java.get("ssl.keystore.key"):
        out.setdefault("ssl.key.pem", java["ssl.keystore.key"])
    if java.get("ssl.key.password"):
        out.setdefault("ssl.key.password", java["ssl.key.password"])


def _convert(key: str, value: str) -> tuple[str, str] | None:
    """(librdkafka key, value) for one ordinary Java property, or None to drop it."""
    key = _RENAMES.get(key, key)
    if key == "buffer.memory":
        return "queue.buffering.max.kbytes", str(max(1, int(value) // 1024))
    if key in ("socket.receive.buffer.bytes", "socket.send.buffer.bytes") and int(value) < 0:
        return key, "0"  # Java -1 = OS default; librdkafka 0 = OS default
    if key == "auto.offset.reset" and value.strip().lower() == "none":
        return key, "error"
    if key == "ssl.endpoint.identification.algorithm" and not value.strip():
        return key, "none"
    if key == "partition.assignment.strategy":
        names = [_ASSIGNORS.get(v.strip()) for v in value.split(",") if v.strip()]
        known = [n for n in names if n]
        if not known:
            _drop(key, "no librdkafka equivalent for the configured assignor")
            return None
        return key, ",".join(dict.fromkeys(known))
    return key, value


def translate(java: Mapping[str, Any], kind: ClientKind) -> dict[str, str]:
    """A librdkafka config for a ``kind`` client from one flat map of Java client properties.

    Values become strings; keys with a None value are skipped. The Python client's own keys
    (``error_cb``, ``logger`` ...) pass through unchanged. Raises ConfigError on an unusable value.
    """
    python_only = props_table.PYTHON_CLIENT
    out: dict[str, Any] = {k: v for k, v in java.items() if k in python_only and v is not None}
    plain = {k: _text(v) for k, v in java.items() if v is not None and k not in python_only}
    valid = _VALID[kind]
    for key, value in plain.items():
        if key in _SPECIAL:
            continue
        try:
            converted = _convert(key, value)
        except ValueError as exc:  # the value is not echoed: it could be a secret under an odd name
            raise ConfigError(f"Invalid value for client property '{key}'", key) from exc
        if converted is None:
            continue
        new_key, new_value = converted
        if new_key in valid and key not in _NOT_EQUIVALENT:
            out[new_key] = new_value
        else:
            _drop(key)
    if plain.get("sasl.jaas.config"):
        _translate_jaas(plain["sasl.jaas.config"], out)
    _translate_tls(plain, out)
    return out


def client_properties(props: Mapping[str, Any], prefix: str | None) -> dict[str, Any]:
    """Java properties of one client: the unprefixed keys of ``props`` overlaid with the keys under
    ``prefix`` (prefix stripped), as Connect builds client configs from a worker config. Keys under any
    other client prefix (``producer.``, ``consumer.``, ``admin.``) are not base properties."""
    base = {k: v for k, v in props.items() if not k.startswith(CLIENT_PREFIXES)}
    if prefix:
        base.update({k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)})
    return base


def producer_config(props: Mapping[str, Any], prefix: str | None = "producer.") -> dict[str, str]:
    """librdkafka producer config from Java-style worker/MM2 properties (``prefix.`` keys override)."""
    return translate(client_properties(props, prefix), "producer")


def consumer_config(props: Mapping[str, Any], prefix: str | None = "consumer.") -> dict[str, str]:
    return translate(client_properties(props, prefix), "consumer")


def admin_config(props: Mapping[str, Any], prefix: str | None = "admin.") -> dict[str, str]:
    return translate(client_properties(props, prefix), "admin")


def new_producer(config: Mapping[str, Any]) -> Producer:
    """A Producer from a librdkafka config (use :func:`producer_config` for Java properties)."""
    return Producer(dict(config))


def new_consumer(config: Mapping[str, Any]) -> Consumer:
    """A Consumer; ``allow.auto.create.topics`` defaults to false: a metadata lookup or subscription
    must not create topics (on Tansu even an admin metadata lookup would)."""
    full = {"allow.auto.create.topics": "false", **dict(config)}
    return Consumer(full)


def new_admin(config: Mapping[str, Any]) -> AdminClient:
    """An AdminClient with ``allow.auto.create.topics=false`` unless overridden (see new_consumer)."""
    full = {"allow.auto.create.topics": "false", **dict(config)}
    return AdminClient(full)
