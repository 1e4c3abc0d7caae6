"""Which duplicates of a mixed fleet under exactly-once are Java MirrorMaker's own, and so not a failure of ours.

Java MirrorMaker 4.3.1 against a Kafka 4.4 broker sometimes commits a source task's transaction holding records
without their source offsets: no offset record of that transaction reaches the offsets topic, and the task logs
``Invalid call to OffsetStorageWriter beginFlush() while already flushing`` and ``Failed to flush offsets and/or
records for task MirrorSourceConnector-<n>``. The next instance of that task (after any task-config rewrite)
starts from the last offset that was committed and copies those records again. Nothing of ours takes part, so a
fleet test excuses such a run of duplicates, and only one for which every part of that evidence holds
(:func:`attribute`):

* a Java node held the partition at the first copy and at the second (the worker of the task that last reported
  RUNNING before each copy): a run that one of our nodes wrote, either copy, is never excused;
* no source offset at or past the run's first source offset was committed (offsets topic, read_committed) before
  the instance that made the second copy started, and that instance started after the first copy had arrived: the
  first copy's offsets were never committed. A committed offset covering the first copy means the second copy's
  writer started from an older offset than the newest committed one, which is a fencing or offset-reading fault,
  whoever made it; the window starts at the topic's beginning rather than at the first copy because an offset
  record is written in its transaction before the reader sees that transaction's records;
* a Java node logged one of those flush errors before the second copy arrived.

A source offset is a record's offset in its source partition; the fleet's load numbers each partition's records
from 0 on a fresh topic with an idempotent producer, so a run's sequence numbers are its source offsets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The ERROR lines of a Java source task whose transaction was committed without its offsets.
FLUSH_ERRORS = (
    re.compile(r"Invalid call to OffsetStorageWriter beginFlush\(\) while already flushing"),
    re.compile(r"Failed to flush offsets and/or records for task MirrorSourceConnector-\d+"),
)


@dataclass(frozen=True)
class LoggedError:
    """A Java ERROR entry and when it was logged (epoch ms)."""

    logged_ms: float
    line: str


@dataclass(frozen=True)
class Attribution:
    """One run of duplicates: whether it is Java's own, and why (each condition, held or not)."""

    partition: int
    first_sequence: int
    last_sequence: int
    count: int
    java_own: bool
    evidence: tuple[str, ...]
    #: the flush errors it rests on (none unless ``java_own``)
    flush_errors: tuple[str, ...]

    def line(self) -> str:
        verdict = "Java's own, excused" if self.java_own else "not Java's own"
        return (f"partition {self.partition}, sequences {self.first_sequence}..{self.last_sequence} "
                f"({self.count} duplicates): {verdict}: " + "; ".join(self.evidence))


def attribute(run: Mapping[str, Any], offsets: Sequence[Mapping[str, Any]], is_java: Callable[[str | None], bool],
              errors: Sequence[LoggedError]) -> Attribution:
    """Attribute one run of :func:`tests.kafka.duplicate_forensics.duplicate_runs` as completed by
    :func:`tests.kafka.duplicate_forensics.explain` (``held_by`` per copy), given its partition's offset records
    (:func:`tests.kafka.duplicate_forensics.partition_offsets`), which worker ids are Java nodes', and the Java
    ERROR entries."""
    first, second = run["first_copy"], run["second_copy"]
    first_worker, second_worker = first["held_by"].get("worker_id"), second["held_by"].get("worker_id")
    by_java = is_java(first_worker) and is_java(second_worker)
    evidence = [f"workers at the copies {first_worker} and {second_worker}: "
                + ("both Java nodes" if by_java else "not both Java nodes")]

    started_ms = second["held_by"].get("running_since_ms")
    if started_ms is None or started_ms <= first["arrived_ms"][1]:
        uncommitted = False
        evidence.append(f"the second copy's task instance started at {started_ms}, not after the first copy "
                        f"arrived ({first['arrived_ms'][1]})")
    else:
        covering = [r for r in offsets if r["committed"] and isinstance(r["offset"], int)
                    and r["offset"] >= run["first_sequence"] and r["at_ms"] < started_ms]
        uncommitted = not covering
        evidence.append("no committed source offset covers the first copy before the second copy's task started"
                        if uncommitted else "committed source offsets covering the first copy before the second "
                        f"copy's task started: {[(r['offset'], r['position'], r['at']) for r in covering]}")

    flush = tuple(e.line for e in errors if e.logged_ms < second["arrived_ms"][0]
                  and any(p.search(e.line) for p in FLUSH_ERRORS))
    evidence.append(f"Java flush errors before the second copy: {[line[:160] for line in flush]}" if flush
                    else "no Java flush error before the second copy")

    java_own = by_java and uncommitted and bool(flush)
    return Attribution(run["partition"], run["first_sequence"], run["last_sequence"], run["count"], java_own,
                       tuple(evidence), flush if java_own else ())
