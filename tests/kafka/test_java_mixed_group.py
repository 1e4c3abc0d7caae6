"""A Java MirrorMaker 2 node and ours in one Connect group (issue 31): ``connect.protocol = sessioned``.

With ``B.connect.protocol = sessioned`` our node speaks Java Connect's group protocol byte for byte
(connect_runtime/runtime/coordination/group_wire.py), so it joins the group (``<src>-mm2``) of a running Java
MirrorMaker node instead of being refused (INCONSISTENT_GROUP_PROTOCOL). Both run the same mm2.properties,
with internal REST on (``dedicated.mode.enable.internal.rest``, which Java needs to hand task configs to a
leader of either kind). Under a steady load: the Java node replicates alone, ours joins and takes a share of
the source tasks, the Java node is stopped (SIGTERM) and ours takes every task; nothing is lost, at most
2,500 records (5 s of load, ``B.offset.flush.interval.ms = 5000``) arrive twice, partitions stay in order,
and the consumer group's checkpoints keep advancing. Java's side is MirrorMaker 4.3.1 (tests/support/java_mm2.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
from confluent_kafka import KafkaException

from tests.integration.support.mm2_process import MirrorMakerProcess, aliases
from tests.kafka.test_java_interop import mm2_properties
from tests.support.apache_kafka import KafkaBroker
from tests.support.chaos import Checker, LoadGenerator, analyse
from tests.support.java_mm2 import JavaMirrorMaker
from tests.support.kafka import commit_group_offsets, consume_all, create_topic, topics, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow, pytest.mark.flaky(reruns=0)]

PARTITIONS = 4
TASKS = 4
RATE_PER_S = 500.0
DUPLICATES_ALLOWED = 2500
SOURCE = "MirrorSourceConnector"


class _Stoppable(Protocol):
    def stop(self) -> None: ...


@pytest.fixture
def running(request: pytest.FixtureRequest) -> Iterator[list[_Stoppable]]:
    """Whatever the test started, stopped even when it fails; the nodes' logs printed when it failed."""
    started: list[_Stoppable] = []
    failed_before = request.session.testsfailed
    yield started
    for thing in reversed(started):
        thing.stop()
    if request.session.testsfailed > failed_before:
        for thing in started:
            if isinstance(thing, JavaMirrorMaker | MirrorMakerProcess):
                print(f"\n{thing.log}:\n{thing.tail(80)}")


def _task_owners(bootstrap: str, alias: str) -> dict[int, tuple[str, str]]:
    """Each source task's last status (state, worker id), read from the status topic as Java's herder does."""
    owners: dict[int, tuple[str, str]] = {}
    prefix = f"status-task-{SOURCE}-".encode()
    for record in consume_all(bootstrap, f"mm2-status.{alias}.internal", 10):
        key = record.key or b""
        if key.startswith(prefix) and record.value:
            status = json.loads(record.value)
            owners[int(key[len(prefix):])] = (status["state"], status["worker_id"])
    return owners


def _checkpoints(bootstrap: str, alias: str, group: str) -> dict[int, int]:
    from mirror.client import mirror_client

    translated = mirror_client.translate_offsets({"bootstrap.servers": bootstrap}, alias, group, 10)
    return {tp.partition: om.offset for tp, om in translated.items()}


@pytest.mark.timeout(900)
def test_a_java_node_and_ours_share_the_group_and_hand_over(kafka_a: KafkaBroker, kafka_b: KafkaBroker,
                                                            tmp_path: Path, running: list[_Stoppable]) -> None:
    a, b = aliases("A", "B")
    source, target = kafka_a.bootstrap_servers, kafka_b.bootstrap_servers
    topic = create_topic(source, unique("mixed"), PARTITIONS)
    remote, group = f"{a}.{topic}", unique("mixed-group")
    properties = tmp_path / "mm2.properties"
    properties.write_text(mm2_properties(
        {a: {"bootstrap.servers": source}, b: {"bootstrap.servers": target}},
        [f"{a}->{b}.enabled = true", f"topics = {topic}", f"groups = {group}", "emit.heartbeats.enabled = false",
         f"tasks.max = {TASKS}", "dedicated.mode.enable.internal.rest = true", "configs.topic.compatibility = java",
         f"{b}.connect.protocol = sessioned", f"{b}.scheduled.rebalance.max.delay.ms = 10000",
         f"{b}.offset.flush.interval.ms = 5000", f"{b}.plugin.discovery = service_load"]), encoding="utf-8")

    load = LoadGenerator(source, topic, PARTITIONS, RATE_PER_S)
    running.append(load)
    load.start()
    java = JavaMirrorMaker(properties, "--clusters", b, log=tmp_path / "java.log")
    running.append(java)
    java.start()
    wait_until(lambda: remote in topics(target), 180, "Java: the remote topic on B", retry_on=(KafkaException,))
    checker = Checker(target, remote, PARTITIONS)
    running.append(checker)
    checker.start()
    wait_until(lambda: len(checker.seen()) == PARTITIONS, 180, "Java: records of every partition on B")
    wait_until(lambda: len(_task_owners(target, a)) == TASKS, 120, "Java: its source tasks' statuses")
    java_workers = {worker for _, worker in _task_owners(target, a).values()}

    ours = MirrorMakerProcess(properties, "--clusters", b, log=tmp_path / "ours.log")
    running.append(ours)
    ours.start()
    ours.wait_running(1, 180)
    our_worker = ours.url.removeprefix("http://").rstrip("/")

    def shared() -> bool:
        owners = _task_owners(target, a)
        running_on = {worker for state, worker in owners.values() if state == "RUNNING"}
        return len(owners) == TASKS and our_worker in running_on and bool(running_on & java_workers)
    wait_until(shared, 180, "the source tasks running on both nodes", interval_s=1)
    assert "protocol sessioned" in ours.log_text()
    commit_group_offsets(source, group, {(topic, p): len(s) for p, s in load.acked_snapshot().items()})
    wait_until(lambda: len(_checkpoints(target, a, group)) == PARTITIONS, 120, "checkpoints of the group")
    before = _checkpoints(target, a, group)
    time.sleep(10)  # deliberate: replicate with both nodes under load

    stop_ms = time.time() * 1000
    assert java.terminate(60) in (0, 130, 143), f"Java did not stop cleanly:\n{java.tail()}"

    def all_ours() -> bool:
        owners = _task_owners(target, a)
        return len(owners) == TASKS and all(o == ("RUNNING", our_worker) for o in owners.values())
    wait_until(all_ours, 180, "every source task running on our node", interval_s=1)
    committed = {p: len(s) for p, s in load.acked_snapshot().items()}
    commit_group_offsets(source, group, {(topic, p): n for p, n in committed.items()})

    def advanced() -> bool:
        now = _checkpoints(target, a, group)
        return len(now) == PARTITIONS and all(now[p] > before[p] for p in range(PARTITIONS))
    wait_until(advanced, 120, "checkpoints advancing after the Java node left")
    time.sleep(5)  # deliberate: replicate on our node alone under load
    load.stop()
    wait_until(lambda: checker.has_all(load.acked), 180, "every acknowledged record on B", interval_s=0.5)
    checker.stop()

    assert not load.errors, load.errors[:3]
    report = analyse("Java + ours, then ours", load.acked, checker.snapshot(), stop_ms)
    print(f"\n{report.table()}")
    assert report.lost == 0, report.table()
    assert report.duplicated <= DUPLICATES_ALLOWED, report.table()
    assert report.out_of_order == 0, report.table()
    assert all(_checkpoints(target, a, group)[p] <= committed[p] for p in range(PARTITIONS))
