"""Load and verification for fault tests: nothing lost, duplicates bounded, order per partition kept.

The method of AppsFlyer's kafka-mirror-tester: a :class:`LoadGenerator` writes, to each source partition
in turn, records whose value carries the partition, a per-partition sequence number and the wall-clock
time of the send; a :class:`Checker` reads the mirrored topic on the target *while the test runs* and
records each arrival. A :class:`Tally` turns what was acknowledged by the source and what arrived on the
target into a :class:`Report` per partition:

* **lost**: sequence numbers the source acknowledged that never arrived;
* **duplicated**: arrivals of a sequence number that had already arrived (an at-least-once replay);
* **out of order**: first arrivals whose sequence number is lower than one that arrived before them
  (a replayed suffix is a duplicate, not a reordering: only a record seen for the first time after a
  later one counts);
* **latency**: arrival time - send time, per record (first arrivals only);
* **recovery**: per partition, how long after the fault was lifted the first record sent after it arrived.

MM2 keeps a record's partition, so source partition p is checked against remote partition p.

A test of a few minutes keeps every arrival (:attr:`Checker.keep_arrivals`, for :func:`analyse`,
:func:`replayed_runs` and :func:`safe_checkpoints`); the soak, which sees millions of records, keeps only
the running :class:`Tally` and :class:`SequenceSet`\\ s, whose size does not grow with the count of records
that arrived in order.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, MutableSet, Sequence
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

#: value = b"<partition>:<sequence>:<send time in ms since the epoch, float>"
_SEP = b":"


def encode(partition: int, sequence: int, sent_ms: float) -> bytes:
    return b"%d:%d:%.3f" % (partition, sequence, sent_ms)


def decode(value: bytes) -> tuple[int, int, float]:
    partition, sequence, sent_ms = value.split(_SEP)
    return int(partition), int(sequence), float(sent_ms)


class SequenceSet(MutableSet[int]):
    """A set of non-negative sequence numbers held as a prefix ``0..n-1`` plus the numbers above it.

    A partition's sequence numbers are acknowledged, and arrive, almost in order, so the prefix absorbs
    nearly all of them and the set's size stays that of the few out of turn: two hours at 2,000
    records/s is 14 million numbers, which as a Python ``set`` would take about a gigabyte and make
    every "has everything arrived?" check a walk over all of them.
    """

    __slots__ = ("_above", "_prefix")

    def __init__(self, items: Iterable[int] = ()) -> None:
        self._prefix = 0
        self._above: set[int] = set()
        for item in items:
            self.add(item)

    def add(self, value: int) -> None:
        if value < self._prefix:
            return
        if value != self._prefix:
            self._above.add(value)
            return
        self._prefix += 1
        above = self._above
        while above and self._prefix in above:
            above.remove(self._prefix)
            self._prefix += 1

    def discard(self, value: int) -> None:
        if value >= self._prefix:
            self._above.discard(value)
            return
        # rare (tests only): the prefix is cut at ``value``, the rest of it moves above
        self._above.update(range(value + 1, self._prefix))
        self._prefix = value

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and (0 <= value < self._prefix or value in self._above)

    def __iter__(self) -> Iterator[int]:
        yield from range(self._prefix)
        yield from sorted(self._above)

    def __len__(self) -> int:
        return self._prefix + len(self._above)

    def __le__(self, other: object) -> bool:
        if isinstance(other, SequenceSet):
            # ``other``'s prefix ends at a number it does not hold, so a longer prefix here is not contained
            return self._prefix <= other._prefix and all(s in other for s in self._above)
        return super().__le__(other)  # type: ignore[operator]

    def copy(self) -> SequenceSet:
        out = SequenceSet()
        out._prefix, out._above = self._prefix, set(self._above)
        return out

    def __repr__(self) -> str:
        return f"SequenceSet(0..{self._prefix - 1} + {sorted(self._above)[:10]})"


@dataclass(frozen=True)
class Arrival:
    """One record read on the target: which record it is, when it was sent and when it arrived."""

    partition: int
    sequence: int
    sent_ms: float
    arrived_ms: float
    #: where it landed on the target (-1: not recorded)
    offset: int = -1


class LoadGenerator:
    """Writes sequenced, timestamped records round-robin over the source partitions, at a steady rate.

    An idempotent producer (acks=all) so that the source itself holds each record once, in order; only
    records the source acknowledged count as produced (:attr:`acked`). Runs on its own thread between
    :meth:`start` and :meth:`stop`. The thread sends in bursts of what is due every few milliseconds
    (one sleep per record cannot keep up with thousands a second) and paces against its start, so a
    stall (a frozen broker) does not lower the overall count. ``track_sent``: remember each record's send
    time (:attr:`sent_at_ms`, for a test's diagnostics); the soak, with millions of records, does not.
    """

    #: seconds between two bursts
    TICK_S = 0.005

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate_per_s: float = 200.0,
                 track_sent: bool = True) -> None:
        self.topic = topic
        self.partitions = partitions
        self.rate_per_s = rate_per_s
        self.acked: dict[int, SequenceSet] = {p: SequenceSet() for p in range(partitions)}
        self.sent_at_ms: dict[tuple[int, int], float] = {}
        self.errors: list[str] = []
        self._track_sent = track_sent
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                   "linger.ms": 5, "allow.auto.create.topics": False,
                                   # a frozen or restarting source broker only delays the records
                                   "message.timeout.ms": 300_000})
        self._next = [0] * partitions
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-load", daemon=True)

    def start(self) -> LoadGenerator:
        self._thread.start()
        return self

    def _delivered(self, err: KafkaError | None, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        partition, sequence, _ = decode(msg.value())  # type: ignore[attr-defined]
        with self._lock:
            self.acked[partition].add(sequence)

    def _run(self) -> None:
        count = 0
        started = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - started) * self.rate_per_s) + 1
            while count < due and not self._stop.is_set():
                partition = count % self.partitions
                sequence = self._next[partition]
                now_ms = time.time() * 1000
                try:
                    self._producer.produce(self.topic, encode(partition, sequence, now_ms), partition=partition,
                                           on_delivery=self._delivered)
                except BufferError:
                    self._producer.poll(0.1)
                    continue
                if self._track_sent:
                    self.sent_at_ms[(partition, sequence)] = now_ms
                self._next[partition] += 1
                count += 1
            self._producer.poll(0)
            self._stop.wait(self.TICK_S)

    def sent(self) -> int:
        return sum(self._next)

    def stop(self, flush_timeout_s: float = 120.0) -> None:
        """Stop sending and wait for every outstanding record's acknowledgement."""
        self._stop.set()
        self._thread.join(10)
        remaining = self._producer.flush(flush_timeout_s)
        assert remaining == 0, f"{remaining} records never acknowledged by the source"

    def acked_snapshot(self) -> dict[int, SequenceSet]:
        """A copy of :attr:`acked`, safe to read while the load runs."""
        with self._lock:
            return {p: s.copy() for p, s in self.acked.items()}


@dataclass
class PartitionReport:
    partition: int
    acked: int
    arrived: int
    lost: int
    duplicated: int
    out_of_order: int
    recovery_s: float | None


@dataclass
class Report:
    """What one fault did to the mirrored records, per partition and in total."""

    fault: str
    partitions: list[PartitionReport]
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(p.acked for p in self.partitions)

    @property
    def lost(self) -> int:
        return sum(p.lost for p in self.partitions)

    @property
    def duplicated(self) -> int:
        return sum(p.duplicated for p in self.partitions)

    @property
    def out_of_order(self) -> int:
        return sum(p.out_of_order for p in self.partitions)

    @property
    def recovery_s(self) -> float | None:
        values = [p.recovery_s for p in self.partitions if p.recovery_s is not None]
        return max(values) if values else None

    def latency(self, quantile: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        if quantile >= 1:
            return max(self.latencies_ms)
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[int(quantile * 100) - 1]

    def row(self) -> str:
        recovery = "-" if self.recovery_s is None else f"{self.recovery_s:.1f}"
        return (f"| {self.fault} | {self.records} | {self.lost} | {self.duplicated} | {self.out_of_order} | "
                f"{recovery} | {self.latency(0.5):.0f} / {self.latency(0.99):.0f} / {self.latency(1):.0f} |")

    def table(self) -> str:
        head = ("| fault | records | lost | duplicated | out-of-order | time to recover (s) | "
                "latency p50 / p99 / max (ms) |\n|---|---|---|---|---|---|---|")
        lines = [head, self.row(), "", "| partition | acked | arrived | lost | duplicated | out-of-order | "
                 "recovery (s) |", "|---|---|---|---|---|---|---|"]
        for p in self.partitions:
            recovery = "-" if p.recovery_s is None else f"{p.recovery_s:.1f}"
            lines.append(f"| {p.partition} | {p.acked} | {p.arrived} | {p.lost} | {p.duplicated} | "
                         f"{p.out_of_order} | {recovery} |")
        return "\n".join(lines)


class _PartitionTally:
    __slots__ = ("arrived", "duplicated", "highest", "out_of_order", "recovery_s", "seen")

    def __init__(self) -> None:
        self.seen = SequenceSet()
        self.arrived = self.duplicated = self.out_of_order = 0
        self.highest = -1
        self.recovery_s: float | None = None


class Tally:
    """The running analysis of arrivals, in arrival order (the module docstring's figures).

    ``fault_lifted_ms`` (wall clock, ms) is when the fault ended: a partition's recovery time is the
    arrival of its first record sent at or after that moment, minus that moment. ``latency_every``:
    keep one latency in that many (the soak's millions of arrivals; quantiles need no more).
    :attr:`duplicate_arrivals_ms` is when each duplicate arrived, so that a run of faults can tell which
    fault's replay it was.
    """

    def __init__(self, fault_lifted_ms: float | None = None, latency_every: int = 1) -> None:
        self.fault_lifted_ms = fault_lifted_ms
        self.latency_every = latency_every
        self.latencies_ms: list[float] = []
        self.duplicate_arrivals_ms: list[float] = []
        self._partitions: dict[int, _PartitionTally] = {}
        self._firsts = 0

    def add(self, arrival: Arrival) -> None:
        part = self._partitions.get(arrival.partition)
        if part is None:
            part = self._partitions[arrival.partition] = _PartitionTally()
        part.arrived += 1
        if arrival.sequence in part.seen:
            part.duplicated += 1
            self.duplicate_arrivals_ms.append(arrival.arrived_ms)
            return
        part.seen.add(arrival.sequence)
        if self._firsts % self.latency_every == 0:
            self.latencies_ms.append(arrival.arrived_ms - arrival.sent_ms)
        self._firsts += 1
        if arrival.sequence < part.highest:
            part.out_of_order += 1
        part.highest = max(part.highest, arrival.sequence)
        lifted = self.fault_lifted_ms
        if part.recovery_s is None and lifted is not None and arrival.sent_ms >= lifted:
            part.recovery_s = (arrival.arrived_ms - lifted) / 1000

    def feed(self, arrivals: Iterable[Arrival]) -> Tally:
        for arrival in arrivals:
            self.add(arrival)
        return self

    def seen(self) -> dict[int, SequenceSet]:
        return {p: t.seen for p, t in self._partitions.items()}

    def report(self, fault: str, acked: Mapping[int, Collection[int]]) -> Report:
        reports = []
        for partition in sorted(set(acked) | set(self._partitions)):
            part = self._partitions.get(partition, _PartitionTally())
            expected = acked.get(partition, ())
            lost = sum(1 for s in expected if s not in part.seen)
            reports.append(PartitionReport(partition, len(expected), part.arrived, lost, part.duplicated,
                                           part.out_of_order, part.recovery_s))
        return Report(fault, reports, list(self.latencies_ms))


class Checker:
    """Reads the mirrored topic on the target from its beginning, recording every arrival.

    A plain consumer with an explicit assignment (no group: a group join on the test broker takes
    seconds, and a group would commit), read uncommitted. ``fetch_wait_max_ms`` is short by default
    (arrivals are timed); a broker on S3 storage needs it long (tests/integration/test_chaos.py).
    ``keep_arrivals``: keep every :class:`Arrival` (:meth:`snapshot`); otherwise only the running
    :attr:`tally` (the soak), whose ``latency_every`` it passes on.
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int, fetch_wait_max_ms: int = 50,
                 keep_arrivals: bool = True, latency_every: int = 1) -> None:
        self.topic = topic
        self.keep_arrivals = keep_arrivals
        self.arrivals: list[Arrival] = []
        self.tally = Tally(latency_every=latency_every)
        self.errors: list[str] = []
        self._positions: dict[int, int] = {}
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"chaos-checker-{topic}",
                                   "enable.auto.commit": False, "isolation.level": "read_uncommitted",
                                   "allow.auto.create.topics": False, "fetch.wait.max.ms": fetch_wait_max_ms})
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-checker", daemon=True)

    def start(self) -> Checker:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                messages = self._consumer.consume(1000, 0.2)
                now_ms = time.time() * 1000
                batch = []
                for msg in messages:
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            self.errors.append(str(err))
                        continue
                    partition, sequence, sent_ms = decode(msg.value() or b"")
                    assert partition == msg.partition(), f"record of partition {partition} on {msg.partition()}"
                    batch.append(Arrival(partition, sequence, sent_ms, now_ms, msg.offset() or 0))
                positions = self._consumer.position(self._consumer.assignment())
                with self._lock:
                    self.tally.feed(batch)
                    if self.keep_arrivals:
                        self.arrivals.extend(batch)
                    self._positions = {tp.partition: tp.offset for tp in positions}
        finally:
            self._consumer.close()

    def snapshot(self) -> list[Arrival]:
        assert self.keep_arrivals, "this checker keeps only its tally"
        with self._lock:
            return list(self.arrivals)

    def seen(self) -> dict[int, SequenceSet]:
        with self._lock:
            return {p: s.copy() for p, s in self.tally.seen().items()}

    def report(self, fault: str, acked: Mapping[int, Collection[int]]) -> Report:
        """The tally so far against ``acked`` (for a checker that keeps no arrivals)."""
        with self._lock:
            return self.tally.report(fault, acked)

    def duplicate_arrivals_ms(self) -> list[float]:
        with self._lock:
            return list(self.tally.duplicate_arrivals_ms)

    def positions(self) -> dict[int, int]:
        """The consumer's next offset per partition (negative: none fetched yet), for diagnostics.

        Taken by the checker's own thread after each poll: asked from another thread, confluent-kafka
        serialises the call behind the thread's back-to-back ``consume`` and it waited for minutes."""
        with self._lock:
            return dict(self._positions)

    def has_all(self, acked: Mapping[int, Collection[int]]) -> bool:
        seen = self.seen()
        return all(_contained(sequences, seen.get(p, SequenceSet())) for p, sequences in acked.items())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def _contained(sequences: Iterable[int], seen: SequenceSet) -> bool:
    if isinstance(sequences, SequenceSet):
        return sequences <= seen
    return all(s in seen for s in sequences)


def analyse(fault: str, acked: Mapping[int, Collection[int]], arrivals: Sequence[Arrival],
            fault_lifted_ms: float | None = None) -> Report:
    """Compare what the source acknowledged with what arrived on the target (in arrival order)."""
    return Tally(fault_lifted_ms).feed(arrivals).report(fault, acked)


def replayed_runs(arrivals: Iterable[Arrival]) -> dict[int, list[int]]:
    """Per partition, the length of each replayed run (consecutive duplicates): what a restart re-sent."""
    runs: dict[int, list[int]] = {}
    seen: dict[int, set[int]] = {}
    current: dict[int, int] = {}
    for arrival in arrivals:
        part_seen = seen.setdefault(arrival.partition, set())
        if arrival.sequence in part_seen:
            current[arrival.partition] = current.get(arrival.partition, 0) + 1
        else:
            if current.get(arrival.partition):
                runs.setdefault(arrival.partition, []).append(current[arrival.partition])
            current[arrival.partition] = 0
            part_seen.add(arrival.sequence)
    for partition, length in current.items():
        if length:
            runs.setdefault(partition, []).append(length)
    return runs


def safe_checkpoints(arrivals: list[Arrival], committed: Mapping[int, int]) -> dict[int, int]:
    """Per partition, the highest offset on B a checkpoint of the source commit may name: a consumer
    resuming there still reads a copy of every record at or after the commit. Where no record arrived
    twice that is the commit itself; where the takeover copied records again, B's offsets run ahead of
    A's and so does the bound (each record's last copy counts)."""
    last_copy: dict[tuple[int, int], int] = {}
    for arrival in arrivals:
        key = (arrival.partition, arrival.sequence)
        last_copy[key] = max(last_copy.get(key, -1), arrival.offset)
    bounds: dict[int, int] = {}
    for partition, commit in committed.items():
        later = [offset for (p, sequence), offset in last_copy.items() if p == partition and sequence >= commit]
        bounds[partition] = min(later, default=max((o + 1 for (p, _), o in last_copy.items() if p == partition),
                                                   default=0))
    return bounds
