"""The test clusters themselves: two real brokers start, answer, keep data apart and stop."""

from __future__ import annotations

import pytest

from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, produce, topics, unique

pytestmark = pytest.mark.integration


def test_two_clusters_are_separate_and_round_trip_records(cluster_a: Cluster, cluster_b: Cluster) -> None:
    assert cluster_a.bootstrap != cluster_b.bootstrap
    topic = create_topic(cluster_a.bootstrap, unique("roundtrip"), partitions=3)
    produce(cluster_a.bootstrap, topic, 30)
    records = consume_all(cluster_a.bootstrap, topic)
    assert sorted(r.value for r in records) == sorted(f"value-{i}".encode() for i in range(30))
    assert topic not in topics(cluster_b.bootstrap)


def test_fresh_cluster_stops_when_the_test_ends(fresh_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = fresh_cluster("x")
    assert cluster.broker is not None and cluster.broker.process is not None
    proc = cluster.broker.process
    cluster.broker.stop()
    assert proc.poll() is not None
