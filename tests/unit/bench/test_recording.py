"""bench/recording.py and bench/run.py: every run recorded with its load, its verdict and its commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import recording
from bench.figures import parse_runs


@pytest.mark.parametrize(("load", "marked"), [(0.42, False), (1.0, False), (1.01, True), (18.47, True)])
def test_a_run_above_the_load_limit_is_marked_and_does_not_count(load: float, marked: bool) -> None:
    rule = recording.Recording(load, recording.is_marked(load), "abc1234")
    rows = rule.rows((load, 2.0, 3.0))
    read = recording.read([f"| {key} | {value} |" for key, value in rows.items()])
    assert read == rule
    assert recording.counts(read) is not marked
    assert rows["marked"].startswith("yes" if marked else "no")


def test_the_commit_names_the_uncommitted_code_and_an_old_run_without_a_load_does_not_count() -> None:
    rule = recording.Recording(0.3, False, "abc1234", ("connect_runtime/x.py", "mirror/y.py"))
    rows = rule.rows((0.3, 0.3, 0.3))
    assert rows["commit"] == "`abc1234` with uncommitted changes in connect_runtime/x.py, mirror/y.py"
    assert recording.read([f"| {key} | {value} |" for key, value in rows.items()]).dirty == rule.dirty
    old = recording.read(["`python bench/throughput.py` on `442e067`, quiet.", "", "| copier | value |"])
    assert old == recording.Recording(None, None, "442e067") and not recording.counts(old)


def test_the_uncommitted_paths_are_read_from_git_status() -> None:
    porcelain = (" M bench/throughput.py\nM  mirror/a.py\n?? mirror/preflight/\nR  old.py -> setup.py\n"
                 " M bench/results.md\n")  # the record of runs is not code
    assert recording.dirty_paths(porcelain) == ("bench/throughput.py", "mirror/a.py", "mirror/preflight/",
                                                "setup.py")


def test_the_machine_table_of_an_older_run_gives_its_load() -> None:
    lines = ["on `6ba7aff`", "| machine | |", "|---|---|", "| load average at start | 18.47 18.58 9.53 |"]
    assert recording.read(lines) == recording.Recording(18.47, True, "6ba7aff")


def test_a_recorded_run_goes_above_the_newest_and_keeps_every_other(tmp_path: Path) -> None:
    results = tmp_path / "results.md"
    results.write_text("# Benchmark results\n\n## 2026-11-27 06:30 UTC: older\n\nbody\n")
    recording.record(results, "## 2026-12-01 10:00-10:20 UTC: new\n\n| machine | |\n|---|---|\n"
                        "| load average at start | 0.50 0.50 0.50 |\n| commit | `abc1234` |\n")
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\n## 2026-12-01 10:00-10:20 UTC: new\n")
    assert text.endswith("## 2026-11-27 06:30 UTC: older\n\nbody\n")
    runs = parse_runs(text)
    assert [(r.heading[:16], r.commit, r.counts) for r in runs] == [("2026-12-01 10:00", "abc1234", True),
                                                                   ("2026-11-27 06:30", "", False)]
    empty = tmp_path / "none.md"
    recording.record(empty, "## 2026-12-01 10:00-10:20 UTC: first\n")
    assert empty.read_text() == "# Benchmark results\n\n## 2026-12-01 10:00-10:20 UTC: first\n\n"


def test_a_run_names_its_machine_by_cores_cpu_memory_and_kernel() -> None:
    """The machine a headline pools runs of: every row of it, the kernel build included."""
    lines = ["| cores | 2 |", "| cpu | Intel(R) Xeon(R) Processor |", "| memory | 23.5 GiB |",
             "| os | Linux 6.18.44-fc-v782 |", "| load average at start | 0.58 1.35 2.31 |"]
    assert recording.read(lines).machine == ("2", "Intel(R) Xeon(R) Processor", "23.5 GiB", "Linux 6.18.44-fc-v782")
    assert recording.read(lines[:2]).machine == ("2", "Intel(R) Xeon(R) Processor", "", "")
    assert recording.read(lines[4:]).machine == ()
