"""mirror status --json's layout is json.dumps(indent=2)'s, byte for byte."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pytest

from mirror.cli import indented_json
from mirror.health.flow_health import FlowHealth, GroupCheckpointHealth, HealthReport, PartitionLag, State

CASES: list[Any] = [
    {}, [], None, True, 0, -0.0, 1.5, 1e300, 10**30, float("nan"), float("inf"), "x\ny\u00e9\u2603\"\\\t",
    {"a": {}, "b": [], "c": [{}], "d": [[]], "e": None},
    {"é": 1, "x": {"y": {"z": [1, 2.5, {"w": "\"\\", "n": None}]}}, "t": ("a", 1)},
    [1, [2, {"k": "v,\n  \"q\": 1"}], True, False, None],
]


@pytest.mark.parametrize("value", CASES)
def test_same_text_as_json_dumps_indent_2(value: Any) -> None:
    assert indented_json.dumps(value) == json.dumps(value, indent=2)


def test_a_report_of_thousands_of_partitions_and_groups() -> None:
    partitions = [PartitionLag(f"t{i}", f"A.t{i}", i % 4, 10 + i, 10, "offset-sync", i, 0.25 * i,
                               "lost" if i == 7 else "") for i in range(3000)]
    groups = [GroupCheckpointHealth("g", 4, 3, ["t-1"], 1, 1.5, 3, "pending", "why"),
              GroupCheckpointHealth("h", 0, 0, [], 0, None)]
    flows = [FlowHealth("A", "B", 1.0, partitions=partitions, groups=groups, errors=["e"], notes=["n"],
                        state=State.DEGRADED, reasons=["r"]), FlowHealth("B", "A", 2.0)]
    report = HealthReport(3.0, flows).to_dict()
    assert indented_json.dumps(report) == json.dumps(report, indent=2)


def test_flow_to_dict_is_asdict_and_its_derived_figures() -> None:
    groups = [GroupCheckpointHealth("g", 4, 3, ["t-1"], 1, 1.5, 3, "pending", "why")]
    flow = FlowHealth("A", "B", 1.0, partitions=[PartitionLag("t", "A.t", 0, 5, 3, "connect-offsets", 2, 1.0)],
                      groups=groups, errors=["e"], state=State.DOWN)
    expected = asdict(flow)
    expected.update(flow="A->B", state="down", lag_records=2, max_lag_seconds=1.0)
    expected["groups"][0]["translatable"] = False
    data = flow.to_dict()
    assert data == expected
    assert list(data) == list(expected)
    assert list(data["partitions"][0]) == list(expected["partitions"][0])
    data["errors"].append("x")
    assert flow.errors == ["e"]
