"""Issue 16 on real brokers: migration from Java MM2's internal topics, SIGTERM with a cluster down,
``producer.override.*`` reaching the task producer and ``forwarding.admin.class``.

Aliases are unique per test (``A<uuid8>``), so the internal topics never mix with other tests'.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from mirror.client.models import Checkpoint, OffsetSync, TopicPartition
from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS, MirrorMakerConfig, SourceAndTarget
from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import consume_all, create_topic, produce, unique, wait_until

pytestmark = [pytest.mark.integration]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mm2.properties"
    path.write_text(text, encoding="utf-8")
    return path


def _java_producer(bootstrap: str) -> Producer:
    # Java's default partitioner for keyed records: murmur2 of the key bytes, as Connect's offset writer.
    return Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 0})


def _values(bootstrap: str, topic: str) -> list[bytes]:
    return [m.value or b"" for m in consume_all(bootstrap, topic)]


@pytest.mark.slow
def test_a_flow_java_mm2_ran_resumes_where_java_stopped(cluster_a: Cluster, cluster_b: Cluster,
                                                         tmp_path: Path) -> None:
    """Java MM2 copied records 0..K-1 and stored offset K-1; we copy exactly K..N-1 (nothing twice).

    The internal topics hold Java's records, byte for byte as Java writes them (docs/migration.md): the
    offsets topic's ``["MirrorSourceConnector",{"cluster","partition","topic"}]`` -> ``{"offset"}``
    (25 partitions, keyed records placed by murmur2 as Java's producer does), the config topic's
    connector/task/commit records (JsonConverter without schemas), an offset sync and a checkpoint
    (the wire formats of mirror.client.models, checked against Java's golden bytes in the
    unit tests).
    """
    n, k = 20, 12
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("migrate"))
    remote = f"{a}.{topic}"
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(n)])
    # What Java MM2 had copied before it was stopped: the first K records, in the remote topic.
    create_topic(cluster_b.bootstrap, remote)
    produce(cluster_b.bootstrap, remote, [(None, f"v{i}".encode()) for i in range(k)])

    body = f"{a}->{b}.enabled = true\ntopics = {topic}\n{b}->{a}.emit.heartbeats.enabled = false\n"
    props = _write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    config = MirrorMakerConfig.from_file(str(props))
    source_config = config.connector_base_config(SourceAndTarget(a, b), SOURCE_CONNECTOR_CLASS)

    offsets_topic = create_topic(cluster_b.bootstrap, f"mm2-offsets.{a}.internal", 25,
                                 {"cleanup.policy": "compact"})
    configs_topic = create_topic(cluster_b.bootstrap, f"mm2-configs.{a}.internal", 1, {"cleanup.policy": "compact"})
    target = _java_producer(cluster_b.bootstrap)
    key = json.dumps(["MirrorSourceConnector", {"cluster": a, "partition": 0, "topic": topic}],
                     separators=(",", ":")).encode()
    target.produce(offsets_topic, key=key, value=json.dumps({"offset": k - 1}, separators=(",", ":")).encode())
    java_task = {**source_config, "task.assigned.partitions": f"{topic}-0", "task.index": "0",
                 "task.class": "org.apache.kafka.connect.mirror.MirrorSourceTask"}
    for record_key, value in (
            ("connector-MirrorSourceConnector", {"properties": source_config}),
            ("task-MirrorSourceConnector-0", {"properties": java_task}),
            ("commit-MirrorSourceConnector", {"tasks": 1})):
        target.produce(configs_topic, key=record_key.encode(), value=json.dumps(value).encode())
    checkpoints = create_topic(cluster_b.bootstrap, f"{a}.checkpoints.internal", 1, {"cleanup.policy": "compact"})
    checkpoint = Checkpoint(unique("group"), TopicPartition(topic, 0), k, k)
    target.produce(checkpoints, key=checkpoint.key_bytes(), value=checkpoint.value_bytes())
    assert target.flush(15) == 0
    syncs = create_topic(cluster_a.bootstrap, f"mm2-offset-syncs.{b}.internal", 1, {"cleanup.policy": "compact"})
    sync = OffsetSync(TopicPartition(topic, 0), k - 1, k - 1)
    source = _java_producer(cluster_a.bootstrap)
    source.produce(syncs, key=sync.key_bytes(), value=sync.value_bytes())
    assert source.flush(15) == 0

    with MirrorMakerProcess(props, log=tmp_path / "node.log") as node:
        node.wait_running(1)
        wait_until(lambda: len(_values(cluster_b.bootstrap, remote)) >= n, 90, f"{n} records in {remote}")
        # One partition, in order: a record copied twice would show up as a second v{K-1} or earlier.
        assert _values(cluster_b.bootstrap, remote) == [f"v{i}".encode() for i in range(n)]
        # The task first ran with Java's task config, then the connector wrote its own and the task was
        # restarted (UNASSIGNED meanwhile): it settles at RUNNING, and the restart copied nothing again.
        wait_until(lambda: (states := node.task_states(a, b, "MirrorSourceConnector"))
                   and all(state == "RUNNING" for state, _ in states), 60, "the task RUNNING after its restart")
        assert _values(cluster_b.bootstrap, remote) == [f"v{i}".encode() for i in range(n)]
        assert node.terminate() == 0
    # Java's checkpoint and offset sync are still there for failover tools (nothing rewrote or deleted them).
    assert checkpoint.value_bytes() in [m.value for m in consume_all(cluster_b.bootstrap, checkpoints)]


def test_sigterm_exits_promptly_while_a_cluster_is_unreachable(cluster_a: Cluster, tmp_path: Path) -> None:
    """SIGTERM while one herder slot retries a cluster that does not answer: exit 0, promptly.

    Before issue 16 this took ~16 s: the slot's cluster probe blocked for its 10 s metadata timeout
    and the health monitor's stop waited for its probe pass to the same cluster. The bound below
    (10 s) leaves room for a loaded machine while failing that regression.
    """
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = f"127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: connection refused
        a, b = aliases("A", "B")
        body = f"{a}->{b}.enabled = true\n"
        props = _write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: down}, body))
        with MirrorMakerProcess(props, log=tmp_path / "node.log") as node:
            wait_until(lambda: f"{a}->{b}: cannot build the herder" in node.log_text(), 60,
                       "the A->B slot retrying its unreachable target")
            started = time.monotonic()
            assert node.terminate(timeout_s=10) == 0, node.tail()
            took = time.monotonic() - started
    print(f"SIGTERM to exit with {b} unreachable: {took:.1f}s")
    assert "connect-mirror-maker stopped" in node.log_text()
