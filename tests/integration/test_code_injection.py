"""Issue 27, item 7: no code a REST caller names runs, end to end through a real ``connect-distributed``.

The reported attack: a connector config POSTed to a worker in trusted-network mode
(``rest.mutations.allow.unauthenticated=true``) with ``producer.override.sasl.login.callback.handler.class
= os.system`` and ``producer.override.sasl.oauthbearer.config = touch <file>`` was accepted (201) and the
task's producer ran the command. The worker here runs with the override policy ``All`` (the old default)
so that only the code policy stands in the way; each request must be a 400 naming the key, and the
file must never appear. The same for every other key that names code, through POST, PUT and PATCH; a
class the operator lists in ``plugin.allowlist`` runs.

Classes come from ``tests.integration.support.code_plugins``, which leaves a file when it is imported:
a refused name is never even imported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Cluster
from tests.integration.test_connect_distributed import WorkerProcess, sequence_config
from tests.support.kafka import consume_all, create_topic, unique, wait_until

pytestmark = pytest.mark.integration

PLUGINS = "tests.integration.support.code_plugins"
CALLBACK = "sasl.login.callback.handler.class"


@pytest.fixture
def worker(tmp_path: Path, cluster_a: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkerProcess]:
    monkeypatch.setenv("CODE_PLUGINS_IMPORT_MARK", str(tmp_path / "plugins-imported"))
    process = WorkerProcess(tmp_path, cluster_a.bootstrap, unique("rce"),
                            **{"connector.client.config.override.policy": "All",
                               "plugin.allowlist": f"{PLUGINS}.RenamingTransform"})
    try:
        yield process.start()
    finally:
        process.close()


def rce(prefix: str, marker: Path) -> dict[str, str]:
    return {f"{prefix}security.protocol": "SASL_PLAINTEXT", f"{prefix}sasl.mechanism": "OAUTHBEARER",
            f"{prefix}{CALLBACK}": "os.system", f"{prefix}sasl.oauthbearer.config": f"touch {marker}"}


def assert_refused(response: httpx.Response, key: str) -> None:
    assert response.status_code == 400, (response.status_code, response.text)
    message = response.json()["message"]
    assert "Traceback" not in message
    lines = [line for line in message.splitlines() if key in line]
    assert lines, message  # one line of the answer names the key and says why
    assert "plugin.allowlist" in lines[0] or "no equivalent here" in lines[0], lines[0]


def test_the_reported_attack_is_refused_through_post_put_and_patch(worker: WorkerProcess, cluster_a: Cluster,
                                                                   tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    topic = create_topic(cluster_a.bootstrap, unique("rce-topic"))
    key = f"producer.override.{CALLBACK}"
    attack = {**sequence_config(topic, 1), **rce("producer.override.", marker)}

    assert_refused(worker.rest("POST", "/connectors", json={"name": "by-post", "config": attack}), key)
    assert_refused(worker.rest("PUT", "/connectors/by-put/config", json=attack), key)
    created = worker.rest("POST", "/connectors", json={"name": "benign", "config": sequence_config(topic, 1)})
    assert created.status_code == 201, created.text
    assert_refused(worker.rest("PATCH", "/connectors/benign/config", json=rce("producer.override.", marker)), key)

    assert worker.rest("GET", "/connectors").json() == ["benign"]
    assert CALLBACK not in str(worker.rest("GET", "/connectors/benign/config").json())
    # The benign connector's task builds its producer and writes: had a callable been taken, it ran by now.
    wait_until(lambda: len(consume_all(cluster_a.bootstrap, topic, timeout_s=5)) > 0, 60, "records from benign")
    time.sleep(2)
    assert not marker.exists()
    assert "touch" not in worker.log()


MM2 = {"source.cluster.alias": "A", "target.cluster.alias": "B", "source.cluster.bootstrap.servers": "127.0.0.1:1",
       "target.cluster.bootstrap.servers": "127.0.0.1:1", "topics": "nothing"}


def code_naming_variants(marker: Path) -> list[tuple[str, str, dict[str, str]]]:
    """(how, key refused, config): each key that names code, on a connector that reads it."""
    seq = sequence_config("t", 1)
    source = {**MM2, "connector.class": "MirrorSourceConnector"}
    return [
        ("connector", "connector.class", {**seq, "connector.class": f"{PLUGINS}.UnlistedConnector"}),
        ("transform", "transforms.x.type", {**seq, "transforms": "x", "transforms.x.type": f"{PLUGINS}.AlwaysTrue"}),
        ("predicate", "predicates.p.type",
         {**seq, "transforms": "f", "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
          "transforms.f.predicate": "p", "predicates": "p", "predicates.p.type": f"{PLUGINS}.AlwaysTrue"}),
        ("policy", "replication.policy.class", {**source, "replication.policy.class": f"{PLUGINS}.UnlistedPolicy"}),
        ("topic filter", "topic.filter.class", {**source, "topic.filter.class": f"{PLUGINS}.UnlistedTopicFilter"}),
        ("config filter", "config.property.filter.class",
         {**source, "config.property.filter.class": f"{PLUGINS}.UnlistedConfigPropertyFilter"}),
        ("group filter", "group.filter.class",
         {**MM2, "connector.class": "MirrorCheckpointConnector",
          "group.filter.class": f"{PLUGINS}.UnlistedGroupFilter"}),
        ("forwarding admin", "forwarding.admin.class",
         {**source, "forwarding.admin.class": f"{PLUGINS}.UnlistedPolicy"}),
        ("consumer callback", f"consumer.override.{CALLBACK}", {**source, **rce("consumer.override.", marker)}),
        ("admin callback", f"admin.override.{CALLBACK}",
         {**MM2, "connector.class": "MirrorHeartbeatConnector", **rce("admin.override.", marker)}),
        ("client callback", "producer.override.sasl.client.callback.handler.class",
         {**seq, "producer.override.sasl.client.callback.handler.class": "os.system"}),
    ]


def test_each_key_that_names_code_is_refused_naming_it(worker: WorkerProcess, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    refused: dict[str, Any] = {}
    for index, (how, key, config) in enumerate(code_naming_variants(marker)):
        method, path, body = [("POST", "/connectors", {"name": f"v{index}", "config": config}),
                              ("PUT", f"/connectors/v{index}/config", config)][index % 2]
        response = worker.rest(method, path, json=body)
        refused[how] = response.status_code
        assert_refused(response, key)
        validated = worker.rest("PUT", f"/connector-plugins/{config['connector.class'].rsplit('.', 1)[-1]}"
                                       "/config/validate", json=config)
        if how != "connector":  # an unknown connector.class has no plugin to validate against: 400 above
            assert validated.status_code == 200, validated.text
            errors = {c["value"]["name"] for c in validated.json()["configs"] if c["value"]["errors"]}
            assert key in errors, (how, errors)
    assert worker.rest("GET", "/connectors").json() == []
    # A plugin named in a URL (a read, open without credentials) is resolved the same way.
    assert worker.rest("GET", f"/connector-plugins/{PLUGINS}.UnlistedConnector/config").status_code == 404
    assert not marker.exists()
    assert not Path(os.environ["CODE_PLUGINS_IMPORT_MARK"]).exists(), "a refused class was imported"


def test_a_class_the_operator_allows_runs(worker: WorkerProcess, cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("allowed"))
    create_topic(cluster_a.bootstrap, f"{topic}.allowed")
    config = {**sequence_config(topic, 1), "transforms": "rename",
              "transforms.rename.type": f"{PLUGINS}.RenamingTransform"}
    response = worker.rest("POST", "/connectors", json={"name": "allowed", "config": config})
    assert response.status_code == 201, response.text
    wait_until(lambda: len(consume_all(cluster_a.bootstrap, f"{topic}.allowed", timeout_s=5)) > 0, 60,
               "records routed by the operator-allowed transformation")
    assert Path(os.environ["CODE_PLUGINS_IMPORT_MARK"]).exists()
    assert "plugin.allowlist" in worker.log() or "operator-allowed" in worker.log()


def test_the_default_override_policy_keeps_hosts_and_principals_to_the_operator(cluster_a: Cluster,
                                                                                tmp_path: Path) -> None:
    process = WorkerProcess(tmp_path, cluster_a.bootstrap, unique("policy")).start()
    try:
        topic = create_topic(cluster_a.bootstrap, unique("policy-topic"))
        for key, value in (("bootstrap.servers", "127.0.0.1:1"), (CALLBACK, "os.system"),
                           ("sasl.jaas.config", "x required;")):
            response = process.rest("POST", "/connectors", json={
                "name": unique("p"), "config": {**sequence_config(topic, 1), f"producer.override.{key}": value}})
            assert response.status_code == 400, response.text
            assert f"The 'Allowlist' policy does not allow '{key}'" in response.json()["message"]
        tuned = process.rest("POST", "/connectors", json={
            "name": "tuned", "config": {**sequence_config(topic, 1), "producer.override.linger.ms": "7"}})
        assert tuned.status_code == 201, tuned.text
    finally:
        process.close()
