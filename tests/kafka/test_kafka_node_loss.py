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

from tests.integration.support.two_nodes import (
    RATE_PER_S,
    SOURCE,
    TwoNodes,
    kill_9_of_the_connector_holder,
    restart_each_node,
)
from tests.support.apache_kafka import KafkaBroker
from tests.support.chaos import analyse

#: The defaults' bounds: every partition flows again within this long after a kill -9 (a loose bound: the
#: figure is bench/failover_timing.py's node-loss scenario), and at most the records of one offset flush
#: interval plus its timeout (60 s + 5 s) are copied again.
DEFAULTS_RECOVERY_S = 30.0
DEFAULTS_DUPLICATES = int(RATE_PER_S * (60 + 5))

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


def test_kill_9_with_the_default_settings_on_kafka(kafka_a: KafkaBroker, kafka_b: KafkaBroker,
                                                   tmp_path: Path) -> None:
    """The group settings and offset flush of a user's file (10 s sessions, 1 s heartbeats, 60 s flush): the
    killed node held source tasks; every partition flows again within DEFAULTS_RECOVERY_S, nothing is lost,
    and the duplicates stay within what one offset flush interval allows."""
    flow = TwoNodes(tmp_path, Endpoint(kafka_a.bootstrap_servers), Endpoint(kafka_b.bootstrap_servers),
                    defaults=True)
    try:
        text = flow.properties.read_text(encoding="utf-8")
        assert "session.timeout" not in text and "heartbeat.interval" not in text and "flush.interval" not in text
        flow.start()
        flow.wait_settled()
        tasks = flow.status(SOURCE).get("tasks", [])
        assert isinstance(tasks, list)
        assert {t["worker_id"] for t in tasks} == flow.workers()  # whichever node dies held source tasks
        fault = "kill -9 with the default settings, Apache Kafka"
        stalls = kill_9_of_the_connector_holder(flow, fault)  # nothing lost (its finish asserts it)
        assert flow.load is not None and flow.checker is not None
        report = analyse(fault, flow.load.acked, flow.checker.snapshot())
        print(f"duplicates: {report.duplicated} (bound {DEFAULTS_DUPLICATES})")
        assert report.lost == 0
        assert report.duplicated <= DEFAULTS_DUPLICATES, report.table()
        assert max(stalls.values()) <= DEFAULTS_RECOVERY_S, stalls
    finally:
        flow.stop()
