"""bench/idle_load.py's tables: medians per code, and what a change under test moved."""

from __future__ import annotations

from bench.idle_load import table


def run(code: str, cores: float, by_source: dict[str, float]) -> dict[str, object]:
    return {"code": code, "alone_cores": 0.1, "cores": cores, "requests_per_s": sum(by_source.values()),
            "by_source": by_source}


def test_the_differences_between_two_codes_are_listed_largest_first_and_unchanged_ones_left_out() -> None:
    results = [run("compared", 0.2, {"b fetch FETCH": 2.0, "b marker METADATA": 0.5, "b marker API_VERSIONS": 1.5}),
               run("current", 0.15, {"b fetch FETCH": 2.0}),
               run("compared", 0.3, {"b fetch FETCH": 2.0, "b marker METADATA": 0.5, "b marker API_VERSIONS": 0.5}),
               run("current", 0.17, {"b fetch FETCH": 2.0})]
    lines = table(results).splitlines()
    assert "| compared | 2 | 0.100 | 0.250 | 0.150 | 3.5 |" in lines
    assert "| current | 2 | 0.100 | 0.160 | 0.060 | 2.0 |" in lines
    moved = lines[lines.index("| broker, client, API | compared: requests/s | current: requests/s |") + 2:]
    assert moved == ["| b marker API_VERSIONS | 1.00 | 0.00 |", "| b marker METADATA | 0.50 | 0.00 |"]


def test_one_code_has_no_difference_table() -> None:
    assert "compared: requests/s" not in table([run("current", 0.15, {"b fetch FETCH": 2.0})])
