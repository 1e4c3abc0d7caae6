"""What a fleet test keeps when a record reached the target twice: enough to find the cause after the run.

A duplicate under exactly-once has a writer: some task instance committed a record that an earlier commit had
already delivered, because it started from a source offset older than that commit. Which instance, and why its
offset was old, can be read back from the target cluster's own topics, but only while the brokers exist. So on a
duplicate failure :func:`explain` writes ``duplicates.json`` beside the nodes' logs, and returns a few lines for
the failure message:

* each run of duplicates per source partition (a range of sequence numbers): the step during which the second
  copies arrived, the target offsets and arrival times of both copies;
* the source task's generation in force at each copy's arrival (from the config topic: each ``commit-`` record
  starts one, with the partitions each task was dealt) and its ``tasks-fencing-`` records, the task that held the
  partition in that generation, and the worker that last reported it RUNNING before the copy (status topic);
* the source offsets committed for that partition (offsets topic, read_committed), with their positions, from
  the last one before the first copies to the first one after the second copies: a run that no committed offset
  covers was committed without its offsets (the next owner of the partition started from the offset before it);
  one that a committed offset covers was copied again by a task that started from an older offset than the
  newest committed one (it read the offsets topic too early, or a zombie committed after it read).

The JSON file holds the raw timelines too (every task-config generation, fencing record, source-task status, and
the partition's offset records, committed and not).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from tests.support.kafka import consume_all


class Arrived(Protocol):
    """One record read from the target: its source partition and sequence, target offset and arrival time."""

    @property
    def partition(self) -> int: ...

    @property
    def sequence(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def arrived_ms(self) -> float: ...


@dataclass(frozen=True)
class Generation:
    """One task-config generation of the source connector, as its ``commit-`` record made it visible."""

    number: int
    committed_ms: int
    config_offset: int
    #: task -> the source partitions it was dealt (``topic-partition``).
    tasks: dict[int, list[str]]


@dataclass(frozen=True)
class Flow:
    """Where to read: the target cluster, the flow's source alias, the source topic and the source connector."""

    target: str
    source_alias: str
    topic: str
    connector: str


def _clock(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S.%f")[:-3]


def generations(flow: Flow) -> tuple[list[Generation], list[dict[str, Any]]]:
    """The source connector's task-config generations and its ``tasks-fencing-`` records, in log order."""
    prefix, commit = f"task-{flow.connector}-".encode(), f"commit-{flow.connector}".encode()
    fencing = f"tasks-fencing-{flow.connector}".encode()
    pending: dict[int, list[str]] = {}
    found: list[Generation] = []
    fencings: list[dict[str, Any]] = []
    for record in consume_all(flow.target, f"mm2-configs.{flow.source_alias}.internal", 10):
        if record.key is None or not record.value:
            continue
        if record.key.startswith(prefix):
            assigned = json.loads(record.value)["properties"].get("task.assigned.partitions", "")
            pending[int(record.key[len(prefix):])] = [p for p in assigned.split(",") if p]
        elif record.key == commit:
            found.append(Generation(len(found) + 1, record.timestamp, record.offset, dict(sorted(pending.items()))))
            pending = {}
        elif record.key == fencing:
            fencings.append({"at": _clock(record.timestamp), "at_ms": record.timestamp, "config_offset": record.offset,
                             "task_count": json.loads(record.value).get("task-count")})
    return found, fencings


def task_statuses(flow: Flow) -> list[dict[str, Any]]:
    """Every status record of the source connector's tasks, in log order per partition, sorted by time."""
    prefix = f"status-task-{flow.connector}-".encode()
    statuses = []
    for record in consume_all(flow.target, f"mm2-status.{flow.source_alias}.internal", 10):
        if record.key is not None and record.key.startswith(prefix) and record.value:
            status = json.loads(record.value)
            statuses.append({"at": _clock(record.timestamp), "at_ms": record.timestamp,
                             "task": int(record.key[len(prefix):]), "state": status.get("state"),
                             "worker_id": status.get("worker_id"), "generation": status.get("generation")})
    return sorted(statuses, key=lambda s: s["at_ms"])


def partition_offsets(flow: Flow, partitions: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """Per source partition, every offset record the offsets topic holds for it (position, time, the offset,
    and whether a read_committed reader sees it: false for an aborted or still open transaction's record)."""
    wanted = set(partitions)
    topic = f"mm2-offsets.{flow.source_alias}.internal"
    committed = {(r.partition, r.offset) for r in consume_all(flow.target, topic, 20, read_committed=True)}
    found: dict[int, list[dict[str, Any]]] = {p: [] for p in sorted(wanted)}
    for record in consume_all(flow.target, topic, 20):
        if record.key is None:
            continue
        try:
            connector, source = json.loads(record.key)
        except (ValueError, TypeError):
            continue
        if (connector != flow.connector or not isinstance(source, dict) or source.get("topic") != flow.topic
                or source.get("partition") not in wanted):
            continue
        value = json.loads(record.value) if record.value else None
        found[source["partition"]].append({
            "at": _clock(record.timestamp), "at_ms": record.timestamp,
            "position": f"{record.partition}@{record.offset}", "offset": None if value is None else value.get("offset"),
            "committed": (record.partition, record.offset) in committed})
    for rows in found.values():
        rows.sort(key=lambda r: r["at_ms"])
    return found


def duplicate_runs(arrivals: Sequence[Arrived], step_starts_ms: Sequence[float]) -> list[dict[str, Any]]:
    """Second arrivals grouped into runs of consecutive sequence numbers per partition (and step), each with
    both copies' target offsets and arrival times."""
    first: dict[tuple[int, int], Arrived] = {}
    again: list[tuple[Arrived, Arrived]] = []
    for arrival in arrivals:
        key = (arrival.partition, arrival.sequence)
        if key in first:
            again.append((first[key], arrival))
        else:
            first[key] = arrival
    again.sort(key=lambda pair: (pair[1].partition, pair[1].sequence))
    runs: list[dict[str, Any]] = []
    for earlier, later in again:
        step = sum(1 for start in step_starts_ms if start <= later.arrived_ms)
        run = runs[-1] if runs else None
        if run is None or run["partition"] != later.partition or run["step"] != step or \
                run["last_sequence"] + 1 != later.sequence:
            run = {"partition": later.partition, "step": step, "first_sequence": later.sequence, "count": 0,
                   "first_copy": {"offsets": [earlier.offset, earlier.offset], "arrived_ms": [earlier.arrived_ms] * 2},
                   "second_copy": {"offsets": [later.offset, later.offset], "arrived_ms": [later.arrived_ms] * 2}}
            runs.append(run)
        run["last_sequence"] = later.sequence
        run["count"] += 1
        for copy, arrival in (("first_copy", earlier), ("second_copy", later)):
            offsets, times = run[copy]["offsets"], run[copy]["arrived_ms"]
            offsets[:] = [min(offsets[0], arrival.offset), max(offsets[1], arrival.offset)]
            times[:] = [min(times[0], arrival.arrived_ms), max(times[1], arrival.arrived_ms)]
    return runs


def _holder(found: Sequence[Generation], statuses: Sequence[Mapping[str, Any]], topic: str, partition: int,
            at_ms: float) -> dict[str, Any]:
    """The generation in force at ``at_ms``, the task it dealt the partition to, and that task's last
    RUNNING report (worker, group generation) before ``at_ms``."""
    current = next((g for g in reversed(found) if g.committed_ms <= at_ms), None)
    if current is None:
        return {"generation": None}
    name = f"{topic}-{partition}"
    task = next((t for t, dealt in current.tasks.items() if name in dealt), None)
    running = next((s for s in reversed(statuses) if s["task"] == task and s["state"] == "RUNNING"
                    and s["at_ms"] <= at_ms), None)
    return {"generation": current.number, "generation_committed": _clock(current.committed_ms), "task": task,
            "worker_id": None if running is None else running["worker_id"],
            "running_since": None if running is None else running["at"],
            "running_since_ms": None if running is None else running["at_ms"]}


@dataclass(frozen=True)
class Kept:
    """What :func:`explain` kept: its summary, the runs (with ``held_by`` per copy) and each run's partition's
    offset records, for a test to attribute them (:mod:`tests.kafka.java_own_duplicates`)."""

    summary: str
    runs: list[dict[str, Any]]
    offsets: dict[int, list[dict[str, Any]]]


def explain(flow: Flow, arrivals: Sequence[Arrived], step_starts_ms: Sequence[float], directory: Path,
            java_errors: Sequence[str] = ()) -> Kept:
    """Write ``duplicates.json`` in ``directory`` (module docstring) and return its summary, one line per run,
    with the runs and offset records it was made from."""
    runs = duplicate_runs(arrivals, step_starts_ms)
    found, fencings = generations(flow)
    statuses = task_statuses(flow)
    offsets = partition_offsets(flow, {run["partition"] for run in runs})
    lines = []
    for run in runs:
        partition = run["partition"]
        run["first_copy"]["held_by"] = _holder(found, statuses, flow.topic, partition,
                                               run["first_copy"]["arrived_ms"][0])
        run["second_copy"]["held_by"] = _holder(found, statuses, flow.topic, partition,
                                                run["second_copy"]["arrived_ms"][0])
        committed = [r for r in offsets[partition] if r["committed"] and isinstance(r["offset"], int)]
        first, second = run["first_copy"], run["second_copy"]
        # from the last commit before the first copies arrived to the first one after the second copies did
        start = max((i for i, r in enumerate(committed) if r["at_ms"] <= first["arrived_ms"][0]), default=0)
        end = min((i for i, r in enumerate(committed) if r["at_ms"] >= second["arrived_ms"][1]),
                  default=len(committed) - 1)
        run["committed_offsets_between"] = committed[start:end + 1]
        run["committed_offsets_within_run"] = [
            r for r in committed if run["first_sequence"] <= r["offset"] <= run["last_sequence"]]
        lines.append(
            f"partition {partition}, step {run['step']}: {run['count']} duplicates, sequences "
            f"{run['first_sequence']}..{run['last_sequence']}; first copies at target offsets "
            f"{first['offsets'][0]}..{first['offsets'][1]} ({_clock(first['arrived_ms'][0])}, {first['held_by']}), "
            f"again at {second['offsets'][0]}..{second['offsets'][1]} ({_clock(second['arrived_ms'][0])}, "
            f"{second['held_by']}); committed source offsets meanwhile (offset, position, written): "
            f"{[(r['offset'], r['position'], r['at']) for r in run['committed_offsets_between']]}; within the run: "
            f"{[(r['offset'], r['position']) for r in run['committed_offsets_within_run']]}")
    for run in runs:
        for copy in ("first_copy", "second_copy"):
            run[copy]["arrived"] = [_clock(ms) for ms in run[copy]["arrived_ms"]]
    path = directory / "duplicates.json"
    path.write_text(json.dumps({
        "runs": runs, "steps_started": [_clock(ms) for ms in step_starts_ms],
        "generations": [{**asdict(g), "committed": _clock(g.committed_ms)} for g in found],
        "fencing_records": fencings, "task_statuses": statuses,
        "offset_records": {str(p): rows for p, rows in offsets.items()}, "java_errors": list(java_errors),
    }, indent=1), encoding="utf-8")
    return Kept("\n".join([f"duplicates kept in {path}:", *lines]), runs, offsets)
