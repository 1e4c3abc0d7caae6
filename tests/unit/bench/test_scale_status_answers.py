"""bench/scale.py start records ``mirror status`` twice: right after the start and again at rest, each with the
command's own CPU seconds, so a slow answer tells whether it worked or waited."""

from __future__ import annotations

import argparse

from bench import scale


def test_the_answers_at_rest_are_printed_beside_those_right_after_the_start_with_their_cpu() -> None:
    result = scale.StartResult(2000, 4, 10)
    right_after = {"seconds": 6.16, "max_seconds": 6.26, "cpu_seconds": 4.5, "status": 0, "bytes": 2_523_808}
    at_rest = {"seconds": 1.7, "max_seconds": 1.8, "cpu_seconds": 1.1, "status": 0, "bytes": 2_523_808}
    result.surface = {"/ui": {"seconds": 0.05, "max_seconds": 0.05, "status": 200, "bytes": 915},
                      "mirror status (default latency window)": right_after,
                      "mirror status (default latency window)" + scale.AT_REST: at_rest}
    lines = scale.start_tables(result, argparse.Namespace(throttle=0, tasks=4)).splitlines()
    assert "| /ui | 0.05 | 0.05 | - | 200 | 915 |" in lines
    assert "| mirror status (default latency window) | 6.16 | 6.26 | 4.50 | 0 | 2,523,808 |" in lines
    assert ("| mirror status (default latency window) at rest, after the steady state | 1.70 | 1.80 | 1.10 | 0 | "
            "2,523,808 |") in lines
