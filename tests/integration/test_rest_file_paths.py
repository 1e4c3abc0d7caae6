"""Issue 27: a connector config submitted through REST names no file on the worker beyond what the operator
allowed, end to end through a real ``connect-distributed``.

A MirrorSourceConnector config carries its clusters' client keys; before the fix, POSTing one with
``source.cluster.ssl.truststore.location=/etc/passwd`` was accepted and the task read that file as a trust
store (and said what it found in its error). The worker here runs in trusted-network mode with the old
``All`` override policy, so that only the file rule stands in the way; ``rest.allowed.paths`` names one
directory, under which a real PEM trust store is accepted and used (the source cluster speaks only TLS).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import Cluster
from tests.integration.test_connect_distributed import WorkerProcess
from tests.support.kafka import admin, consume_all, create_topic, unique, wait_until
from tests.support.tls import Pki, TlsBroker

pytestmark = pytest.mark.integration

KEY = "source.cluster.ssl.truststore.location"
RECORDS = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(10)]


@pytest.fixture
def stores(tmp_path: Path) -> Path:
    directory = tmp_path / "stores"
    directory.mkdir()
    return directory


@pytest.fixture
def worker(tmp_path: Path, stores: Path, cluster_a: Cluster) -> Iterator[WorkerProcess]:
    process = WorkerProcess(tmp_path, cluster_a.bootstrap, unique("files"),
                            **{"connector.client.config.override.policy": "All", "rest.allowed.paths": str(stores)})
    try:
        yield process.start()
    finally:
        process.close()


def mirror_source(bootstrap: str, topic: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "MirrorSourceConnector", "source.cluster.alias": "A", "target.cluster.alias": "B",
            "source.cluster.bootstrap.servers": bootstrap, "target.cluster.bootstrap.servers": bootstrap,
            "topics": topic, "tasks.max": "1", **extra}


def assert_refused(response: httpx.Response, key: str) -> None:
    assert response.status_code == 400, (response.status_code, response.text)
    message = response.json()["message"]
    assert key in message and "rest.allowed.paths" in message, message
    assert "root:" not in message and "Traceback" not in message  # nothing of the file, no trace


def test_a_file_outside_the_allowed_paths_is_refused_and_one_under_them_is_used(
        worker: WorkerProcess, cluster_a: Cluster, stores: Path, pki: Pki, tls_cluster: TlsBroker) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("files-topic"))
    leak = mirror_source(cluster_a.bootstrap, topic, **{KEY: "/etc/passwd"})

    assert_refused(worker.rest("POST", "/connectors", json={"name": "leak", "config": leak}), KEY)
    traversal = {**leak, KEY: f"{stores}/../../../etc/passwd"}
    assert_refused(worker.rest("PUT", "/connectors/leak/config", json=traversal), KEY)
    validated = worker.rest("PUT", "/connector-plugins/MirrorSourceConnector/config/validate", json=leak)
    assert_refused(validated, KEY)
    assert worker.rest("GET", "/connectors").json() == []

    # Under rest.allowed.paths: the source cluster is reachable only over TLS, so the task replicates only if
    # its clients read this trust store.
    shutil.copy(pki.ca_pem, stores / "ca.pem")
    tls_topic = tls_cluster.create_topic(unique("files-tls"))
    tls_cluster.produce(tls_topic, RECORDS)
    allowed = {**mirror_source(tls_cluster.bootstrap, tls_topic, **{
        KEY: str(stores / "ca.pem"), "source.cluster.ssl.truststore.type": "PEM",
        "source.cluster.security.protocol": "SSL"}), "target.cluster.bootstrap.servers": cluster_a.bootstrap}
    created = worker.rest("POST", "/connectors", json={"name": "allowed", "config": allowed})
    assert created.status_code == 201, created.text
    keytab = 'com.sun.security.auth.module.Krb5LoginModule required keyTab="/etc/shadow" principal="x@Y";'
    patched = worker.rest("PATCH", "/connectors/allowed/config", json={"target.cluster.sasl.jaas.config": keytab})
    assert_refused(patched, "target.cluster.sasl.jaas.config")
    assert worker.rest("GET", "/connectors").json() == ["allowed"]

    def replicated() -> bool:
        if f"A.{tls_topic}" not in admin(cluster_a.bootstrap).list_topics(timeout=10).topics:
            return False  # the remote topic is not created yet
        found = consume_all(cluster_a.bootstrap, f"A.{tls_topic}", timeout_s=5)
        return sorted((r.key, r.value) for r in found) == sorted(RECORDS)

    wait_until(replicated, 120, "records replicated out of the TLS cluster with the allowed trust store")
    assert "/etc/shadow" not in str(worker.rest("GET", "/connectors/allowed/config").json())
