"""The recording rule of the benchmarks, in one place: what a recorded run carries, and when it counts.

bench/README.md ("Recording rule") says it in prose. bench/run.py writes every run it records into
bench/results.md with the facts below in its machine table; bench/figures.py reads them back and lets a
run feed a headline figure only if it counts (:func:`counts`):

* ``load average at start``: the 1-, 5- and 15-minute load averages when the run started. A run that
  started above :data:`LOAD_LIMIT` (the 1-minute average) is kept but **marked**, and never feeds a
  headline: the brokers, the copier and the load generator share two cores, and other engineers' tests
  take them from all three.
* ``marked``: ``yes: ...`` or ``no: ...``, the rule's verdict with the load that decided it.
* ``commit``: the commit the code was at, and the product paths that had uncommitted changes.

A headline is the median over every run that counts, of the same table row, across runs recorded on at
least :data:`MIN_DAYS` days, each of at least :data:`MIN_ROUNDS` interleaved rounds, all on one machine:
the machine table's :data:`MACHINE_ROWS` (records/s and CPU per record of one machine are no samples of
another's; two machines of the same CPU name have copied at rates 2x apart).
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: A run whose 1-minute load average at its start is above this is marked.
LOAD_LIMIT = 1.0
#: A run feeds a headline only with at least this many interleaved rounds per mode.
MIN_ROUNDS = 5
#: A headline needs runs from at least this many different days.
MIN_DAYS = 2
#: The paths whose uncommitted changes a recorded run names (the code it measured).
CODE_PATHS = ("connect_runtime", "mirror", "bench", "setup.py")
#: Paths under CODE_PATHS that hold records, not code: a run recorded just before does not mark the next.
NOT_CODE = ("bench/results.md",)

LOAD_ROW = "load average at start"
MARKED_ROW = "marked"
COMMIT_ROW = "commit"
#: The machine-table rows that name the machine a run ran on (the kernel build included: the same CPU name
#: has meant different hosts).
MACHINE_ROWS = ("cores", "cpu", "memory", "os")

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Recording:
    """The rule's facts about one run, as written in (or read from) its machine table."""

    #: The 1-minute load average at the start (None: the run recorded none).
    load: float | None
    #: Above the limit (None: unknown, the run recorded no load).
    marked: bool | None
    commit: str
    #: Product paths with uncommitted changes when it ran.
    dirty: tuple[str, ...] = ()
    #: The values of :data:`MACHINE_ROWS` it recorded, in that order ("" for a missing row; empty: none).
    machine: tuple[str, ...] = ()

    def rows(self, loads: Iterable[float]) -> dict[str, str]:
        """The machine-table rows of the rule (``loads``: the 1-, 5- and 15-minute averages)."""
        verdict = (f"yes: 1-minute load {self.load:.2f} > {LOAD_LIMIT}; kept, never feeds a headline"
                   if self.marked else f"no: 1-minute load {self.load:.2f} <= {LOAD_LIMIT}")
        commit = f"`{self.commit}`" + (f" with uncommitted changes in {', '.join(self.dirty)}" if self.dirty else "")
        return {LOAD_ROW: " ".join(f"{value:.2f}" for value in loads), MARKED_ROW: verdict, COMMIT_ROW: commit}


def is_marked(load: float) -> bool:
    return load > LOAD_LIMIT


def at_start(root: Path = ROOT) -> tuple[Recording, tuple[float, float, float]]:
    """The rule's facts now: the load averages and the code's commit."""
    loads = os.getloadavg()
    commit = (_git(root, "rev-parse", "--short", "HEAD") or "unknown").strip()
    return Recording(loads[0], is_marked(loads[0]), commit,
                     dirty_paths(_git(root, "status", "--porcelain", "--", *CODE_PATHS) or "")), loads


def dirty_paths(porcelain: str) -> tuple[str, ...]:
    """The paths of ``git status --porcelain`` output (``XY path``, or ``XY old -> new``)."""
    paths = {line[3:].split(" -> ")[-1] for line in porcelain.splitlines() if len(line) > 3}
    return tuple(sorted(paths - set(NOT_CODE)))


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*(.*?)\s*\|\s*$")
_HEX = re.compile(r"`([0-9a-f]{7,40})`")


def read(lines: Iterable[str]) -> Recording:
    """A run's recording facts from its section of results.md: the rows above when present; otherwise
    the load from an older machine table, and the commit from the first backticked hash near the top."""
    rows: dict[str, str] = {}
    head: list[str] = []
    for number, line in enumerate(lines):
        if number < 12:
            head.append(line)
        match = _ROW.match(line)
        if match and match.group(1) in (LOAD_ROW, MARKED_ROW, COMMIT_ROW, *MACHINE_ROWS):
            rows.setdefault(match.group(1), match.group(2))
    load = None
    if LOAD_ROW in rows and (first := re.match(r"\d+(?:\.\d+)?", rows[LOAD_ROW])):
        load = float(first.group(0))
    marked = None if load is None else is_marked(load)
    if MARKED_ROW in rows:  # the verdict written with the run
        marked = rows[MARKED_ROW].startswith("yes")
    commit_text = rows.get(COMMIT_ROW) or "\n".join(head)
    commit = _HEX.search(commit_text)
    dirty: tuple[str, ...] = ()
    if COMMIT_ROW in rows and " changes in " in rows[COMMIT_ROW]:
        dirty = tuple(part.strip() for part in rows[COMMIT_ROW].split(" changes in ", 1)[1].split(","))
    machine = tuple(rows.get(row, "") for row in MACHINE_ROWS) if any(row in rows for row in MACHINE_ROWS) else ()
    return Recording(load, marked, commit.group(1) if commit else "", dirty, machine)


def counts(recording: Recording) -> bool:
    """Whether a run may feed a headline: its load was recorded and it is not marked."""
    return recording.load is not None and recording.marked is False


def record(results: Path, section: str) -> None:
    """Insert ``section`` above the newest recorded run of ``results`` (every earlier run is kept)."""
    text = results.read_text(encoding="utf-8") if results.exists() else "# Benchmark results\n"
    at = text.find("\n## ")
    head, rest = (text, "") if at < 0 else (text[:at + 1], text[at + 1:])
    results.write_text(head.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n\n" + rest, encoding="utf-8")


def section(command: str, title: str, brokers: str, explained_in: str, facts: dict[str, str],
            sections: Sequence[tuple[str, str]], start: datetime.datetime, began: float) -> tuple[str, str]:
    """A run's heading and section as every bench command records it: the heading (dates and title), the
    command that wrote it and how long it took, the machine table with this rule's facts, then one
    ``###`` part per benchmark. ``began`` is the run's ``time.monotonic()`` at its start."""
    ended = datetime.datetime.now(datetime.UTC)
    heading = f"{start:%Y-%m-%d %H:%M}-{ended:%H:%M} UTC: {title}"
    lines = [f"## {heading}", "",
             f"Written by `{command}`, took {time.monotonic() - began:.0f} s, on {brokers} brokers. "
             f"See {explained_in} for what each figure means.", "",
             "| machine | |", "|---|---|", *(f"| {k} | {v} |" for k, v in facts.items()), ""]
    for part_title, body in sections:
        lines += [f"### {part_title}", "", body, ""]
    return heading, "\n".join(lines)


def keep(heading: str, text: str, output: Path | None, results: Path = ROOT / "bench" / "results.md") -> None:
    """Write a run's section to ``output`` when given (``--output``), else record it in ``results``."""
    if output is not None:
        output.write_text(text)
        print(f"wrote {output}")
    else:
        record(results, text)
        print(f"recorded in {results.relative_to(ROOT) if results.is_relative_to(ROOT) else results}: {heading}")
