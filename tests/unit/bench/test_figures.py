"""bench/figures.py: performance figures in README/docs only inside blocks generated from recorded runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import figures

RESULTS = """# Benchmark results

## 2026-11-25 10:00 UTC: a recorded run

`python bench/run.py` on `abc1234`.

### throughput (8 partitions)

| copier | value | records/s | CPU us/record |
|---|---|---|---|
| (a) raw pipe | 100 B | 500,000 | 3.00 |
| (b) mm2 | 100 B | 400,000 | 2.50 |

### latency

| rate | p99 (ms) |
|---|---|
| 1,000 | 40.0 |

## 2026-11-24 09:00 UTC: an older run

### throughput

| copier | value | records/s | CPU us/record |
|---|---|---|---|
| (a) raw pipe | 100 B | 1 | 1 |
"""

SPEC = """ratio:
  run: "2026-11-25"
  table: "throughput"
  columns: ["records/s"]
  ratio: {title: "to (a)", column: "records/s"}
  rows:
    - {label: "mm2, 100 B", row: ["(b) mm2", "100 B"], base: ["(a) raw pipe", "100 B"]}
"""


def tree(tmp_path: Path, readme: str, spec: str = SPEC) -> tuple[Path, Path, Path]:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(readme)
    results = tmp_path / "results.md"
    results.write_text(RESULTS)
    spec_path = tmp_path / "figures.yaml"
    spec_path.write_text(spec)
    return tmp_path, results, spec_path


def test_a_block_is_filled_from_the_named_run_with_its_date_and_commit(tmp_path: Path) -> None:
    root, results, spec = tree(tmp_path, "intro\n<!-- figures:ratio x -->\nstale\n<!-- /figures -->\nend\n")
    texts, problems = figures.build(root, results, spec)
    assert problems == []
    text = texts[root / "README.md"]
    assert "| mm2, 100 B | 400,000 | 0.80x | 2026-11-25, `abc1234` |" in text
    assert "stale" not in text
    assert text.startswith("intro\n") and text.endswith("<!-- /figures -->\nend\n")


def test_a_figure_outside_a_block_is_reported_with_file_and_line(tmp_path: Path) -> None:
    readme = "ok\nexactly-once costs 0.90x of at-least-once\nit copies 120,000 records/s\np99 of 32 ms\n"
    root, results, spec = tree(tmp_path, readme)
    _, problems = figures.build(root, results, spec)
    assert [p.split(": figure")[0] for p in problems] == ["README.md:2", "README.md:3", "README.md:4"]


def test_figures_in_code_fences_and_plain_durations_are_not_reported(tmp_path: Path) -> None:
    readme = ("a restart takes 10 s by default\n```\n$ bench prints 0.85x\n```\nhex 0x7f\n"
              "under a steady load of 500 records/s\n")
    root, results, spec = tree(tmp_path, readme)
    _, problems = figures.build(root, results, spec)
    assert problems == []


def test_an_undefined_block_and_a_missing_row_are_reported(tmp_path: Path) -> None:
    bad_spec = SPEC.replace('["(b) mm2", "100 B"]', '["(z) nothing", "100 B"]')
    root, results, spec = tree(tmp_path, "<!-- figures:other x -->\n<!-- /figures -->\n", bad_spec)
    _, problems = figures.build(root, results, spec)
    assert any("no row starting with ['(z) nothing', '100 B']" in p for p in problems)
    assert any("README.md:1: figures:other is not defined" in p for p in problems)


def test_the_repository_passes_its_own_check() -> None:
    assert figures.main(["--check"]) == 0


@pytest.mark.parametrize("line", ["0.85x", "2.8-3.0x", "52.7 MB/s", "latency p99 199.8 ms", "2.4 us per record"])
def test_each_kind_of_figure_is_recognised(line: str) -> None:
    assert figures.stray_figures(line, "f") != []
