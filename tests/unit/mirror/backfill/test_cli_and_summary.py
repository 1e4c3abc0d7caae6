"""`mirror backfill` front end, the summary and the progress display, without brokers."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from mirror.backfill.command import BackfillSummary
from mirror.backfill.copier import ChunkResult
from mirror.backfill.plan import PartitionRange
from mirror.backfill.progress import ProgressDisplay, Tracked
from mirror.backfill_markers.markers import BACKFILLING, MarkerState, PartitionMarker, partition_marker_key
from mirror.cli.main import main


def test_backfill_is_registered_with_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backfill", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--flow", "--topics", "--master", "--max-records-per-task", "--verbose", "--assume-stopped"):
        assert option in out


def test_undeclared_flow_alias_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n")
    assert main(["backfill", str(config), "--flow", "A->C"]) == 2
    assert "'C'" in capsys.readouterr().err
    assert main(["backfill", str(config), "--flow", "A"]) == 2
    assert main(["backfill", str(config), "--flow", "A->B", "--spark-conf", "novalue"]) == 2


def test_summary_reports_rates_topics_and_truncation() -> None:
    ranges = [PartitionRange("t", 0, 50, 100, lost=40), PartitionRange("u", 0, 0, 10)]
    results = [ChunkResult("t", 0, 50, 100, 50, 50, 1.0), ChunkResult("u", 0, 0, 10, 10, 0, 1.0)]
    lines = BackfillSummary(ranges, results, 2.0, [ranges[0]]).lines()
    assert lines[0] == "backfill: 60 records copied (60 planned) in 2 partitions, 2.0s, 30 records/s"
    assert "  t: 50" in lines and "  u: 10" in lines
    assert any("t-0: 40 records were deleted by retention" in line for line in lines)


class FakeMarkers:
    """Answers read_to_end with a state a test moves forward."""

    def __init__(self) -> None:
        self.state = MarkerState()

    def read_to_end(self) -> MarkerState:
        return self.state


def test_progress_display_follows_the_markers_per_topic() -> None:
    markers = FakeMarkers()
    stream = io.StringIO()
    tracked = {("t", 0): Tracked(0, 100), ("t", 1): Tracked(0, 100), ("u", 0): Tracked(10, 60)}
    display = ProgressDisplay(markers, tracked, interval_s=3600, stream=stream)  # type: ignore[arg-type]
    with display:
        markers.state.apply(partition_marker_key("t", 0), PartitionMarker(BACKFILLING, 0, 100, 49, 50).value())
        markers.state.apply(partition_marker_key("u", 0), PartitionMarker(BACKFILLING, 10, 60, 59, 50).value())
        display.update()
        assert display.copied == {("t", 0): 50, ("t", 1): 0, ("u", 0): 50}
    text = stream.getvalue()
    assert "backfill" in text and "100/250" in text and "u" in text
