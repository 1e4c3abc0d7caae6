"""The quickstart's "where to look" block and its live summary figures."""

from __future__ import annotations

from pathlib import Path

from mirror.cli.quickstart import Figures, endpoints, replicated_records

METRICS = """\
# HELP mirror_source_record_count_total Records replicated and acknowledged by the target (MM2 record-count).
# TYPE mirror_source_record_count_total counter
mirror_source_record_count_total{partition="0",source="A",target="B",topic="A.orders"} 120.0
mirror_source_record_count_total{partition="1",source="A",target="B",topic="A.orders"} 80.0
mirror_source_record_count_total{partition="0",source="C",target="B",topic="C.orders"} 5.0
mirror_heartbeat_age_seconds{source="A",target="B"} 0.5
"""


def test_replicated_records_sums_one_flow() -> None:
    assert replicated_records(METRICS, "A", "B") == 200
    assert replicated_records(METRICS, "C", "B") == 5
    assert replicated_records(METRICS, "B", "A") is None  # not measured (yet): not zero


def test_endpoints_name_the_real_port_and_file() -> None:
    lines = endpoints("http://127.0.0.1:41234", Path("/tmp/q/mm2.properties"), "A", "B", "billing")
    text = "\n".join(lines)
    assert "status page   http://127.0.0.1:41234/ui" in text
    assert "REST API      http://127.0.0.1:41234/A/B/" in text
    assert "curl -s http://127.0.0.1:41234/A/B/connectors/MirrorSourceConnector/status" in text
    assert "metrics       http://127.0.0.1:41234/metrics" in text
    assert "mirror status /tmp/q/mm2.properties" in text
    assert "mirror offsets translate --group billing --source A --target B /tmp/q/mm2.properties" in text


def test_figures_line_shows_unknowns_as_dashes() -> None:
    assert Figures(None, None, None, None).line() == (
        "records replicated -   lag - records   heartbeat age -   starting")
    assert Figures(300, 0, 0.42, "healthy").line() == (
        "records replicated 300   lag 0 records   heartbeat age 0.4 s   healthy")
