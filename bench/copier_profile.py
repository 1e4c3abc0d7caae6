"""Where one task's CPU goes beside another copier's: ``perf`` profiles of both, recorded side by side.

Why: the headline (docs/performance.md) says how far one task of ours is from the native copier, a C program on
the same librdkafka with the same client settings, and from Java's MirrorMaker 2 tuned to the same settings.
This says where each difference lies: each copier's CPU per record copied, split by thread pool (the task
thread against the client's network threads, a JVM's compilers and collectors), by library (the interpreter,
confluent-kafka's ``cimpl``, librdkafka, libc, the kernel; a JVM's compiled Java code and ``libjvm``) and by
symbol, from Linux ``perf`` sampling every thread of the copier's process while it copies.

It runs ``bench/throughput.py --profile-format perf`` for ours as shipped and the copier ``--against`` names
(interleaved rounds, every profile kept), merges each copier's profiles over the rounds, and splits the CPU
per record that the copier's process clock measured by perf's shares of samples (perf's own counts fall
short of the CPU time on a full machine: it regulates its sampling period). Java's MirrorMaker is sampled
flat, its compiled methods named through the JVM's perf map (bench/broker_load.py), and only once it is warm
(bench/throughput.py starts every profile with the clock). perf slows the copier it watches a little, so the
rates of these runs are no headline figures: the headline's runs are unprofiled.

Usage::

    python bench/copier_profile.py [--against native|java-mm2-1-tuned] [--broker kafka] [--size 100]
                                   [--records 3000000] [--runs 3] [--top 20] [--output FILE] [--title TITLE]
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

#: The copiers, in bench/throughput.py's modes: ours as shipped (:data:`OURS`) and those it can be set against.
COPIERS = {"native": "native copier", "java-mm2-1-tuned": "Java MM2 tuned", "mm2-1": "ours"}
OURS = "mm2-1"
#: What ``--against`` may name: the copiers besides ours.
BASES = tuple(mode for mode in COPIERS if mode != OURS)


def merged(paths: list[Path]) -> perf_top.Profile:
    """One profile of several ``perf`` recordings (each copier's rounds)."""
    profile = perf_top.Profile()
    for path in paths:
        for (pool, library, symbol), samples in perf_top.parse(perf_top.report_text(path)).by_thread.items():
            profile.add(samples, pool, library, symbol)
    return profile


def side_by_side(profiles: dict[str, perf_top.Profile], cpu_us: dict[str, float], key: str, top: int,
                 base: str = "native") -> str:
    """One table: rows by thread pool, library or symbol, a column of CPU us/record of ``base`` and of ours,
    and their difference (ours minus ``base``), the largest difference either way first: against the native
    copier the rows where ours spends more lead, against Java's the rows where it spends less.

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
    other, ours = per_record.get(base, {}), per_record.get(OURS, {})
    rows = sorted(names, key=lambda name: abs(ours.get(name, 0.0) - other.get(name, 0.0)), reverse=True)[:top]
    title = {"threads": "thread pool", "libraries": "library"}.get(key, "symbol (library)")
    label = COPIERS[base]
    lines = [f"| {title} | {label}, CPU us/record | ours, CPU us/record | ours minus {label} |",
             "|---|---|---|---|"]
    for name in rows:
        a, b = other.get(name, 0.0), ours.get(name, 0.0)
        lines.append(f"| {name} | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    a, b = cpu_us.get(base, 0.0), cpu_us.get(OURS, 0.0)
    lines.append(f"| all (the process clock) | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    return "\n".join(lines)


def measured_cpu(rows: list[dict[str, Any]], size: int) -> dict[str, float]:
    """Each copier's CPU us/record as bench/throughput.py measured it (median over the rounds)."""
    return {row["mode"]: row["cpu_us_per_record"]["median"] for row in rows
            if row.get("size") == size and row.get("mode") in COPIERS and row.get("cpu_us_per_record")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="native", choices=BASES,
                        help="the copier ours is set beside (Java's MirrorMaker runs on Kafka only)")
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
    if args.against != "native" and args.broker != "kafka":
        raise SystemExit(f"--against {args.against} needs --broker kafka: Java's MirrorMaker is measured on Kafka only")
    modes = (args.against, OURS)
    kafka_brokers.select(args.broker)
    rule, loads = recording.at_start()
    facts = {**machine_facts(), **rule.rows(loads)}
    start, began = datetime.datetime.now(datetime.UTC), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-copier-profile-") as scratch:
        directory = Path(scratch)
        summary = directory / "summary.json"
        command = [sys.executable, str(Path(__file__).with_name("throughput.py")), "--broker", args.broker,
                   "--sizes", str(args.size), "--records", str(args.records), "--runs", str(args.runs),
                   "--modes", ",".join(modes), "--profile-dir", str(directory), "--profile-format", "perf",
                   "--json", str(summary)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not summary.exists():
            raise SystemExit(f"bench/throughput.py failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        rows = json.loads(summary.read_text())
        rates = throughput.table(rows)
        waits = throughput.thread_wait_table(rows)
        cpu_us = measured_cpu(rows, args.size)
        profiles: dict[str, perf_top.Profile] = {}
        for mode in modes:
            paths = sorted(directory.glob(f"profile-{mode}-{args.size}b-none-*.perf"))
            paths = [path for path in paths if "-broker-" not in path.name]
            if not paths:
                raise SystemExit(f"no perf profile of {mode} in {directory}: is perf installed and allowed?")
            profiles[mode] = merged(paths)
    size = f"{args.size:,} B"
    sections = [
        (f"throughput while profiled ({args.records:,} x {size}, {args.runs} interleaved rounds; perf slows both)",
         rates),
        ("the busiest threads' shares of the copy time: on a CPU, and ready but waiting for one (ours and Java's)",
         waits),
        (f"CPU per record by thread pool ({size}; perf's shares at {PERF_HZ} Hz over every round, of the "
         f"CPU per record the process clock measured)",
         side_by_side(profiles, cpu_us, "threads", args.top, args.against)),
        (f"CPU per record by library ({size})", side_by_side(profiles, cpu_us, "libraries", args.top, args.against)),
        (f"CPU per record by symbol, the {args.top} largest differences ({size})",
         side_by_side(profiles, cpu_us, "symbols", args.top, args.against)),
    ]
    argv_text = " ".join(argv if argv is not None else sys.argv[1:])
    heading, text = recording.section(f"python bench/copier_profile.py {argv_text}".strip(),
                                      args.title or f"where one task's CPU goes beside the {COPIERS[args.against]}'s",
                                      kafka_brokers.label(), "bench/copier_profile.py", facts, sections, start, began)
    recording.keep(heading, text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
