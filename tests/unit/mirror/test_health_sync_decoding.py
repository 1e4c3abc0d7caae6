"""The health probe keeps the newest offset sync of each source partition; it decodes only those."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirror.client.models import OffsetSync, TopicPartition
from mirror.health.probe import apply_newest_syncs, apply_sync
from tests.support.fakes import message

#: a sync of one of three source partitions, or a record that is not a sync (bad value, truncated key)
_record = st.one_of(
    st.tuples(st.sampled_from([("orders", 0), ("orders", 1), ("audit", 0)]),
              st.integers(0, 10**6), st.integers(0, 10**6)).map(
        lambda t: (OffsetSync(TopicPartition(*t[0]), t[1], t[2]).key_bytes(),
                   OffsetSync(TopicPartition(*t[0]), t[1], t[2]).value_bytes())),
    st.sampled_from([("orders", 0), ("audit", 0)]).map(
        lambda tp: (OffsetSync(TopicPartition(*tp), 0, 0).key_bytes(), b"short")),
    st.just((b"\x00", b"\x00" * 16)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_record, max_size=40), st.dictionaries(st.sampled_from([("orders", 0), ("x", 9)]),
                                                       st.tuples(st.integers(0, 9), st.integers(0, 9))))
def test_newest_syncs_leave_the_store_as_applying_every_sync_in_order(
        records: list[tuple[bytes, bytes]], before: dict[tuple[str, int], tuple[int, int]]) -> None:
    messages = [message("mm2-offset-syncs.B.internal", 0, offset, key, value)
                for offset, (key, value) in enumerate(records)]
    every, newest = dict(before), dict(before)
    for msg in messages:
        apply_sync(msg, every)
    apply_newest_syncs(messages, newest)
    assert newest == every


def test_only_the_newest_sync_of_each_partition_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[bytes | None] = []
    real = OffsetSync.from_record

    def counting(key: bytes | None, value: bytes | None) -> OffsetSync:
        decoded.append(value)
        return real(key, value)

    syncs = [OffsetSync(TopicPartition("orders", p), u, u + 7) for u in range(0, 1000, 100) for p in (0, 1)]
    messages = [message("s", 0, i, s.key_bytes(), s.value_bytes()) for i, s in enumerate(syncs)]
    store: dict[tuple[str, int], tuple[int, int]] = {}
    monkeypatch.setattr(OffsetSync, "from_record", staticmethod(counting))
    apply_newest_syncs(messages, store)
    assert store == {("orders", 0): (900, 907), ("orders", 1): (900, 907)}
    assert len(decoded) == 2
