"""``mirror offsets translate``: the client config handed to MirrorClient, and the table rendering."""

from __future__ import annotations

from connect_runtime.clients.librdkafka_logging import LIBRDKAFKA_LOG
from mirror.cli.offsets import mirror_client_config, render_table, rows
from mirror.client.models import OffsetAndMetadata, TopicPartition
from tests.support.tls import Pki


def test_java_client_keys_become_librdkafka_keys_per_client(pki: Pki) -> None:
    raw = {
        "clusters": "A, B",
        "topics": ".*",
        "A->B.enabled": "true",
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";',
        "ssl.truststore.location": str(pki.ca_pem),
        "ssl.truststore.type": "PEM",
        "replication.policy.separator": "_",
        "consumer.isolation.level": "read_committed",
        "admin.bootstrap.servers": "admin:9092",
    }
    config = mirror_client_config(raw)
    assert config["replication.policy.separator"] == "_"
    assert config["admin.bootstrap.servers"] == "admin:9092"
    assert config["consumer.bootstrap.servers"] == "b:9092"
    assert config["consumer.isolation.level"] == "read_committed"
    assert "admin.isolation.level" not in config
    for prefix in ("admin.", "consumer."):
        assert config[f"{prefix}ssl.ca.pem"] == pki.ca_pem.read_text()
        assert config[f"{prefix}logger"] is LIBRDKAFKA_LOG
        assert config[f"{prefix}sasl.username"] == "u"
        assert config[f"{prefix}sasl.password"] == "p"
        assert f"{prefix}sasl.jaas.config" not in config
    assert not any(k.endswith(("clusters", "topics", "enabled")) for k in config)


def test_table_is_sorted_and_aligned() -> None:
    data = rows(
        {TopicPartition("b.t", 1): OffsetAndMetadata(7, "m"), TopicPartition("b.t", 0): OffsetAndMetadata(3)}
    )
    assert render_table(data).splitlines() == [
        "TOPIC  PARTITION  OFFSET  METADATA",
        "b.t    0          3",
        "b.t    1          7       m",
    ]
