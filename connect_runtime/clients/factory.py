"""Client factory: Java client properties in, librdkafka configs and confluent-kafka clients out.

Worker and MM2 configs are written with Java client property names, while librdkafka
rejects any property it does not know with "No such configuration property" and the client is never
built. So every client config passes through :func:`translate`:

* Java names that librdkafka spells differently are renamed (``max.request.size`` ->
  ``message.max.bytes``, ``fetch.max.wait.ms`` -> ``fetch.wait.max.ms``, ``buffer.memory`` ->
  ``queue.buffering.max.kbytes`` ...), and values that differ are converted (``auto.offset.reset=none``
  -> ``error``, Java assignor class names -> ``range`` / ``roundrobin`` / ``cooperative-sticky``).
* SASL logins (``sasl.mechanism``, ``sasl.jaas.config``, callback handlers) become librdkafka's SASL
  keys or a token callback: :mod:`connect_runtime.clients.sasl_properties`, the one SASL translation
  every client shares (the group membership client's is :mod:`connect_runtime.clients.group_client`).
* JKS / PKCS12 / PEM trust and key stores are read and handed over as PEM in memory (``ssl.ca.pem``,
  ``ssl.certificate.pem``, ``ssl.key.pem``), and the TLS versions and suites become what librdkafka
  enforces: :mod:`connect_runtime.clients.tls_properties`, the one TLS translation every client shares.
* Every other Java ``ssl.*`` / ``sasl.*`` key is accepted where its value asks for what the clients do
  anyway or, when it asks for what no client here can do, refused with a ConfigError naming it:
  :mod:`connect_runtime.clients.security_keys`.
* Anything else librdkafka does not know for that client kind (serializers, ``max.poll.records``,
  worker-only keys such as ``offset.storage.topic``...) is dropped and logged ONCE per process at INFO,
  by key name only. Values are never logged: they may be secrets.

The set of valid names is the static table in :mod:`connect_runtime.clients.librdkafka_properties`.

Clients are built by :func:`new_producer`, :func:`new_consumer` and :func:`new_admin`, which route
librdkafka's own log lines into Python logging (:mod:`connect_runtime.clients.librdkafka_logging`) and
count every client they build as open until it is closed or garbage, by the module that asked for it
(:mod:`connect_runtime.clients.registry`: the ``connect_clients_open`` metric, the tests' leak check).
:func:`learn_leaders` makes a fresh consumer's partition leaders known before it is assigned.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.prefixed_keys import with_prefix_stripped
from connect_runtime.clients import librdkafka_properties as props_table
from connect_runtime.clients import security_keys
from connect_runtime.clients.librdkafka_logging import LIBRDKAFKA_LOG, pump_admin_logs
from connect_runtime.clients.registry import TrackedConsumer, TrackedProducer, track
from connect_runtime.clients.sasl_properties import HANDLED as SASL_HANDLED
from connect_runtime.clients.sasl_properties import librdkafka_sasl, sasl_login, uses_sasl
from connect_runtime.clients.tls_properties import CIPHER_SUITES, librdkafka_tls, tls_settings
from connect_runtime.clients.tls_properties import HANDLED as TLS_HANDLED

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

#: Java keys handled by the TLS / SASL translation or decided by security_keys (accepted only where they ask
#: for what librdkafka does anyway), never passed through by name.
_SPECIAL = (SASL_HANDLED | TLS_HANDLED | {CIPHER_SUITES}
            | frozenset(k for k in security_keys.DECISIONS if k not in props_table.COMMON))

#: Java keys whose librdkafka namesake means something else (``max.poll.records`` limits librdkafka's
#: *share* consumer only): dropped like unknown keys.
_NOT_EQUIVALENT = frozenset({"max.poll.records"})

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


def log_unused(key: str, client: str) -> None:
    """Say once per process, at INFO, that ``client`` does not use the client property ``key`` (by name
    only: a value may be a secret)."""
    if _once(client, key):
        logger.info("Client property '%s' is not used by %s", key, client)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "value") and callable(value.value):  # api.config.Password
        return str(value.value())
    return str(value)


def java_text(java: Mapping[str, Any]) -> dict[str, str]:
    """``java``'s values as a Java properties file holds them (a Password's value, true/false), without
    the keys whose value is None and the Python client's own keys (``logger``, ``error_cb`` ...)."""
    return {k: _text(v) for k, v in java.items() if v is not None and k not in props_table.PYTHON_CLIENT}


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


def has_librdkafka_equivalent(key: str, kind: ClientKind) -> bool:
    """Whether the Java client property ``key`` reaches a ``kind`` client (as is, renamed, converted or
    through the TLS/SASL translation) rather than being dropped by :func:`translate`: what a config check
    tells an operator about each client key before the clients are built."""
    if key in _SPECIAL or key in props_table.PYTHON_CLIENT or key == "partition.assignment.strategy":
        return kind == "consumer" or key != "partition.assignment.strategy"
    if key in _NOT_EQUIVALENT:
        return False
    if key == "buffer.memory":
        return kind == "producer"
    return _RENAMES.get(key, key) in _VALID[kind]


def translate(java: Mapping[str, Any], kind: ClientKind) -> dict[str, Any]:
    """A librdkafka config for a ``kind`` client from one flat map of Java client properties.

    Values become strings; keys with a None value are skipped. The Python client's own keys
    (``error_cb``, ``logger`` ...) pass through unchanged. Raises ConfigError on an unusable value.
    """
    python_only = props_table.PYTHON_CLIENT
    out: dict[str, Any] = {k: v for k, v in java.items() if k in python_only and v is not None}
    plain = java_text(java)
    valid = _VALID[kind]
    security_keys.check(plain)
    sasl = uses_sasl(plain)
    for key, value in plain.items():
        if key in _SPECIAL or (key.startswith("sasl.") and not sasl):
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
    login = sasl_login(plain)
    if login is not None:
        out.update(librdkafka_sasl(login))
    tls = tls_settings(plain)
    if tls is not None:
        out.update(librdkafka_tls(tls))
    return out


def client_properties(props: Mapping[str, Any], prefix: str | None) -> dict[str, Any]:
    """Java properties of one client: the unprefixed keys of ``props`` overlaid with the keys under
    ``prefix`` (prefix stripped), as Connect builds client configs from a worker config. Keys under any
    other client prefix (``producer.``, ``consumer.``, ``admin.``) are not base properties."""
    base = {k: v for k, v in props.items() if not k.startswith(CLIENT_PREFIXES)}
    if prefix:
        base.update(with_prefix_stripped(props, prefix))
    return base


def producer_config(props: Mapping[str, Any], prefix: str | None = "producer.") -> dict[str, Any]:
    """librdkafka producer config from Java-style worker/MM2 properties (``prefix.`` keys override)."""
    return translate(client_properties(props, prefix), "producer")


def consumer_config(props: Mapping[str, Any], prefix: str | None = "consumer.") -> dict[str, Any]:
    return translate(client_properties(props, prefix), "consumer")


def admin_config(props: Mapping[str, Any], prefix: str | None = "admin.") -> dict[str, Any]:
    return translate(client_properties(props, prefix), "admin")


def _with_logger(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with librdkafka's log lines sent to Python logging (unless the caller set a logger)."""
    return {"logger": LIBRDKAFKA_LOG, **dict(config)}


def new_producer(config: Mapping[str, Any]) -> Producer:
    """A Producer from a librdkafka config (use :func:`producer_config` for Java properties).

    An idempotent or transactional producer connects to every broker at once
    (``enable.sparse.connections=false``, unless the config says otherwise). librdkafka asks for the
    producer id only over a connection that is up, and with sparse connections none is until a request
    needs one: the id request then waits for a fixed 500 ms timer, and a record produced in the first
    second was delivered ~1,000 ms after the producer was created, against ~50 ms with the connections
    opened at once (bench: a task's first record). Such producers write to many partitions, whose
    leaders are most of the brokers, so the connections would be opened anyway."""
    if _idempotent(config):
        config = {"enable.sparse.connections": "false", **dict(config)}
    producer = TrackedProducer(_with_logger(config))
    track(producer, "producer")
    return producer


def _idempotent(config: Mapping[str, Any]) -> bool:
    return bool(config.get("transactional.id")) or str(config.get("enable.idempotence", "")).lower() == "true"


def new_consumer(config: Mapping[str, Any]) -> Consumer:
    """A Consumer; ``allow.auto.create.topics`` defaults to false: a metadata lookup or subscription
    must not create topics (on Tansu even an admin metadata lookup would)."""
    consumer = TrackedConsumer(_with_logger({"allow.auto.create.topics": "false", **dict(config)}))
    track(consumer, "consumer")
    return consumer


#: Up to this many topics are asked for one by one; more, and one request asks for every topic.
_PER_TOPIC = 8
#: One metadata answer of every topic at a time in the process: confluent-kafka hands it back as Python
#: objects (2.7 MiB at 2,000 topics x 4 partitions, freed as soon as it returns), and the tasks of a
#: connector start together, at the node's peak of memory: a tracemalloc snapshot of a node starting its
#: four tasks held 6.8 MiB of them. The others wait the length of one answer each, at most ``timeout_s``.
_every_topic_lock = threading.Lock()


def learn_leaders(consumer: Consumer, topics: Iterable[str], timeout_s: float = 5.0) -> None:
    """Fetch the metadata of ``topics`` into ``consumer``'s cache, so that a fresh consumer knows its
    partitions' leaders before it is assigned, and fetches at once; a failure only costs the 500 ms back.

    librdkafka resolves where an assigned partition starts (``OFFSET_BEGINNING``, ``OFFSET_END``,
    ``auto.offset.reset``) with a ListOffsets request to the partition's leader. A consumer assigned before
    its first metadata response arrived knows no leader yet, and retries that query after a fixed 500 ms
    ("no current leader for partition: (re)starting offset query timer", librdkafka 2.x): every fresh
    consumer began reading half a second late (the three internal topics of a Connect worker, one after the
    other, then each task's source consumer). One metadata request for the topics first makes the leaders
    known; the offset query then goes out with the assignment. This holds on any Kafka broker.
    """
    wanted = sorted(set(topics))
    try:
        if len(wanted) > _PER_TOPIC:
            held = _every_topic_lock.acquire(timeout=timeout_s)  # a slow cluster delays a start no more
            try:
                consumer.list_topics(timeout=timeout_s)
            finally:
                if held:
                    _every_topic_lock.release()
            return
        for topic in wanted:
            consumer.list_topics(topic, timeout=timeout_s)
    except KafkaException as exc:
        logger.debug("Metadata for %d topic(s) not fetched before assignment: %s", len(wanted), exc)


def new_admin(config: Mapping[str, Any]) -> AdminClient:
    """An AdminClient with ``allow.auto.create.topics=false`` unless overridden (see new_consumer); its
    log lines are collected by one shared thread, since nobody polls an AdminClient."""
    admin = AdminClient(_with_logger({"allow.auto.create.topics": "false", **dict(config)}))
    track(admin, "admin")
    pump_admin_logs(admin)
    return admin


def close_producer(producer: Producer, flush_timeout_s: float = 0.0) -> int:
    """Deliver what is queued (up to ``flush_timeout_s``), drop what is left, destroy the handle.

    Returns how many records were dropped. Why not just ``close()``: it flushes without a bound, and a
    producer whose broker is gone never returns from it; why not just drop the reference: the handle,
    its threads and sockets then live until the last reference goes, which a traceback, a callback or a
    reference cycle can delay indefinitely. Dropped records fail their delivery callbacks (served here,
    on the caller's thread). Call it once no other thread uses the producer; a second call is harmless.
    Never raises: a fenced transactional producer's ``close()`` raises its fatal error (as a SystemError)
    after destroying the handle.
    """
    try:
        remaining = int(producer.flush(flush_timeout_s))
        if remaining:
            producer.purge()
            producer.poll(0)
    except RuntimeError:  # closed already
        return 0
    except KafkaException as exc:  # a fatal error: close all the same
        logger.debug("Flushing a producer before closing it failed: %s", exc)
        remaining = len(producer)
    try:
        producer.close()
    except (KafkaException, RuntimeError, SystemError) as exc:
        logger.debug("Closing a producer reported: %r", exc)
    return remaining
