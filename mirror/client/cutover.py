"""A planned cutover of consumer groups between a source cluster and its replica (DR drill, migration).

:func:`cutover` (failover, source -> target) does, in order:

1. **Drain**: until every partition the groups consume is replicated up to the source's end, or
   ``max_wait_s`` passes, count the source records after what the exact offset map covers (records, not
   offsets: transaction markers do not count). The map is read once, then followed: each count runs as
   soon as new runs arrived (or every half second), so the end of the lag is seen within a fetch wait of
   the map reaching the source's end, and the source task sends the map within seconds of its records'
   arrival, whatever its ``offset.flush.interval.ms``. What is left is the **RPO**: the records that are
   not on the target at cutover.
2. **Final checkpoint**: each group's committed offsets on the source, translated through the map,
   written as MM2 checkpoints to ``<source>.checkpoints.internal`` (so ``RemoteClusterUtils`` and
   ``mirror offsets translate`` see the cutover positions too).
3. **Write** those offsets into each group on the target, only while it has no members there.
4. **Forced commit** (``force_commit``, given by ``mirror failover``): every node running a task of the
   flow's source connector stores its source offsets now, instead of at the flow's next offset commit
   (``offset.flush.interval.ms``); the report says when each node confirmed, or why it did not. A node
   that cannot be reached is one note, not a failure: exactness needs only the map, which is on the target
   before the offsets are.
5. **Read back**: each written group is read again, and a partition some other writer moved below what
   the cutover wrote (the flow's own group sync, which read the group just before the cutover wrote it)
   is written again and named in the notes.

:func:`failback` is the reverse: each group's offsets committed on the target (remote topics of the
source) translated back through the map and written into the group on the source.

Both are dry runs unless ``execute=True``; the :class:`CutoverReport` tells, per partition, where each
group resumes, how it was translated, and how many records a consumer will read again (0 with the
exact map; for MM2's rule, up to the distance to the true position), and its timeline: when the lag was
seen drained and when the groups' offsets were written, in seconds from the command's start.

Without ``force_commit`` the flow's source offsets are written at its next offset commit, or at once
when its node is stopped (SIGTERM commits). Failback forces nothing: it moves groups back through runs
mapped long before, and no flow copies what it moves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from connect_runtime.clients.factory import new_admin, new_producer
from connect_runtime.clients.log_reader import read_to_end
from mirror.client.failover import GroupActiveError, commit_if_inactive
from mirror.client.mirror_client import ADMIN_CLIENT_PREFIX, CONSUMER_CLIENT_PREFIX, client_config
from mirror.client.models import Checkpoint, TopicPartition
from mirror.client.offset_map import OffsetMap
from mirror.client.translation import OffsetTranslator, Translation, committed_offsets, reader_consumer

TP = tuple[str, int]

#: The longest wait between two counts of the lag while the map does not move (new source records may
#: arrive meanwhile, which the RPO counts).
_RECOUNT_S = 0.5


@dataclass
class GroupMove:
    group: str
    partitions: list[dict[str, Any]]
    written: bool = False
    error: str | None = None


@dataclass
class NodeCommit:
    """One node's answer to the forced commit of the flow's source offsets."""

    #: The node's worker id (``host:port`` of its REST listener).
    node: str
    #: Seconds from the command's start until the node confirmed every one of its tasks; None otherwise.
    committed_after_s: float | None
    #: Per task: ``{"id", "committed", "seconds"[, "error"]}`` as the node answered.
    tasks: list[dict[str, Any]] = field(default_factory=list)
    #: Why the node's offsets are not all committed (unreachable, refused, a task that could not).
    error: str | None = None


@dataclass
class ForcedCommit:
    """The forced commit of a flow: each node asked, or why none was."""

    nodes: list[NodeCommit] = field(default_factory=list)
    problem: str | None = None


#: ``force_commit(began)``: the forced commit, given the command's start (``time.monotonic()``).
ForceCommit = Callable[[float], ForcedCommit]


@dataclass
class CutoverReport:
    """What a cutover found and did; ``to_dict`` is the ``--json`` shape."""

    direction: str
    source: str
    target: str
    executed: bool
    seconds: float = 0.0
    #: Seconds from the start until the lag was seen drained (None: it did not drain).
    drained_after_s: float | None = None
    #: Seconds from the start until every group's offsets were written, each partition exactly
    #: (``basis`` offset-map); None otherwise.
    exact_after_s: float | None = None
    #: Seconds from the start until every node running the flow's source tasks confirmed their offsets
    #: committed (the forced commit); None when not forced or not confirmed everywhere.
    offsets_committed_after_s: float | None = None
    offset_commits: list[NodeCommit] = field(default_factory=list)
    drained: bool = False
    rpo_records: int | None = None
    unreplicated: dict[str, int] = field(default_factory=dict)
    groups: list[GroupMove] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def reread_records(self) -> int:
        return sum(p["reread"] or 0 for g in self.groups for p in g.partitions)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reread_records"] = self.reread_records
        return data

    def render(self) -> str:
        lines = [f"{self.direction} {self.source}->{self.target}: "
                 f"{'EXECUTED' if self.executed else 'dry run (add --execute to write the offsets)'}",
                 f"time taken            {self.seconds:.1f}s",
                 f"lag drained           {'yes' if self.drained else 'no'}"
                 f"{'' if self.drained_after_s is None else f' (after {self.drained_after_s:.1f}s)'}",
                 f"exact offsets written "
                 f"{'no' if self.exact_after_s is None else f'after {self.exact_after_s:.1f}s'}",
                 f"RPO (not replicated)  {'unknown' if self.rpo_records is None else self.rpo_records} record(s)",
                 f"records re-read       {self.reread_records}"]
        if self.direction == "failover" and self.executed:
            lines.append(f"source offsets        {self._offsets_status()}")
        for move in self.groups:
            status = "written" if move.written else (f"NOT written: {move.error}" if move.error else "plan")
            lines.append(f"group {move.group}: {status}")
            for p in move.partitions:
                lines.append(f"  {p['topic']}-{p['partition']}  {p['from']} -> {p['to']}  ({p['basis']}, "
                             f"re-read {'?' if p['reread'] is None else p['reread']})")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"

    def _offsets_status(self) -> str:
        if self.offsets_committed_after_s is not None:
            return (f"committed after {self.offsets_committed_after_s:.1f}s "
                    f"({len(self.offset_commits)} node(s))")
        if any(n.committed_after_s is not None for n in self.offset_commits):
            return "committed on some nodes only (see the notes)"
        return "not forced (see the notes): stored at the flow's next offset commit"


def unreplicated_records(source_config: Mapping[str, str], translator: OffsetTranslator, topics: set[str],
                         timeout_s: float) -> dict[TP, int]:
    """Per source partition of ``topics``: the records after what the offset map covers (read, not guessed)."""
    with SourceLag(source_config, topics, timeout_s) as lag:
        return lag.unreplicated(translator.offset_map)


class SourceLag:
    """Counts, per source partition of ``topics``, the records after what an offset map covers.

    One assign-only consumer for every count (the partitions are listed once); each count reads all
    partitions together from their coverage to the end of the fetch (records, so transaction markers do
    not count; the fetch's end is exact on every broker, where ListOffsets may not be).
    """

    def __init__(self, source_config: Mapping[str, str], topics: set[str], timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._consumer = reader_consumer(client_config(source_config, CONSUMER_CLIENT_PREFIX))
        try:
            metadata = self._consumer.list_topics(timeout=timeout_s).topics
        except BaseException:
            self._consumer.close()
            raise
        self.partitions = sorted((t, p) for t in topics if t in metadata for p in metadata[t].partitions)

    def __enter__(self) -> SourceLag:
        return self

    def __exit__(self, *exc: object) -> None:
        self._consumer.close()

    def unreplicated(self, offset_map: OffsetMap) -> dict[TP, int]:
        positions = {}
        for tp in self.partitions:
            coverage = offset_map.coverage(tp)
            positions[tp] = 0 if coverage is None else coverage[1]
        counts = dict.fromkeys(self.partitions, 0)

        def count(records: list[Message]) -> None:
            for message in records:
                counts[(message.topic() or "", message.partition() or 0)] += 1

        if not positions:
            return counts
        try:
            reached = read_to_end(self._consumer, positions, count, self._timeout_s, on_error=_raise_fatal,
                                  missing_ok=True)
        finally:
            self._consumer.unassign()
        if not reached.complete:
            raise TimeoutError(f"counting the records not replicated took longer than {self._timeout_s}s")
        return counts


def _raise_fatal(error: KafkaError) -> None:
    if error.fatal():
        raise KafkaException(error)


def _rows(translations: Mapping[TP, Translation], reverse: bool) -> list[dict[str, Any]]:
    rows = []
    for t in translations.values():
        exact = t.basis == "offset-map"
        rows.append({"topic": t.source_topic if reverse else t.remote_topic, "partition": t.partition,
                     "from": t.downstream if reverse else t.upstream, "to": t.upstream if reverse else t.downstream,
                     "basis": t.basis, "reread": 0 if exact else None})
    return rows


def cutover(target_config: Mapping[str, str], source_config: Mapping[str, str], source: str, target: str,
            groups: list[str], *, execute: bool = False, max_wait_s: float = 60.0, timeout_s: float = 30.0,
            require_drained: bool = False, offset_syncs_config: Mapping[str, str] | None = None,
            offset_syncs_topic: str | None = None, force_commit: ForceCommit | None = None) -> CutoverReport:
    """Fail ``groups`` over from ``source`` to ``target`` (module docstring); a dry run unless ``execute``.

    With ``require_drained`` nothing is written unless the lag drained within ``max_wait_s``. With
    ``force_commit`` (and ``execute``) the flow's source offsets are committed once the groups are written.
    """
    began = time.monotonic()
    report = CutoverReport("failover", source, target, execute)
    deadline = began + max_wait_s
    with OffsetTranslator(target_config, source, offset_syncs_config=offset_syncs_config,
                          offset_syncs_topic=offset_syncs_topic, timeout_s=timeout_s) as translator:
        committed = translator.committed(source_config, groups)
        topics = {t for offsets in committed.values() for t, _ in offsets}
        with SourceLag(source_config, topics, timeout_s) as lag:
            while True:
                left = lag.unreplicated(translator.offset_map)
                report.unreplicated = {f"{t}-{p}": n for (t, p), n in sorted(left.items()) if n}
                report.rpo_records = sum(left.values())
                report.drained = report.rpo_records == 0
                now = time.monotonic()
                if report.drained:
                    report.drained_after_s = now - began
                    break
                if now >= deadline:
                    break
                translator.follow_offset_map(min(_RECOUNT_S, deadline - now))  # returns at the map's next runs
        if require_drained and not report.drained:
            execute = report.executed = False
        written = _move_to_target(report, translator, target_config, source_config, source, groups, execute,
                                  timeout_s)
    report.exact_after_s = _exact_after(report, began)
    if execute and force_commit is not None:
        _record_forced_commit(report, force_commit(began))
    if written and write_again_what_moved_back(report, target_config, written, timeout_s):
        report.exact_after_s = _exact_after(report, began)
    report.seconds = time.monotonic() - began
    return report


def _record_forced_commit(report: CutoverReport, forced: ForcedCommit) -> None:
    report.offset_commits = forced.nodes
    if forced.problem is not None:
        report.notes.append(f"source offsets not forced: {forced.problem}")
    for node in forced.nodes:
        if node.error is not None:
            report.notes.append(f"node {node.node}: source offsets not forced: {node.error}")
    times = [n.committed_after_s for n in forced.nodes]
    if times and forced.problem is None and all(t is not None for t in times):
        report.offsets_committed_after_s = max(t for t in times if t is not None)


def write_again_what_moved_back(report: CutoverReport, target_config: Mapping[str, str],
                                 written: Mapping[str, Mapping[TP, int]], timeout_s: float) -> bool:
    """Read each written group back; write again any partition found below what was written (another
    writer, such as the flow's group sync, wrote over it). True when something was written again."""
    admin = new_admin(dict(client_config(target_config, ADMIN_CLIENT_PREFIX)))
    again = False
    for group, offsets in written.items():
        now = committed_offsets(admin, group, list(offsets), timeout_s)
        behind = {tp: o for tp, o in offsets.items() if now.get(tp, -1) < o}
        if not behind:
            continue
        moved = ", ".join(f"{t}-{p} at {now.get((t, p), 'none')}" for t, p in sorted(behind))
        try:
            commit_if_inactive(target_config, group, behind, timeout_s)
        except GroupActiveError as exc:
            report.notes.append(f"group {group}: found below what was written ({moved}) and not written again: {exc}")
            continue
        again = True
        report.notes.append(f"group {group}: another writer moved it below what was written ({moved}); written again")
    return again


def _move_to_target(report: CutoverReport, translator: OffsetTranslator, target_config: Mapping[str, str],
                    source_config: Mapping[str, str], source: str, groups: list[str], execute: bool,
                    timeout_s: float) -> dict[str, dict[TP, int]]:
    """Translate each group's committed offsets; with ``execute`` write them and the final checkpoints.
    Returns what was written, per group."""
    moves = translator.groups_to_target(groups, source_config)
    checkpoints = []
    written: dict[str, dict[TP, int]] = {}
    for group in groups:
        translations = moves.get(group, {})
        move = GroupMove(group, _rows(translations, reverse=False))
        report.groups.append(move)
        offsets = {tp: t.downstream for tp, t in translations.items() if t.downstream is not None}
        checkpoints += [Checkpoint(group, TopicPartition(*tp), t.upstream or 0, t.downstream or 0)
                        for tp, t in translations.items() if t.downstream is not None]
        if execute:
            try:
                commit_if_inactive(target_config, group, offsets, timeout_s)
                move.written = True
                written[group] = offsets
            except GroupActiveError as exc:
                move.error = str(exc)
    topic = translator.policy.checkpoints_topic(source)
    if execute and checkpoints and not _write_checkpoints(target_config, topic, checkpoints, timeout_s):
        report.notes.append(f"{topic} does not exist (no checkpoint connector ran): no final checkpoints written")
    return written


def failback(target_config: Mapping[str, str], source_config: Mapping[str, str], source: str, target: str,
             groups: list[str], *, execute: bool = False, timeout_s: float = 30.0) -> CutoverReport:
    """Move ``groups`` back from ``target`` to ``source``: their target positions, translated back."""
    began = time.monotonic()
    report = CutoverReport("failback", source, target, execute, drained=True, drained_after_s=0.0)
    with OffsetTranslator(target_config, source, timeout_s=timeout_s) as translator:
        moves = translator.groups_to_source(groups)
    for group in groups:
        translations = moves.get(group, {})
        move = GroupMove(group, _rows(translations, reverse=True))
        report.groups.append(move)
        if execute:
            offsets = {tp: t.upstream for tp, t in translations.items() if t.upstream is not None}
            try:
                commit_if_inactive(source_config, group, offsets, timeout_s)
                move.written = True
            except GroupActiveError as exc:
                move.error = str(exc)
    report.exact_after_s = _exact_after(report, began)
    report.seconds = time.monotonic() - began
    return report


def _exact_after(report: CutoverReport, began: float) -> float | None:
    """Seconds since ``began`` if every group was written, each partition exactly; else None."""
    exact = report.executed and all(move.written and all(p["basis"] == "offset-map" for p in move.partitions)
                                    for move in report.groups)
    return time.monotonic() - began if exact else None


def _write_checkpoints(target_config: Mapping[str, str], topic: str, checkpoints: list[Checkpoint],
                       timeout_s: float) -> bool:
    """The cutover positions as MM2 checkpoints (partition 0, as MM2 writes them); False when the
    checkpoints topic does not exist (only MM2 creates it)."""
    # the admin client's settings: connection and security keys (MirrorClient configs have no producer.*)
    config = dict(client_config(target_config, ADMIN_CLIENT_PREFIX))
    producer = new_producer(config)
    metadata = producer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return False
    for checkpoint in checkpoints:
        producer.produce(topic, key=checkpoint.key_bytes(), value=checkpoint.value_bytes(), partition=0)
    if producer.flush(timeout_s):
        raise TimeoutError(f"the final checkpoints were not delivered to {topic} within {timeout_s}s")
    return True
