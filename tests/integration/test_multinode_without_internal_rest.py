"""Two ``connect-mirror-maker`` nodes with the file as a user writes it: no ``dedicated.mode.enable.internal.rest``
(issue 26).

Java MM2 leaves internal REST off by default (KIP-710), so a follower that runs a connector cannot hand
its task configs to the leader and the flow stalls. Here, while a member of the group cannot reach the
leader over internal REST, the assignor keeps every connector on the group leader and spreads the
tasks; the connectors move with leadership (docs/architecture.md, "Several nodes without internal
REST"). Each test runs a steady load of sequenced records (tests/support/chaos.py) through real nodes
and brokers, with Connect's default group settings (10 s sessions), and checks that nothing is lost and
that every partition flows again within 60 s of each fault. Run with ``-s`` to see the measured times.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.integration.support.mm2_process import aliases
from tests.integration.support.replication import status, write_properties
from tests.integration.support.two_nodes import TwoNodes, kill_9_of_the_connector_holder, restart_each_node
from tests.support.kafka import create_topic, produce, unique

#: Loss-asserting: never retried (tests/conftest.py retries other integration tests once).
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.flaky(reruns=0)]


@pytest.fixture
def two_nodes(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> Iterator[TwoNodes]:
    flow = TwoNodes(tmp_path, cluster_a, cluster_b)
    try:
        yield flow
    finally:
        flow.stop()


def test_rolling_restart_without_internal_rest_loses_nothing(two_nodes: TwoNodes) -> None:
    flow = two_nodes.start()
    time.sleep(3)  # deliberate: a steady state before the first restart
    restart_each_node(flow, "rolling restart of two nodes, no internal REST", flow.wait_group_stable)


def test_kill_9_of_the_node_holding_the_connectors_moves_them(two_nodes: TwoNodes) -> None:
    flow = two_nodes.start()
    flow.wait_group_stable()
    kill_9_of_the_connector_holder(flow, "kill -9 of the node holding the connectors, no internal REST")


def test_mirror_status_reports_a_connector_stalled_on_a_node(cluster_a: Cluster, cluster_b: Cluster,
                                                             tmp_path: Path) -> None:
    """A node that cannot hand a connector's task configs to the leader writes the connector's status RUNNING
    with the reason as its trace (connect_runtime/runtime/leader/stalled_handoffs.py, unit-tested in
    tests/unit/mirror/test_stalled_follower.py); ``mirror status`` reads the flow's status topic and says so
    until the connector's next status."""
    a, b = aliases("A", "B")
    props = write_properties(tmp_path / "mm2.properties", a, b, cluster_a.bootstrap, cluster_b.bootstrap,
                             unique("stalled"))
    status_topic = create_topic(cluster_b.bootstrap, f"mm2-status.{a}.internal", 5)
    reason = "its task-configs cannot reach the leader: This worker is not able to communicate with the leader"
    key = b"status-connector-MirrorSourceConnector"

    def connector_status(trace: str | None) -> bytes:
        return json.dumps({"state": "RUNNING", "trace": trace, "worker_id": "n1:8083", "generation": 4}).encode()

    produce(cluster_b.bootstrap, status_topic, [(key, connector_status(reason))])
    _, report = status(props, b, "--latency-window", "0")
    [flow] = report["flows"]
    expected = f"connector MirrorSourceConnector on n1:8083: {reason}"
    assert flow["stalled"] == [expected]
    assert f"stalled: {expected}" in flow["reasons"]
    produce(cluster_b.bootstrap, status_topic, [(key, connector_status(None))])
    _, report = status(props, b, "--latency-window", "0")
    assert report["flows"][0]["stalled"] == []
