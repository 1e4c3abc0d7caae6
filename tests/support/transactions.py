"""A transaction-aware count of a topic: the records of committed transactions only, read from raw batches.

Why not a ``read_committed`` consumer: Tansu (the test broker) delivers the records of aborted
transactions to read_committed consumers (its fetch response never lists aborted transactions, see
docs/tansu.md), so such a count would see aborted copies as duplicates and could not tell a
lost record from an aborted one. Here every partition is fetched with a raw FetchRequest
(kafka-python's protocol classes, ``isolation_level`` read_uncommitted), each record batch is parsed,
and the control batches decide: the records a producer (id, epoch) wrote in a transaction count once its
COMMIT marker follows, never after an ABORT marker, and not while no marker followed yet (an open or
abandoned transaction). A batch of the same producer id with a newer epoch aborts an older open
transaction (that is what fencing does; Tansu also writes the abort marker). Non-transactional records
always count. This is what a correct read_committed consumer on Apache Kafka returns.
"""

from __future__ import annotations

import collections
import warnings
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient

with warnings.catch_warnings():  # kafka-python 3.0 loads its schemas with a deprecated importlib call
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.net.compat import KafkaNetClient
    from kafka.protocol.consumer import FetchRequest
    from kafka.record import MemoryRecords

_MAX_BYTES = 16 * 1024 * 1024


@dataclass
class TopicTransactions:
    """What a raw read of one topic found."""

    #: (partition, offset, key, value) of every record that counts (committed or non-transactional).
    committed: list[tuple[int, int, bytes | None, bytes | None]] = field(default_factory=list)
    aborted: int = 0
    #: The values of the records of aborted transactions.
    aborted_values: set[bytes] = field(default_factory=set)
    #: Records of transactions with no marker yet (open, or abandoned by a dead producer).
    pending: int = 0
    commits: int = 0
    aborts: int = 0

    def values(self) -> list[bytes]:
        return [v or b"" for _, _, _, v in self.committed]

    def lost_and_duplicated(self, total: int) -> tuple[set[bytes], dict[bytes, int]]:
        """Against values ``v0`` .. ``v{total-1}`` written once each at the source: the committed values
        missing, and those committed more than once (with their counts)."""
        counts = collections.Counter(self.values())
        lost = {f"v{i}".encode() for i in range(total)} - set(counts)
        return lost, {v: n for v, n in counts.items() if n > 1}


def read_transactions(bootstrap: str, topic: str) -> TopicTransactions:
    """Read every partition of ``topic`` to its high watermark and resolve its transactions."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(topic, timeout=10)
    partitions = sorted(metadata.topics[topic].partitions) if topic in metadata.topics else []
    client = KafkaNetClient(bootstrap_servers=bootstrap)
    try:
        node = client.least_loaded_node(bootstrap_fallback=True)
        result = TopicTransactions()
        for partition in partitions:
            _read_partition(client, node, topic, partition, result)
        return result
    finally:
        client.close()


def _read_partition(client: KafkaNetClient, node: object, topic: str, partition: int,
                    result: TopicTransactions) -> None:
    #: producer id -> (epoch, records of its open transaction)
    open_txns: dict[int, tuple[int, list[tuple[int, int, bytes | None, bytes | None]]]] = {}
    offset = 0
    while True:
        request = FetchRequest(
            replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=_MAX_BYTES, isolation_level=0,
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=_MAX_BYTES, log_start_offset=-1,
                current_leader_epoch=-1)])],
            forgotten_topics_data=[], min_version=4, max_version=11)
        response = client.send_and_receive(node, request)
        data = response.responses[0].partitions[0]
        if data.error_code:
            raise AssertionError(f"fetch {topic}-{partition}@{offset}: error {data.error_code}")
        records = MemoryRecords(data.records or b"")
        before = offset
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            pid, epoch = batch.producer_id, batch.producer_epoch
            if batch.is_control_batch:
                for record in batch:
                    offset = record.offset + 1
                    commit = int.from_bytes((record.key or b"\0\0\0\0")[2:4], "big") == 1
                    held = open_txns.pop(pid, None)
                    if held is None:
                        continue
                    if commit and held[0] == epoch:
                        result.committed.extend(held[1])
                        result.commits += 1
                    else:
                        _abort(result, held[1])
                continue
            rows = []
            for record in batch:
                offset = record.offset + 1
                rows.append((partition, record.offset, record.key, record.value))
            if not batch.is_transactional:
                result.committed.extend(rows)
                continue
            held = open_txns.get(pid)
            if held is not None and held[0] != epoch:  # fenced: the older epoch's transaction was aborted
                _abort(result, held[1])
                held = None
            if held is None:
                held = (epoch, [])
                open_txns[pid] = held
            held[1].extend(rows)
        if offset == before or offset >= data.high_watermark:
            break
    result.pending += sum(len(rows) for _, rows in open_txns.values())


def _abort(result: TopicTransactions, rows: list[tuple[int, int, bytes | None, bytes | None]]) -> None:
    result.aborted += len(rows)
    result.aborts += 1
    result.aborted_values.update(v or b"" for _, _, _, v in rows)
