"""Node loss and rolling restarts of two ``connect-mirror-maker`` nodes on Apache Kafka (issue 28, item 2).

The same flow, load and measures as on Tansu (tests/integration/test_multinode_without_internal_rest.py,
through tests/integration/support/two_nodes.py): the file as users write it (no
``dedicated.mode.enable.internal.rest``), Connect's default 10 s sessions, 400 records/s over 6
partitions. What differs on Kafka: the rolling restart does not wait for a stable group before each
SIGTERM. On Tansu that wait works around a Tansu bug (a leader that leaves while its own JoinGroup is held
stays named leader for ever); Kafka's coordinator elects another leader, so here the nodes are restarted
back to back, as an operator's script would. Run with ``-s`` to see the measured stalls.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.support.two_nodes import RECOVERY_LIMIT_S, TwoNodes, describe
from tests.support.apache_kafka import KafkaBroker

#: Loss-asserting: never retried.
pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow, pytest.mark.flaky(reruns=0)]


@dataclass(frozen=True)
class Endpoint:
    bootstrap: str


@pytest.fixture
def two_nodes(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> Iterator[TwoNodes]:
    flow = TwoNodes(tmp_path, Endpoint(kafka_a.bootstrap_servers), Endpoint(kafka_b.bootstrap_servers))
    try:
        yield flow
    finally:
        flow.stop()


def test_kill_9_of_the_node_holding_the_connectors_on_kafka(two_nodes: TwoNodes) -> None:
    flow = two_nodes.start()
    flow.wait_settled()
    [holder] = flow.connector_workers()
    victim = next(n for n in flow.nodes if holder == f"RUNNING@{n.url.removeprefix('http://')}")
    survivor = next(n for n in flow.nodes if n is not victim)
    killed_ms = time.time() * 1000
    victim.kill()
    flow.wait_settled()
    assert flow.connector_workers() == {f"RUNNING@{survivor.url.removeprefix('http://')}"}
    stalls = flow.wait_flowing(killed_ms, "kill -9 of the node holding the connectors")
    print(f"\nkill -9 on Kafka: the longest a record sent since the kill waited: {describe(stalls)}")
    flow.finish("kill -9 of the node holding the connectors, Apache Kafka")
    assert max(stalls.values()) <= RECOVERY_LIMIT_S, stalls
    assert survivor.terminate() == 0, survivor.tail()


def test_rolling_restart_back_to_back_on_kafka(two_nodes: TwoNodes) -> None:
    """No wait for a stable group between the restarts (the Tansu workaround is not needed on Kafka)."""
    flow = two_nodes.start()
    recoveries = []
    for index in (0, 1):
        flow.wait_settled()
        restarted_ms = time.time() * 1000
        assert flow.nodes[index].terminate() == 0, flow.nodes[index].tail()
        flow.nodes[index] = flow.node(index)
        flow.nodes[index].start().wait_running(2, 120)
        flow.wait_settled()
        stalls = flow.wait_flowing(restarted_ms, f"the restart of node {index}")
        recoveries.append(max(stalls.values()))
        print(f"\nrestart of node {index} on Kafka: the longest a record sent since the SIGTERM waited: "
              f"{describe(stalls)}")
    flow.finish("rolling restart of two nodes back to back, Apache Kafka")
    assert all(r <= RECOVERY_LIMIT_S for r in recoveries), recoveries
    for node in flow.nodes:
        assert node.terminate() == 0, node.tail()
