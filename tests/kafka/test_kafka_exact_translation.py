"""Exact translation on Apache Kafka across real compaction holes and aborted transactions.

On Tansu nothing is compacted and read_committed delivers aborted records, so its exact-failover test
(tests/integration/test_exact_failover.py) makes holes with commit markers only. Here the source topic is
compacted by Kafka's log cleaner (superseded keys leave holes) and holds an aborted transaction (skipped
by the driver's read_committed consumer): groups committed inside each kind of hole are synced onto the
target at exactly the next record.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.support.mm2_process import MirrorMakerProcess, aliases
from tests.integration.test_exact_failover import check_resumes_exactly, exact_position
from tests.kafka.flows import read_committed, read_uncommitted, wait_for_records, write_mm2
from tests.kafka.test_kafka_replication import _group_offsets
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import commit_group_offsets, create_topic, produce, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]


def _end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("end")})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)[1])
    finally:
        consumer.close()


def _transaction(bootstrap: str, topic: str, values: list[str], commit: bool) -> None:
    """One transaction of ``values``, returned once its marker is in the log. The coordinator answers EndTxn
    once it logged the decision and writes the markers after, so without the wait the next producer's records
    can land before this marker and shift the layout the test asserts."""
    end = _end_offset(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("txn"), "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, key=value.encode(), value=value.encode(), partition=0)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.flush(30)
        producer.abort_transaction(30)
    wait_until(lambda: _end_offset(bootstrap, topic) >= end + len(values) + 1, 30,
               f"the {'commit' if commit else 'abort'} marker after {values[0]}..{values[-1]} in the log")


def _log(bootstrap: str, topic: str, committed: bool = True) -> list[tuple[int, bytes]]:
    records = (read_committed if committed else read_uncommitted)(bootstrap, topic)
    return sorted((r.offset(), r.value() or b"") for r in records)


def test_groups_in_compaction_holes_and_aborted_transactions_sync_exactly(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    bootstrap = kafka_a.bootstrap_servers
    topic = create_topic(bootstrap, unique("exact-holes"), 1, config={
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0", "delete.retention.ms": "100"})
    produce(bootstrap, topic, [(f"p{i}".encode(), f"p-{i}".encode()) for i in range(5)])  # kept: unique keys
    for batch in ("a", "b"):  # the same keys twice: the cleaner drops the a-* records (offsets 5..14)
        produce(bootstrap, topic, [(f"k{i}".encode(), f"{batch}-{i}".encode()) for i in range(10)])
        time.sleep(0.3)  # past segment.ms: the next append rolls a new segment
    _transaction(bootstrap, topic, [f"c-{i}" for i in range(5)], commit=True)
    _transaction(bootstrap, topic, [f"x-{i}" for i in range(5)], commit=False)
    _transaction(bootstrap, topic, [f"d-{i}" for i in range(5)], commit=True)
    for i in range(3):  # roll the segments holding the above, so the cleaner may compact them
        time.sleep(0.3)
        produce(bootstrap, topic, [(f"e{i}".encode(), f"e-{i}".encode())])
    # the layout: p-i at i, a-i at 5+i, b-i at 15+i, c-* 25..29 and its commit marker 30, x-* 31..35 and
    # the abort marker 36, d-* 37..41 and its marker 42, e-* 43..45 (checked below on what is still there)
    offset_of = {"a-3": 8, "c-4": 29, "x-2": 33, "d-1": 38}
    wait_until(lambda: b"a-3" not in {v for _, v in _log(bootstrap, topic)}, 90, "the log cleaner compacted a-*",
               interval_s=1)
    source = _log(bootstrap, topic)
    values = [v for _, v in source]
    at = {v.decode(): o for o, v in source}
    assert (at["p-4"], at["b-0"], at["c-4"], at["d-0"], at["d-1"], at["e-2"]) == (4, 15, 29, 37, 38, 45)
    assert not any(v.startswith(b"x-") for v in values)  # the aborted transaction is invisible
    end = source[-1][0] + 1
    prefix = unique("grp")
    groups = {f"{prefix}-compacted": offset_of["a-3"],  # inside the compaction hole
              f"{prefix}-aborted": offset_of["x-2"],  # inside the aborted transaction
              f"{prefix}-marker": offset_of["c-4"] + 1,  # the first commit marker
              f"{prefix}-middle": offset_of["d-1"], f"{prefix}-end": end}
    for group, offset in groups.items():
        commit_group_offsets(bootstrap, group, {(topic, 0): offset})
    a, b = aliases("A", "B")
    remote = f"{a}.{topic}"
    props = write_mm2(tmp_path / "mm2.properties", {a: kafka_a, b: kafka_b},
                      f"{a}->{b}.enabled = true\ntopics = {topic}\ngroups = {prefix}-.*\n"
                      f"{a}.consumer.isolation.level = read_committed\n"
                      "sync.group.offsets.enabled = true\n")
    with MirrorMakerProcess(props, log=tmp_path / "mm2.log") as node:
        node.wait_running(2)
        wait_for_records(kafka_b.bootstrap_servers, remote, len(source), 90)
        target = _log(kafka_b.bootstrap_servers, remote)
        assert [v for _, v in target] == values  # nothing aborted or compacted away is copied
        expected = {g: exact_position(source, target, o) for g, o in groups.items()}
        def synced() -> dict[str, dict[int, int]]:
            return {g: _group_offsets(kafka_b.bootstrap_servers, g, remote) for g in groups}

        try:
            wait_until(lambda: synced() == {g: {0: d} for g, d in expected.items()}, 60,
                       f"every group synced at {expected}", interval_s=1)
        except AssertionError as exc:
            exc.add_note(f"synced: {synced()}\nsource: {source}\n" + node.tail(60))
            raise
        assert node.terminate() == 0
    for group, offset in groups.items():
        check_resumes_exactly(source, target, offset, expected[group])
    assert expected[f"{prefix}-end"] == len(target)
    assert expected[f"{prefix}-compacted"] == values.index(b"b-0")
    assert expected[f"{prefix}-aborted"] == values.index(b"d-0")
