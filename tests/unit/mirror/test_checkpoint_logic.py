"""Pure rules of the checkpoint connector and task, with fakes at the admin seam."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from connect_runtime.api.errors import ConnectError, RetriableError
from mirror.checkpoint.connector import MirrorCheckpointConnector, find_consumer_groups, group_partitions
from mirror.checkpoint.group_sync import GroupOffsetSync, plan_group_sync
from mirror.checkpoint.task import checkpoints_for_group
from mirror.client.models import Checkpoint, OffsetAndMetadata, TopicPartition
from mirror.client.replication_policy import DefaultReplicationPolicy
from mirror.config.checkpoint import MirrorCheckpointConfig
from mirror.filters import DefaultGroupFilter, DefaultTopicFilter
from tests.support.mm2 import flow_config, start_connector


def test_group_partitions_are_contiguous_with_the_extra_ones_first() -> None:
    assert group_partitions(["a", "b", "c", "d", "e"], 3) == [["a", "b"], ["c", "d"], ["e"]]
    assert group_partitions(["a", "b"], 2) == [["a"], ["b"]]
    assert group_partitions([], 1) == [[]]


class GroupsAdmin:
    def __init__(self, offsets: dict[str, dict[tuple[str, int], tuple[int, str | None]]],
                 states: dict[str, str] | None = None) -> None:
        self.offsets = offsets
        self.states = states or {}
        self.altered: list[tuple[str, dict[tuple[str, int], Any]]] = []
        self.alter_error: ConnectError | None = None
        #: groups whose offsets cannot be read, and why (TopicAdmin's per-group errors)
        self.unreadable: dict[str, ConnectError] = {}
        #: the groups of each offset listing and of each describe, in call order
        self.listings: list[list[str]] = []
        self.describes: list[list[str]] = []

    def list_consumer_groups(self) -> list[str]:
        return sorted(self.offsets)

    def list_consumer_group_offsets(self, groups: Iterable[str], *, errors: dict[str, ConnectError] | None = None
                                    ) -> dict[str, dict[tuple[str, int], Any]]:
        groups = list(groups)
        self.listings.append(groups)
        for group in groups:
            if group in self.unreadable:
                if errors is None:
                    raise self.unreadable[group]
                errors[group] = self.unreadable[group]
        return {g: dict(self.offsets.get(g, {})) for g in groups if g not in self.unreadable}

    def describe_consumer_groups(self, groups: Iterable[str]) -> dict[str, str]:
        groups = list(groups)
        self.describes.append(groups)
        return {g: self.states.get(g, "DEAD") for g in groups}

    def alter_consumer_group_offsets(self, group: str, offsets: Mapping[tuple[str, int], Any]) -> None:
        self.altered.append((group, dict(offsets)))
        if self.alter_error is not None:
            raise self.alter_error


def test_only_groups_with_offsets_on_accepted_topics_qualify() -> None:
    admin = GroupsAdmin({
        "app": {("orders", 0): (5, None)},
        "other-app": {("unrelated", 0): (1, None)},
        "both": {("unrelated", 0): (1, None), ("orders", 1): (2, None)},
        "console-consumer-1": {("orders", 0): (5, None)},  # excluded by the default group filter
    })
    groups = find_consumer_groups(admin, DefaultGroupFilter({}), DefaultTopicFilter({"topics": "orders"}))
    assert groups == {"app", "both"}


class FakeConnectorAdmin(GroupsAdmin):
    def __init__(self, offsets: dict[str, dict[tuple[str, int], tuple[int, str | None]]]) -> None:
        super().__init__(offsets)
        self.created: list[str] = []

    def create_topic(self, name: str, *args: Any, **kwargs: Any) -> bool:
        self.created.append(name)
        return True


def connector_with(offsets: dict[str, dict[tuple[str, int], tuple[int, str | None]]], **config: str
                   ) -> tuple[MirrorCheckpointConnector, FakeConnectorAdmin]:
    admin = FakeConnectorAdmin(offsets)
    connector = MirrorCheckpointConnector(admin_factory=lambda *a, **k: admin)
    props = flow_config("src", "tgt", "a:1", "b:1", name="MirrorCheckpointConnector",
                        overrides={"topics": "orders", **config})
    start_connector(connector, props)
    return connector, admin


def test_connector_creates_checkpoints_topic_and_chunks_groups() -> None:
    offsets = {f"g{i}": {("orders", 0): (1, None)} for i in range(5)}
    connector, admin = connector_with(offsets)
    try:
        assert admin.created == ["src.checkpoints.internal"]
        configs = connector.task_configs(3)
        assert [c["task.assigned.groups"] for c in configs] == ["g0,g1", "g2,g3", "g4"]
        assert [c["task.index"] for c in configs] == ["0", "1", "2"]
        assert all(c["source.cluster.alias"] == "src" for c in configs)
    finally:
        connector.stop()


def test_connector_without_groups_or_disabled_has_no_tasks() -> None:
    connector, _ = connector_with({})
    try:
        assert connector.task_configs(3) == []
    finally:
        connector.stop()
    disabled, admin = connector_with({"g": {("orders", 0): (1, None)}}, enabled="false")
    assert disabled.task_configs(3) == [] and admin.created == []
    no_emit, _ = connector_with({"g": {("orders", 0): (1, None)}}, **{"emit.checkpoints.enabled": "false"})
    try:
        assert no_emit.task_configs(3) == []
    finally:
        no_emit.stop()


def test_connector_asks_to_retry_until_groups_are_loaded() -> None:
    connector = MirrorCheckpointConnector()
    # started, but the initial group listing has not finished (or failed)
    connector._config = MirrorCheckpointConfig(flow_config("src", "tgt", "a:1", "b:1",
                                                           name="MirrorCheckpointConnector"))
    with pytest.raises(RetriableError):
        connector.task_configs(1)


def test_connector_validation_needs_checkpoints_and_offset_syncs() -> None:
    props = flow_config("src", "tgt", "a:1", "b:1", name="MirrorCheckpointConnector",
                        overrides={"emit.checkpoints.enabled": "false", "emit.offset-syncs.enabled": "false"})
    result = MirrorCheckpointConnector().validate(props)
    assert result["emit.checkpoints.enabled"].errors
    assert result["emit.offset-syncs.enabled"].errors
    props["enabled"] = "false"
    result = MirrorCheckpointConnector().validate(props)
    assert not result["emit.checkpoints.enabled"].errors


# ---- checkpoints --------------------------------------------------------------------------------------


def make_checkpoints(upstream: dict[tuple[str, int], tuple[int, str | None]],
                     translate: dict[tuple[str, int], int | None],
                     last: dict[TopicPartition, Checkpoint] | None = None,
                     topics: str = ".*") -> dict[TopicPartition, Checkpoint]:
    return checkpoints_for_group(
        "g", upstream, policy=DefaultReplicationPolicy(), topic_filter=DefaultTopicFilter({"topics": topics}),
        source_alias="source1", target_alias="target2",
        translate_downstream=lambda group, tp, offset: translate.get((tp.topic, tp.partition)),
        last_checkpoint=lambda tp: (last or {}).get(tp))


def test_checkpoints_are_renamed_to_the_target_side_topic() -> None:
    upstream = {("topic3", 0): (10, None), ("target2.topic3", 0): (10, "meta"), ("source6.topic7", 1): (10, None)}
    result = make_checkpoints(upstream, {k: 8 for k in upstream})
    assert set(result) == {TopicPartition("source1.topic3", 0), TopicPartition("topic3", 0),
                           TopicPartition("source1.source6.topic7", 1)}
    assert result[TopicPartition("topic3", 0)].metadata == "meta"
    assert result[TopicPartition("source1.topic3", 0)].metadata == ""  # null metadata is written as ""


def test_untranslatable_and_filtered_offsets_give_no_checkpoint() -> None:
    upstream = {("no-sync", 0): (10, None), ("too-old", 0): (10, None), ("filtered", 0): (10, None),
                ("ok", 0): (10, None)}
    result = make_checkpoints(upstream, {("too-old", 0): -1, ("filtered", 0): 5, ("ok", 0): 9},
                              topics="no-sync,too-old,ok")
    assert [(tp.topic, cp.upstream_offset, cp.downstream_offset) for tp, cp in result.items()] == [
        ("source1.ok", 10, 9)]


def test_checkpoints_never_go_backwards_unless_upstream_rewinds() -> None:
    tp = TopicPartition("source1.t", 0)
    last = {tp: Checkpoint("g", tp, 100, 90)}
    assert make_checkpoints({("t", 0): (120, None)}, {("t", 0): 85}, last) == {}  # downstream would regress
    assert make_checkpoints({("t", 0): (120, None)}, {("t", 0): 90}, last) == {}  # a repeat
    assert make_checkpoints({("t", 0): (120, None)}, {("t", 0): 95}, last)[tp].downstream_offset == 95
    assert make_checkpoints({("t", 0): (50, None)}, {("t", 0): 41}, last)[tp].downstream_offset == 41  # rewind


# ---- sync.group.offsets --------------------------------------------------------------------------------


def test_plan_group_sync_moves_forward_inside_the_target_log() -> None:
    checkpointed = {TopicPartition("t", 0): OffsetAndMetadata(10, ""), TopicPartition("t", 1): OffsetAndMetadata(5, ""),
                    TopicPartition("t", 2): OffsetAndMetadata(7, "m")}
    assert plan_group_sync(checkpointed, {}, {}) == ({("t", 0): (10, ""), ("t", 1): (5, ""), ("t", 2): (7, "m")}, 0)
    target = {("t", 0): (12, None), ("t", 1): (3, None)}
    assert plan_group_sync(checkpointed, target, {})[0] == {("t", 1): (5, ""), ("t", 2): (7, "m")}
    synced = {("t", 0): (10, None), ("t", 1): (5, None), ("t", 2): (9, None)}
    assert plan_group_sync(checkpointed, synced, {}) == ({}, 0)
    # never past the end (t-0 ends at 8), never before the first record (t-1 starts at 6)
    assert plan_group_sync(checkpointed, {}, {("t", 0): (0, 8), ("t", 1): (6, 9), ("t", 2): (0, 7)}) == (
        {("t", 0): (8, ""), ("t", 1): (6, ""), ("t", 2): (7, "m")}, 2)


def test_group_sync_never_writes_groups_with_members() -> None:
    """Only the admin seam is faked: describe/list/alter are recorded; the broker side is integration-tested."""
    admin = GroupsAdmin({"idle": {("src.t", 0): (20, None)}, "active": {}},
                        states={"idle": "EMPTY", "active": "STABLE", "new": "DEAD"})
    checkpointed = {
        "idle": {TopicPartition("src.t", 0): OffsetAndMetadata(15, ""),
                 TopicPartition("src.t", 1): OffsetAndMetadata(4, "")},
        "active": {TopicPartition("src.t", 0): OffsetAndMetadata(3, "")},
        "new": {TopicPartition("src.t", 0): OffsetAndMetadata(8, "")},
    }
    outcomes: list[tuple[str, int]] = []
    sync = GroupOffsetSync(admin, {}, lambda: checkpointed, ["idle", "active", "new"],
                           on_outcome=lambda o, n: outcomes.append((o, n)), bounds=lambda tps: {})
    assert sync.run() == {"idle": {("src.t", 1): (4, "")}, "new": {("src.t", 0): (8, "")}}
    assert [g for g, _ in admin.altered] == ["idle", "new"]  # never the active one
    status = sync.status()
    assert (status["idle"].outcome, status["active"].outcome, status["new"].outcome) == ("written", "active", "written")
    assert "STABLE" in status["active"].reason
    admin.states["new"] = "EMPTY"
    admin.offsets["new"] = {("src.t", 0): (8, None)}
    admin.offsets["idle"] = {("src.t", 0): (20, None), ("src.t", 1): (4, None)}
    admin.alter_error = ConnectError("UNKNOWN_MEMBER_ID: the group is active")
    assert sync.run() == {}  # everything synced: nothing written, nothing refused
    assert sync.status()["new"].outcome == "synced"
    checkpointed["new"][TopicPartition("src.t", 0)] = OffsetAndMetadata(9, "")
    assert sync.run() == {}  # a member joined between describe and write: the broker refused it
    assert sync.status()["new"].outcome == "active"
    assert ("written", 1) in outcomes and ("active", 1) in outcomes


def test_group_sync_reads_its_groups_in_one_call_and_a_group_it_cannot_read_fails_alone() -> None:
    """One describe and one offset listing for all the pass's groups (not the active one, nor one that does not
    exist on the target), one read of the bounds of every partition to write, then a read right before each
    write; a group whose offsets cannot be read is that group's failure, the others are written."""
    groups = [f"g{i}" for i in range(5)]
    admin = GroupsAdmin({g: {} for g in groups},
                        states={"g0": "EMPTY", "g1": "STABLE", "g2": "EMPTY", "g3": "DEAD", "g4": "EMPTY"})
    admin.unreadable["g2"] = ConnectError("listing offsets of group g2: GROUP_AUTHORIZATION_FAILED")
    checkpointed = {g: {TopicPartition("src.t", i): OffsetAndMetadata(10 + i, "")} for i, g in enumerate(groups)}
    bounds_read: list[list[tuple[str, int]]] = []

    def bounds(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        bounds_read.append(partitions)
        return {tp: (0, 12) for tp in partitions}  # g3 and g4 are checkpointed past the end: kept inside the log

    sync = GroupOffsetSync(admin, {}, lambda: checkpointed, groups, bounds=bounds)
    assert sync.run() == {"g0": {("src.t", 0): (10, "")}, "g3": {("src.t", 3): (12, "")},
                          "g4": {("src.t", 4): (12, "")}}
    assert admin.describes == [groups]
    assert admin.listings == [["g0", "g2", "g4"], ["g0"], ["g3"], ["g4"]]  # all at once, then before each write
    assert bounds_read == [[("src.t", 0), ("src.t", 3), ("src.t", 4)]]
    assert [g for g, _ in admin.altered] == ["g0", "g3", "g4"]  # never the active one, nor the unread one
    status = sync.status()
    assert [status[g].outcome for g in groups] == ["written", "active", "failed", "written", "written"]
    assert "GROUP_AUTHORIZATION_FAILED" in status["g2"].reason
