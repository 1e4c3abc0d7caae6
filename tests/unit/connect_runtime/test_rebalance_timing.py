"""Rebalance timing for Connect's rebalance metrics (connect_runtime/runtime/coordination/kafka_membership.py)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry

from connect_runtime.metrics import RebalanceMetrics
from connect_runtime.runtime.coordination.kafka_membership import RebalanceTimer


def sample(registry: CollectorRegistry, name: str) -> float | None:
    return registry.get_sample_value(name)


def test_a_rebalance_runs_from_its_first_join_group_to_the_applied_assignment() -> None:
    registry = CollectorRegistry()
    timer = RebalanceTimer(RebalanceMetrics(registry))
    timer.join_sent(time.monotonic() - 5)
    assert sample(registry, "connect_worker_rebalancing") == 1
    timer.join_sent(time.monotonic() - 1)  # a retried JoinGroup of the same rebalance: it began earlier
    timer.completed(7, leader=True)
    assert sample(registry, "connect_worker_rebalancing") == 0
    assert sample(registry, "connect_worker_rebalance_seconds_count") == 1
    seconds = sample(registry, "connect_worker_rebalance_seconds_sum")
    assert seconds is not None and 5 <= seconds < 60
    assert sample(registry, "connect_worker_rebalance_epoch") == 7
    assert sample(registry, "connect_worker_leader") == 1


def test_an_assignment_without_a_join_group_counts_without_a_duration() -> None:
    registry = CollectorRegistry()
    timer = RebalanceTimer(RebalanceMetrics(registry))
    timer.completed(3, leader=False)
    assert sample(registry, "connect_worker_rebalance_completed_total") == 1
    assert sample(registry, "connect_worker_rebalance_seconds_count") == 0


def test_without_metrics_nothing_is_recorded() -> None:
    timer = RebalanceTimer(None)
    timer.join_sent(time.monotonic())
    timer.completed(1, leader=False)
