"""Which partitions the health probe fetches: ListOffsets first, a fetch only where its answer does not settle.

The clusters are :class:`LogIO`, a model of a broker's partitions (record timestamps by offset) that
answers the probe's four reads the way the brokers do: ListOffsets "latest" (Kafka: the end; Tansu: the
base offset of the last batch + 1), a fetch at a position (the end and the first record there; past the
end, Kafka's ``auto.offset.reset=earliest`` restarts at the log start), the internal topics' records and
the topics. What it models is exactly what these tests check: which partitions are fetched and that the
figures are those a fetch of every partition gives. The reads themselves run against Tansu in
tests/integration/test_health_status.py (exact lags while a batch is held back and once caught up).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from mirror.client.models import OffsetSync, TopicPartition
from mirror.config.mirror_maker_config import MirrorMakerConfig
from mirror.health.flow_health import PartitionLag
from mirror.health.kafka_io import (
    FIRST_OFFSET,
    LATEST_TIMESTAMP,
    LIST_OFFSETS_CHUNK,
    LIST_OFFSETS_PARALLEL,
    TP,
    ClusterIO,
    PartitionProbe,
)
from mirror.health.probe import HealthProbe, doubtful_partitions, flow_specs

NOW_MS = 1_000_000_000
OFFSETS_TOPIC = "mm2-offsets.A.internal"
SYNCS_TOPIC = "mm2-offset-syncs.B.internal"  # on the source, MM2's default location


@dataclass
class Answers:
    """ListOffsets answers, already in."""

    ends: dict[TP, int]

    def result(self) -> dict[TP, int]:
        return self.ends


@dataclass
class LogIO:
    """One cluster: ``logs`` maps a partition to its records' timestamps (offset = index from ``starts``)."""

    logs: dict[TP, list[int]] = field(default_factory=dict)
    #: the size of the last batch written to each partition (Tansu's ListOffsets answers its base + 1)
    last_batch: dict[TP, int] = field(default_factory=dict)
    starts: dict[TP, int] = field(default_factory=dict)
    #: records of the internal topics handed out by read()
    internal: list[Message] = field(default_factory=list)
    tansu: bool = False
    listed: list[TP] = field(default_factory=list)
    fetched: dict[TP, int] = field(default_factory=dict)

    def end(self, tp: TP) -> int:
        return self.starts.get(tp, 0) + len(self.logs[tp])

    def topics(self, timeout_s: float) -> dict[str, int]:
        counts: dict[str, int] = {}
        for topic, partition in [*self.logs, *((m.topic() or "", m.partition() or 0) for m in self.internal)]:
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        return counts

    def read(self, positions: dict[TP, int], timeout_s: float) -> tuple[list[Message], bool]:
        records = [m for m in self.internal if ((m.topic() or ""), m.partition() or 0) in positions
                   and (m.offset() or 0) >= positions[((m.topic() or ""), m.partition() or 0)]]
        for m in records:
            positions[((m.topic() or ""), m.partition() or 0)] = (m.offset() or 0) + 1
        return records, True

    def latest_offsets(self, partitions: Iterable[TP], timeout_s: float) -> Answers:
        wanted = [tp for tp in partitions if tp in self.logs]
        self.listed.extend(wanted)
        return Answers({tp: self.end(tp) - self.last_batch.get(tp, 1) + 1 if self.tansu and self.logs[tp]
                        else self.end(tp) for tp in wanted})

    def probe(self, positions: Mapping[TP, int], timeout_s: float) -> dict[TP, PartitionProbe]:
        self.fetched.update(positions)
        result = {}
        for tp, position in positions.items():
            if tp not in self.logs:
                continue
            start, end = self.starts.get(tp, 0), self.end(tp)
            at = start if position < 0 or position > end else max(position, start)  # past the end: earliest
            result[tp] = (PartitionProbe(end, None, None, start) if at >= end
                          else PartitionProbe(end, at, self.logs[tp][at - start], start))
        return result

    def committed_offsets(self, timeout_s: float) -> dict[str, dict[TP, int]]:
        return {}

    def close(self) -> None:
        pass


def connect_offset(topic: str, partition: int, last_replicated: int, offset: int) -> Message:
    key = json.dumps(["MirrorSourceConnector", {"cluster": "A", "partition": partition, "topic": topic}])
    return Message(topic=OFFSETS_TOPIC, partition=0, offset=offset, key=key.encode(),
                   value=json.dumps({"offset": last_replicated}).encode(), timestamp=(1, NOW_MS))


def offset_sync(topic: str, partition: int, upstream: int, downstream: int, offset: int) -> Message:
    sync = OffsetSync(TopicPartition(topic, partition), upstream, downstream)
    return Message(topic=SYNCS_TOPIC, partition=0, offset=offset, key=sync.key_bytes(), value=sync.value_bytes(),
                   timestamp=(1, NOW_MS))


def probe_of(source: LogIO, target: LogIO) -> HealthProbe:
    config = MirrorMakerConfig({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092",
                                "A->B.enabled": "true"})
    specs = flow_specs(config, [p for p in config.cluster_pairs() if str(p) == "A->B"])
    clusters: dict[str, ClusterIO] = {"A": source, "B": target}  # type: ignore[dict-item]
    return HealthProbe(specs, clusters, clock=lambda: NOW_MS / 1000)


def lags(source: LogIO, target: LogIO) -> list[PartitionLag]:
    [flow] = probe_of(source, target).check().flows
    assert not flow.errors, flow.errors
    return flow.partitions


def clusters(ends: dict[int, int], replicated: dict[int, int], tansu: bool = False,
             last_batch: int = 1) -> tuple[LogIO, LogIO]:
    """Topic ``t`` on A with ``ends[p]`` records in partition p (timestamps 1 s apart, the newest 1 s old),
    the Connect offset ``replicated[p] - 1`` on B for the partitions in ``replicated``, and ``A.t`` on B."""
    logs = {("t", p): [NOW_MS - (end - i) * 1000 for i in range(end)] for p, end in ends.items()}
    source = LogIO(logs, {tp: last_batch for tp in logs}, tansu=tansu)
    remote = {("A.t", p): [NOW_MS] * replicated.get(p, 0) for p in ends}
    internal = [connect_offset("t", p, offset - 1, i) for i, (p, offset) in enumerate(sorted(replicated.items()))]
    target = LogIO(remote, {tp: last_batch for tp in remote}, internal=internal, tansu=tansu)
    return source, target


def fetch_everything(source: LogIO, target: LogIO) -> list[PartitionLag]:
    """The same figures read the old way: every partition fetched (a ListOffsets that answers nothing)."""
    for io in (source, target):
        io.latest_offsets = lambda partitions, timeout_s: Answers({})  # type: ignore[method-assign]
    return lags(source, target)


def test_only_the_lagging_partitions_are_fetched_on_kafka() -> None:
    """A partition with no replicated offset yet (3) has no lag to read: ListOffsets' answer is its end, so a start
    of thousands of partitions, before their first syncs and Connect offsets are written, fetches none of them."""
    ends = {0: 10, 1: 10, 2: 7, 3: 5}
    replicated = {0: 10, 1: 7, 2: 7}  # 0 and 2 caught up, 1 lags by 3 records, 3 has no Connect offset yet
    source, target = clusters(ends, replicated)
    result = {p.partition: p for p in lags(source, target)}
    assert sorted(source.listed) == [("t", p) for p in range(4)]  # every end by ListOffsets, in one call
    assert sorted(target.listed) == [("A.t", p) for p in range(4)]
    assert source.fetched == {("t", 1): 7}
    assert target.fetched == {}  # no offset sync: no remote end wanted
    assert [(p, result[p].source_end_offset, result[p].lag_records, result[p].lag_seconds) for p in range(4)] == [
        (0, 10, 0, 0.0), (1, 10, 3, 3.0), (2, 7, 0, 0.0), (3, 5, None, None)]
    assert result[1].lag_seconds == 3.0  # the age of offset 7, the first record not replicated
    assert lags(*clusters(ends, replicated)) == fetch_everything(*clusters(ends, replicated))


def test_a_broker_answering_below_the_end_is_fetched_and_its_figures_stay_exact() -> None:
    """Tansu's ListOffsets answers the base offset of the last batch + 1: caught-up partitions whose last batch
    holds several records answer below their replicated offset, so they are fetched; lagging ones too."""
    ends = {0: 10, 1: 10, 2: 1}
    replicated = {0: 10, 1: 4, 2: 1}  # 1 lags by 6 records, inside its last batch of 8 (ListOffsets: 3)
    source, target = clusters(ends, replicated, tansu=True, last_batch=8)
    source.last_batch[("t", 2)] = 1  # one record in its last batch: ListOffsets is exact there
    result = {p.partition: p for p in lags(source, target)}
    assert source.fetched == {("t", 0): 10, ("t", 1): 4}
    assert [(p, result[p].source_end_offset, result[p].lag_records) for p in range(3)] == [
        (0, 10, 0), (1, 10, 6), (2, 1, 0)]
    expected = fetch_everything(*clusters(ends, replicated, tansu=True, last_batch=8))
    assert lags(*clusters(ends, replicated, tansu=True, last_batch=8)) == expected


def test_a_source_topic_recreated_below_the_replicated_offset_is_fetched_and_reported() -> None:
    source, target = clusters({0: 3, 1: 10}, {0: 10, 1: 10})  # partition 0 re-created: 3 records, 10 copied
    result = {p.partition: p for p in lags(source, target)}
    assert source.fetched == {("t", 0): 10}
    assert result[0].source_end_offset == 3 and "re-created" in result[0].loss
    assert result[1].loss == "" and result[1].lag_records == 0


def test_the_remote_end_of_an_offset_sync_is_fetched_only_for_a_doubtful_partition() -> None:
    """The estimate U + R - D takes the remote end R from ListOffsets; a partition that ListOffsets does not settle
    has R fetched too (from the sync's downstream offset), so the estimate is the fetch's on every broker."""
    ends = {0: 10, 1: 12}
    source, target = clusters(ends, {})  # no Connect offset yet: the syncs tell the progress
    target.logs = {("A.t", 0): [NOW_MS] * 10, ("A.t", 1): [NOW_MS] * 9}
    source.internal = [offset_sync("t", 0, 5, 5, 0), offset_sync("t", 1, 5, 5, 1)]
    source.logs[(SYNCS_TOPIC, 0)] = []
    result = {p.partition: p for p in lags(source, target)}
    assert sorted(target.listed) == [("A.t", 0), ("A.t", 1)]
    assert target.fetched == {("A.t", 1): 5} and source.fetched == {("t", 1): 9}
    assert [(p, result[p].replicated_offset, result[p].basis, result[p].lag_records) for p in range(2)] == [
        (0, 10, "offset-sync", 0), (1, 9, "offset-sync", 3)]


def test_doubtful_partitions() -> None:
    replicated = {("t", 0): (5, "connect-offsets"), ("t", 1): (5, "offset-sync"), ("t", 2): (5, "connect-offsets")}
    latest = {("t", 0): 5, ("t", 1): 6, ("t", 2): 4, ("t", 3): 9}
    partitions = [("t", p) for p in range(5)]
    # 0 is caught up; 1 lags; 2 answers below what was replicated; 3 has no replicated offset; 4 no answer
    assert doubtful_partitions(partitions, latest, replicated) == [("t", 1), ("t", 2), ("t", 3), ("t", 4)]


class EndsConsumer:
    """A consumer's ``offsets_for_times`` seam, as librdkafka answers it: a list of the partitions asked, each
    with its end (here its partition number) or an error. Records each call's partitions, the threads that made
    them and how many were under way at once. A call holding a partition of ``failing`` fails as a whole (as
    librdkafka fails a call when the broker answers one of its partitions with an error), the partitions in
    ``errors`` are answered with an error of their own (as librdkafka answers a partition it finds no leader
    for), and each call takes ``delay_s`` (raising librdkafka's timeout when its own timeout is shorter)."""

    def __init__(self, failing: tuple[TP, ...] = (), errors: tuple[TP, ...] = (), delay_s: float = 0.0) -> None:
        self.calls: list[list[ConfluentTopicPartition]] = []
        self.threads: set[str] = set()
        self.most_under_way = 0
        self._under_way = 0
        self._lock = threading.Lock()
        self._failing, self._errors, self._delay_s = failing, errors, delay_s

    def offsets_for_times(self, partitions: list[ConfluentTopicPartition], timeout: float) -> list[Any]:
        with self._lock:
            self.calls.append(list(partitions))
            self.threads.add(threading.current_thread().name)
            self._under_way += 1
            self.most_under_way = max(self.most_under_way, self._under_way)
        time.sleep(min(self._delay_s, timeout))
        with self._lock:
            self._under_way -= 1
        if self._delay_s > timeout:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        if any((tp.topic, tp.partition) in self._failing for tp in partitions):
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        return [SimpleNamespace(topic=tp.topic, partition=tp.partition,
                                offset=-1 if (tp.topic, tp.partition) in self._errors else tp.partition,
                                error=KafkaError(KafkaError.LEADER_NOT_AVAILABLE)
                                if (tp.topic, tp.partition) in self._errors else None)
                for tp in partitions]


class EndsAdmin:
    """The admin client's ``list_offsets`` seam, asked again for the partitions of a call that failed: a Future
    per partition with its end (its partition number), or the error of the partitions in ``errors``."""

    def __init__(self, errors: tuple[TP, ...] = ()) -> None:
        self.calls: list[list[TP]] = []
        self._errors = errors

    def list_offsets(self, wanted: dict[ConfluentTopicPartition, Any], **_: Any) -> dict[ConfluentTopicPartition,
                                                                                        Future[Any]]:
        self.calls.append([(tp.topic, tp.partition) for tp in wanted])
        answers: dict[ConfluentTopicPartition, Future[Any]] = {tp: Future() for tp in wanted}
        for tp, answer in answers.items():
            if (tp.topic, tp.partition) in self._errors:
                answer.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
            else:
                answer.set_result(SimpleNamespace(offset=tp.partition))
        return answers


def ends_of(partitions: list[TP], consumer: EndsConsumer, timeout_s: float = 10,
            admin: EndsAdmin | None = None) -> dict[TP, int]:
    io = ClusterIO("A", {}, {})
    io._ends_consumer = consumer  # type: ignore[assignment]
    io._consumer = object()  # type: ignore[assignment]  # the probe's own consumer: never used for the ends
    io._admin = admin or EndsAdmin()  # type: ignore[assignment]
    try:
        return io.latest_offsets(partitions, timeout_s).result()
    finally:
        io._ends_consumer = io._consumer = None  # nothing to close
        io.close()


def test_ends_are_asked_by_listoffsets_latest_in_calls_of_a_bounded_size_off_the_callers_thread() -> None:
    """librdkafka's time for one ListOffsets call grows faster than its partitions: thousands go in a few calls,
    on the cluster's own threads, each partition asked at ListOffsets' "latest" timestamp."""
    consumer, admin = EndsConsumer(), EndsAdmin()
    partitions = [("t", p) for p in range(2 * LIST_OFFSETS_CHUNK + 5)]
    ends = ends_of([*partitions, ("t", 0)], consumer, admin=admin)
    assert sorted(len(call) for call in consumer.calls) == [5, LIST_OFFSETS_CHUNK, LIST_OFFSETS_CHUNK]
    assert {tp.offset for call in consumer.calls for tp in call} == {LATEST_TIMESTAMP} == {-1}
    assert sorted((tp.topic, tp.partition) for call in consumer.calls for tp in call) == partitions
    assert ends == {tp: tp[1] for tp in partitions}
    assert consumer.threads and all(name.startswith("mirror-health-ends-A_") for name in consumer.threads)
    assert admin.calls == []


def test_ends_of_thousands_of_partitions_are_asked_a_few_calls_at_a_time() -> None:
    """A pass asks every partition of both clusters: a few calls are under way at once (each waits for its
    leaders and its answer), never all of them, so only a few calls' answers are alive at a time."""
    consumer = EndsConsumer(delay_s=0.05)
    partitions = [("t", p) for p in range(5 * LIST_OFFSETS_CHUNK)]
    ends = ends_of(partitions, consumer)
    assert len(consumer.calls) == 5
    assert consumer.most_under_way == LIST_OFFSETS_PARALLEL
    assert ends == {tp: tp[1] for tp in partitions}


def test_a_failed_call_is_asked_again_partition_by_partition_and_errors_are_left_out() -> None:
    """librdkafka fails a call as a whole when one of its partitions is answered with an error (a topic deleted
    since its metadata was read): that call's partitions are asked again through the admin client, where only
    the partition in error is left out. A partition a successful call answers with an error is left out too
    (the probe fetches what is left out)."""
    deleted = ("t", LIST_OFFSETS_CHUNK + 7)
    consumer = EndsConsumer(failing=(deleted,), errors=(("t", 3),))
    admin = EndsAdmin(errors=(deleted,))
    partitions = [("t", p) for p in range(3 * LIST_OFFSETS_CHUNK)]
    ends = ends_of(partitions, consumer, admin=admin)
    assert len(consumer.calls) == 3
    assert admin.calls == [partitions[LIST_OFFSETS_CHUNK:2 * LIST_OFFSETS_CHUNK]]
    assert ends == {tp: tp[1] for tp in partitions if tp not in (("t", 3), deleted)}


def test_ends_not_answered_in_time_are_left_out() -> None:
    """One deadline bounds every call: a call not answered within it is left out, later calls are not asked."""
    consumer, admin = EndsConsumer(delay_s=0.05), EndsAdmin()
    ends = ends_of([("t", p) for p in range(5 * LIST_OFFSETS_CHUNK)], consumer, timeout_s=0.01, admin=admin)
    assert ends == {}
    assert 1 <= len(consumer.calls) <= LIST_OFFSETS_PARALLEL
    assert admin.calls == []


class StartsReader:
    """A reader consumer's seam for :meth:`ClusterIO.read`: records the assignment, then answers every partition's
    end (its partition number) with no record."""

    def __init__(self) -> None:
        self.assigned: list[ConfluentTopicPartition] = []
        self._eof: list[Message] = []

    def assign(self, partitions: list[ConfluentTopicPartition]) -> None:
        self.assigned = list(partitions)
        self._eof = [Message(topic=tp.topic, partition=tp.partition, offset=tp.partition,
                             error=KafkaError(KafkaError._PARTITION_EOF)) for tp in partitions]

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        batch, self._eof = self._eof, []
        return batch

    def unassign(self) -> None:
        pass


def test_a_partition_not_read_yet_is_read_from_offset_0_not_from_a_logical_offset() -> None:
    """OFFSET_BEGINNING would make librdkafka look the offset up first, and a fresh consumer, not knowing the
    leader yet, retries that only 500 ms later; offset 0 is read at once (the log start, when it starts later).
    The positions advance to the ends as before."""
    io = ClusterIO("B", {}, {})
    reader = StartsReader()
    io._reader = reader  # type: ignore[assignment]
    positions = {("heartbeats", 0): OFFSET_BEGINNING, ("heartbeats", 1): OFFSET_BEGINNING, ("A.heartbeats", 2): 7}
    records, complete = io.read(positions, 10)
    io._reader = None
    assert [(tp.topic, tp.partition, tp.offset) for tp in reader.assigned] == [
        ("heartbeats", 0, FIRST_OFFSET), ("heartbeats", 1, FIRST_OFFSET), ("A.heartbeats", 2, 7)]
    assert FIRST_OFFSET == 0
    assert (records, complete) == ([], True)
    assert positions == {("heartbeats", 0): 0, ("heartbeats", 1): 1, ("A.heartbeats", 2): 7}
