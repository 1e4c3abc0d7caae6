"""A mirror task whose ``start()`` raises after it opened clients leaves nothing behind.

The genuine failure: a source consumer setting that no validation checks (MM2 passes client keys through,
as Java does) but the client rejects when it is built, ``A.consumer.isolation.level = bogus``.
MirrorSourceTask.start has by then registered its partition metrics and built the offset-sync producer
(and the offset-map producer when enabled). The runtime stops and closes a task whose start raised
(Java's KAFKA-10792), so those are released; before, the FAILED task kept its producer (a librdkafka
handle: an ``rdk:main`` thread) alive until restarted, and the metric series of a task that never ran
stayed exported for ever (each restart's failed instance added its own).
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from connect_runtime.lifecycle import State
from connect_runtime.testing.harness import run_source_task
from mirror.config.source import TASK_TOPIC_PARTITIONS, encode_topic_partition
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import create_topic, unique, wait_until
from tests.support.mm2 import flow_config

pytestmark = pytest.mark.integration

BAD_VALUE = 'Invalid value "bogus" for configuration property "isolation.level"'


def librdkafka_clients(pid: int | str = "self") -> int:
    """Live librdkafka handles of a process: each has one thread named ``rdk:main``."""
    count = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                count += comm.read().strip() == "rdk:main"
        except FileNotFoundError:  # the thread ended meanwhile
            pass
    return count


def test_source_task_failing_in_start_releases_its_producers_and_metrics(cluster_a: Cluster,
                                                                       cluster_b: Cluster) -> None:
    src, tgt = aliases("fs", "ft")
    topic = create_topic(cluster_a.bootstrap, unique("failed-start"), partitions=2)
    config = {**flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic}),
              TASK_TOPIC_PARTITIONS: ",".join(encode_topic_partition(topic, p) for p in (0, 1)),
              "source.consumer.isolation.level": "bogus"}
    gc.collect()
    before = librdkafka_clients()
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=cluster_b.bootstrap,
                         connector="MirrorSourceConnector", wait_running_s=None) as run:
        run.wait_for_state(State.FAILED)
        assert BAD_VALUE in (run.trace() or "")
        gc.collect()
        # The task instance is still held (the FAILED task stays until restarted): nothing it opened is.
        assert librdkafka_clients() == before
        remote = f"{src}.{topic}"
        assert not [s for m in run.registry.collect() for s in m.samples if s.labels.get("topic") == remote]


def test_failed_start_reports_failed_over_rest_and_restarts_without_leaving_anything(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """The real connect-mirror-maker: FAILED with the client's error through REST, restartable (it fails
    again, the same way), and no failed instance leaves its metric series in ``/metrics``.

    (The process's librdkafka handle count is no measure here: its own clients come and go while it runs;
    the in-process test above counts the task's exactly.)
    """
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("failed-start"), partitions=1)
    remote = f"{a}.{topic}"
    body = (f"{a}->{b}.enabled = true\n{b}->{a}.emit.heartbeats.enabled = false\n"
            f"{a}->{b}.emit.checkpoints.enabled = false\n{a}->{b}.emit.heartbeats.enabled = false\n"
            f"topics = {topic}\n{a}.consumer.isolation.level = bogus\n")
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    status = f"/{a}/{b}/connectors/MirrorSourceConnector/status"
    restart = f"/{a}/{b}/connectors/MirrorSourceConnector/tasks/0/restart"
    with MirrorMakerProcess(props) as node:
        node.wait_running(1)

        def failed_task() -> dict[str, str] | None:
            response = node.request("GET", status)
            if response.status_code == 404:  # the connector's config is not written yet (a loaded start)
                return None
            response.raise_for_status()
            tasks = response.json().get("tasks", [])
            return tasks[0] if tasks and tasks[0]["state"] == "FAILED" else None

        def failures() -> int:  # each failed start logs the client's error once more
            return node.log_text().count(BAD_VALUE)

        def series_of_the_failed_task() -> list[str]:
            text = node.request("GET", "/metrics").text
            return [line for line in text.splitlines() if f'topic="{remote}"' in line]

        task = wait_until(failed_task, 60, "the source task FAILED")
        assert BAD_VALUE in task["trace"] and "mirror/source/task.py" in task["trace"], node.tail()
        assert node.get(status)["connector"]["state"] == "RUNNING"
        assert series_of_the_failed_task() == []
        for attempt in range(2):
            logged = failures()
            r = node.request("POST", restart)
            assert r.status_code == 204, r.text
            wait_until(lambda logged=logged: failures() > logged and failed_task() is not None, 60,
                       f"restart {attempt + 1} FAILED again")
            assert series_of_the_failed_task() == []
        assert node.terminate() == 0
