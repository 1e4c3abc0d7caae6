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

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.support.two_nodes import TwoNodes, kill_9_of_the_connector_holder, restart_each_node
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
    kill_9_of_the_connector_holder(flow, "kill -9 of the node holding the connectors, Apache Kafka")


def test_rolling_restart_back_to_back_on_kafka(two_nodes: TwoNodes) -> None:
    """No wait for a stable group between the restarts (the Tansu workaround is not needed on Kafka)."""
    flow = two_nodes.start()
    restart_each_node(flow, "rolling restart of two nodes back to back, Apache Kafka", flow.wait_settled)
