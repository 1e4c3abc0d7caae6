"""Summarize a Linux ``perf record`` profile: the shares of threads, libraries and symbols, as Markdown.

bench/throughput.py ``--profile-format perf`` records the copier (ours or the native copier) with
``perf record -g``, and with ``--profile-brokers`` each broker JVM (its JIT's methods named through
``/tmp/perf-<pid>.map``, bench/broker_load.py). ``perf report`` prints one line per (thread, library,
symbol); this sums them per thread pool (``rdk:broker1`` and ``rdk:broker2`` together), per library and
per symbol, by each sample's own frame (no children), so that the shares add up to 100% of the samples.

Usage::

    python bench/perf_top.py FILE.perf [--top 15]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: Numbered members of one thread pool (``rdk:broker2``, ``GC Thread#1``) count together; C1/C2/G1 are names.
_MEMBER = re.compile(r"(?<![CG])\d+")
#: JIT code a perf map names (``/tmp/perf-123.map``): "[JIT]" as a library.
_PERF_MAP = re.compile(r"perf-\d+\.map$")


@dataclass
class Profile:
    """Samples per thread pool, library, (library, symbol) and (thread pool, library, symbol)."""

    samples: int = 0
    threads: Counter[str] = field(default_factory=Counter)
    libraries: Counter[str] = field(default_factory=Counter)
    symbols: Counter[tuple[str, str]] = field(default_factory=Counter)
    by_thread: Counter[tuple[str, str, str]] = field(default_factory=Counter)

    def add(self, samples: int, thread: str, library: str, symbol: str) -> None:
        pool, lib = _MEMBER.sub("*", thread), library_name(library)
        if lib == "[JIT]":
            symbol = java_method(symbol)
        self.samples += samples
        self.threads[pool] += samples
        self.libraries[lib] += samples
        self.symbols[(lib, symbol)] += samples
        self.by_thread[(pool, lib, symbol)] += samples


#: A JVM perf map's method: ``<return type> <class>.<method>(<parameter types>)``.
_JAVA_METHOD = re.compile(r"^(?:\S+ )?([^\s(]+)\(.*\)$")


def java_method(symbol: str) -> str:
    """``void org.apache.kafka.common.metrics.Sensor.recordInternal(double, long, boolean)`` ->
    ``org.apache.kafka.common.metrics.Sensor.recordInternal()``: a table of them stays readable, and the
    overloads of one method count together."""
    match = _JAVA_METHOD.match(symbol)
    return f"{match.group(1)}()" if match else symbol


def library_name(dso: str) -> str:
    """``/usr/lib/x86_64-linux-gnu/libc.so.6`` -> ``libc.so.6``; a perf map (``[JIT] tid 123``) -> ``[JIT]``."""
    name = dso.rsplit("/", 1)[-1]
    return "[JIT]" if _PERF_MAP.search(name) or name.startswith("[JIT]") else name


def parse(report: str) -> Profile:
    """``perf report --stdio -t '\\t' -F sample,comm,dso,sym`` lines into a :class:`Profile`."""
    profile = Profile()
    for line in report.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [part.strip() for part in line.split("\t")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        samples, thread, dso, symbol = int(parts[0]), parts[1], parts[2], parts[3]
        profile.add(samples, thread, dso, re.sub(r"^\[[.k]\]\s*", "", symbol))
    return profile


def report_text(path: Path) -> str:
    """``perf report`` of ``path``: samples per (thread, library, symbol), each sample by its own frame."""
    perf = shutil.which("perf") or "perf"
    done = subprocess.run([perf, "report", "-i", str(path), "--stdio", "--no-children", "-g", "none", "-t", "\t",
                           "-F", "sample,comm,dso,sym", "--percent-limit", "0"],
                          capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"perf report -i {path} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def markdown(profile: Profile, top: int = 15) -> str:
    """Three tables: thread pools, libraries, and the top symbols with their library and main thread pool."""
    total = profile.samples
    lines = [f"{total:,} samples", "", "| thread pool | share |", "|---|---|"]
    lines += [f"| {name} | {share(n, total)} |" for name, n in profile.threads.most_common(top)]
    lines += ["", "| library | share |", "|---|---|"]
    lines += [f"| {name} | {share(n, total)} |" for name, n in profile.libraries.most_common(top)]
    lines += ["", "| symbol | library | share | by thread pool |", "|---|---|---|---|"]
    for (lib, symbol), n in profile.symbols.most_common(top):
        pools = Counter({pool: count for (pool, plib, psym), count in profile.by_thread.items()
                         if plib == lib and psym == symbol})
        split = ", ".join(f"{pool} {share(count, total)}" for pool, count in pools.most_common(3))
        lines.append(f"| `{symbol.replace('|', '/')}` | {lib} | {share(n, total)} | {split} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    print(markdown(parse(report_text(args.profile)), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
