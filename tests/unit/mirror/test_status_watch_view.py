"""What ``mirror status --watch`` draws for a report: one line per flow, one per lagging partition."""

from __future__ import annotations

from rich.console import Console

from mirror.cli.status import MAX_PARTITION_LINES, lagging, view
from mirror.health.flow_health import FlowHealth, GroupCheckpointHealth, HealthReport, PartitionLag, State


def partition(n: int, lag: int, age: float) -> PartitionLag:
    return PartitionLag("orders", "A.orders", n, 100, 100 - lag, "offset-sync", lag, age)


def text(report: HealthReport) -> list[str]:
    console = Console(width=140, record=True, force_terminal=False)
    console.print(view(report))
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_a_line_per_flow_and_per_lagging_partition_worst_first() -> None:
    flow = FlowHealth("A", "B", 1_700_000_000.0, heartbeat_age_seconds=0.4, latency_seconds=0.2,
                      partitions=[partition(0, 0, 0.0), partition(1, 7, 2.5), partition(2, 30, 9.0)],
                      groups=[GroupCheckpointHealth("billing", 3, 3, [], 0, 1.0)], rpo_seconds=9.0,
                      state=State.DEGRADED, reasons=["1 partition(s) lag more than 5000 ms"])
    idle = FlowHealth("A", "C", 1_700_000_000.0, heartbeat_age_seconds=None, state=State.DOWN,
                      reasons=["no heartbeat found on the target"])
    lines = text(HealthReport(1_700_000_000.0, [flow, idle]))
    assert lines[0].startswith("overall DOWN   checked ")
    assert lines[1].split() == ["FLOW", "/", "PARTITION", "STATE", "HEARTBEAT", "AGE", "LATENCY", "LAG", "LAG",
                                "AGE", "RPO", "GROUPS"]
    assert lines[2].split() == ["A->B", "degraded", "0.4", "s", "0.2", "s", "37", "9.0", "s", "9.0", "s", "1/1",
                                "translatable"]
    assert lines[3].split() == ["A.orders-2", "lagging", "30", "9.0", "s", "offset-sync"]
    assert lines[4].split() == ["A.orders-1", "lagging", "7", "2.5", "s", "offset-sync"]
    assert lines[5].split()[:3] == ["A->C", "down", "-"]
    assert "A->B: 1 partition(s) lag more than 5000 ms" in lines
    assert "A->C: no heartbeat found on the target" in lines


def test_many_lagging_partitions_are_counted_not_listed() -> None:
    flow = FlowHealth("A", "B", 0.0, partitions=[partition(n, n + 1, 1.0) for n in range(MAX_PARTITION_LINES + 5)])
    assert [p.partition for p in lagging(flow)][:3] == [MAX_PARTITION_LINES + 4, MAX_PARTITION_LINES + 3,
                                                         MAX_PARTITION_LINES + 2]
    lines = text(HealthReport(0.0, [flow]))
    assert sum(line.split()[1:2] == ["lagging"] for line in lines) == MAX_PARTITION_LINES
    assert any("... 5 more lagging partition(s)" in line for line in lines)
