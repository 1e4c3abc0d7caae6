"""Status page routes and the ``mirror status`` table, without sockets (Starlette's test client)."""

from __future__ import annotations

import warnings
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # Starlette 1.x nudges towards the httpx2 package for its TestClient; httpx is what we ship with.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

from mirror.cli.status import render
from mirror.health.collector import HealthMonitor, ui_routes
from mirror.health.flow_health import (
    FlowHealth,
    GroupCheckpointHealth,
    HealthReport,
    PartitionLag,
    Thresholds,
    evaluate,
)


class _Probe:
    def __init__(self, report: HealthReport) -> None:
        self.report = report

    def check(self) -> HealthReport:
        return self.report

    def watch_latency(self, window_s: float, interval_s: float = 0.2, stop: Any = None) -> None:
        pass

    def close(self) -> None:
        pass


def report() -> HealthReport:
    flow = FlowHealth("A", "B", 1000.0, heartbeat_age_seconds=45.0, heartbeat_basis="replicated",
                      partitions=[PartitionLag("t", "A.t", 0, 10, 4, "connect-offsets", 6, 2.5)],
                      groups=[GroupCheckpointHealth("g", 2, 1, ["t-1"], 0, 3.0)], rpo_seconds=2.5, rpo_basis="lag")
    flow.state, flow.reasons = evaluate(flow, Thresholds())
    return HealthReport(1000.0, [flow])


def test_page_assets_and_json() -> None:
    monitor = HealthMonitor(_Probe(report()))  # type: ignore[arg-type]
    client = TestClient(Starlette(routes=ui_routes(monitor)))
    page = client.get("/ui")
    assert page.status_code == 200 and "/ui/static/app.js" in page.text and "http" not in page.text.split("<body>")[1]
    assert "text/javascript" in client.get("/ui/static/app.js").headers["content-type"]
    assert client.get("/ui/static/style.css").status_code == 200
    assert client.get("/ui/static/secret.py").status_code == 404
    assert client.get("/ui/api/status").json()["report"] is None
    monitor.refresh()
    body = client.get("/ui/api/status").json()
    assert body["report"]["flows"][0]["state"] == "degraded"
    assert body["history"][0]["flows"]["A->B"]["heartbeat_age"] == 45.0


def test_status_table() -> None:
    text = render(report())
    assert text.startswith("overall: DEGRADED")
    assert "heartbeat age  45.0s (replicated" in text
    assert "! heartbeat age 45.0s > 30000 ms" in text
    rows = [line.split() for line in text.splitlines()]
    assert ["A.t", "0", "10", "4", "6", "2.5s", "connect-offsets"] in rows
    assert ["g", "no", "1/2", "0", "3.0s", "0/1", "off"] in rows


def test_status_table_of_a_large_flow_lists_the_lagging_partitions_first_and_counts_the_rest() -> None:
    """Thousands of partitions stay a screenful: the lagging ones first (worst first), then caught-up ones up
    to the limit, and one line counting what is left."""
    from mirror.cli.status import MAX_TABLE_PARTITIONS

    count = MAX_TABLE_PARTITIONS + 10
    partitions = [PartitionLag("t", "A.t", p, 10, 10, "connect-offsets", 0, 0.0) for p in range(count)]
    partitions[55] = PartitionLag("t", "A.t", 55, 10, 7, "connect-offsets", 3, 1.0)
    partitions[57] = PartitionLag("t", "A.t", 57, 10, 2, "connect-offsets", 8, 4.0)
    flow = FlowHealth("A", "B", 1000.0, heartbeat_age_seconds=1.0, heartbeat_basis="replicated",
                      partitions=partitions)
    lines = render(HealthReport(1000.0, [flow])).splitlines()
    rows = [line.split() for line in lines if line.startswith("  A.t ")]
    assert len(rows) == MAX_TABLE_PARTITIONS
    assert [row[1] for row in rows[:2]] == ["57", "55"]  # the oldest unreplicated record first
    assert "  ... 10 more partition(s), 0 of them lagging (--json lists every one)" in lines


def test_group_sync_state_says_why() -> None:
    from mirror.health.flow_health import group_sync_state

    checkpointed = {("A.t", 0): 10, ("A.t", 1): 5}
    assert group_sync_state({}, {}, "EMPTY")[0] == "no checkpoints"
    state, reason = group_sync_state(checkpointed, {}, "STABLE")
    assert state == "active" and "STABLE" in reason
    assert group_sync_state(checkpointed, {("A.t", 0): 10}, "EMPTY")[0] == "pending"
    assert group_sync_state(checkpointed, {("A.t", 0): 10, ("A.t", 1): 5}, "EMPTY") == (
        "synced", "2 partition(s) at their checkpoints")
    assert group_sync_state(checkpointed, {("A.t", 0): 12, ("A.t", 1): 5}, "DEAD")[0] == "ahead"
