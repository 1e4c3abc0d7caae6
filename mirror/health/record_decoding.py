"""Decoding the records the health probe reads from MM2's internal topics.

A status tool must not die on one bad record: each decoder skips what it cannot read.
"""

from __future__ import annotations

import json

from confluent_kafka import Message

from mirror.client.models import Checkpoint, Heartbeat, MalformedRecordError, OffsetSync
from mirror.health.kafka_io import TP


def heartbeat_ts(msg: Message, source: str | None = None, target: str | None = None) -> int | None:
    try:
        heartbeat = Heartbeat.from_record(msg.key(), msg.value())
    except MalformedRecordError:
        return None
    if source is not None and (heartbeat.source_cluster_alias, heartbeat.target_cluster_alias) != (source, target):
        return None
    return heartbeat.timestamp


def apply_checkpoint(msg: Message, store: dict[tuple[str, str, int], tuple[int, int, int | None]]) -> None:
    try:
        cp = Checkpoint.from_record(msg.key(), msg.value())
    except MalformedRecordError:
        return
    kind, ts = msg.timestamp()
    store[(cp.consumer_group_id, cp.topic, cp.partition)] = (
        cp.upstream_offset,
        cp.downstream_offset,
        ts if kind and ts >= 0 else None,
    )


def apply_sync(msg: Message, store: dict[TP, tuple[int, int]]) -> bool:
    """Store the sync's offsets under its source partition; False if the record is not a sync."""
    try:
        sync = OffsetSync.from_record(msg.key(), msg.value())
    except MalformedRecordError:
        return False
    store[(sync.topic_partition.topic, sync.topic_partition.partition)] = (sync.upstream_offset, sync.downstream_offset)
    return True


def apply_newest_syncs(messages: list[Message], store: dict[TP, tuple[int, int]]) -> None:
    """:func:`apply_sync` for the newest readable sync of each source partition only, as applying all of
    them in order would leave it.

    The source task writes a sync every ``offset.lag.max`` records, a thousand or more a second during a
    backlog, and the probe keeps only the newest of each partition: decoding each one cost the probe's
    thread more than the rest of its reading. A sync's key is its source partition, so walking back from
    the newest, a key already applied is skipped without decoding.
    """
    done: set[bytes | None] = set()
    for msg in reversed(messages):
        key = msg.key()
        if key not in done and apply_sync(msg, store):
            done.add(key)


def apply_connect_offset(msg: Message, source: str, store: dict[TP, int]) -> None:
    """A MirrorSourceConnector offset: key ``[name, {cluster, partition, topic}]``, value ``{offset: N}``."""
    try:
        key = json.loads(msg.key() or b"")
        raw = msg.value()
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        return
    if not (isinstance(key, list) and len(key) == 2 and isinstance(key[1], dict)):
        return
    partition = key[1]
    if partition.get("cluster") != source or "topic" not in partition or "partition" not in partition:
        return
    tp = (str(partition["topic"]), int(partition["partition"]))
    if value is None:
        store.pop(tp, None)
    elif isinstance(value, dict) and isinstance(value.get("offset"), int):
        store[tp] = value["offset"]


def apply_connector_status(msg: Message, store: dict[str, str]) -> None:
    """A ``status-connector-<name>`` record: a RUNNING connector with a trace is one whose node cannot hand
    its task configs to the group leader (connect_runtime/runtime/leader/stalled_handoffs.py); any later status
    of the connector without one clears it."""
    key = (msg.key() or b"").decode("utf-8", "replace")
    if not key.startswith("status-connector-"):
        return
    name = key[len("status-connector-"):]
    try:
        raw = msg.value()
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        return
    if isinstance(value, dict) and value.get("state") == "RUNNING" and value.get("trace"):
        store[name] = f"connector {name} on {value.get('worker_id')}: {value['trace']}"
    else:
        store.pop(name, None)
