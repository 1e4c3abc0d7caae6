"""Memory of the replication process under sustained load: RSS sampled every second.

bench/steady.py sets up A, B and our replication (tasks.max=1, one process); bench/load.py produces
``--rate`` records/s (by default 50% of the replication's measured max rate, passed in by bench/run.py)
for ``--duration`` seconds (10 minutes by default). The RSS of the replication process (/proc VmRSS) is
sampled every second from the moment the load starts. Printed: idle (when the load starts), start (after
the warm-up: at 10% of the duration, at least 10 s, when client buffers and fetch queues are full), max
and end, plus how far the replication was behind at the end (records produced minus records on B).
Then it waits until the replication has copied everything (the load generator flushes its own queue
when it stops: a burst) and ``--settle`` seconds more, and prints that "settled" RSS too: buffers of a
backlog are empty by then, so what remains above start is retained or leaked memory.
Goal: flat, end <= start + 10%. To tell a leak (linear growth) from buffers filling up (a plateau),
it also prints the RSS at each quarter of the run and the slope of the second half (MiB per minute).

``--trace DIR`` instruments the replication process with bench/memtrace (sitecustomize, nothing in the
product changes): per-second RSS, tracemalloc heap and malloc in-use/free figures in DIR/process.csv,
librdkafka queue sizes of the hot-path clients in DIR/clients.csv, and tracemalloc snapshots at the
process ages given by ``--snapshots`` (compare two with bench/memdiff.py). ``--env KEY=VALUE`` sets
environment variables of the replication process only (e.g. ``MALLOC_ARENA_MAX=2``).

Usage::

    python bench/memory.py [--rate 37500] [--duration 600] [--value-bytes 100] [--samples out.csv]
                           [--trace DIR [--snapshots 90,390] [--frames 1]] [--env KEY=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import kafka_brokers
from bench.common import EndOffsets, cpu_seconds, rss_kb
from bench.steady import PARTITIONS, steady_replication, stop_load

DEFAULT_RATE = 37_500
MEMTRACE_DIR = Path(__file__).resolve().parent / "memtrace"


def trace_env(directory: Path, snapshots: str = "", frames: int = 1, tracemalloc: bool = True) -> dict[str, str]:
    """The environment that makes a child Python process load bench/memtrace (see its docstring)."""
    path = os.pathsep.join(filter(None, [str(MEMTRACE_DIR), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, "BENCH_TRACE_DIR": str(directory), "BENCH_TRACE_SNAPSHOTS": snapshots,
            "BENCH_TRACE_FRAMES": str(frames), "BENCH_TRACE_TRACEMALLOC": "1" if tracemalloc else "0"}


def slope_mib_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of RSS over time, MiB per minute (0 with fewer than two samples)."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / n
    mean_kb = sum(kb for _, kb in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (kb - mean_kb) for t, kb in samples)
    return cov / var * 60 / 1024


def run(rate: float, duration: float, value_bytes: int = 100, extra: dict[str, str] | None = None,
        samples_path: Path | None = None, code: Path | None = None,
        env: dict[str, str] | None = None, settle_s: float = 45.0, catch_up_s: float = 120.0) -> dict[str, Any]:
    """The load for ``duration``, then up to ``catch_up_s`` for the replication to copy the rest, then
    ``settle_s`` idle: "settled" is the RSS once no backlog holds buffers (what a leak cannot explain).
    """
    load_before = os.getloadavg()
    with steady_replication(extra, code=code, env=env) as steady:
        pid = steady.replication.pids[0]
        samples: list[tuple[float, int]] = []
        out = None if samples_path is None else samples_path.open("w", buffering=1)
        if out is not None:  # written as it goes: a run that fails still leaves its samples
            out.write("seconds,rss_kb\n")
        cpu_before = cpu_seconds(pid)
        load = steady.start_load(rate, duration, value_bytes)
        began = time.monotonic()

        def sample() -> int:
            samples.append((time.monotonic() - began, rss_kb(pid)))
            if out is not None:
                out.write(f"{samples[-1][0]:.1f},{samples[-1][1]}\n")
            if not steady.replication.alive():
                raise SystemExit(f"replication exited:\n{steady.replication.tail()}")
            time.sleep(max(0.0, len(samples) - (time.monotonic() - began)))
            return samples[-1][1]

        try:
            while load.poll() is None:
                sample()
            if load.returncode != 0:
                raise SystemExit(f"load generator failed: {steady.load_report()}")
            samples.append((time.monotonic() - began, rss_kb(pid)))
            load_end = len(samples)
            cpu_used = cpu_seconds(pid) - cpu_before
            ends = EndOffsets(steady.target, steady.remote_topic, PARTITIONS)
            replicated = ends.total() - PARTITIONS  # minus the warm-up records
            produced = int(steady.load_report().split()[1])
            behind_at_end = produced - replicated
            # The load generator's own queue is flushed when it stops, so the last seconds are a burst:
            # let the replication copy it, then stay idle for settle_s.
            caught_up_after: float | None = 0.0 if replicated >= produced else None
            catch_up_deadline = time.monotonic() + catch_up_s
            while caught_up_after is None and time.monotonic() < catch_up_deadline:
                sample()
                if ends.total() - PARTITIONS >= produced:
                    caught_up_after = samples[-1][0] - samples[load_end - 1][0]
            ends.close()
            settled = samples[-1][1]
            settle_until = time.monotonic() + settle_s
            while time.monotonic() < settle_until:
                settled = sample()
        finally:
            stop_load(load)
            if out is not None:
                out.close()
    during = samples[:load_end]
    idle, end = samples[0][1], during[-1][1]
    # "start" is after the warm-up (client buffers, fetch queues and metric series fill in the first
    # seconds); the goal is about growth during the sustained run, i.e. a leak.
    warm_at = max(10.0, duration / 10)
    start = next((kb for t, kb in during if t >= warm_at), end)
    peak = max(kb for _, kb in samples)
    quarters = [next((kb for t, kb in during if t >= duration * q / 4), end) / 1024 for q in (1, 2, 3)]
    second_half = [(t, kb) for t, kb in during if t >= duration / 2]
    return {"rate": rate, "duration_s": duration, "value_bytes": value_bytes, "samples": len(samples),
            "idle_mib": idle / 1024, "warm_at_s": warm_at,
            "start_mib": start / 1024, "max_mib": peak / 1024, "end_mib": end / 1024,
            "growth_pct": 100.0 * (end - start) / start if start else float("nan"),
            "produced": produced, "behind_at_end": behind_at_end,
            "caught_up_after_s": caught_up_after, "settle_s": settle_s,
            "settled_mib": settled / 1024,
            "quarters_mib": quarters, "second_half_slope_mib_per_min": slope_mib_per_min(second_half),
            "replication_cpu_s": cpu_used, "load_average_before": load_before[0],
            "load_average_after": os.getloadavg()[0]}


def table(result: dict[str, Any]) -> str:
    return "\n".join([
        "| rate (records/s) | duration (s) | RSS idle (MiB) | RSS start (MiB) | RSS max (MiB) | RSS end (MiB) "
        "| end vs start | records behind at end |",
        "|---|---|---|---|---|---|---|---|",
        f"| {result['rate']:,.0f} | {result['duration_s']:.0f} | {result['idle_mib']:.1f} "
        f"| {result['start_mib']:.1f} (at {result['warm_at_s']:.0f} s) | {result['max_mib']:.1f} "
        f"| {result['end_mib']:.1f} | {result['growth_pct']:+.1f}% | {result['behind_at_end']:,} of "
        f"{result['produced']:,} |",
        "",
        "RSS at 25/50/75% of the run: " + " / ".join(f"{q:.1f}" for q in result["quarters_mib"])
        + f" MiB; second-half slope {result['second_half_slope_mib_per_min']:+.2f} MiB/min; replication CPU "
        f"{result['replication_cpu_s']:.0f} s during the load; load average "
        f"{result['load_average_before']:.2f} before, {result['load_average_after']:.2f} after",
        f"Caught up {_seconds(result['caught_up_after_s'])} after the load stopped; RSS "
        f"{result['settle_s']:.0f} s later (settled): {result['settled_mib']:.1f} MiB "
        f"({100.0 * (result['settled_mib'] - result['start_mib']) / result['start_mib']:+.1f}% vs start)",
    ])


def _seconds(value: float | None) -> str:
    return "not within the catch-up time" if value is None else f"{value:.0f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="records/s (50%% of the max rate)")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of sustained load")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--samples", type=Path, help="write every (seconds, rss_kb) sample to this CSV")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra mm2.properties entry (repeatable)")
    parser.add_argument("--settle", type=float, default=45.0,
                        help="seconds of idle after the replication caught up, then the settled RSS")
    parser.add_argument("--code", type=Path, metavar="DIR",
                        help="run the replication on the packages in DIR (e.g. an older `git archive`)")
    parser.add_argument("--trace", type=Path, metavar="DIR", help="instrument the replication (bench/memtrace)")
    parser.add_argument("--snapshots", default="", help="with --trace: process ages (s) of tracemalloc snapshots")
    parser.add_argument("--frames", type=int, default=1, help="with --trace: tracemalloc traceback depth")
    parser.add_argument("--no-tracemalloc", action="store_true", help="with --trace: RSS and client stats only")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment variable of the replication process (repeatable)")
    parser.add_argument("--broker", choices=kafka_brokers.BROKERS,
                        help="the clusters: embedded Tansu (default), or single-node Apache Kafka 4.4 (KRaft)")
    args = parser.parse_args(argv)
    if args.broker:
        kafka_brokers.select(args.broker)
    env = dict(e.split("=", 1) for e in args.env)
    if args.trace is not None:
        env.update(trace_env(args.trace.resolve(), args.snapshots, args.frames, not args.no_tracemalloc))
    result = run(args.rate, args.duration, args.value_bytes, dict(s.split("=", 1) for s in args.set), args.samples,
                 args.code, env, args.settle)
    print(json.dumps(result))
    print()
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
