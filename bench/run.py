"""Run every benchmark, print a table per benchmark and record the run in bench/results.md.

Order: throughput (the raw pipe baseline and our replication, side by side), then latency at 10% and
memory at 50% of the replication's measured 100 B rate (tasks.max=1), then start-up (bench/startup.py)
and backfill (bench/backfill.py, if present), the per-record cost with fake clients (bench/hot_path.py),
and the records replayed on failover by MM2's offset syncs and by the exact offset map (bench/failover_replay.py).
Each benchmark starts its own embedded brokers (hot_path needs none).

Usage::

    python bench/run.py            # full: 1M records per size, 30 s latency, 10 min memory, 1M-record start-up
    python bench/run.py --quick    # a few minutes: 100k records, 10 s latency, 60 s memory, 100k start-up

``--only throughput,latency`` runs a subset. The run is recorded as a new ``## `` section at the top of
bench/results.md, every earlier run kept (bench/README.md, "Recording rule"), with the facts of the rule
(bench/recording.py): the load average at its start, whether that marks it, and the commit.
``--output FILE`` writes the section to FILE instead (a try that is not to be recorded).
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import kafka_brokers, latency, memory, recording, throughput
from bench.common import BENCH_DIR, machine_facts

DEFAULT_MODES = (*throughput.MODES, *throughput.EOS_WORKER, *throughput.PERIODIC, *throughput.SCALING, "spark")
ALL = ("throughput", "latency", "first_record", "memory", "startup", "backfill", "hot_path", "failover_replay")


def script_table(script: str, args: list[str], timeout_s: float) -> str:
    """Run a bench script in its own process; its markdown table (or its last lines) as text."""
    path = BENCH_DIR / script
    if not path.exists():
        return "skipped: not available"
    try:
        done = subprocess.run([sys.executable, str(path), *args], check=False, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"skipped: {script} did not finish within {timeout_s:.0f}s"
    if done.returncode != 0:
        return f"failed (exit {done.returncode}):\n\n```\n{done.stderr.strip()[-2000:]}\n```"
    lines = done.stdout.strip().splitlines()
    table = [line for line in lines if line.startswith("|")]
    if table:
        return "\n".join(table)
    if lines:  # no table: its last lines, and the summary some scripts print to stderr
        summary = [line for line in done.stderr.strip().splitlines()[-8:] if not line.startswith("WARNING")]
        return "```\n" + "\n".join(summary + lines[-15:]) + "\n```"
    return f"no output on stdout; stderr ends with:\n\n```\n{done.stderr.strip()[-2000:]}\n```"


def backfill_args(quick: bool) -> list[str]:
    """Pass --quick to bench/backfill.py when it has that flag."""
    path = BENCH_DIR / "backfill.py"
    if not quick or not path.exists():
        return []
    helped = subprocess.run([sys.executable, str(path), "--help"], check=False, capture_output=True,
                            text=True, timeout=120)
    return ["--quick"] if "--quick" in helped.stdout else []


def records_per_size(text: str) -> tuple[int, int]:
    """``--records``: one count for both sizes, or two (100 B, 1 KB)."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count or two: {text!r}") from None
    if len(counts) not in (1, 2) or min(counts) <= 0:
        raise argparse.ArgumentTypeError(f"one or two positive counts (100 B, 1 KB): {text!r}")
    return counts[0], counts[-1]


def write_run(args: argparse.Namespace, sections: list[tuple[str, str]], facts: dict[str, str],
              start: datetime.datetime, began: float, argv: list[str] | None) -> None:
    """The run's section (heading, machine table with the recording rule's facts, one table per benchmark),
    recorded in bench/results.md or written to ``--output``."""
    command = "python bench/run.py " + " ".join(sys.argv[1:] if argv is None else argv)
    heading, text = recording.section(command.strip(), args.title or command.strip(), kafka_brokers.label(),
                                      "bench/README.md", facts, sections, start, began)
    recording.keep(heading, text, args.output, BENCH_DIR / "results.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small run that finishes in a few minutes")
    parser.add_argument("--only", default=",".join(ALL), help="comma-separated subset of " + ", ".join(ALL))
    parser.add_argument("--records", type=records_per_size, metavar="N[,N1K]",
                        help="throughput records per size (default 1M, quick 100k); two counts: 100 B, then 1 KB")
    parser.add_argument("--output", type=Path,
                        help="write the run's section to this file instead of recording it in bench/results.md")
    parser.add_argument("--title", help="the recorded section's heading after its date (default: the command)")
    parser.add_argument("--compression", default="none",
                        help="throughput source topics: none and/or lz4, zstd... (bench/throughput.py --compression)")
    parser.add_argument("--compare-code", type=Path, metavar="DIR",
                        help="also run (b) and the hot path on the packages in DIR (before a change), interleaved")
    parser.add_argument("--modes", help="throughput modes (bench/throughput.py); (b), mm2-1, is the flow as shipped. "
                                         "Default: " + ",".join(DEFAULT_MODES) + " (with --broker kafka also "
                                         "Java's MirrorMaker 2 as shipped and tuned, and Kafka's perf tools)")
    parser.add_argument("--broker", choices=kafka_brokers.BROKERS, default="tansu",
                        help="the clusters of every benchmark: embedded Tansu, or single-node Apache Kafka 4.4 "
                             "(KRaft); the throughput mode java-mm2-1 (Java's MirrorMaker 2) needs kafka")
    parser.add_argument("--runs", type=int, help="throughput: interleaved runs per mode (default 5, quick 2); "
                                                  "each figure is their median with min-max")
    args = parser.parse_args(argv)
    kafka_brokers.select(args.broker)  # this process and every bench script it spawns
    only = set(args.only.split(","))
    records = args.records or (100_000 if args.quick else 1_000_000,) * 2
    rule, loads = recording.at_start()
    facts = {**machine_facts(), **rule.rows(loads)}
    if rule.marked:
        print(f"load average {loads[0]:.2f} at the start, above {recording.LOAD_LIMIT}: this run is recorded "
              "marked and will not feed a headline (bench/README.md, Recording rule)", file=sys.stderr, flush=True)
    began = time.monotonic()
    start = datetime.datetime.now(datetime.UTC)
    sections: list[tuple[str, str]] = []

    def show(title: str, body: str) -> None:
        sections.append((title, body))
        print(f"\n## {title}\n\n{body}\n", flush=True)

    mm2_rate: float | None = None
    if "throughput" in only:
        kafka_modes = (*throughput.JAVA_MODES, *throughput.PERF_MODES) if args.broker == "kafka" else ()
        modes = (args.modes.split(",") if args.modes else
                 [*DEFAULT_MODES[:3], *kafka_modes, *DEFAULT_MODES[3:]])
        if args.compare_code is not None:
            modes.insert(modes.index("mm2-1"), "mm2-1-base")
        runs = args.runs or (2 if args.quick else throughput.RUNS)
        results = throughput.run(records[0], [100, 1000], modes, runs, compare_code=args.compare_code,
                                 records_by_size={100: records[0], 1000: records[1]},
                                 compressions=tuple(args.compression.split(",")))
        rows = throughput.summarize(results)
        mm2_rate = next((r["records_per_s"]["median"] for r in rows if r["mode"] == "mm2-1" and r["size"] == 100
                         and r.get("compression") == "none" and "skipped" not in r), None)
        counts = f"{records[0]:,}" if records[0] == records[1] else f"{records[0]:,} x 100 B, {records[1]:,} x 1 KB"
        show(f"throughput ({counts} records per size, 8 partitions; median [min-max] of {runs} interleaved "
             "runs)", throughput.report(rows, modes))
    base_rate = mm2_rate or 75_000.0  # without a throughput run: the last measured order of magnitude
    if "latency" in only:
        seconds = 10.0 if args.quick else 30.0
        result = latency.run(round(base_rate * 0.10), seconds)
        show("latency (10% of (b)'s 100 B rate, source CreateTime -> consumer on B)", latency.table(result))
        rate = result["rate"]
        # If the generator or broker A could not keep up, the figures above measure their backlog: halve
        # the rate until they do (at most three times), so the replicator's own latency is measured too.
        for _ in range(3):
            if result["sustained"]:
                break
            rate = round(rate / 2)
            result = latency.run(rate, seconds)
            show(f"latency at {rate:,} records/s (the highest rate tried that the source side sustained)"
                 if result["sustained"] else f"latency at {rate:,} records/s (still not sustained)",
                 latency.table(result))
    if "first_record" in only:
        first_args = ["--runs", "1" if args.quick else "3", *(["--java"] if args.broker == "kafka" else [])]
        show("start-up to the first record (bench/first_record.py " + " ".join(first_args) + ")",
             script_table("first_record.py", first_args, 1800 if args.broker == "kafka" else 900))
    if "memory" in only:
        result = memory.run(round(base_rate * 0.50), 60.0 if args.quick else 600.0)
        show("memory (RSS of the replication process at 50% of (b)'s 100 B rate)", memory.table(result))
    if "startup" in only:
        startup_args = ["--records", "100000", "--runs", "1"] if args.quick else ["--runs", "3"]
        show("start-up (bench/startup.py " + " ".join(startup_args) + ")",
             script_table("startup.py", startup_args, 1800))
    if "backfill" in only:
        show("backfill (bench/backfill.py)", script_table("backfill.py", backfill_args(args.quick), 3600))
    if "hot_path" in only:
        hot_args = ["--records", "100000", "--runs", "3"] if args.quick else ["--runs", "5"]
        hot_args += ["--chunk", "500"] + (["--compare-code", str(args.compare_code)] if args.compare_code else [])
        show("hot path, fake clients (bench/hot_path.py " + " ".join(hot_args) + ")",
             script_table("hot_path.py", hot_args, 900))
    if "failover_replay" in only:
        replay_args = ["--records", "100000"] if args.quick else []
        show("records replayed on failover vs consumer lag; offset map size (bench/failover_replay.py)",
             script_table("failover_replay.py", replay_args, 900))

    write_run(args, sections, facts, start, began, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
