"""Replication into and out of TLS-only clusters, configured the Java way (JKS / PKCS12 stores, mutual TLS).

The test broker has no TLS of its own (Apache Kafka's own TLS and SASL listeners are tested in
tests/kafka/test_kafka_security.py), so ``tls_cluster`` and ``mtls_cluster`` (tests/conftest.py,
tests/support/tls.py) are Tansu brokers behind stunnel that advertise the stunnel port: every byte a
client exchanges with them is TLS, and ``mtls_cluster`` refuses a client without a certificate chained to
the test CA. The stores are keytool-made; the clients get only the Java keys (``ssl.truststore.*``,
``ssl.keystore.*``, ``ssl.key.password``), as in a Java mm2.properties.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaException

from connect_runtime.clients.factory import new_admin, producer_config, translate
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import unique, wait_until
from tests.support.mm2 import flow_config, start_connector
from tests.support.tls import KEY_PASSWORD, STORE_PASSWORD, TRUST_PASSWORD, Pki, TlsBroker, java_tls, properties

pytestmark = pytest.mark.integration

RECORDS = [(f"k{i}".encode(), f"value-{i}".encode()) for i in range(25)]


def _prefixed(prefix: str, config: dict[str, str]) -> dict[str, str]:
    return {f"{prefix}{k}": v for k, v in config.items()}


def test_mirror_source_out_of_mutual_tls_into_tls_with_pkcs12_stores(pki: Pki, mtls_cluster: TlsBroker,
                                                                      tls_cluster: TlsBroker) -> None:
    """A MirrorSource connector and task read an mTLS cluster (PKCS12 key store, JKS trust store) and
    write a TLS cluster (PKCS12 trust store); records arrive exactly."""
    src, tgt = unique("src"), unique("tgt")
    topic = mtls_cluster.create_topic(unique("tls-orders"))
    mtls_cluster.produce(topic, RECORDS)
    source_keys = java_tls(pki, trust="JKS", key="PKCS12")
    target_keys = java_tls(pki, trust="PKCS12")
    config = flow_config(src, tgt, mtls_cluster.bootstrap, tls_cluster.bootstrap, overrides={
        "topics": topic, **_prefixed("source.cluster.", source_keys), **_prefixed("target.cluster.", target_keys)})
    connector = MirrorSourceConnector()
    start_connector(connector, config)  # lists the source topics over mTLS, creates the remote topic over TLS
    try:
        [task_config] = connector.task_configs(1)
        producer = producer_config({"bootstrap.servers": tls_cluster.bootstrap, **target_keys})
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=tls_cluster.bootstrap,
                             connector="MirrorSourceConnector", offset_store=MemoryOffsetStore(),
                             producer_config=producer) as run:
            wait_until(lambda: run.records_written() >= len(RECORDS), 30, "records written over TLS")
    finally:
        connector.stop()
    assert tls_cluster.read_all(f"{src}.{topic}") == RECORDS


def test_a_client_without_the_right_certificate_is_refused(pki: Pki, mtls_cluster: TlsBroker) -> None:
    """The proxies really enforce TLS: a trust store that does not hold the CA, or no client certificate
    on the mTLS cluster, gets no metadata (so the replication tests above prove the stores were used)."""
    wrong_trust = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                   "ssl.truststore.location": str(pki.other_ca_pem)}
    no_key = java_tls(pki, trust="JKS")
    for java in (wrong_trust, no_key):
        admin = new_admin({**translate({"bootstrap.servers": mtls_cluster.bootstrap, **java}, "admin"),
                           "socket.timeout.ms": 2000})
        with pytest.raises(KafkaException, match=r"transport failure|[Tt]imed out"):
            admin.list_topics(timeout=3)


@pytest.mark.slow
def test_connect_mirror_maker_replicates_out_of_tls_into_mutual_tls(pki: Pki, tls_cluster: TlsBroker,
                                                                    mtls_cluster: TlsBroker, tmp_path: Path) -> None:
    """The real ``connect-mirror-maker`` with Java TLS keys in mm2.properties: A (one-way TLS, JKS trust
    store) -> B (mutual TLS, PKCS12 trust store, JKS key store whose key has its own password). Every
    client of the process (herders' group membership included) reaches B with its certificate."""
    a, b = aliases("A", "B")
    topic = tls_cluster.create_topic(unique("tls-payments"))
    tls_cluster.produce(topic, RECORDS)
    # the stores' passwords in the file, stored as ${mm2:<key>} references (no Java node runs this flow)
    body = (f"{a}->{b}.enabled = true\ntopics = {topic}\nconfigs.topic.compatibility = python\n"
            + properties(a, java_tls(pki, trust="JKS")) + properties(b, java_tls(pki, trust="PKCS12", key="JKS")))
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: tls_cluster.bootstrap, b: mtls_cluster.bootstrap}, body))
    with MirrorMakerProcess(props) as node:
        node.wait_running(2, 120)
        wait_until(lambda: len(mtls_cluster.read_all(f"{a}.{topic}")) >= len(RECORDS), 60,
                   f"{len(RECORDS)} records on B")
        assert mtls_cluster.read_all(f"{a}.{topic}") == RECORDS
        states = node.task_states(a, b, "MirrorSourceConnector")
        assert states and all(state == "RUNNING" for state, _ in states), states
        assert node.terminate() == 0
    log = node.log_text()
    for secret in (STORE_PASSWORD, KEY_PASSWORD, TRUST_PASSWORD, "BEGIN PRIVATE KEY"):
        assert secret not in log
