"""Bulk runs keep the commit rule of the per-record path: property-tested against SubmittedRecords.

The producer is simulated as librdkafka's idempotent producer behaves with the settings the runtime
uses: each target partition delivers its records in order; a failure (gapless guarantee) fails every
later record of the producer's queue for that partition. Only records that carry a callback report
(a run's first and last); SubmittedRecords sees every record, as the general path does.
"""

from __future__ import annotations

import random as random_module
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_runtime.api.bulk import BulkRun
from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceRecord
from connect_runtime.runtime.task.submitted_records import SubmittedRecords
from connect_runtime.runtime.task.submitted_runs import RunGap, SubmittedRuns


@dataclass
class _Message:
    """What a delivery report's message gives the tracker."""

    topic_: str
    partition_: int
    offset_: int

    def topic(self) -> str:
        return self.topic_

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_


@dataclass
class _Queued:
    partition: int
    seq: int  # source offset
    callback: Any  # the run's callback, or None
    record: Any  # the SubmittedRecord of the general path


@dataclass
class _Producer:
    """In-order delivery per target partition; a failure fails the rest of that partition (gapless)."""

    queues: dict[int, list[_Queued]] = field(default_factory=dict)
    next_offset: dict[int, int] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)

    def produce(self, item: _Queued) -> None:
        self.queues.setdefault(item.partition, []).append(item)

    def deliver(self, partition: int, n: int, fail: bool) -> list[tuple[_Queued, Any, _Message]]:
        queue = self.queues.get(partition, [])
        taken, self.queues[partition] = queue[:n], queue[n:]
        out = []
        for item in taken:
            if fail or partition in self.failed:
                self.failed.add(partition)
                out.append((item, "boom", _Message("t", partition, -1)))
            else:
                offset = self.next_offset.get(partition, 0)
                self.next_offset[partition] = offset + 1
                out.append((item, None, _Message("t", partition, offset)))
        return out

    def empty(self) -> bool:
        return not any(self.queues.values())


def _source(p: int) -> dict[str, int]:
    return {"p": p}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 6)), min_size=1, max_size=25), st.randoms(),
       st.booleans())
def test_runs_never_commit_beyond_the_per_record_prefix_and_match_it_at_run_ends(
        runs_spec: list[tuple[int, int]], random: random_module.Random, with_failures: bool) -> None:
    sources = {p: _source(p) for p in range(3)}
    runs, records = SubmittedRuns(), SubmittedRecords()
    producer = _Producer()
    next_seq = {p: 0 for p in range(3)}
    run_ends: dict[int, list[int]] = {p: [] for p in range(3)}
    for p, count in runs_spec:
        first = next_seq[p]
        last = first + count - 1
        next_seq[p] = last + 1
        run_ends[p].append(last)
        run = runs.open(sources[p], {"seq": last}, count, "t", p, None)
        for seq in range(first, last + 1):
            sub = records.submit(SourceRecord("t", b"v", source_partition=sources[p], source_offset={"seq": seq}))
            callback = (run.on_only if count == 1 else run.on_first if seq == first
                        else run.on_last if seq == last else None)
            producer.produce(_Queued(p, seq, callback, sub))
    committed_runs: dict[int, int] = {}
    committed_records: dict[int, int] = {}
    failed_any = False
    steps = 0
    while not producer.empty() and steps < 200:
        steps += 1
        partition = random.choice([p for p, q in producer.queues.items() if q])
        fail = with_failures and random.random() < 0.1
        delivered = producer.deliver(partition, random.randint(1, 4), fail)
        general_reports = []
        for item, error, message in delivered:
            general_reports.append((item.record, error, message))
            if item.callback is not None:
                item.callback(error, message)
        records.ack_reports(general_reports)
        # reports of one poll may be processed in any grouping; process a random prefix now, the rest later
        pending = runs.reports.copy()
        runs.reports.clear()
        cut = random.randint(0, len(pending))
        failed = runs.ack_reports(pending[:cut], False, [])
        runs.reports.extend(pending[cut:])
        failed_any = failed_any or bool(failed)
        for source, offset in records.take_committable():
            committed_records[source["p"]] = offset["seq"]
        for source, offset in runs.take_committable():
            committed_runs[source["p"]] = offset["seq"]
        for p in range(3):
            prefix = committed_records.get(p, -1)
            # never beyond what every earlier record was acknowledged for ...
            assert committed_runs.get(p, -1) <= prefix
    # ... and, once all reports are in, exactly the last run end inside the acknowledged prefix
    final = runs.ack_reports(runs.reports.copy(), False, [])
    runs.reports.clear()
    failed_any = failed_any or bool(final)
    if producer.empty() and not failed_any:
        runs.ack_all([])
    for source, offset in runs.take_committable():
        committed_runs[source["p"]] = offset["seq"]
    for source, offset in records.take_committable():
        committed_records[source["p"]] = offset["seq"]
    for p in range(3):
        prefix = committed_records.get(p, -1)
        ends = [e for e in run_ends[p] if e <= prefix]
        assert committed_runs.get(p, -1) == (ends[-1] if ends else -1)
    if producer.empty() and not failed_any:
        assert runs.outstanding == 0


def test_a_first_record_report_acknowledges_every_earlier_run_of_its_partition() -> None:
    runs = SubmittedRuns()
    runs.open(_source(0), {"seq": 9}, 10, "t", 0, "a")
    b = runs.open(_source(0), {"seq": 19}, 10, "t", 0, "b")
    acked: list[BulkRun] = []
    b.on_first(None, _Message("t", 0, 10))
    assert runs.ack_reports(runs.reports, False, acked) == []
    assert [r.tag for r in acked] == ["a"]
    assert runs.take_committable() == [({"p": 0}, {"seq": 9})]
    assert runs.outstanding == 10


def test_a_run_whose_target_offsets_span_fewer_records_is_a_gap() -> None:
    runs = SubmittedRuns()
    run = runs.open(_source(0), {"seq": 9}, 10, "t", 0, None)
    run.on_first(None, _Message("t", 0, 100))
    run.on_last(None, _Message("t", 0, 105))
    failed = runs.ack_reports(runs.reports, False, [])
    assert len(failed) == 1 and isinstance(failed[0][1], RunGap)


def test_a_report_from_another_target_partition_is_a_failure_not_an_acknowledgement() -> None:
    runs = SubmittedRuns()
    run = runs.open(_source(0), {"seq": 0}, 1, "t", 0, None)
    run.on_only(None, _Message("t", 3, 0))
    acked: list[BulkRun] = []
    assert len(runs.ack_reports(runs.reports, False, acked)) == 1
    assert acked == [] and runs.take_committable() == []


def test_runs_of_one_source_partition_in_flight_must_share_a_target() -> None:
    runs = SubmittedRuns()
    runs.open(_source(0), {"seq": 0}, 1, "t", 0, None)
    with pytest.raises(ConnectError, match="acknowledgements would not be in order"):
        runs.open(_source(0), {"seq": 1}, 1, "t", 1, None)


def test_a_cut_run_counts_only_what_was_produced_and_a_run_cut_to_nothing_is_forgotten() -> None:
    runs = SubmittedRuns()
    a = runs.open(_source(0), {"seq": 9}, 10, "t", 0, None)
    runs.cut(a, 4, {"seq": 3})
    assert runs.outstanding == 4
    b = runs.open(_source(0), {"seq": 19}, 10, "t", 0, None)
    runs.cut(b, 0, None)
    assert runs.outstanding == 4
    runs.ack_all([])
    assert runs.take_committable() == [({"p": 0}, {"seq": 3})]
    assert runs.outstanding == 0


def test_tolerated_failures_complete_the_run_once_its_last_record_reported() -> None:
    runs = SubmittedRuns()
    run = runs.open(_source(0), {"seq": 2}, 3, "t", 0, None)
    run.on_first(None, _Message("t", 0, 0))
    run.on_each("refused", _Message("t", 0, -1))
    run.on_last("refused", _Message("t", 0, -1))
    acked: list[BulkRun] = []
    failed = runs.ack_reports(runs.reports, True, acked)
    assert len(failed) == 2 and acked == [run]
    assert runs.take_committable() == [({"p": 0}, {"seq": 2})]

