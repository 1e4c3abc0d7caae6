"""The backfill marker topic: who may write a remote partition, and how far a backfill got (pure).

One small compacted topic per flow on the target, ``mm2-backfill.<source alias>.internal`` (1 partition,
so every record is totally ordered), holds two kinds of JSON records:

* **partition markers**, key ``{"kind": "partition", "partition": P, "topic": T}``, value
  ``{"end": E, "next": N, "progress": U, "start": S, "state": "backfilling" | "done"}``. ``backfilling``
  means the backfill owns the remote partition: the source connector leaves it out of task assignment.
  ``progress`` is the last upstream offset whose copy the target acknowledged (``start - 1`` before the
  first batch) and ``next`` the remote offset the record after it goes to. A retried Spark task or a
  re-run resumes right after ``progress`` and skips the ``remote end - next`` records a lost batch
  already wrote (the backfill is the remote partition's only writer, in order), so nothing is
  duplicated. ``done`` hands the partition back: the source task starts at ``max(stored offset + 1, E)``.
* **task events**, key ``{"instance": ID, "kind": "task"}``, value
  ``{"partitions": ["t-0", ...], "state": "started" | "stopped", "task": label}``, written by each
  MirrorSourceTask when it starts and after its final offset commit. The backfill command waits until no
  task whose latest event is ``started`` holds a partition it is about to copy: only then are the stored
  offsets final.

Keys are written with sorted fields, so compaction sees one key per partition / task instance.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

BACKFILLING = "backfilling"
DONE = "done"
STARTED = "started"
STOPPED = "stopped"

TopicPartitionT = tuple[str, int]


def marker_topic(source_alias: str) -> str:
    """The flow's marker topic on the target (matches MM2's ``.*[\\-\\.]internal`` exclusion)."""
    return f"mm2-backfill.{source_alias}.internal"


def _dumps(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def encode_tp(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def decode_tp(encoded: str) -> TopicPartitionT:
    """The topic name is interned: every task event lists each partition of its task, each task and the
    connector keep every event of the flow, and the names cut out of them would be a string per partition
    per event per holder (36,000 at 2,000 topics x 4 partitions and 4 tasks, 2 MiB)."""
    topic, _, partition = encoded.rpartition("-")
    return sys.intern(topic), int(partition)


@dataclass(frozen=True)
class PartitionMarker:
    """The backfill state of one source partition."""

    state: str
    start: int
    end: int
    progress: int
    #: Remote offset of the record after ``progress``; -1 if unknown.
    next: int = -1

    def key(self, topic: str, partition: int) -> bytes:
        return partition_marker_key(topic, partition)

    def value(self) -> bytes:
        return _dumps({"state": self.state, "start": self.start, "end": self.end, "progress": self.progress,
                       "next": self.next})

    def resume_from(self) -> int:
        """The first upstream offset still to copy."""
        return max(self.start, self.progress + 1)


@dataclass(frozen=True)
class TaskEvent:
    """The latest lifecycle event of one MirrorSourceTask instance."""

    state: str
    task: str
    partitions: tuple[TopicPartitionT, ...]
    #: On ``stopped``: the source consumer's position per partition when it closed (one past the last
    #: record handed to the runtime). The final offset commit reaches ``position - 1`` unless records failed.
    positions: tuple[tuple[TopicPartitionT, int], ...] = ()
    #: Order of the event in the topic (set when read; not written).
    order: int = field(default=0, compare=False)

    def value(self) -> bytes:
        return _dumps({"state": self.state, "task": self.task,
                       "partitions": [encode_tp(t, p) for t, p in self.partitions],
                       "positions": {encode_tp(t, p): o for (t, p), o in self.positions}})


def partition_marker_key(topic: str, partition: int) -> bytes:
    return _dumps({"kind": "partition", "topic": topic, "partition": partition})


def task_marker_key(instance: str) -> bytes:
    return _dumps({"kind": "task", "instance": instance})


@dataclass
class MarkerState:
    """The latest record per key of the marker topic (what compaction would keep)."""

    partitions: dict[TopicPartitionT, PartitionMarker] = field(default_factory=dict)
    tasks: dict[str, TaskEvent] = field(default_factory=dict)
    _seq: int = 0

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Fold one record in; records that are not ours are ignored (the topic is user-visible)."""
        if key is None:
            return
        try:
            decoded_key = json.loads(key)
            decoded = None if value is None else json.loads(value)
        except ValueError:
            return
        if not isinstance(decoded_key, dict):
            return
        kind = decoded_key.get("kind")
        if kind == "partition":
            tp = (str(decoded_key.get("topic")), int(decoded_key.get("partition", -1)))
            if not isinstance(decoded, dict):
                self.partitions.pop(tp, None)
                return
            self.partitions[tp] = PartitionMarker(str(decoded.get("state")), int(decoded.get("start", 0)),
                                                  int(decoded.get("end", 0)), int(decoded.get("progress", -1)),
                                                  int(decoded.get("next", -1)))
        elif kind == "task":
            instance = str(decoded_key.get("instance"))
            if not isinstance(decoded, dict):
                self.tasks.pop(instance, None)
                return
            self._seq += 1
            positions = decoded.get("positions") or {}
            self.tasks[instance] = TaskEvent(
                str(decoded.get("state")), str(decoded.get("task")),
                tuple(decode_tp(s) for s in decoded.get("partitions", [])),
                tuple((decode_tp(k), int(v)) for k, v in sorted(positions.items())), self._seq)

    def backfilling(self) -> frozenset[TopicPartitionT]:
        """Partitions streaming must not write now."""
        return frozenset(tp for tp, m in self.partitions.items() if m.state == BACKFILLING)

    def done_ends(self) -> dict[TopicPartitionT, int]:
        """Partitions handed back to streaming, with the first offset streaming must copy."""
        return {tp: m.end for tp, m in self.partitions.items() if m.state == DONE}

    def final_positions(self, partitions: Iterable[TopicPartitionT]) -> dict[TopicPartitionT, int]:
        """Per partition, the closing position reported by the latest task that held it, if it stopped."""
        wanted = set(partitions)
        latest: dict[TopicPartitionT, TaskEvent] = {}
        for event in self.tasks.values():
            for tp in event.partitions:
                if tp in wanted and (tp not in latest or latest[tp].order < event.order):
                    latest[tp] = event
        result = {}
        for tp, event in latest.items():
            position = dict(event.positions).get(tp)
            if event.state == STOPPED and position is not None and position >= 0:
                result[tp] = position
        return result

    def holders(self, partitions: Iterable[TopicPartitionT]) -> dict[TopicPartitionT, list[str]]:
        """Running task instances (latest event ``started``) holding any of ``partitions``."""
        wanted = set(partitions)
        held: dict[TopicPartitionT, list[str]] = {}
        for instance, event in self.tasks.items():
            if event.state != STARTED:
                continue
            for tp in event.partitions:
                if tp in wanted:
                    held.setdefault(tp, []).append(f"{event.task} ({instance})")
        return held



def streaming_start(stored_next: int | None, done_end: int | None) -> int | None:
    """Where streaming resumes: after the stored offset, never before a finished backfill's end."""
    if done_end is None:
        return stored_next
    if stored_next is None:
        return done_end
    return max(stored_next, done_end)
