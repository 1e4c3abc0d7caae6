"""Summarize a py-spy collapsed-stack profile (``py-spy record --format raw``): where the time goes.

Prints, per thread, the share of samples, then the functions with the most *own* time (the frame on top
of the stack) and the most *total* time (anywhere on the stack). Idle samples (py-spy ``--idle`` off
drops them) are not counted, so shares are of the time the process was running Python or native code.

Usage::

    python bench/profile_top.py profile.txt [--top 25] [--thread task-]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path


def load(path: Path, thread: str | None) -> tuple[Counter[str], Counter[str], Counter[str], int]:
    threads: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        name = frames[0]
        threads[name] += count
        if thread is not None and thread not in name:
            continue
        samples += count
        own[frames[-1]] += count
        for frame in set(frames[1:]):
            total[frame] += count
    return threads, own, total, samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--thread", help="only stacks whose thread name contains this")
    args = parser.parse_args(argv)
    threads, own, total, samples = load(args.profile, args.thread)
    all_samples = sum(threads.values()) or 1
    print("threads:")
    for name, count in threads.most_common(10):
        print(f"  {100 * count / all_samples:5.1f}%  {name}")
    print(f"\nown time ({samples} samples):")
    for frame, count in own.most_common(args.top):
        print(f"  {100 * count / max(samples, 1):5.1f}%  {frame}")
    print("\ntotal time:")
    for frame, count in total.most_common(args.top):
        print(f"  {100 * count / max(samples, 1):5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
