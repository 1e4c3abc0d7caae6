"""Memory of the replication process under sustained load: RSS sampled every second.

bench/steady.py sets up A, B and our replication (tasks.max=1, one process); bench/load.py produces
``--rate`` records/s (by default 50% of the replication's measured max rate, passed in by bench/run.py)
for ``--duration`` seconds (10 minutes by default). The RSS of the replication process (/proc VmRSS) is
sampled every second from the moment the load starts. Printed: idle (when the load starts), start (after
the warm-up: at 10% of the duration, at least 10 s, when client buffers and fetch queues are full), max
and end, plus how far the replication was behind at the end (records produced minus records on B).
Goal: flat, end <= start + 10%.

Usage::

    python bench/memory.py [--rate 37500] [--duration 600] [--value-bytes 100] [--samples out.csv]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import EndOffsets, rss_kb
from bench.steady import PARTITIONS, steady_replication, stop_load

DEFAULT_RATE = 37_500


def run(rate: float, duration: float, value_bytes: int = 100, extra: dict[str, str] | None = None,
        samples_path: Path | None = None, code: Path | None = None) -> dict[str, Any]:
    with steady_replication(extra, code=code) as steady:
        pid = steady.replication.pids[0]
        samples: list[tuple[float, int]] = []
        load = steady.start_load(rate, duration, value_bytes)
        began = time.monotonic()
        try:
            while load.poll() is None:
                samples.append((time.monotonic() - began, rss_kb(pid)))
                if not steady.replication.alive():
                    raise SystemExit(f"replication exited:\n{steady.replication.tail()}")
                time.sleep(max(0.0, len(samples) - (time.monotonic() - began)))
            if load.returncode != 0:
                raise SystemExit(f"load generator failed: {steady.load_report()}")
            samples.append((time.monotonic() - began, rss_kb(pid)))
            ends = EndOffsets(steady.target, steady.remote_topic, PARTITIONS)
            replicated = ends.total() - PARTITIONS  # minus the warm-up records
            ends.close()
            produced = int(steady.load_report().split()[1])
        finally:
            stop_load(load)
    if samples_path is not None:
        samples_path.write_text("seconds,rss_kb\n" + "".join(f"{t:.1f},{kb}\n" for t, kb in samples))
    idle, end = samples[0][1], samples[-1][1]
    # "start" is after the warm-up (client buffers, fetch queues and metric series fill in the first
    # seconds); the goal is about growth during the sustained run, i.e. a leak.
    warm_at = max(10.0, duration / 10)
    start = next((kb for t, kb in samples if t >= warm_at), end)
    peak = max(kb for _, kb in samples)
    return {"rate": rate, "duration_s": duration, "value_bytes": value_bytes, "samples": len(samples),
            "idle_mib": idle / 1024, "warm_at_s": warm_at,
            "start_mib": start / 1024, "max_mib": peak / 1024, "end_mib": end / 1024,
            "growth_pct": 100.0 * (end - start) / start if start else float("nan"),
            "produced": produced, "behind_at_end": produced - replicated}


def table(result: dict[str, Any]) -> str:
    return "\n".join([
        "| rate (records/s) | duration (s) | RSS idle (MiB) | RSS start (MiB) | RSS max (MiB) | RSS end (MiB) "
        "| end vs start | records behind at end |",
        "|---|---|---|---|---|---|---|---|",
        f"| {result['rate']:,.0f} | {result['duration_s']:.0f} | {result['idle_mib']:.1f} "
        f"| {result['start_mib']:.1f} (at {result['warm_at_s']:.0f} s) | {result['max_mib']:.1f} "
        f"| {result['end_mib']:.1f} | {result['growth_pct']:+.1f}% | {result['behind_at_end']:,} of "
        f"{result['produced']:,} |",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="records/s (50%% of the max rate)")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of sustained load")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--samples", type=Path, help="write every (seconds, rss_kb) sample to this CSV")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra mm2.properties entry (repeatable)")
    parser.add_argument("--code", type=Path, metavar="DIR",
                        help="run the replication on the packages in DIR (e.g. an older `git archive`)")
    args = parser.parse_args(argv)
    result = run(args.rate, args.duration, args.value_bytes, dict(s.split("=", 1) for s in args.set), args.samples,
                 args.code)
    print(json.dumps(result))
    print()
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
