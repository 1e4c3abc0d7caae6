"""The Kafka tier's brokers really authenticate: every listener and SASL mechanism admits the right
credentials through the product's Java-to-librdkafka translation and refuses wrong ones.

On Tansu there is no SASL at all and TLS only through stunnel (tests/support/tls.py); here the broker's
own TLS and SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER with Kafka's unsecured tokens) answer.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_runtime.clients.factory import new_admin, translate
from tests.support.apache_kafka import KafkaBroker

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

CASES = [("PLAINTEXT", None), ("SSL", None), ("MTLS", None), ("SASL_PLAINTEXT", "PLAIN"),
         ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"),
         ("SASL_PLAINTEXT", "OAUTHBEARER"), ("SASL_SSL", "OAUTHBEARER")]


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_a_java_client_config_reaches_every_listener(kafka_a: KafkaBroker, listener: str,
                                                    mechanism: str | None) -> None:
    admin = new_admin(translate(kafka_a.client(listener, mechanism, user="alice"), "admin"))
    metadata = admin.list_topics(timeout=20)
    assert [b.port for b in metadata.brokers.values()] == [kafka_a.ports[listener]]


@pytest.mark.parametrize(("listener", "mechanism"), [("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
                                                     ("SASL_SSL", "SCRAM-SHA-512")])
def test_a_wrong_password_is_refused(kafka_a: KafkaBroker, listener: str, mechanism: str) -> None:
    errors: list[KafkaError] = []
    admin = new_admin({**translate(kafka_a.client(listener, mechanism, user="alice", password="wrong"), "admin"),
                       "socket.timeout.ms": 3000, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def test_mutual_tls_refuses_a_client_without_a_certificate(kafka_a: KafkaBroker) -> None:
    no_key = {k: v for k, v in kafka_a.client("MTLS").items() if not k.startswith("ssl.keystore")
              and k != "ssl.key.password"}
    admin = new_admin({**translate(no_key, "admin"), "socket.timeout.ms": 3000})
    with pytest.raises(KafkaException, match=r"transport failure|SSL|[Tt]imed out"):
        admin.list_topics(timeout=5)
