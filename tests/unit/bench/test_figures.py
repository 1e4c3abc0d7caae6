"""bench/figures.py: measured numbers in README/docs only from recorded runs, in generated blocks or links."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import figures

RESULTS = """# Benchmark results

## 2026-11-25 10:00 UTC: a recorded run

`python bench/run.py` on `abc1234`.

| machine | |
|---|---|
| load average at start | 0.50 0.60 0.70 |

### throughput (8 partitions)

| copier | value | records/s | CPU us/record |
|---|---|---|---|
| (a) raw pipe | 100 B | 500,000 | 3.00 |
| (b) mm2 | 100 B | 400,000 | 2.50 |

### latency

| rate | p99 (ms) |
|---|---|
| 1,000 | 40.0 |

A restart took 8-23 s.

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


def tree(tmp_path: Path, readme: str, spec: str = SPEC, results: str = RESULTS) -> tuple[Path, Path, Path]:
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "README.md").write_text(readme)
    results_path = tmp_path / "results.md"
    results_path.write_text(results)
    spec_path = tmp_path / "figures.yaml"
    spec_path.write_text(spec)
    return tmp_path, results_path, spec_path


def test_a_block_is_filled_from_the_named_run_with_its_date_and_commit(tmp_path: Path) -> None:
    root, results, spec = tree(tmp_path, "intro\n<!-- figures:ratio x -->\nstale\n<!-- /figures -->\nend\n")
    texts, findings = figures.build(root, results, spec)
    assert findings.errors == []
    text = texts[root / "README.md"]
    assert "| mm2, 100 B | 400,000 | 0.80x | 2026-11-25, `abc1234` |" in text
    assert "stale" not in text
    assert text.startswith("intro\n") and text.endswith("<!-- /figures -->\nend\n")


def test_a_figure_outside_a_block_is_reported_with_file_and_line(tmp_path: Path) -> None:
    readme = "ok\nexactly-once costs 0.90x of at-least-once\nit copies 120,000 records/s\np99 of 32 ms\n"
    root, results, spec = tree(tmp_path, readme)
    _, findings = figures.build(root, results, spec)
    assert [p.split(": ")[0] for p in findings.errors] == ["README.md:2", "README.md:3", "README.md:4"]


def test_figures_in_code_fences_and_plain_durations_are_not_reported(tmp_path: Path) -> None:
    readme = ("a restart takes 10 s by default\n```\n$ bench prints 0.85x\n```\nhex 0x7f\n"
              "under a steady load of 500 records/s\n")
    root, results, spec = tree(tmp_path, readme)
    _, findings = figures.build(root, results, spec, enforce_all=True)
    assert findings.errors == []


def test_an_undefined_block_and_a_missing_row_are_reported(tmp_path: Path) -> None:
    bad_spec = SPEC.replace('["(b) mm2", "100 B"]', '["(z) nothing", "100 B"]')
    root, results, spec = tree(tmp_path, "<!-- figures:other x -->\n<!-- /figures -->\n", bad_spec)
    _, findings = figures.build(root, results, spec)
    assert any("no row starting with ['(z) nothing', '100 B']" in p for p in findings.errors)
    assert any("README.md:1: figures:other is not defined" in p for p in findings.errors)


def test_the_repository_passes_its_own_check() -> None:
    assert figures.main(["--check"]) == 0


@pytest.mark.parametrize("line", ["0.85x", "2.8-3.0x", "52.7 MB/s", "latency p99 199.8 ms", "2.4 us per record",
                                  "a restart took 8-23 s", "about 20 s after a kill", "RSS grew by 42 MiB",
                                  "the CPU fell 31%", "CI once accepted 2,295", "it allowed 2,500 duplicates",
                                  "3.4 and 4.6 times Java's rate", "~15 min on 3 workers"])
def test_each_kind_of_figure_is_recognised(line: str) -> None:
    assert figures.stray_figures(line, "f") != []


@pytest.mark.parametrize("line", [
    "`offset.flush.interval.ms` (60 s) sets how often",        # a config value beside its key
    "the session times out (`session.timeout.ms`, 10 s by default)",
    "retries for 5 minutes by default",
    "what the 100 ms `fetch.wait.max.ms` of those reads costs",  # ... or with the key right after it
    "MB/s count 10^6 bytes per MB",
    "Kafka 4.4.0, Python 3.11, librdkafka 2.16.0",             # versions
    "the broker listens on localhost:9092 and port 8083",      # ports
    "KIP-1031 and KAFKA-13988 say so",                         # KIP and issue numbers
    "recorded on 2026-11-27 at 06:02-06:19 UTC",               # dates and times
    "the goal: ours >= 0.9x the native copier",                # goals and bounds
    "at least 2x Java, at most 5 s",
    "it runs `--minutes 10` in CI",                            # code spans
    "the soak's load: 2,000 records/s<!--given-->",            # marked as no measurement
    "a 30 s<!-- given: the soak's fault length --> freeze",
    "0 records replayed, whatever the lag",                    # what the tests assert
])
def test_what_is_not_a_measurement_is_not_flagged(line: str) -> None:
    assert figures.stray_figures(line, "f") == []


def test_only_the_comments_of_a_code_block_are_read() -> None:
    text = "```\nscripts/test tests/fuzz --runs 50000     # ~15 min on 3 workers\n```\n"
    assert [message.split(": ")[1].split(" with no")[0] for message in figures.stray_figures(text, "f")] == [
        "duration '~15 min'"]


def test_durations_sizes_and_counts_are_reported_until_enforced(tmp_path: Path) -> None:
    root, results, spec = tree(tmp_path, "a restart took 8-23 s\n")
    _, findings = figures.build(root, results, spec, enforce_all=False)
    assert findings.errors == [] and [p.split(": ")[0] for p in findings.reports] == ["README.md:1"]
    _, strict = figures.build(root, results, spec, enforce_all=True)
    assert [p.split(": ")[0] for p in strict.errors] == ["README.md:1"]


def test_a_number_linked_to_its_run_is_sourced_and_its_anchor_completed(tmp_path: Path) -> None:
    readme = ("a restart took [8-23 s](bench/results.md#2026-11-25-1000) and "
              "[400,000 records/s](results.md#2026-11-25)\n")
    root, results, spec = tree(tmp_path, readme)
    texts, findings = figures.build(root, results, spec, enforce_all=True)
    assert findings.errors == [] and findings.reports == []
    assert "(bench/results.md#2026-11-25-1000-utc-a-recorded-run)" in texts[root / "README.md"]


@pytest.mark.parametrize(("link", "problem"), [
    ("[9-23 s](bench/results.md#2026-11-25)", "9 not in the run '2026-11-25 10:00 UTC: a recorded run'"),
    ("[8-23 s](bench/results.md#2027)", "no recorded run's heading has the anchor #2027"),
    ("[8-23 s](bench/results.md#2026-11-2)", "#2026-11-2 names 2 runs"),
    ("[8-23 s](bench/results.md)", "links bench/results.md without naming the run"),
    ("[1 records/s](bench/results.md#2026-11-24)", "names no commit"),
])
def test_a_link_that_does_not_hold_its_number_fails(tmp_path: Path, link: str, problem: str) -> None:
    root, results, spec = tree(tmp_path, f"a restart took {link}\n")
    _, findings = figures.build(root, results, spec)
    assert any(problem in error for error in findings.errors), findings.errors


def run_section(day: str, load: float, rate: str, rounds: int = 5, broker: str = "Kafka 4.4.0",
                os: str = "", at: str = "10:00-10:20") -> str:
    machine = f"| cores | 2 |\n| cpu | Intel(R) Xeon(R) Processor |\n| os | {os} |\n" if os else ""
    return f"""## {day} {at} UTC: python bench/run.py --broker kafka

| machine | |
|---|---|
{machine}| load average at start | {load:.2f} 1.00 1.00 |
| marked | {"yes" if load > 1 else "no"}: 1-minute load {load:.2f} |
| commit | `{day[-2:]}aaaaa` |

### throughput (3,000,000 x 100 B records per size; median [min-max] of {rounds} interleaved runs)

| copier | value | runs | records/s | ratio to (n), paired | broker |
|---|---|---|---|---|---|
| (n) native | 100 B | {rounds} | {rate} | 1.00x | {broker} |
| (b) mm2 | 100 B | {rounds} | 300,000 | 0.{day[-1]}0x | {broker} |

"""


MEDIAN_SPEC = """headline:
  median: {table: "throughput (3,000,000 x 100 B", broker: "Kafka 4.4.0"}
  label: "copier"
  columns: ["records/s", "ratio to (n), paired"]
  rows:
    - {label: "native, 100 B", row: ["(n) native", "100 B"]}
    - {label: "ours, 100 B", row: ["(b) mm2", "100 B"]}
"""


def headline(tmp_path: Path, results: str) -> tuple[str, figures.Findings]:
    """The README a ``headline`` median block renders from ``results``, and what the check found."""
    root, results_path, spec = tree(tmp_path, "<!-- figures:headline x -->\n<!-- /figures -->\n", MEDIAN_SPEC, results)
    texts, findings = figures.build(root, results_path, spec)
    return texts[root / "README.md"], findings


def test_a_headline_is_the_median_over_the_runs_that_count(tmp_path: Path) -> None:
    results = "# Benchmark results\n\n" + "".join([
        run_section("2026-12-03", 0.40, "400,000"),
        run_section("2026-12-02", 18.5, "900,000"),               # marked: never feeds a headline
        run_section("2026-12-02", 0.70, "500,000", rounds=3),     # too few rounds
        run_section("2026-12-01", 0.90, "600,000"),
        run_section("2026-12-05", 0.20, "450,000"),
        run_section("2026-12-04", 0.30, "700,000", broker="Tansu"),  # another broker
    ])
    text, findings = headline(tmp_path, results)
    assert findings.errors == [] and findings.reports == []
    assert "| native, 100 B | 450,000 [400,000-600,000] | 1.00x | 3 (3) |" in text
    assert "| ours, 100 B | 300,000 | 0.30x [0.10-0.50] | 3 (3) |" in text
    assert "2026-12-01 10:00-10:20 (`01aaaaa`), 2026-12-03 10:00-10:20 (`03aaaaa`), 2026-12-05" in text


def test_a_headline_takes_the_runs_of_its_newest_runs_machine_and_names_the_others(tmp_path: Path) -> None:
    """Runs of another host are set aside, whatever their dates: rates of two hosts are not one sample."""
    results = "# Benchmark results\n\n" + "".join([
        run_section("2026-12-03", 0.40, "900,000", os="Linux 6.18-b", at="16:00-16:20"),
        run_section("2026-12-03", 0.50, "400,000", os="Linux 6.18-a", at="01:00-01:20"),
        run_section("2026-12-02", 0.60, "800,000", os="Linux 6.18-b"),
        run_section("2026-12-01", 0.70, "450,000", os="Linux 6.18-a"),
    ])
    text, findings = headline(tmp_path, results)
    assert findings.errors == [] and findings.reports == []
    assert "| native, 100 B | 850,000 [800,000-900,000] | 1.00x | 2 (2) |" in text
    assert "on one machine (2 cores, Intel(R) Xeon(R) Processor, Linux 6.18-b)" in text
    assert ("[min-max] over those runs: 2026-12-02 10:00-10:20 (`02aaaaa`), 2026-12-03 16:00-16:20 (`03aaaaa`). "
            "Runs that count on another machine, kept in bench/results.md and set aside here: "
            "2026-12-01 10:00-10:20 (`01aaaaa`), 2026-12-03 01:00-01:20 (`03aaaaa`).") in text
    newest_alone = "# Benchmark results\n\n" + "".join([
        run_section("2026-12-04", 0.40, "900,000", os="Linux 6.18-c"),
        run_section("2026-12-03", 0.50, "400,000", os="Linux 6.18-a"),
        run_section("2026-12-01", 0.70, "450,000", os="Linux 6.18-a"),
    ])
    text, findings = headline(tmp_path / "c", newest_alone)
    assert "| native, 100 B | 900,000 | 1.00x | 1 (1) |" in text
    assert any("runs from 1 day(s)" in error for error in findings.errors)


def test_a_headline_from_one_day_or_from_no_run_that_counts_fails(tmp_path: Path) -> None:
    one_day = "# Benchmark results\n\n" + run_section("2026-12-03", 0.40, "400,000")
    root, results, spec = tree(tmp_path, "<!-- figures:headline x -->\n<!-- /figures -->\n", MEDIAN_SPEC, one_day)
    _, findings = figures.build(root, results, spec)
    assert findings.reports == [] and any("runs from 1 day(s)" in error for error in findings.errors)
    _, lenient = figures.build(root, results, spec, enforce_rule=False)
    assert lenient.errors == [] and any("runs from 1 day(s)" in report for report in lenient.reports)
    marked = "# Benchmark results\n\n" + run_section("2026-12-03", 3.0, "400,000")
    root, results, spec = tree(tmp_path / "m", "<!-- figures:headline x -->\n<!-- /figures -->\n", MEDIAN_SPEC, marked)
    _, findings = figures.build(root, results, spec)
    assert any("no recorded run that counts" in error for error in findings.errors)


def test_a_block_fed_by_a_run_the_rule_does_not_count_fails(tmp_path: Path) -> None:
    marked = RESULTS.replace("| load average at start | 0.50", "| load average at start | 3.50")
    root, results, spec = tree(tmp_path, "<!-- figures:ratio x -->\n<!-- /figures -->\n", results=marked)
    _, enforced = figures.build(root, results, spec)
    assert enforced.reports == [] and len(enforced.errors) == 1
    _, findings = figures.build(root, results, spec, enforce_rule=False)
    assert findings.errors == []
    assert findings.reports == enforced.errors == [
        "figures:ratio feeds from the run '2026-11-25 10:00 UTC: a recorded run', which the recording rule does not "
        "count: it is marked: load 3.50 at its start, above 1.0 (bench/README.md, Recording rule)"]
    root, results, spec = tree(tmp_path / "none", "<!-- figures:ratio x -->\n<!-- /figures -->\n",
                               results=RESULTS.replace("| load average at start | 0.50 0.60 0.70 |\n", ""))
    _, findings = figures.build(root, results, spec, enforce_rule=False)
    assert findings.reports[0].endswith("it recorded no load average at its start (bench/README.md, Recording rule)")
