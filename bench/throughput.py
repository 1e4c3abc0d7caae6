"""Replication throughput against the raw-client limit, measured side by side on the same brokers.

For each record size (100 B and 1 KB values, no key) ``--records`` records are pre-loaded round-robin on
an 8-partition topic of a fresh embedded cluster A. Then, each against a fresh embedded cluster B:

* ``pipe``: the raw pipe baseline (bench/pipe.py: one Python process, batched consume, async produce);
* ``mm2 x1``: our replication, MirrorSourceConnector with tasks.max=1 in one worker process;
* ``mm2-2``, ``mm2-TwW``: tasks.max=T across W processes (scaling);
* ``mm2-1-eos``, ``mm2-1-eos-1s``: (b) with exactly-once source support on;
* ``mm2-1-periodic``, ``mm2-1-periodic-1s``: (b) with the checkpoint and heartbeat connectors and every
  periodic job, at MM2's default intervals and at 1 s;
* ``spark``: the same backlog copied by ``mirror backfill`` on Spark (``local[2]``).

Each copier runs as its own process. The clock starts when the first record is visible on B (so process
start-up, group joins and topic creation are excluded; they are reported as "start-up") and stops when
the exact high watermarks of the target topic add up to ``--records``. Records/s, MB/s (payload bytes,
10^6) and the ratio to the pipe measured in the same run. CPU is the copier processes' user+system time
while copying (the pipe: its whole life, as it reports it; Spark: not measured, see ``SPARK_MASTER``).

Usage::

    python bench/throughput.py [--records 1000000] [--sizes 100,1000] [--modes pipe,mm2-1,mm2-2]
                               [--runs 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from subprocess import DEVNULL, Popen, TimeoutExpired
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import replication
from bench.common import (
    EndOffsets,
    cpu_seconds,
    create_topic,
    fmt_rate,
    local_brokers,
    preload,
    python_child,
    stop_child,
    unique,
    wait_for_records,
)

PARTITIONS = 8
MODES = ("pipe", "mm2-1", "mm2-2")
#: Scaling: tasks.max T in one process (``mm2-Tw1``) or in W processes (``mm2-TwW``; ``mm2-2`` is 2 in 2).
SCALING = ("mm2-2w1", "mm2-4w1", "mm2-2", "mm2-4w2")
#: The periodic work of a full flow (checkpoints, heartbeats, refreshes, health probes), at MM2's default
#: intervals (``mm2-1-periodic``) and with every interval at 1 s (``mm2-1-periodic-1s``): the copy loop
#: should not notice it. Consumer groups on the source give the checkpoint connector work to do.
PERIODIC_DEFAULT = {"emit.heartbeats.enabled": "true", "emit.checkpoints.enabled": "true",
                    "sync.group.offsets.enabled": "true"}
PERIODIC_1S = {**PERIODIC_DEFAULT, **{key: "1" for key in (
    "refresh.topics.interval.seconds", "refresh.groups.interval.seconds", "sync.topic.configs.interval.seconds",
    "emit.checkpoints.interval.seconds", "emit.heartbeats.interval.seconds", "sync.group.offsets.interval.seconds",
    "sync.topic.acls.interval.seconds")}, "health.refresh.interval.ms": "1000"}
PERIODIC = {"mm2-1-periodic": PERIODIC_DEFAULT, "mm2-1-periodic-1s": PERIODIC_1S}
#: Exactly-once (``exactly.once.source.support=enabled`` on the target's worker): (b) with its default
#: transaction boundary (a transaction per poll batch) and with a 1 s interval. Run them next to ``mm2-1``:
#: ``--modes mm2-1,mm2-1-eos,mm2-1-eos-1s``. Commit markers take offsets on the target, so the end (high
#: watermarks reaching the record count) is seen up to one marker per partition and transaction early:
#: the exactly-once rates are slightly flattered (about 1% at 100 B with ~1,000-record transactions).
EOS_WORKER = {"mm2-1-eos": {"exactly.once.source.support": "enabled"},
              "mm2-1-eos-1s": {"exactly.once.source.support": "enabled"}}
EOS_CONNECTOR = {"mm2-1-eos-1s": {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000"}}
#: ``mm2-1-nosyncs``: (b) without offset syncs (``emit.offset-syncs.enabled=false``, KIP-1031): run next to
#: ``mm2-1`` to see what emitting a sync every ``offset.lag.max`` records costs the copy.
VARIANTS = {"mm2-1-nosyncs": {"emit.offset-syncs.enabled": "false"}}
SOURCE_GROUPS = 5
#: ``mm2-1-base``: (b) on the code given by ``--compare-code`` (before a change), run next to (b).
LABELS = {"pipe": "(a) raw pipe", "mm2-1-base": "(b) before: --compare-code", "mm2-1": "(b) mm2 tasks.max=1",
          "mm2-1-periodic": "(b) + checkpoints, heartbeats, default intervals",
          "mm2-1-periodic-1s": "(b) + checkpoints, heartbeats, every interval 1 s",
          "mm2-2": "(c) mm2 tasks.max=2, 2 workers", "mm2-2w1": "(c) mm2 tasks.max=2, 1 process",
          "mm2-4w1": "(c) mm2 tasks.max=4, 1 process", "mm2-4w2": "(c) mm2 tasks.max=4, 2 processes",
          "mm2-1-eos": "(b) exactly-once, transaction per poll", "mm2-1-eos-1s": "(b) exactly-once, 1 s transactions",
          "mm2-1-nosyncs": "(b) without offset syncs", "spark": "(d) Spark backfill, local[2]"}
#: ``spark``: the same backlog copied by ``mirror backfill`` (Spark, ``--master local[2]``) instead of
#: streaming replication, timed the same way (first record on B to the last); its start-up includes the
#: JVM's. Its CPU is not measured (shown as -): most of it is spent in Spark's JVM, which the command's
#: Python process does not reap, so neither its /proc figures nor RUSAGE_CHILDREN include it.
SPARK_MASTER = "local[2]"


def tasks_and_workers(mode: str) -> tuple[int, int]:
    """``mm2-1`` and its variants: 1 task in 1 process; ``mm2-T``: T tasks in T processes; ``mm2-TwW``."""
    rest = mode.split("-")[1]
    if "w" in rest:
        tasks, workers = rest.split("w")
        return int(tasks), int(workers)
    return int(rest), int(rest)


@dataclass
class Result:
    mode: str
    value_bytes: int
    records: int
    seconds: float = 0.0
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    startup_s: float = 0.0
    cpu_s: float = 0.0
    skipped: str | None = None
    #: (c): seconds between the two processes starting their task (see Replication.task_start_gap_s).
    task_start_gap_s: float | None = None
    #: Several processes: records/s from the moment every process ran its tasks to the end (None: most
    #: records were copied before that, see ``copied_before_all_started``).
    all_running_records_per_s: float | None = None
    copied_before_all_started: float | None = None


def start_profiler(pid: int, output: Path) -> Popen[bytes]:
    """py-spy recording ``pid`` (every thread by name, idle samples too) until :func:`stop_profiler`."""
    fmt = {".json": "speedscope", ".txt": "raw"}.get(output.suffix, "flamegraph")
    output.parent.mkdir(parents=True, exist_ok=True)
    return Popen([shutil.which("py-spy") or "py-spy", "record", "--pid", str(pid), "--rate", "200",
                  "--idle", "--threads",
                  "--format", fmt, "--output", str(output)], stdout=DEVNULL, stderr=DEVNULL)


def stop_profiler(profiler: Popen[bytes]) -> None:
    profiler.send_signal(signal.SIGINT)
    try:
        profiler.wait(60)
    except TimeoutExpired:
        profiler.kill()


@dataclass
class Copier:
    """One running copier: its processes, how to stop it and tell it is alive, and where it writes."""

    processes: list[Popen[bytes]]
    stop: Callable[[], None]
    alive: Callable[[], bool]
    target_topic: str
    log_tail: Callable[[], str]
    repl: replication.Replication | None = None
    #: The copier's CPU seconds once stopped, when not taken from its processes while it copies.
    final_cpu: Callable[[], float | None] = lambda: None


def start_copier(mode: str, source: str, target: str, topic: str, records: int, workdir: Path,
                 extra: dict[str, str] | None, code: Path | None, began: float) -> Copier:
    if mode == "pipe":
        target_topic = unique("pipe")
        create_topic(target, target_topic, PARTITIONS)
        log = workdir / f"{target_topic}.log"
        process = python_child([str(Path(__file__).with_name("pipe.py")), source, target, topic,
                                target_topic, str(PARTITIONS), str(records)], log)

        def reported_cpu() -> float | None:  # it has exited by now: the CPU time it reported itself
            report = log.read_text(errors="replace")
            return float(report.rsplit("cpu_s=", 1)[1].split()[0]) if "cpu_s=" in report else None

        return Copier([process], lambda: stop_child(process), lambda: process.poll() in (None, 0), target_topic,
                      lambda: log.read_text(errors="replace")[-20000:], final_cpu=reported_cpu)
    if mode == "spark":
        process, target_topic = start_backfill(workdir, source, target, topic)
        return Copier([process], lambda: stop_child(process, 120), lambda: process.poll() in (None, 0),
                      target_topic, lambda: (workdir / "backfill.log").read_text(errors="replace")[-20000:],
                      final_cpu=lambda: float("nan"))
    tasks, workers = tasks_and_workers(mode)
    alias = f"A{unique('')[1:6]}"
    repl = replication.start(workdir, source, target, topic=topic, tasks=tasks, workers=workers,
                             source_alias=alias, extra={**PERIODIC.get(mode, {}), **EOS_CONNECTOR.get(mode, {}),
                                                        **VARIANTS.get(mode, {}), **(extra or {})},
                             worker_extra=EOS_WORKER.get(mode), code=code if mode == "mm2-1-base" else None)
    alive = partial(_two_processes_or_fail, repl, began) if workers > 1 else repl.alive
    return Copier(repl.processes, repl.stop, alive, f"{alias}.{topic}", lambda: repl.tail(400), repl)


def run_mode(mode: str, source: str, topic: str, records: int, value_bytes: int, workdir: Path,
             extra: dict[str, str] | None = None, profile: Path | None = None,
             code: Path | None = None) -> Result:
    """One copier run against a fresh cluster B; ``profile``: py-spy the replication while it copies."""
    result = Result(mode, value_bytes, records)
    workers = 1 if mode in ("pipe", "spark") else tasks_and_workers(mode)[1]
    if workers > 1 and (why := replication.multi_worker_support()) is not None:
        result.skipped = why
        return result
    with local_brokers(("bench-b",)) as (target,):
        began = time.monotonic()
        copier = start_copier(mode, source, target, topic, records, workdir, extra, code, began)
        ends = EndOffsets(target, copier.target_topic, PARTITIONS)
        cpu_at_first: list[float] = []
        samples: list[tuple[float, int]] = []
        profiler: Popen[bytes] | None = None

        def first() -> None:
            nonlocal profiler
            cpu_at_first.extend(cpu_seconds(p.pid) for p in copier.processes)
            if profile is not None and copier.repl is not None:
                profiler = start_profiler(copier.processes[0].pid, profile)

        try:
            try:
                done = wait_for_records(ends, records, max(120.0, records / 5000), alive=copier.alive,
                                        on_first=first, samples=samples)
            except SystemExit as exc:  # one copier failing must not lose the other figures
                if mode == "pipe":
                    raise
                kept = Path(tempfile.gettempdir()) / f"bench-failed-{mode}-{value_bytes}b.log"
                kept.write_text(copier.log_tail())
                result.skipped = f"failed: {exc} (log tail: {kept})"
                return result
            result.cpu_s = sum(cpu_seconds(p.pid) for p in copier.processes) - sum(cpu_at_first)
            if profiler is not None:
                stop_profiler(profiler)
            if copier.repl is not None:
                check_tasks(copier.repl, workers)
                if workers > 1:
                    result.task_start_gap_s = copier.repl.task_start_gap_s()
                    all_running(result, copier.repl, samples, records)
        finally:
            if profiler is not None and profiler.poll() is None:
                profiler.kill()
            ends.close()
            copier.stop()
        final_cpu = copier.final_cpu()
        if final_cpu is not None:
            result.cpu_s = final_cpu
        result.seconds = done.seconds
        result.startup_s = done.first_at - began
        result.records_per_s, result.mb_per_s = fmt_rate(records, done.seconds, value_bytes)
    return result


def start_backfill(workdir: Path, source: str, target: str, topic: str) -> tuple[Popen[bytes], str]:
    """``mirror backfill`` of ``topic`` under a fresh source alias, and the remote topic's name."""
    alias = f"A{unique('')[1:6]}"
    props = replication.mm2_properties(source, target, source_alias=alias, topic=topic, tasks=1)
    path = workdir / f"backfill-{alias}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    process = python_child(["-m", "mirror.cli", "backfill", str(path), "--flow", f"{alias}->B",
                            "--master", SPARK_MASTER, "--no-progress"], workdir / "backfill.log")
    return process, f"{alias}.{topic}"


def all_running(result: Result, repl: replication.Replication, samples: list[tuple[float, int]],
                records: int) -> None:
    """The rate once every process ran its tasks: on Tansu the second process can start late (see
    Replication.task_start_gap_s), and until then one process copies alone."""
    times = repl.task_start_times()
    if not times or not samples:
        return
    started = max(times).timestamp()
    before = max((count for at, count in samples if at <= started), default=0)
    result.copied_before_all_started = round(before / records, 3)
    end_at = samples[-1][0]
    if end_at > started and before < records * 0.8:
        result.all_running_records_per_s = (records - before) / (end_at - started)


def _two_processes_or_fail(repl: replication.Replication, began: float, grace_s: float = 60.0) -> bool:
    """``alive`` for (c): fail fast when, after ``grace_s``, the tasks did not start in two processes."""
    if time.monotonic() - began > grace_s and repl.task_processes() < 2:
        raise SystemExit(f"after {grace_s:.0f}s only {repl.task_processes()} process(es) started a task")
    return repl.alive()


def check_tasks(repl: replication.Replication, workers: int) -> None:
    """A run with several processes only counts if each of them ran a task."""
    if workers > 1 and repl.task_processes() < workers:
        raise SystemExit(f"expected tasks in {workers} processes:\n{repl.tail()}")


def run(records: int, sizes: list[int], modes: list[str], runs: int = 1,
        extra: dict[str, str] | None = None, profile_dir: Path | None = None,
        profile_format: str = "svg", compare_code: Path | None = None) -> list[Result]:
    """All runs; one result per (size, mode, run)."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        workdir = Path(tmp)
        for size in sizes:
            with local_brokers(("bench-a",)) as (source,):
                topic = unique(f"bench-{size}b")
                create_topic(source, topic, PARTITIONS)
                took = preload(source, topic, records, size, PARTITIONS)
                print(f"pre-loaded {records:,} x {size} B on {topic} in {took:.1f}s", flush=True)
                if any(mode in PERIODIC for mode in modes):
                    commit_groups(source, topic, records // PARTITIONS // 2)
                for _ in range(runs):
                    for mode in modes:
                        profile = (None if profile_dir is None
                                   else profile_dir / f"profile-{mode}-{size}b.{profile_format}")
                        result = run_mode(mode, source, topic, records, size, workdir, extra, profile,
                                          compare_code)
                        results.append(result)
                        print(json.dumps(asdict(result)), flush=True)
    return results


def commit_groups(source: str, topic: str, offset: int) -> None:
    """Consumer groups with committed offsets on the source, for the checkpoint connector to translate."""
    from confluent_kafka import Consumer, TopicPartition

    for index in range(SOURCE_GROUPS):
        consumer = Consumer({"bootstrap.servers": source, "group.id": f"bench-group-{index}",
                             "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[TopicPartition(topic, p, offset) for p in range(PARTITIONS)],
                            asynchronous=False)
        finally:
            consumer.close()


def summarize(results: list[Result]) -> list[dict[str, Any]]:
    """Median per (size, mode), with the ratio to the pipe of the same size."""
    rows: list[dict[str, Any]] = []
    sizes = sorted({r.value_bytes for r in results})
    for size in sizes:
        pipe_rate = None
        for mode in ("pipe", "mm2-1-base", "mm2-1", "mm2-1-nosyncs", "mm2-1-eos", "mm2-1-eos-1s", "mm2-1-periodic",
                     "mm2-1-periodic-1s", *SCALING, "spark"):
            runs = [r for r in results if r.value_bytes == size and r.mode == mode]
            if not runs:
                continue
            done = [r for r in runs if r.skipped is None]
            if not done:
                rows.append({"mode": mode, "size": size, "skipped": runs[0].skipped})
                continue
            rate = statistics.median(r.records_per_s for r in done)
            if mode == "pipe":
                pipe_rate = rate
            rows.append({
                "mode": mode, "size": size, "runs": len(done), "records": done[0].records,
                "records_per_s": rate, "mb_per_s": rate * size / 1e6,
                "ratio": rate / pipe_rate if pipe_rate else None,
                "startup_s": statistics.median(r.startup_s for r in done),
                "cpu_s": statistics.median(r.cpu_s for r in done),
                "seconds": statistics.median(r.seconds for r in done),
                "task_start_gap_s": (statistics.median(gaps) if (gaps := [r.task_start_gap_s for r in done
                                     if r.task_start_gap_s is not None]) else None),
                "all_running_records_per_s": (statistics.median(rates) if (rates := [
                    r.all_running_records_per_s for r in done if r.all_running_records_per_s is not None]) else None),
                "copied_before_all_started": (statistics.median(parts) if (parts := [
                    r.copied_before_all_started for r in done if r.copied_before_all_started is not None]) else None),
            })
    return rows


def cpu(value: float, digits: int = 1) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| copier | value | records | records/s | MB/s | ratio to (a) | copy time (s) | start-up (s) "
             "| copier CPU (s) | CPU us/record | once all processes ran tasks |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    pipe = {row["size"]: row["records_per_s"] for row in rows if row["mode"] == "pipe" and "skipped" not in row}
    for row in rows:
        label = LABELS[row["mode"]]
        size = f"{row['size']} B"
        if "skipped" in row:
            lines.append(f"| {label} | {size} | | skipped: {row['skipped']} | | | | | | | |")
            continue
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"
        later = "-"
        if row.get("all_running_records_per_s"):
            rate = row["all_running_records_per_s"]
            later = f"{rate:,.0f} rec/s ({rate / pipe[row['size']]:.2f}x)" if row["size"] in pipe else f"{rate:,.0f}"
        elif row.get("copied_before_all_started") is not None:
            later = f"not measured: {row['copied_before_all_started']:.0%} copied before"
        lines.append(f"| {label} | {size} | {row['records']:,} | {row['records_per_s']:,.0f} "
                     f"| {row['mb_per_s']:.1f} | {ratio} | {row['seconds']:.2f} | {row['startup_s']:.1f} "
                     f"| {cpu(row['cpu_s'])} | {cpu(row['cpu_s'] / row['records'] * 1e6, 2)} | {later} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--sizes", default="100,1000", help="value sizes in bytes, comma-separated")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra mm2.properties entry for the replication runs (repeatable)")
    parser.add_argument("--json", help="also write the summary rows to this file")
    parser.add_argument("--compare-code", type=Path, metavar="DIR",
                        help="also run (b) on the packages in DIR (e.g. `git archive HEAD~1 | tar -x -C DIR`), "
                             "interleaved with (b) on the current code: before/after figures of a change")
    parser.add_argument("--profile-dir", type=Path,
                        help="py-spy the replication process while it copies; profiles go here")
    parser.add_argument("--profile-format", default="svg", choices=("svg", "txt", "json"),
                        help="flame graph (svg), collapsed stacks (txt) or speedscope (json)")
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.set)
    modes = args.modes.split(",")
    if args.compare_code is not None and "mm2-1-base" not in modes:
        modes.insert(modes.index("mm2-1") if "mm2-1" in modes else len(modes), "mm2-1-base")
    results = run(args.records, [int(s) for s in args.sizes.split(",")], modes, args.runs,
                  extra, args.profile_dir, args.profile_format, args.compare_code)
    rows = summarize(results)
    print()
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
