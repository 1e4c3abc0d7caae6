"""A follower that runs a connector and cannot hand its task configs to the leader (MM2 without internal
REST) never stalls silently: ``/health`` names it, the connector's status carries the reason, a metric
counts the attempts; all of it clears once the task configs it computes are the stored ones (issue 26).

The group keeps connectors on the leader in that setup (assignor invariant F), so this is the state
between a leadership change and the next assignment, forced here with a member that is always a follower.
"""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry

from connect_runtime.runtime.leader.stalled_handoffs import StalledHandoffs
from connect_runtime.storage.config_records import SessionKey
from mirror.maker.rest_wiring import NO_INTERNAL_REST_MESSAGE, NoInternalRestForwarder
from tests.support.kafka import wait_until
from tests.unit.connect_runtime.test_distributed_herder import Cluster, FollowerMember, config


def connector_status(c: Cluster) -> dict[str, object]:
    records = [r for r in c.broker.topics["status"] if r.key == b"status-connector-demo"]
    return dict(json.loads(records[-1].value)) if records else {}


def test_a_follower_whose_task_configs_cannot_reach_the_leader_says_so_until_they_need_not() -> None:
    c = Cluster(FollowerMember(), NoInternalRestForwarder())  # type: ignore[arg-type]
    registry = CollectorRegistry()
    c.herder.stalls = StalledHandoffs(registry, c.status_writer.on_connector_stalled)
    c.herder._reconfiguration.stalls = c.herder.stalls
    c.config_store.start()
    c.config_store.put_session_key(SessionKey(b"k" * 32, "HmacSHA256", 1))
    c.config_store.put_connector_config("demo", config())
    c.worker.task_configs["demo"] = [{"task": "0"}]
    c.herder.start()
    try:
        assert c.herder.wait_until_ready(10)
        wait_until(lambda: c.herder.health().status == "unhealthy", 10, "the stall reported by /health")
        health = c.herder.health()
        assert "connector demo stalled" in health.message and NO_INTERNAL_REST_MESSAGE in health.message
        status = connector_status(c)
        assert status["state"] == "RUNNING" and NO_INTERNAL_REST_MESSAGE in str(status["trace"])
        failures = registry.get_sample_value("connect_worker_leader_handoff_failures_total",
                                             {"request": "task-configs"})
        assert failures is not None and failures >= 1
        assert registry.get_sample_value("connect_worker_stalled_connectors") == 1

        # The connector now computes the stored task configs (none): nothing to hand over any more.
        c.worker.task_configs["demo"] = []
        wait_until(lambda: c.herder.health().status == "healthy", 10, "the stall cleared")
        assert connector_status(c)["trace"] is None
        assert registry.get_sample_value("connect_worker_stalled_connectors") == 0
    finally:
        c.herder.stop(10)
