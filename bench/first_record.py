"""Start-up: from ``connect-mirror-maker mm2.properties`` to the first record on the target, and where the
seconds go.

Fresh embedded clusters A and B (Tansu), a topic with a few records on A, then ``connect-mirror-maker``
started the way a user starts it (bench/replication.py, MM2 defaults apart from RF 1 and no ACL sync).
The clock starts when the process is spawned and stops when the first record is visible on B. The
breakdown comes from the process's log: the time of the first line matching each milestone, relative to
the spawn (a milestone that never logs is shown as "-"). The process's resident memory is read when the
first record is on B.

``--broker kafka`` runs single-node Apache Kafka 4.4 clusters instead (bench/kafka_brokers.py); ``--java``
(Kafka only) also runs Java's MirrorMaker 2 on the same mm2.properties in each round, on fresh clusters
of its own (bench/java_copier.py), and the table gets its columns beside ours (its milestones from
Java's log lines of the same events).

Usage::

    python bench/first_record.py [--runs 3] [--set KEY=VALUE ...] [--json out.json] [--broker kafka [--java]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import java_copier, kafka_brokers, replication
from bench.common import EndOffsets, create_topic, local_brokers, preload, rss_kb, unique

PARTITIONS = 8

#: (milestone, text of the first log line that marks it), in the order they are expected.
MILESTONES = (
    ("internal topics created and read", "Loaded "),
    ("group joined (leader)", "Joined group "),  # the first join: generation 0 on Tansu, 1 on Kafka
    ("connectors assigned", "Assigned "),
    ("connectors started", "Starting connector"),
    ("task configs written", "task config"),
    ("task assigned", "Starting task"),
    ("task running", "started (worker"),
)
#: The same milestones in Java MirrorMaker's log (Connect's INFO lines; its group join is logged by the
#: herder, the clients' own lines are at WARN). None: Java logs no line for it.
JAVA_MILESTONES = {
    "internal topics created and read": "Finished reading KafkaBasedLog for topic",
    "group joined (leader)": "Joined group at generation",
    "connectors assigned": "got assignment",
    "connectors started": "Starting connector",
    "task configs written": None,
    "task assigned": "Starting task",
    "task running": "Source task finished initialization and start",
}
RSS_ROW = "RSS at the first record (MiB)"


def _log_times(log: Path) -> list[tuple[datetime, str]]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        try:  # ours: "2026-11-26 04:52:14,123 ...", Java's log4j2 pattern: "[2026-11-26 04:52:14,123] ..."
            out.append((datetime.strptime(line[1:24] if line.startswith("[") else line[:23],
                                          "%Y-%m-%d %H:%M:%S,%f"), line))
        except ValueError:
            continue
    return out


def breakdown(log: Path, spawned: datetime, java: bool = False) -> dict[str, float | None]:
    lines = _log_times(log)
    result: dict[str, float | None] = {}
    for name, ours in MILESTONES:
        marker = JAVA_MILESTONES[name] if java else ours
        hit = None if marker is None else next((t for t, line in lines if marker in line), None)
        result[name] = None if hit is None else round((hit - spawned).total_seconds(), 2)
    result["first log line"] = round((lines[0][0] - spawned).total_seconds(), 2) if lines else None
    return result


def run_once(extra: dict[str, str], keep_log: Path | None = None, java: bool = False) -> dict[str, Any]:
    """One start of ours (``connect-mirror-maker``) or, ``java``, of Java's MirrorMaker on fresh clusters."""
    name = "Java MirrorMaker" if java else "connect-mirror-maker"
    with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp, local_brokers() as (source, target):
        topic = unique("first")
        create_topic(source, topic, PARTITIONS)
        preload(source, topic, 1000, 100, PARTITIONS)
        alias = f"A{unique('')[1:6]}"
        spawned = datetime.now()
        began = time.monotonic()
        if java:
            node = java_copier.start(Path(tmp), source, target, topic=topic, source_alias=alias, extra=extra)
            pid, log, alive, tail, stop = (node.proc.pid, node.log, lambda: node.proc.poll() is None, node.tail,
                                           node.stop)
        else:
            repl = replication.start(Path(tmp), source, target, topic=topic, source_alias=alias, extra=extra,
                                     launcher="driver")
            pid, log, alive, tail, stop = repl.pids[0], repl.logs[0], repl.alive, repl.tail, repl.stop
        ends = EndOffsets(target, f"{alias}.{topic}", PARTITIONS)
        try:
            while not ends.any_written():
                if not alive():
                    raise SystemExit(f"{name} exited:\n{tail(60)}")
                if time.monotonic() - began > 180:
                    raise SystemExit(f"no record on the target after 180 s:\n{tail(60)}")
                time.sleep(0.05)
            first = time.monotonic() - began
            rss_mib = round(rss_kb(pid) / 1024, 1)
            steps = breakdown(log, spawned, java)
            if keep_log is not None:
                keep_log.write_text(log.read_text(errors="replace"))
        finally:
            ends.close()
            stop()
    return {"first_record_s": round(first, 2), RSS_ROW: rss_mib, **steps}


def _cells(runs: list[dict[str, Any]], key: str) -> str:
    values = [r[key] for r in runs if r.get(key) is not None]
    if not values:
        return "- | -"
    return f"{statistics.median(values):.2f} | {min(values):.2f}-{max(values):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra mm2.properties entry (repeatable)")
    parser.add_argument("--json", help="also write the runs to this file")
    parser.add_argument("--keep-log", type=Path, help="copy the last run's log here")
    parser.add_argument("--broker", choices=kafka_brokers.BROKERS,
                        help="the clusters: embedded Tansu (default, or $BENCH_BROKER as run.py sets it), or "
                             "single-node Apache Kafka 4.4 (KRaft)")
    parser.add_argument("--java", action="store_true",
                        help="also start Java's MirrorMaker 2 each round, beside ours (--broker kafka only)")
    args = parser.parse_args(argv)
    if args.broker:
        kafka_brokers.select(args.broker)
    if args.java:
        java_copier.require_kafka("--java")
    extra = dict(item.split("=", 1) for item in args.set)
    runs: list[dict[str, Any]] = []
    java_runs: list[dict[str, Any]] = []
    for _ in range(args.runs):
        result = run_once(extra, args.keep_log)
        runs.append(result)
        print(json.dumps(result), flush=True)
        if args.java:
            result = run_once(extra, None, java=True)
            java_runs.append(result)
            print(json.dumps({"copier": "java", **result}), flush=True)
    keys = ["first log line", *(name for name, _ in MILESTONES), "first_record_s", RSS_ROW]
    java_head = f" Java MM2 {java_copier.version()}: median | min-max |" if args.java else ""
    on = f", {kafka_brokers.label()}" if kafka_brokers.current() == "kafka" else ""
    print(f"\n| milestone (s after spawn){on} | median | min-max |{java_head}\n"
          f"|---|---|---|{'---|---|' if args.java else ''}")
    for key in keys:
        label = "first record on the target" if key == "first_record_s" else key
        java_cells = f" {_cells(java_runs, key)} |" if args.java else ""
        print(f"| {label} | {_cells(runs, key)} |{java_cells}")
    if args.json:
        Path(args.json).write_text(json.dumps({"ours": runs, "java": java_runs} if args.java else runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
