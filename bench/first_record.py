"""Start-up: from ``connect-mirror-maker mm2.properties`` to the first record on the target, and where the
seconds go.

Fresh embedded clusters A and B (Tansu), a topic with a few records on A, then ``connect-mirror-maker``
started the way a user starts it (bench/replication.py, MM2 defaults apart from RF 1 and no ACL sync).
The clock starts when the process is spawned and stops when the first record is visible on B. The
breakdown comes from the process's log: the time of the first line matching each milestone, relative to
the spawn (a milestone that never logs is shown as "-").

Usage::

    python bench/first_record.py [--runs 3] [--set KEY=VALUE ...] [--json out.json]
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

from bench import replication
from bench.common import EndOffsets, create_topic, local_brokers, preload, unique

PARTITIONS = 8

#: (milestone, text of the first log line that marks it), in the order they are expected.
MILESTONES = (
    ("internal topics created and read", "Loaded "),
    ("group joined (leader)", " generation 0 "),
    ("connectors assigned", "Assigned "),
    ("connectors started", "Starting connector"),
    ("task configs written", "task config"),
    ("task assigned", "Starting task"),
    ("task running", "started (worker"),
)


def _log_times(log: Path) -> list[tuple[datetime, str]]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            out.append((datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f"), line))
        except ValueError:
            continue
    return out


def breakdown(log: Path, spawned: datetime) -> dict[str, float | None]:
    lines = _log_times(log)
    result: dict[str, float | None] = {}
    for name, marker in MILESTONES:
        hit = next((t for t, line in lines if marker in line), None)
        result[name] = None if hit is None else round((hit - spawned).total_seconds(), 2)
    result["first log line"] = round((lines[0][0] - spawned).total_seconds(), 2) if lines else None
    return result


def run_once(extra: dict[str, str], keep_log: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp, local_brokers() as (source, target):
        topic = unique("first")
        create_topic(source, topic, PARTITIONS)
        preload(source, topic, 1000, 100, PARTITIONS)
        alias = f"A{unique('')[1:6]}"
        spawned = datetime.now()
        began = time.monotonic()
        repl = replication.start(Path(tmp), source, target, topic=topic, source_alias=alias, extra=extra,
                                 launcher="driver")
        ends = EndOffsets(target, f"{alias}.{topic}", PARTITIONS)
        try:
            while not ends.any_written():
                if not repl.alive():
                    raise SystemExit(f"connect-mirror-maker exited:\n{repl.tail(60)}")
                if time.monotonic() - began > 180:
                    raise SystemExit(f"no record on the target after 180 s:\n{repl.tail(60)}")
                time.sleep(0.05)
            first = time.monotonic() - began
            steps = breakdown(repl.logs[0], spawned)
            if keep_log is not None:
                keep_log.write_text(repl.logs[0].read_text(errors="replace"))
        finally:
            ends.close()
            repl.stop()
    return {"first_record_s": round(first, 2), **steps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra mm2.properties entry (repeatable)")
    parser.add_argument("--json", help="also write the runs to this file")
    parser.add_argument("--keep-log", type=Path, help="copy the last run's log here")
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.set)
    runs = []
    for _ in range(args.runs):
        result = run_once(extra, args.keep_log)
        runs.append(result)
        print(json.dumps(result), flush=True)
    keys = ["first log line", *(name for name, _ in MILESTONES), "first_record_s"]
    print("\n| milestone (s after spawn) | median | min-max |\n|---|---|---|")
    for key in keys:
        values = [r[key] for r in runs if r.get(key) is not None]
        label = "first record on the target" if key == "first_record_s" else key
        if values:
            print(f"| {label} | {statistics.median(values):.2f} | {min(values):.2f}-{max(values):.2f} |")
        else:
            print(f"| {label} | - | - |")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
