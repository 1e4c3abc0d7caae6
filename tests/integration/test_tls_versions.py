"""Java's TLS keys, enforced alike by the clients built from them, shown by real handshakes.

``ssl.enabled.protocols = TLSv1.3`` must keep every client of the cluster off TLSv1.2: librdkafka (which
has no TLS version setting: the factory gives it a TLSv1.2 cipher list it never offers, see
connect_runtime/clients/tls_properties.py) and the Python ``SSLContext`` the group membership client
(kafka-python) gets. The brokers are Tansu behind stunnel (tests/support/tls.py); ``tls12_cluster``'s
stunnel accepts TLSv1.2 only, ``tls_cluster``'s also TLSv1.3. Java's default (TLSv1.2,TLSv1.3) reaches
both, as a Java client does. librdkafka's ``enable.ssl.certificate.verification=false`` with an
``ssl.ca.location`` that does not sign the broker's certificate connects both kinds of client (the group
membership client joins a group), and with verification on neither connects.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.factory import translate
from connect_runtime.clients.group_client import (
    CoordinatorCallbacks,
    CoordinatorSettings,
    KafkaPythonCoordinator,
    group_client_config,
)
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


def _librdkafka_reaches(java: dict[str, str]) -> tuple[bool, list[str]]:
    """Whether an AdminClient given exactly what the factory built from ``java`` gets metadata; its log."""
    lines = _Lines()
    log = logging.getLogger(f"test.tls.{id(lines)}")
    log.addHandler(lines)
    log.setLevel(logging.DEBUG)
    admin = AdminClient({**translate(java, "admin"), "logger": log})
    try:
        admin.list_topics(timeout=5)
        return True, lines.lines
    except KafkaException:
        admin.poll(0.5)
        return False, lines.lines


def _python_handshake(java: dict[str, str], bootstrap: str) -> str:
    """The TLS version the group membership client's SSLContext negotiates with ``bootstrap``."""
    context: ssl.SSLContext = group_client_config(java)["ssl_context"]
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        return str(tls.version())


def _client(pki: Pki, bootstrap: str, **keys: str) -> dict[str, str]:
    """The Java properties of a client of ``bootstrap``: the test PKI's JKS trust store and ``keys``."""
    return {"bootstrap.servers": bootstrap, **java_tls(pki, trust="JKS"), **keys}


def test_tls13_only_keeps_librdkafka_and_the_membership_client_off_a_tls12_broker(
        pki: Pki, tls12_cluster: TlsBroker, tls_cluster: TlsBroker) -> None:
    refused = _client(pki, tls12_cluster.bootstrap, **{"ssl.enabled.protocols": "TLSv1.3"})
    assert translate(refused, "admin")["ssl.cipher.suites"] == "PSK"  # librdkafka offers no TLSv1.2 suite
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
    translated = translate(config, "admin")
    assert not any(key in translated for key in keys) and "ssl.cipher.suites" not in translated
    assert _librdkafka_reaches(config)[0]
    assert _python_handshake(config, tls12_cluster.bootstrap) == "TLSv1.2"


def test_cipher_suites_by_java_name_are_what_librdkafka_offers(pki: Pki, tls12_cluster: TlsBroker) -> None:
    """A TLSv1.2 suite the broker's OpenSSL serves by default connects; a list without one does not."""
    tls13 = "TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256"
    served = _client(pki, tls12_cluster.bootstrap,
                     **{"ssl.cipher.suites": f"{tls13},TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
    assert translate(served, "admin")["ssl.cipher.suites"] == "ECDHE-RSA-AES128-GCM-SHA256"
    assert _librdkafka_reaches(served)[0]
    assert _python_handshake(served, tls12_cluster.bootstrap) == "TLSv1.2"
    # an ECDSA suite: the broker's certificate is RSA, so no TLSv1.2 suite is shared
    unserved = _client(pki, tls12_cluster.bootstrap,
                       **{"ssl.cipher.suites": f"{tls13},TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})
    assert translate(unserved, "admin")["ssl.cipher.suites"] == "ECDHE-ECDSA-AES128-GCM-SHA256"
    assert not _librdkafka_reaches(unserved)[0]
    with pytest.raises(ssl.SSLError):
        _python_handshake(unserved, tls12_cluster.bootstrap)


def _member_joins(java: dict[str, str]) -> bool:
    """Whether the group membership client built from ``java`` bootstraps and joins a group of its own
    (JoinGroup and SyncGroup over the connection its SSLContext makes); False when it cannot connect."""
    callbacks = CoordinatorCallbacks(
        metadata=lambda _lost: b"member",
        # not empty: Tansu answers a SyncGroup that assigns empty bytes with REBALANCE_IN_PROGRESS
        assign=lambda _leader, _generation, members: dict.fromkeys(members, b"assigned"),
        joined=lambda _generation, _member, _assignment: None, join_in_flight=lambda _at: None,
        confirmed=lambda _at: None, changed=lambda: None)
    settings = CoordinatorSettings(f"tls-verify-{uuid.uuid4().hex[:8]}", 10_000, 1_000, 30_000,
                                   retry_backoff_ms=100, request_timeout_ms=10_000)
    try:
        member = KafkaPythonCoordinator.connect(group_client_config(java), settings, "connect", "default",
                                                callbacks, timeout_s=10)
    except ConnectError:
        return False
    try:
        deadline = time.monotonic() + 60
        while not member.ensure_active_group(1.0):
            assert time.monotonic() < deadline, "the member connected but did not join its group in 60 s"
        return True
    finally:
        member.close()


def test_unverified_tls_with_an_unrelated_ca_location_connects_data_clients_and_membership_alike(
        pki: Pki, tls_cluster: TlsBroker) -> None:
    unrelated: Mapping[str, str] = {"bootstrap.servers": tls_cluster.bootstrap, "security.protocol": "SSL",
                                    "ssl.ca.location": str(pki.other_ca_pem)}
    unverified = {**unrelated, "enable.ssl.certificate.verification": "false"}
    assert translate(unverified, "admin")["enable.ssl.certificate.verification"] == "false"
    assert _librdkafka_reaches(unverified)[0]
    assert _member_joins(unverified)
    verified = dict(unrelated)  # verification on (the default): the CA does not sign the broker's certificate
    assert not _librdkafka_reaches(verified)[0]
    assert not _member_joins(verified)
