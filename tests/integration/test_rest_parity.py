"""Kafka 3.7-4.x Connect REST parity against real brokers (issue 19 item 2): KIP-1017 ``/health``,
KIP-980 ``initial_state``, KIP-558 active topics, KIP-976 cluster-wide logger levels.

``connect-distributed`` and ``connect-mirror-maker`` run as subprocesses on the shared session brokers
(their own group and internal topics each); every assertion goes through real HTTP or reads the
broker's topics.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mirror.local.broker import free_port
from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.integration.test_connect_distributed import WorkerProcess, sequence_config
from tests.support.kafka import consume_all, create_topic, produce, topics, unique, wait_until

pytestmark = pytest.mark.integration

HEALTHY = {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}


@pytest.fixture
def workers(tmp_path: Path, cluster_a: Cluster) -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.close()


def connector_status(worker: WorkerProcess, name: str) -> dict[str, Any]:
    response = worker.rest("GET", f"/connectors/{name}/status")
    return response.json() if response.status_code == 200 else {}


def test_health_is_503_while_starting(tmp_path: Path, workers: list[WorkerProcess]) -> None:
    """KIP-1017: a worker whose herder has not completed startup (here: its Kafka cluster does not
    answer) serves /health with 503 and status "starting"."""
    worker = WorkerProcess(tmp_path, f"127.0.0.1:{free_port()}", unique("starting"),
                           **{"rest.request.timeout.ms": "5000"})
    workers.append(worker)
    with worker.log_path.open("wb") as log:
        worker.process = subprocess.Popen(
            [sys.executable, "-m", "connect_runtime.cli.connect_distributed", str(worker.path)],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    worker.url = wait_until(worker._listening_url, 60, "REST URL")
    response = wait_until(lambda: httpx.get(f"{worker.url}/health", timeout=5), 30, "an answer",
                          retry_on=(httpx.TransportError,))
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["status"] == "starting" and body["message"].startswith("Worker is still starting up."), body


def test_health_initial_states_and_topic_tracking(tmp_path: Path, cluster_a: Cluster,
                                                   workers: list[WorkerProcess]) -> None:
    """/health is 200 once running; a connector created STOPPED or PAUSED runs no task while a RUNNING
    one next to them writes (as in Java, a connector that never started computes no task configs: a PAUSED
    one differs from a STOPPED one in that it keeps task configs it had, and in its state), and both
    start their tasks when resumed; KIP-558 lists the topic the running one's
    tasks produced to (status-topic records in Java's format), and reset forgets it until the next write."""
    worker = WorkerProcess(tmp_path, cluster_a.bootstrap, unique("parity")).start()
    workers.append(worker)
    response = worker.rest("GET", "/health")
    assert (response.status_code, response.json()) == (200, HEALTHY)

    stopped_topic, paused_topic, running_topic = (create_topic(cluster_a.bootstrap, unique(n))
                                                  for n in ("stopped", "paused", "running"))
    bad = worker.rest("POST", "/connectors", json={"name": "x", "config": sequence_config(running_topic, 1),
                                                   "initial_state": "ASLEEP"})
    assert bad.status_code == 400 and "initial_state" in bad.json()["message"], bad.text
    assert "\n" not in bad.json()["message"]
    for name, topic, state in (("stopped", stopped_topic, "STOPPED"), ("paused", paused_topic, "PAUSED"),
                               ("running", running_topic, None)):
        body: dict[str, Any] = {"name": name, "config": sequence_config(topic, 2, **{"records.per.second": "50"})}
        if state is not None:
            body["initial_state"] = state
        created = worker.rest("POST", "/connectors", json=body)
        assert created.status_code == 201, created.text

    # The running connector writes: the worker has had every chance to start the others' tasks.
    wait_until(lambda: len(consume_all(cluster_a.bootstrap, running_topic, 5)) >= 10, 60, "records written")
    wait_until(lambda: connector_status(worker, "paused").get("connector", {}).get("state") == "PAUSED", 30,
               "PAUSED connector")
    assert connector_status(worker, "paused")["tasks"] == []
    stopped = connector_status(worker, "stopped")
    assert stopped["connector"]["state"] == "STOPPED" and stopped["tasks"] == [], stopped
    assert worker.rest("GET", "/connectors/stopped/tasks").json() == []
    assert consume_all(cluster_a.bootstrap, stopped_topic, 5) == []
    assert consume_all(cluster_a.bootstrap, paused_topic, 5) == []

    # KIP-558: the running connector's tasks recorded their topic; the idle ones recorded nothing.
    def active(name: str) -> list[str]:
        answer = worker.rest("GET", f"/connectors/{name}/topics")
        assert answer.status_code == 200, answer.text
        return list(answer.json()[name]["topics"])

    assert wait_until(lambda: active("running") == [running_topic] and active("running"), 30,
                      "active topics of 'running'") == [running_topic]
    assert active("stopped") == [] and active("paused") == []
    records = {r.key: r.value for r in consume_all(cluster_a.bootstrap, worker.props["status.storage.topic"], 10)}
    value = json.loads(records[f"status-topic-{running_topic}:connector-running".encode()] or b"null")
    assert set(value["topic"]) == {"name", "connector", "task", "discoverTimestamp"}
    assert (value["topic"]["name"], value["topic"]["connector"]) == (running_topic, "running")
    assert value["topic"]["task"] in (0, 1)

    reset = worker.rest("PUT", "/connectors/running/topics/reset")
    assert reset.status_code == 202, reset.text
    key = f"status-topic-{running_topic}:connector-running".encode()
    history = [r.value for r in consume_all(cluster_a.bootstrap, worker.props["status.storage.topic"], 10)
               if r.key == key]
    # The tombstone is in the topic when 202 is answered; the tasks still write, so they record the topic again.
    assert history[0] is not None and None in history, history
    wait_until(lambda: active("running") == [running_topic], 30, "topic recorded again after the reset")

    # Resuming starts their tasks: they were held, not broken.
    for name, topic in (("stopped", stopped_topic), ("paused", paused_topic)):
        assert worker.rest("PUT", f"/connectors/{name}/resume").status_code == 202
        wait_until(lambda t=topic: len(consume_all(cluster_a.bootstrap, t, 5)) > 0, 60, f"resumed {name} writes")
        wait_until(lambda n=name: len(connector_status(worker, n).get("tasks", [])) == 2, 30, f"{name} tasks")


@pytest.mark.slow
def test_cluster_scope_logger_level_reaches_the_other_worker(tmp_path: Path, cluster_a: Cluster,
                                                             workers: list[WorkerProcess]) -> None:
    """KIP-976: PUT on one worker with scope=cluster answers 204 and the level is applied by every worker
    of the group, read from the config topic (``logger-cluster-<namespace>``)."""
    group = unique("loggers")
    for directory in ("one", "two"):
        (tmp_path / directory).mkdir()
    first = WorkerProcess(tmp_path / "one", cluster_a.bootstrap, group)
    second = WorkerProcess(tmp_path / "two", cluster_a.bootstrap, group)
    workers += [first, second]
    first.start()
    second.start()
    namespace = "connect_runtime.kip976." + unique("ns").replace("-", "_")

    response = first.rest("PUT", f"/admin/loggers/{namespace}", params={"scope": "cluster"},
                          json={"level": "DEBUG"})
    assert response.status_code == 204, response.text

    def level_on(worker: WorkerProcess) -> str | None:
        answer = worker.rest("GET", f"/admin/loggers/{namespace}")
        return str(answer.json()["level"]) if answer.status_code == 200 else None

    wait_until(lambda: level_on(second) == "DEBUG", 30, "the level on the second worker")
    wait_until(lambda: level_on(first) == "DEBUG", 30, "the level on the worker asked")
    records = {r.key: r.value for r in consume_all(cluster_a.bootstrap, first.props["config.storage.topic"], 10)}
    assert records[f"logger-cluster-{namespace}".encode()] == b'{"level":"DEBUG"}'
    # scope=worker stays local: the second worker keeps DEBUG.
    local = first.rest("PUT", f"/admin/loggers/{namespace}", json={"level": "ERROR"})
    assert local.status_code == 200 and namespace in local.json()
    assert level_on(first) == "ERROR" and level_on(second) == "DEBUG"


@pytest.mark.slow
def test_mm2_flow_health_topics_and_cluster_logger(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """The driver: /<src>/<tgt>/health per flow; the MirrorSource task (bulk path) records the remote
    topic it produced to; a cluster-scope level is written to the flow's config topic and applied."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("tracked"))
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(5)])
    body = f"{a}->{b}.enabled = true\ntopics = {topic}\n"
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body), encoding="utf-8")
    remote = f"{a}.{topic}"
    with MirrorMakerProcess(props) as node:
        node.wait_running(2)  # A->B, and B->A for its heartbeats (MM2 runs a herder per pair)
        health = node.request("GET", f"/{a}/{b}/health")
        assert (health.status_code, health.json()) == (200, HEALTHY)
        assert node.request("GET", "/health").status_code == 200
        wait_until(lambda: remote in topics(cluster_b.bootstrap) and len(consume_all(cluster_b.bootstrap, remote, 5))
                   >= 5, 60, "records replicated")
        source = f"/{a}/{b}/connectors/MirrorSourceConnector/topics"
        listed = wait_until(lambda: (t := node.get(source)["MirrorSourceConnector"]["topics"]) and remote in t and t,
                            30, "the remote topic among the active topics")
        assert set(listed) <= topics(cluster_b.bootstrap)

        namespace = "mirror.kip976." + unique("ns").replace("-", "_")
        response = node.request("PUT", f"/admin/loggers/{namespace}", params={"scope": "cluster"},
                                json={"level": "TRACE"})
        assert response.status_code == 204, response.text
        wait_until(lambda: node.request("GET", f"/admin/loggers/{namespace}").status_code == 200
                   and node.get(f"/admin/loggers/{namespace}")["level"] == "TRACE", 30, "the level applied")
        configs = {r.key: r.value for r in consume_all(cluster_b.bootstrap, f"mm2-configs.{a}.internal", 10)}
        assert configs[f"logger-cluster-{namespace}".encode()] == b'{"level":"TRACE"}'
        assert node.terminate() == 0
