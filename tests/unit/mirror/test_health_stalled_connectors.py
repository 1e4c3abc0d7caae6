"""``mirror status`` reports a node that cannot do its part: a RUNNING connector status with a
trace in the flow's status topic (written by connect_runtime/runtime/leader/stalled_handoffs.py) makes the flow
degraded, naming the connector, its node and the reason; the connector's next status clears it."""

from __future__ import annotations

import json

from mirror.health.flow_health import FlowHealth, State, Thresholds, evaluate
from mirror.health.probe import apply_connector_status
from tests.support.fakes import message

REASON = "its task-configs cannot reach the leader: This worker is not able to communicate with the leader"


def status(state: str, trace: str | None = None) -> bytes:
    return json.dumps({"state": state, "trace": trace, "worker_id": "n1:8083", "generation": 3}).encode()


def test_a_running_connector_with_a_trace_is_stalled_until_its_next_status() -> None:
    stalled: dict[str, str] = {}
    apply_connector_status(message(key=b"status-connector-src", value=status("RUNNING")), stalled)
    assert stalled == {}
    apply_connector_status(message(key=b"status-connector-src", value=status("RUNNING", REASON)), stalled)
    assert stalled == {"src": f"connector src on n1:8083: {REASON}"}
    # A task's FAILED trace and unreadable records are not connector stalls and change nothing.
    apply_connector_status(message(key=b"status-task-src-0", value=status("FAILED", "boom")), stalled)
    apply_connector_status(message(key=b"status-connector-src", value=b"not json"), stalled)
    assert list(stalled) == ["src"]
    apply_connector_status(message(key=b"status-connector-src", value=status("UNASSIGNED")), stalled)
    assert stalled == {}
    apply_connector_status(message(key=b"status-connector-src", value=status("RUNNING", REASON)), stalled)
    apply_connector_status(message(key=b"status-connector-src", value=None), stalled)  # a deleted connector
    assert stalled == {}


def test_a_stalled_connector_makes_the_flow_degraded_and_says_why() -> None:
    flow = FlowHealth("A", "B", 1000.0, heartbeat_age_seconds=1.0, heartbeat_basis="replicated",
                      stalled=[f"connector src on n1:8083: {REASON}"])
    state, reasons = evaluate(flow, Thresholds())
    assert state is State.DEGRADED
    assert reasons == [f"stalled: connector src on n1:8083: {REASON}"]
    assert flow.to_dict()["stalled"] == flow.stalled
