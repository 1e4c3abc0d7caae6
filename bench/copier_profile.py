"""Where one task's CPU goes beside the native copier's: ``perf`` profiles of both, recorded side by side.

Why: the headline (docs/performance.md) says how far one task of ours is from the native copier, a C program on
the same librdkafka with the same client settings. This says where the difference lies: each copier's CPU per
record copied, split by thread pool (the task thread against librdkafka's broker threads), by library
(the interpreter, confluent-kafka's ``cimpl``, librdkafka, libc, the kernel) and by symbol, from Linux
``perf`` sampling every thread of the copier's process while it copies.

It runs ``bench/throughput.py --profile-format perf`` for the native copier and ours as shipped (interleaved
rounds, every profile kept), merges each copier's profiles over the rounds, and splits the CPU per record
that the copier's process clock measured by perf's shares of samples (perf's own counts fall short of the
CPU time on a full machine: it regulates its sampling period). perf slows the copier it watches a little,
so the rates of these runs are no headline figures: the headline's runs are unprofiled.

Usage::

    python bench/copier_profile.py [--broker kafka] [--size 100] [--records 3000000] [--runs 3] [--top 20]
                                   [--output FILE] [--title TITLE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import kafka_brokers, perf_top, recording, throughput
from bench.common import machine_facts
from bench.throughput import PERF_HZ

#: The two copiers, in bench/throughput.py's modes: the native copier and ours as shipped.
COPIERS = {"native": "native copier (C on librdkafka)", "mm2-1": "ours as shipped (one task)"}


def merged(paths: list[Path]) -> perf_top.Profile:
    """One profile of several ``perf`` recordings (each copier's rounds)."""
    profile = perf_top.Profile()
    for path in paths:
        for (pool, library, symbol), samples in perf_top.parse(perf_top.report_text(path)).by_thread.items():
            profile.add(samples, pool, library, symbol)
    return profile


def side_by_side(profiles: dict[str, perf_top.Profile], cpu_us: dict[str, float], key: str, top: int) -> str:
    """One table: rows by thread pool, library or symbol, a column of CPU us/record per copier and their
    difference (ours minus native), largest difference first.

    Each copier's row is its share of perf's samples times the CPU per record its process clock measured
    (``cpu_us``): perf regulates its sampling period as it goes, and under a full machine it took 20-40%
    fewer samples than the CPU time spent, alike across threads, so its shares hold and its counts do not.
    """
    counters: dict[str, Counter[str]] = {}
    for mode, profile in profiles.items():
        if key == "threads":
            counters[mode] = Counter(profile.threads)
        elif key == "libraries":
            counters[mode] = Counter(profile.libraries)
        else:
            counters[mode] = Counter({f"`{symbol.replace('|', '/')}` ({library})": n
                                      for (library, symbol), n in profile.symbols.items()})
    names = set().union(*counters.values())
    per_record = {mode: {name: counters[mode][name] / profiles[mode].samples * cpu_us.get(mode, 0.0)
                         if profiles[mode].samples else 0.0 for name in names} for mode in counters}
    native, ours = per_record.get("native", {}), per_record.get("mm2-1", {})
    rows = sorted(names, key=lambda name: ours.get(name, 0.0) - native.get(name, 0.0), reverse=True)[:top]
    title = {"threads": "thread pool", "libraries": "library"}.get(key, "symbol (library)")
    lines = [f"| {title} | native copier, CPU us/record | ours, CPU us/record | ours minus native |",
             "|---|---|---|---|"]
    for name in rows:
        a, b = native.get(name, 0.0), ours.get(name, 0.0)
        lines.append(f"| {name} | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    a, b = cpu_us.get("native", 0.0), cpu_us.get("mm2-1", 0.0)
    lines.append(f"| all (the process clock) | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    return "\n".join(lines)


def measured_cpu(rows: list[dict[str, Any]], size: int) -> dict[str, float]:
    """Each copier's CPU us/record as bench/throughput.py measured it (median over the rounds)."""
    return {row["mode"]: row["cpu_us_per_record"]["median"] for row in rows
            if row.get("size") == size and row.get("mode") in COPIERS and row.get("cpu_us_per_record")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", default="kafka", choices=kafka_brokers.BROKERS)
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds; every round's profile counts")
    parser.add_argument("--top", type=int, default=20, help="rows of the symbol table")
    parser.add_argument("--output", type=Path, help="write the section to FILE instead of recording it")
    parser.add_argument("--title", help="the recorded section's heading after its date")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.records < 1 or args.size < 1:
        raise SystemExit("--runs, --records and --size must be positive")
    kafka_brokers.select(args.broker)
    rule, loads = recording.at_start()
    facts = {**machine_facts(), **rule.rows(loads)}
    start, began = datetime.datetime.now(datetime.UTC), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-copier-profile-") as scratch:
        directory = Path(scratch)
        summary = directory / "summary.json"
        command = [sys.executable, str(Path(__file__).with_name("throughput.py")), "--broker", args.broker,
                   "--sizes", str(args.size), "--records", str(args.records), "--runs", str(args.runs),
                   "--modes", ",".join(COPIERS), "--profile-dir", str(directory), "--profile-format", "perf",
                   "--json", str(summary)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not summary.exists():
            raise SystemExit(f"bench/throughput.py failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        rows = json.loads(summary.read_text())
        rates = throughput.table(rows)
        cpu_us = measured_cpu(rows, args.size)
        profiles: dict[str, perf_top.Profile] = {}
        for mode in COPIERS:
            paths = sorted(directory.glob(f"profile-{mode}-{args.size}b-none-*.perf"))
            paths = [path for path in paths if "-broker-" not in path.name]
            if not paths:
                raise SystemExit(f"no perf profile of {mode} in {directory}: is perf installed and allowed?")
            profiles[mode] = merged(paths)
    size = f"{args.size:,} B"
    sections = [
        (f"throughput while profiled ({args.records:,} x {size}, {args.runs} interleaved rounds; perf slows both)",
         rates),
        (f"CPU per record by thread pool ({size}; perf's shares at {PERF_HZ} Hz over every round, of the "
         f"CPU per record the process clock measured)", side_by_side(profiles, cpu_us, "threads", args.top)),
        (f"CPU per record by library ({size})", side_by_side(profiles, cpu_us, "libraries", args.top)),
        (f"CPU per record by symbol, the {args.top} largest differences ({size})",
         side_by_side(profiles, cpu_us, "symbols", args.top)),
    ]
    argv_text = " ".join(argv if argv is not None else sys.argv[1:])
    heading, text = recording.section(f"python bench/copier_profile.py {argv_text}".strip(),
                                      args.title or "where one task's CPU goes beside the native copier's",
                                      kafka_brokers.label(), "bench/copier_profile.py", facts, sections, start, began)
    recording.keep(heading, text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
