"""Java's TLS version keys, enforced by the clients built from them, shown by real handshakes.

``ssl.enabled.protocols = TLSv1.3`` must keep every client of the cluster off TLSv1.2: librdkafka (which
has no TLS version setting: the factory gives it a TLSv1.2 cipher list it never offers, see
connect_runtime/clients/tls_policy.py) and the Python ``SSLContext`` the group membership client
(kafka-python) gets. The brokers are Tansu behind stunnel (tests/support/tls.py); ``tls12_cluster``'s
stunnel accepts TLSv1.2 only, ``tls_cluster``'s also TLSv1.3. Java's default (TLSv1.2,TLSv1.3) reaches
both, as a Java client does.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from connect_runtime.clients.factory import translate
from connect_runtime.clients.group_client import kafka_python_config
from tests.support.tls import Pki, TlsBroker, java_tls

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tls12_cluster(pki: Pki, broker_log_dir: Path) -> Iterator[TlsBroker]:
    """A TLS broker whose endpoint speaks TLSv1.2 only."""
    broker = TlsBroker("tls12", pki, broker_log_dir, protocols=("TLSv1.2", "TLSv1.2")).start()
    try:
        yield broker
    finally:
        broker.stop()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _librdkafka_reaches(config: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether an AdminClient given exactly ``config`` (what the factory built) gets metadata; its log."""
    lines = _Lines()
    log = logging.getLogger(f"test.tls.{id(lines)}")
    log.addHandler(lines)
    log.setLevel(logging.DEBUG)
    admin = AdminClient({**config, "logger": log})
    try:
        admin.list_topics(timeout=5)
        return True, lines.lines
    except KafkaException:
        admin.poll(0.5)
        return False, lines.lines


def _python_handshake(config: dict[str, Any], bootstrap: str) -> str:
    """The TLS version the group membership client's SSLContext negotiates with ``bootstrap``."""
    context: ssl.SSLContext = kafka_python_config(config)["ssl_context"]
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        return str(tls.version())


def _client(pki: Pki, bootstrap: str, **keys: str) -> dict[str, Any]:
    return translate({"bootstrap.servers": bootstrap, **java_tls(pki, trust="JKS"), **keys}, "admin")


def test_tls13_only_keeps_librdkafka_and_the_membership_client_off_a_tls12_broker(
        pki: Pki, tls12_cluster: TlsBroker, tls_cluster: TlsBroker) -> None:
    refused = _client(pki, tls12_cluster.bootstrap, **{"ssl.enabled.protocols": "TLSv1.3"})
    assert refused["ssl.cipher.suites"] == "PSK"  # librdkafka offers no TLSv1.2 suite
    reached, log = _librdkafka_reaches(refused)
    assert not reached
    assert any("SSL handshake failed" in line for line in log), log[-5:]
    with pytest.raises(ssl.SSLError):
        _python_handshake(refused, tls12_cluster.bootstrap)

    # the same keys against a broker that speaks TLSv1.3: both clients connect, over TLSv1.3
    allowed = _client(pki, tls_cluster.bootstrap, **{"ssl.enabled.protocols": "TLSv1.3"})
    assert _librdkafka_reaches(allowed)[0]
    assert _python_handshake(allowed, tls_cluster.bootstrap) == "TLSv1.3"


def test_java_defaults_written_out_reach_a_tls12_broker_as_a_java_client_does(
        pki: Pki, tls12_cluster: TlsBroker) -> None:
    keys = {"ssl.protocol": "TLSv1.3", "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
            "ssl.keymanager.algorithm": "SunX509", "ssl.trustmanager.algorithm": "PKIX"}
    config = _client(pki, tls12_cluster.bootstrap, **keys)
    assert not any(key in config for key in keys) and "ssl.cipher.suites" not in config
    assert _librdkafka_reaches(config)[0]
    assert _python_handshake(config, tls12_cluster.bootstrap) == "TLSv1.2"


def test_cipher_suites_by_java_name_are_what_librdkafka_offers(pki: Pki, tls12_cluster: TlsBroker) -> None:
    """A TLSv1.2 suite the broker's OpenSSL serves by default connects; a list without one does not."""
    tls13 = "TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256"
    served = _client(pki, tls12_cluster.bootstrap,
                     **{"ssl.cipher.suites": f"{tls13},TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
    assert served["ssl.cipher.suites"] == "ECDHE-RSA-AES128-GCM-SHA256"
    assert _librdkafka_reaches(served)[0]
    assert _python_handshake(served, tls12_cluster.bootstrap) == "TLSv1.2"
    # an ECDSA suite: the broker's certificate is RSA, so no TLSv1.2 suite is shared
    unserved = _client(pki, tls12_cluster.bootstrap,
                       **{"ssl.cipher.suites": f"{tls13},TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})
    assert unserved["ssl.cipher.suites"] == "ECDHE-ECDSA-AES128-GCM-SHA256"
    assert not _librdkafka_reaches(unserved)[0]
    with pytest.raises(ssl.SSLError):
        _python_handshake(unserved, tls12_cluster.bootstrap)
