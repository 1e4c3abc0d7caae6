"""Compare two tracemalloc snapshots of a benchmarked process (bench/memtrace writes them).

Prints the source lines whose live allocations grew the most between the two snapshots (size and
block count), and the total growth of the traced Python heap. Growth that keeps rising between later
snapshots at steady load is a leak; a one-off step is a cache or buffer filling up.

Usage::

    python bench/memdiff.py DIR/snapshot-90.pickle DIR/snapshot-390.pickle [--top 25] [--group traceback]
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc


def load(path: str) -> tracemalloc.Snapshot:
    snapshot = tracemalloc.Snapshot.load(path)
    return snapshot.filter_traces([
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
        tracemalloc.Filter(False, "*/bench/memtrace/sitecustomize.py"),
    ])


def report(old_path: str, new_path: str, top: int = 25, group: str = "lineno") -> str:
    old, new = load(old_path), load(new_path)
    lines = []
    old_total = sum(s.size for s in old.statistics("filename"))
    new_total = sum(s.size for s in new.statistics("filename"))
    lines.append(f"traced heap: {old_total / 1024:.0f} KiB -> {new_total / 1024:.0f} KiB "
                 f"({(new_total - old_total) / 1024:+.0f} KiB)")
    for stat in new.compare_to(old, group)[:top]:
        frames = stat.traceback.format() if group == "traceback" else [str(stat.traceback)]
        lines.append(f"{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+8d} blocks "
                     f"(now {stat.size / 1024:.1f} KiB in {stat.count}) {frames[-1] if group == 'lineno' else ''}")
        if group == "traceback":
            lines.extend(f"        {frame}" for frame in frames)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--group", choices=("lineno", "filename", "traceback"), default="lineno")
    args = parser.parse_args(argv)
    print(report(args.old, args.new, args.top, args.group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
