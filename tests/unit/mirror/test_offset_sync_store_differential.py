"""The OffsetSyncStore against its earlier, direct transcription of Kafka's (offset_sync_store_reference.py).

Checkpoints must stay exactly what Java's OffsetSyncStore logic emits. The store's update and decoding were
rewritten for speed (it reads every offset sync, hundreds a second while the source task copies a backlog),
so the same offset-syncs stream, raw records from a seeded random walk, goes to both stores; after every
record both must hold the same 64-slot array (the same values in the same slots, and the same slots sharing
one sync object: the algorithm compares syncs by identity) and give the same translations and the same
checkpoints.

The walk covers what changes the array: steps of every size (from 1 to far beyond 2^63 slots'
spacing), offset.lag.max-like regular steps, equal upstream offsets, upstream rewinds, downstream resets,
offsets next to Long.MAX_VALUE (Java overflow), several partitions, undecodable records, and both initial
loads (must read to end or not), with translation asked before and after the load finished.
"""

from __future__ import annotations

import random
import struct

import pytest

from mirror.checkpoint.offset_sync_store import OffsetSyncStore
from mirror.checkpoint.task import checkpoints_for_group
from mirror.client.models import Checkpoint, OffsetSync, TopicPartition
from mirror.client.replication_policy import DefaultReplicationPolicy
from mirror.filters import DefaultTopicFilter
from tests.unit.mirror import offset_sync_store_reference as reference

MAX_LONG = 2**63 - 1
PARTITIONS = [TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("payments", 3)]


def key_of(tp: TopicPartition) -> bytes:
    return OffsetSync(tp, 0, 0).key_bytes()


def random_walk(seed: int, records: int) -> list[tuple[bytes | None, bytes | None]]:
    """Raw offset-syncs records: (key, value), mostly valid, as a seeded random walk per partition."""
    rng = random.Random(seed)
    upstream = {tp: rng.randrange(0, 1000) for tp in PARTITIONS}
    downstream = {tp: rng.randrange(0, 1000) for tp in PARTITIONS}
    lag = rng.choice([1, 10, 100, 1000])
    stream: list[tuple[bytes | None, bytes | None]] = []
    for _ in range(records):
        tp = rng.choice(PARTITIONS)
        roll = rng.random()
        if roll < 0.01:  # undecodable: null value, short value, truncated key, null key
            stream.append(rng.choice([(key_of(tp), None), (key_of(tp), b"\x00" * rng.randrange(0, 16)),
                                      (key_of(tp)[:3], b"\x00" * 16), (None, b"\x00" * 16)]))
            continue
        if roll < 0.03:  # upstream rewind (topic recreated, offsets reset)
            upstream[tp] = rng.randrange(0, max(1, upstream[tp]))
        elif roll < 0.04:  # next to Long.MAX_VALUE: Java's bounds overflow
            upstream[tp] = MAX_LONG - rng.randrange(0, 2**rng.randrange(1, 40))
        elif roll < 0.07:  # the same upstream offset again
            pass
        elif roll < 0.5:  # offset.lag.max-like regular syncs
            upstream[tp] = min(MAX_LONG, upstream[tp] + lag + 1)
        else:  # steps of every magnitude
            upstream[tp] = min(MAX_LONG, upstream[tp] + 2 ** rng.randrange(0, 64) + rng.randrange(0, 3))
        if rng.random() < 0.02:  # downstream reset (target topic recreated)
            downstream[tp] = rng.randrange(0, 100)
        else:
            downstream[tp] = min(MAX_LONG, downstream[tp] + rng.randrange(0, 2000))
        value = struct.pack(">qq", upstream[tp], downstream[tp])
        if rng.random() < 0.02:  # trailing bytes: Java reads the two fields and ignores the rest
            value += b"\x01\x02"
        stream.append((key_of(tp), value))
    return stream


def shape(syncs: tuple[OffsetSync, ...] | None) -> list[tuple[int, int, int]] | None:
    """Each slot's (upstream, downstream, first slot holding the same object): values and identity."""
    if syncs is None:
        return None
    first: dict[int, int] = {}
    return [(s.upstream_offset, s.downstream_offset, first.setdefault(id(s), i)) for i, s in enumerate(syncs)]


def probes(store: reference.OffsetSyncStore, tp: TopicPartition, rng: random.Random) -> list[int]:
    """Offsets where translation changes: around every retained sync, plus a few anywhere."""
    syncs = store.syncs_for(tp) or ()
    offsets = {u + d for s in syncs for u in (s.upstream_offset,) for d in (-1, 0, 1, 2)}
    offsets |= {rng.randrange(0, MAX_LONG) for _ in range(3)} | {0, MAX_LONG}
    return sorted(o for o in offsets if 0 <= o <= MAX_LONG)


def checkpoints(translate: object, group_offsets: dict[tuple[str, int], tuple[int, str | None]]
                ) -> dict[TopicPartition, Checkpoint]:
    return checkpoints_for_group(
        "g", group_offsets, policy=DefaultReplicationPolicy(), topic_filter=DefaultTopicFilter(),
        source_alias="A", target_alias="B", translate_downstream=translate,  # type: ignore[arg-type]
        last_checkpoint=lambda _tp: None)


@pytest.mark.parametrize("must_read_to_end", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_same_arrays_translations_and_checkpoints_as_the_reference(seed: int, must_read_to_end: bool) -> None:
    rng = random.Random(1000 + seed)
    stream = random_walk(seed, 2500)
    loaded_at = rng.randrange(0, 400)  # records read before the first read to the end finished
    old, new = reference.OffsetSyncStore(), OffsetSyncStore()
    old.start_initial_load(must_read_to_end)
    new.start_initial_load(must_read_to_end)
    for index, (key, value) in enumerate(stream):
        if index == loaded_at:
            old.finish_initial_load()
            new.finish_initial_load()
        old_sync, new_sync = old.handle_record(key, value), new.handle_record(key, value)
        assert (old_sync is None) == (new_sync is None), f"record {index}: decoded by one store only"
        if old_sync is not None and new_sync is not None:
            assert old_sync == new_sync
        for tp in PARTITIONS:
            assert shape(new.syncs_for(tp)) == shape(old.syncs_for(tp)), f"record {index}, {tp}"
        if index % 25 == 0 or index == loaded_at:
            for tp in PARTITIONS:
                for offset in probes(old, tp, rng):
                    assert new.translate_downstream("g", tp, offset) == old.translate_downstream("g", tp, offset), \
                        f"record {index}, {tp} @ {offset}"
            group = {(tp.topic, tp.partition): (rng.choice(probes(old, tp, rng)), None) for tp in PARTITIONS}
            expected = checkpoints(old.translate_downstream, group)
            assert checkpoints(new.translate_downstream, group) == expected
    assert new.partitions() == old.partitions()


def test_the_walk_reaches_what_changes_the_array() -> None:
    """The stream is not trivial: histories hold many distinct syncs, and rewinds and overflows occur."""
    old = reference.OffsetSyncStore()
    old.start_initial_load(False)
    old.finish_initial_load()
    most_distinct = 0
    for key, value in random_walk(0, 2500):
        old.handle_record(key, value)
        for tp in PARTITIONS:
            syncs = old.syncs_for(tp)
            if syncs is not None:
                most_distinct = max(most_distinct, len({id(s) for s in syncs}))
    assert most_distinct >= 10
