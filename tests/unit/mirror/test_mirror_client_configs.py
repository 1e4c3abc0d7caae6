"""The librdkafka configs of the clients that read a cluster as a MirrorClient does, from mm2.properties."""

from __future__ import annotations

from mirror.client.mirror_client import client_properties, reader_config

RAW = {
    "bootstrap.servers": "b:9092",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
    "client.id": "mm2",
    "topics": ".*",
    "consumer.fetch.min.bytes": "7",
    "admin.bootstrap.servers": "admin:9092",
    "producer.linger.ms": "5",
}


def test_client_properties_are_the_connection_keys_overlaid_with_the_kind_keys() -> None:
    assert client_properties(RAW, "admin.") == {
        "bootstrap.servers": "admin:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": RAW["sasl.jaas.config"], "client.id": "mm2"}
    consumer = client_properties(RAW, "consumer.")
    assert consumer["bootstrap.servers"] == "b:9092" and consumer["fetch.min.bytes"] == "7"
    assert "topics" not in consumer and "linger.ms" not in consumer


def test_reader_config_translates_the_java_keys_for_librdkafka() -> None:
    admin = reader_config(RAW, "admin")
    assert admin["bootstrap.servers"] == "admin:9092"
    assert (admin["sasl.username"], admin["sasl.password"]) == ("u", "p")
    assert "sasl.jaas.config" not in admin
    consumer = reader_config(RAW, "consumer")
    assert consumer["fetch.min.bytes"] == "7" and consumer["client.id"] == "mm2"
