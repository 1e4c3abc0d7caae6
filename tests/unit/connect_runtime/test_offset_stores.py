"""Offset-store logic that needs no broker: MemoryOffsetStore, partition identity, key parsing."""

from __future__ import annotations

import pytest

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.storage.kafka_offset_store import OffsetStoreReader, connector_of
from connect_runtime.storage.memory import MemoryOffsetStore, partition_id
from connect_runtime.storage.offset_store import serialize_key


def test_partition_id_ignores_field_order_but_not_types() -> None:
    assert partition_id({"a": 1, "b": "x"}) == partition_id({"b": "x", "a": 1})
    assert partition_id({"a": 1}) != partition_id({"a": "1"})
    assert partition_id({"a": 1}) != partition_id({"a": True})


def test_connector_of_reads_the_name_without_parsing_when_it_can() -> None:
    assert connector_of(serialize_key("MirrorSourceConnector", {"cluster": "a"})) == "MirrorSourceConnector"
    assert connector_of(serialize_key('we"ird,name', {"p": 1})) == 'we"ird,name'  # escaped: parsed
    assert connector_of(serialize_key("ünï", {})) == "ünï"
    assert connector_of(b'["a"]') is None  # not [name, map]
    assert connector_of(b"not json") is None


def test_memory_store_put_get_tombstone_and_isolation() -> None:
    store = MemoryOffsetStore()
    store.start()
    partition = {"cluster": "a", "topic": "t", "partition": 0}
    offset = {"offset": 5}
    store.put("c1", [(partition, offset), ({"cluster": "a", "topic": "t", "partition": 1}, {"offset": 6})])
    offset["offset"] = 99  # the store kept a copy
    assert store.get("c1", {"partition": 0, "topic": "t", "cluster": "a"}) == {"offset": 5}
    assert store.get("c2", partition) is None

    got = store.get("c1", partition)
    assert isinstance(got, dict)
    got["offset"] = 1  # and hands out copies
    assert store.get("c1", partition) == {"offset": 5}

    store.put("c1", [(partition, None)])
    assert store.get("c1", partition) is None
    assert store.connector_offsets("c1") == [({"cluster": "a", "topic": "t", "partition": 1}, {"offset": 6})]
    assert store.connectors() == ["c1"]
    reader = OffsetStoreReader(store, "c1")
    assert reader.offset(partition) is None
    assert reader.offsets([{"cluster": "a", "topic": "t", "partition": 1}]) == [
        ({"cluster": "a", "topic": "t", "partition": 1}, {"offset": 6})]


def test_memory_store_records_puts_fails_on_request_and_lists_in_partition_order() -> None:
    store = MemoryOffsetStore()
    assert not store.started
    store.start()
    assert store.started
    store.put("c", [({"p": "b"}, {"seq": 1}), ({"p": "a"}, {"seq": 2})])
    store.put("c", [({"p": "b"}, None)])
    assert store.history == [("c", [({"p": "b"}, {"seq": 1}), ({"p": "a"}, {"seq": 2})]), ("c", [({"p": "b"}, None)])]
    store.put("c", [({"p": "0"}, {"seq": 3})])
    assert store.connector_offsets("c") == [({"p": "0"}, {"seq": 3}), ({"p": "a"}, {"seq": 2})]
    store.fail_puts = True
    with pytest.raises(ConnectError, match="fail_puts"):
        store.put("c", [({"p": "a"}, {"seq": 9})])
    assert store.get("c", {"p": "a"}) == {"seq": 2} and len(store.history) == 3  # a failed put changes nothing
    store.stop()
    assert not store.started


class _SlowToCatchUp(MemoryOffsetStore):
    """A store whose log cannot be read to its end in time (Tansu on s3:// under load, a broker far away)."""

    def __init__(self, fail: bool) -> None:
        super().__init__()
        self.refreshes = 0
        self._fail = fail

    def refresh(self, timeout_s: float = 30.0) -> None:
        self.refreshes += 1
        if self._fail:
            raise RetriableError(f"Timed out after {timeout_s}s reading topic offsets to its end")


def test_a_task_reads_its_offsets_after_reading_the_store_to_its_end(caplog: pytest.LogCaptureFixture) -> None:
    """As Java's KafkaOffsetBackingStore.get: what another process wrote last (a hand-over, the previous
    owner's final commit) is seen. When the end cannot be reached in time, the task starts from what was
    read, with a warning (older offsets copy records again, never lose them)."""
    for fail in (False, True):
        store = _SlowToCatchUp(fail)
        store.put("c1", [({"p": 0}, {"o": 7})])
        reader = OffsetStoreReader(store, "c1")
        assert reader.offsets([{"p": 0}]) == [({"p": 0}, {"o": 7})]
        assert reader.offset({"p": 0}) == {"o": 7}
        assert store.refreshes == 2
    assert [r.levelname for r in caplog.records if "starting from the offsets read so far" in r.getMessage()] == \
        ["WARNING", "WARNING"]
