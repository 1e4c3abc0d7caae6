"""Java client properties -> librdkafka configs: renames, drops, and no secrets in logs.

SASL mappings: test_sasl_properties.py; Java stores: test_java_stores.py; log lines: test_librdkafka_logging.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from connect_runtime.api.errors import ConfigError
from connect_runtime.clients import factory
from connect_runtime.clients.factory import (
    admin_config,
    consumer_config,
    producer_config,
    translate,
)
from tests.support.tls import KEY_PASSWORD, STORE_PASSWORD, TRUST_PASSWORD, Pki

LOGGER = "connect_runtime.clients.factory"


@pytest.fixture(autouse=True)
def fresh_log_memory() -> Iterator[None]:
    """Each dropped key is logged once per process: forget what earlier tests logged."""
    factory._logged.clear()
    yield
    factory._logged.clear()


def test_java_names_that_differ_are_renamed_and_converted() -> None:
    out = translate({
        "max.request.size": "2000000",
        "buffer.memory": "33554432",
        "send.buffer.bytes": "-1",
        "receive.buffer.bytes": "65536",
        "linger.ms": 7,
        "enable.idempotence": True,
        "ssl.endpoint.identification.algorithm": "",
    }, "producer")
    assert out == {
        "message.max.bytes": "2000000",
        "queue.buffering.max.kbytes": "32768",
        "socket.send.buffer.bytes": "0",
        "socket.receive.buffer.bytes": "65536",
        "linger.ms": "7",
        "enable.idempotence": "true",
        "ssl.endpoint.identification.algorithm": "none",
    }


def test_consumer_values_are_translated() -> None:
    out = translate({
        "auto.offset.reset": "none",
        "fetch.max.wait.ms": "250",
        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor,"
                                         " org.apache.kafka.clients.consumer.RangeAssignor",
        "max.poll.interval.ms": "300000",
        "group.id": "g",
    }, "consumer")
    assert out == {
        "auto.offset.reset": "error",
        "fetch.wait.max.ms": "250",
        "partition.assignment.strategy": "cooperative-sticky,range",
        "max.poll.interval.ms": "300000",
        "group.id": "g",
    }


def test_unknown_and_java_only_keys_are_dropped_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    java = {"bootstrap.servers": "h:9092", "key.serializer": "org.apache.kafka...ByteArraySerializer",
            "max.poll.records": "500", "offset.storage.topic": "offsets", "retries": "2147483647"}
    first = translate(java, "consumer")
    second = translate(java, "consumer")
    assert first == second == {"bootstrap.servers": "h:9092"}  # retries is producer-only in librdkafka
    dropped = [r.getMessage() for r in caplog.records if "Ignoring client property" in r.getMessage()]
    assert sorted(dropped) == sorted(f"Ignoring client property '{k}': not a librdkafka property"
                                     for k in ("key.serializer", "max.poll.records", "offset.storage.topic",
                                               "retries"))
    assert all(r.levelno == logging.INFO for r in caplog.records)


def test_each_client_kind_keeps_only_its_own_properties() -> None:
    java = {"request.timeout.ms": "20000", "retries": "3", "group.id": "g", "session.timeout.ms": "6000",
            "client.id": "c", "allow.auto.create.topics": "false"}
    assert translate(java, "producer") == {"request.timeout.ms": "20000", "retries": "3", "client.id": "c",
                                           "allow.auto.create.topics": "false"}
    assert translate(java, "consumer") == {"group.id": "g", "session.timeout.ms": "6000", "client.id": "c",
                                           "allow.auto.create.topics": "false"}
    assert translate(java, "admin") == {"client.id": "c", "allow.auto.create.topics": "false"}


def test_prefixed_client_overrides_win_and_other_prefixes_are_ignored() -> None:
    worker = {"bootstrap.servers": "h:9092", "linger.ms": "5", "producer.linger.ms": "50",
              "consumer.fetch.min.bytes": "1000", "admin.client.id": "adm", "producer.acks": "all"}
    assert producer_config(worker) == {"bootstrap.servers": "h:9092", "linger.ms": "50", "acks": "all"}
    assert consumer_config(worker) == {"bootstrap.servers": "h:9092", "fetch.min.bytes": "1000"}
    assert admin_config(worker) == {"bootstrap.servers": "h:9092", "client.id": "adm"}
    assert producer_config(worker, prefix=None) == {"bootstrap.servers": "h:9092", "linger.ms": "5"}


def test_no_secret_value_ever_reaches_the_log(caplog: pytest.LogCaptureFixture, pki: Pki) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = ["jaas-pw-1", STORE_PASSWORD, KEY_PASSWORD, TRUST_PASSWORD, "custom-pw-4", "oauth-secret-5"]
    java = {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="u" password="jaas-pw-1";',
        **pki.java_truststore("JKS"), **pki.java_keystore("JKS"),
        "my.custom.password": "custom-pw-4",
        "consumer.sasl.mechanism": "OAUTHBEARER",
        "consumer.sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "consumer.sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule '
                                     'required clientId="mm2" clientSecret="oauth-secret-5";',
    }
    producer_config(java)
    consumer_config(java)
    admin_config(java)
    for bad in ({**java, "ssl.keystore.password": "wrong-" + STORE_PASSWORD},  # SASL_SSL: the stores are read
                {**java, "ssl.key.password": "wrong-" + KEY_PASSWORD},
                {**java, "ssl.truststore.password": "wrong-" + TRUST_PASSWORD}):
        with pytest.raises(ConfigError) as info:
            producer_config(bad)
        assert not any(secret in str(info.value) for secret in secrets)
    assert caplog.records, "expected drop / warning log lines"
    logged = caplog.text + " ".join(repr(r.args) for r in caplog.records)
    for secret in secrets:
        assert secret not in logged


def test_librdkafka_accepts_every_translated_key() -> None:
    """Build real clients (no bootstrap.servers, so no sockets) from a typical Java worker config."""
    worker: dict[str, Any] = {
        "client.id": "w", "acks": "all", "linger.ms": "10", "batch.size": "16384", "compression.type": "lz4",
        "max.request.size": "1048576", "buffer.memory": "33554432", "retries": "2147483647",
        "delivery.timeout.ms": "120000", "request.timeout.ms": "30000",
        "max.in.flight.requests.per.connection": "1",
        "enable.idempotence": "true", "key.serializer": "x", "value.serializer": "x", "key.deserializer": "x",
        "value.deserializer": "x", "max.poll.records": "500", "max.poll.interval.ms": "300000",
        "session.timeout.ms": "10000", "heartbeat.interval.ms": "3000", "auto.offset.reset": "earliest",
        "enable.auto.commit": "false", "isolation.level": "read_committed", "fetch.min.bytes": "1",
        "fetch.max.wait.ms": "500", "fetch.max.bytes": "52428800", "max.partition.fetch.bytes": "1048576",
        "receive.buffer.bytes": "-1", "send.buffer.bytes": "131072", "security.protocol": "PLAINTEXT",
        "reconnect.backoff.ms": "50", "reconnect.backoff.max.ms": "1000", "retry.backoff.ms": "100",
        "metadata.max.age.ms": "300000", "connections.max.idle.ms": "540000", "group.id": "connect",
        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor",
        "config.storage.topic": "c", "rest.port": "8083", "metric.reporters": "", "client.dns.lookup":
        "use_all_dns_ips", "allow.auto.create.topics": "false", "check.crcs": "true",
    }
    Producer(producer_config(worker)).flush(0)
    Consumer(consumer_config(worker)).close()
    AdminClient(dict[str, Any](admin_config(worker)))


def test_new_clients_default_to_no_auto_topic_creation_and_log_through_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(factory, "TrackedConsumer", lambda config: seen.append(config))
    monkeypatch.setattr(factory, "AdminClient", lambda config: seen.append(config))
    monkeypatch.setattr(factory, "pump_admin_logs", lambda client: None)
    monkeypatch.setattr(factory, "track", lambda client, kind: None)
    factory.new_consumer({"group.id": "g"})
    factory.new_admin({})
    factory.new_admin({"allow.auto.create.topics": "true"})
    log = factory.LIBRDKAFKA_LOG
    assert seen == [{"logger": log, "allow.auto.create.topics": "false", "group.id": "g"},
                    {"logger": log, "allow.auto.create.topics": "false"},
                    {"logger": log, "allow.auto.create.topics": "true"}]


def test_python_client_keys_pass_through_and_bad_numbers_name_the_key() -> None:
    log = logging.getLogger("librdkafka")

    def on_error(err: Any) -> None:
        pass

    assert translate({"logger": log, "error_cb": on_error}, "consumer") == {"logger": log, "error_cb": on_error}
    with pytest.raises(ConfigError) as info:
        translate({"buffer.memory": "lots"}, "producer")
    assert info.value.key == "buffer.memory"


@pytest.mark.parametrize(("key", "kind", "expected"), [
    ("linger.ms", "producer", True), ("max.request.size", "producer", True), ("buffer.memory", "producer", True),
    ("buffer.memory", "consumer", False), ("fetch.max.wait.ms", "consumer", True),
    ("partition.assignment.strategy", "consumer", True), ("sasl.jaas.config", "admin", True),
    ("ssl.truststore.location", "consumer", True), ("max.poll.records", "consumer", False),
    ("interceptor.classes", "producer", False), ("key.serializer", "producer", False),
])
def test_has_librdkafka_equivalent_agrees_with_translate(key: str, kind: factory.ClientKind, expected: bool) -> None:
    """What config checks report as dropped is what translate drops (issue 26)."""
    assert factory.has_librdkafka_equivalent(key, kind) is expected
    if key.startswith(("sasl.", "ssl.")) or key == "partition.assignment.strategy":
        return  # handled by the SASL/TLS translation or converted, not passed by name
    value = "1000" if key != "key.serializer" else "x"
    translated = factory.translate({key: value}, kind)
    assert bool(set(translated) - {"logger"}) is expected


def test_close_producer_drops_what_cannot_be_delivered_and_destroys_the_handle() -> None:
    """Producer.close() alone flushes without a bound (a producer whose broker is gone never returns);
    dropping the reference leaves the handle to whoever still holds one (issue 32)."""
    import time

    from connect_runtime.clients import registry

    producer = factory.new_producer({"bootstrap.servers": "127.0.0.1:9", "log_level": "0"})
    failed: list[Any] = []
    producer.produce("t", b"x", on_delivery=lambda err, msg: failed.append(err))
    began = time.monotonic()
    assert factory.close_producer(producer, 0.2) == 1
    assert time.monotonic() - began < 5
    assert len(failed) == 1 and failed[0] is not None  # its callback ran, with the purge error
    assert (__name__, "producer") not in registry.open_clients()
    assert factory.close_producer(producer) == 0  # twice is harmless
