"""A node's start on hundreds of topics, topic churn, and the target's CreateTopics quota, on Apache Kafka 4.4
(bench/scale.py measures the full sizes and the times: these check what must hold, not how fast).

* a start of 500 topics x 4 partitions: every record of every partition reaches B, each remote topic has
  the source's partition count, and the node keeps its group membership all along (the connector's start
  no longer creates the remote topics on the herder's tick thread): no admin step timed out, no heartbeat
  was missed, no work was fenced;
* topic churn: topics created and deleted while others copy: each new topic's records arrive, a deleted
  topic leaves no error loop, its remote topic stays on B and its metric series go.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import admin, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

#: Kafka's own defaults for a broker's session with its controller, over the tier's quick ones (4 s, made for
#: restart tests): a one-node broker creating thousands of partitions on a loaded machine can miss 4 s and
#: fence itself, leaving partitions without a leader (bench/scale.py starts its brokers the same way).
BROKER_CONFIG = {"broker.session.timeout.ms": "9000", "broker.heartbeat.interval.ms": "2000"}
#: What the driver's log says when a large start goes wrong: a start step that timed out on the tick thread,
#: kafka-python's poll timeout, fencing after a lost membership, a missed heartbeat.
TROUBLE = re.compile(r"timed out running|[Cc]onsumer poll timeout|membership was lost|no heartbeat was acknowledged")
#: The harness's short intervals that a start of hundreds of topics must not run every two seconds: the code's
#: defaults apply to them, as in a user's file.
DEFAULT_INTERVALS = ("refresh.topics.interval.seconds", "sync.topic.configs.interval.seconds",
                     "refresh.groups.interval.seconds", "session.timeout.ms", "heartbeat.interval.ms")


def write_properties(path: Path, clusters: Mapping[str, KafkaBroker], body: str,
                     defaults: Collection[str] = DEFAULT_INTERVALS) -> Path:
    path.write_text(mm2_properties({a: c.bootstrap_servers for a, c in clusters.items()}, body, defaults=defaults),
                    encoding="utf-8")
    return path


def create_topics(client: AdminClient, names: list[str], partitions: int) -> None:
    """Create ``names`` (100 per request) and wait until every partition has a leader."""
    for i in range(0, len(names), 100):
        batch = [NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names[i:i + 100]]
        for future in client.create_topics(batch, operation_timeout=60).values():
            future.result(120)

    def led() -> bool:
        client.list_topics(timeout=30)  # ListOffsets answers UNKNOWN_TOPIC for topics its metadata lacks
        request = {TopicPartition(n, p): OffsetSpec.latest() for n in names for p in range(partitions)}
        try:
            for future in client.list_offsets(request, request_timeout=30).values():
                future.result(60)
        except Exception:
            return False
        return True

    wait_until(led, 120, f"leaders of {len(names)} new topics")


def write(bootstrap: str, names: list[str], partitions: int, per_partition: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for name in names:
        for p in range(partitions):
            for i in range(per_partition):
                producer.produce(name, value=f"{name}/{p}/{i}".encode(), partition=p)
        producer.poll(0)
    assert producer.flush(60) == 0


def end_offsets(client: AdminClient, names: list[str], partitions: int) -> dict[tuple[str, int], int]:
    """Each existing partition's end offset (partitions of topics not there yet are left out)."""
    present = client.list_topics(timeout=30).topics
    request = {TopicPartition(n, p): OffsetSpec.latest() for n in names if n in present for p in range(partitions)}
    if not request:
        return {}
    ends: dict[tuple[str, int], int] = {}
    for tp, future in client.list_offsets(request, request_timeout=30).items():
        try:
            ends[(tp.topic, tp.partition)] = future.result(60).offset
        except Exception:  # a partition without a leader yet: not there
            continue
    return ends


def test_500_topic_start_copies_everything_and_keeps_the_membership(
        fresh_kafka: Callable[..., KafkaBroker], tmp_path: Path) -> None:
    source, target = fresh_kafka("scale-a", config=BROKER_CONFIG), fresh_kafka("scale-b", config=BROKER_CONFIG)
    a, b = aliases("A", "B")
    names = [f"scale-{i:04d}" for i in range(500)]
    create_topics(admin(source.bootstrap_servers), names, 4)
    write(source.bootstrap_servers, names, 4, 2)
    mm2 = write_properties(tmp_path / "mm2.properties", {a: source, b: target},
                           f"{a}->{b}.enabled = true\n{a}->{b}.topics = scale-.*\ntasks.max = 4\n")
    remote = [f"{a}.{n}" for n in names]
    on_b = admin(target.bootstrap_servers)
    with MirrorMakerProcess(mm2) as node:
        wait_until(lambda: sum(end_offsets(on_b, remote, 4).values()) == 500 * 4 * 2, 300,
                   "every record of the 500 topics on B")
        assert end_offsets(on_b, remote, 4) == {(t, p): 2 for t in remote for p in range(4)}
        partitions = {t: len(m.partitions) for t, m in on_b.list_topics(timeout=30).topics.items() if t in remote}
        assert partitions == dict.fromkeys(remote, 4)
        assert [state for state, _ in node.task_states(a, b, "MirrorSourceConnector")] == ["RUNNING"] * 4
        assert httpx.get(f"{node.url}/metrics", timeout=120).status_code == 200
        assert httpx.get(f"{node.url}/ui/api/status", timeout=60).status_code == 200
        trouble = [line for line in node.log_text().splitlines() if TROUBLE.search(line)]
        assert trouble == [], "\n".join(trouble[:10])
    for broker in (source, target):  # thrown away: a clean stop of 2,000 partitions takes half a minute
        broker.kill()


def test_topic_churn_copies_new_topics_and_forgets_deleted_ones(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    source, target = kafka_a, kafka_b  # a hundred or so partitions: the shared brokers take them
    a, b = aliases("A", "B")
    on_a, on_b = admin(source.bootstrap_servers), admin(target.bootstrap_servers)
    prefix = f"churn{a}"
    first = [f"{prefix}-{i:04d}" for i in range(50)]
    create_topics(on_a, first, 2)
    write(source.bootstrap_servers, first, 2, 1)
    mm2 = write_properties(tmp_path / "mm2.properties", {a: source, b: target},
                           f"{a}->{b}.enabled = true\n{a}->{b}.topics = {prefix}-.*\ntasks.max = 2\n"
                           "refresh.topics.interval.seconds = 5\n")
    with MirrorMakerProcess(mm2) as node:
        wait_until(lambda: sum(end_offsets(on_b, [f"{a}.{n}" for n in first], 2).values()) == 100, 180,
                   "the first 50 topics on B")
        created: list[str] = []
        deleted: list[str] = []
        until = time.monotonic() + 30
        # a topic created and one deleted about every second; ten of the first topics are never deleted
        while time.monotonic() < until and len(deleted) < len(first) - 10:
            name = f"{prefix}-new-{len(created):04d}"
            create_topics(on_a, [name], 2)
            write(source.bootstrap_servers, [name], 2, 1)
            created.append(name)
            victim = first[len(deleted)]
            on_a.delete_topics([victim], operation_timeout=30)[victim].result(60)
            deleted.append(victim)
            time.sleep(0.5)
        new_remote = [f"{a}.{n}" for n in created]
        wait_until(lambda: end_offsets(on_b, new_remote, 2) == {(t, p): 1 for t in new_remote for p in range(2)},
                   120, f"the records of the {len(created)} new topics on B")
        time.sleep(10)  # two refreshes after the last deletion
        settled = len(node.log_text())
        time.sleep(10)  # two more: what a deleted topic still logs would be an error loop
        later = node.log_text()[settled:]
        noise = [line for line in later.splitlines()
                 if (" WARNING " in line or " ERROR " in line)
                 and any(name in line for name in deleted)]
        assert noise == [], "\n".join(noise[:10])
        on_target = on_b.list_topics(timeout=30).topics
        assert [n for n in deleted if f"{a}.{n}" not in on_target] == []  # remote topics are kept
        metrics = httpx.get(f"{node.url}/metrics", timeout=60).text
        stale = [line for line in metrics.splitlines() if not line.startswith("#")
                 and any(f'topic="{a}.{n}"' in line for n in deleted)
                 and "records_lost" not in line and "loss_events" not in line]
        assert stale == [], "\n".join(stale[:5])
        assert [state for state, _ in node.task_states(a, b, "MirrorSourceConnector")] == ["RUNNING"] * 2
        trouble = [line for line in node.log_text().splitlines() if TROUBLE.search(line)]
        assert trouble == [], "\n".join(trouble[:10])

