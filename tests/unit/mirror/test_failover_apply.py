"""apply_failover's refusal rules through a recording fake AdminClient (no sockets).

The broker-side refusal (UNKNOWN_MEMBER_ID when a member joins between the state check and the write)
cannot be provoked deterministically on a real broker, so it is tested here.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException

from mirror.client import failover
from mirror.client.failover import FailoverPlan, GroupActiveError, PartitionMove, apply_failover


class _Description:
    def __init__(self, state: ConsumerGroupState) -> None:
        self.state = state


class _Result:
    def __init__(self, tps: list[Any]) -> None:
        self.topic_partitions = tps


class FakeAdmin:
    state = ConsumerGroupState.EMPTY
    alter_error: KafkaException | None = None
    altered: list[Any] = []

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def describe_consumer_groups(self, groups: list[str], request_timeout: float) -> dict[str, Future[Any]]:
        future: Future[Any] = Future()
        future.set_result(_Description(FakeAdmin.state))
        return {groups[0]: future}

    def alter_consumer_group_offsets(self, requests: list[Any], request_timeout: float) -> dict[str, Future[Any]]:
        future: Future[Any] = Future()
        if FakeAdmin.alter_error is not None:
            future.set_exception(FakeAdmin.alter_error)
        else:
            FakeAdmin.altered.extend(requests[0].topic_partitions)
            future.set_result(_Result(requests[0].topic_partitions))
        return {requests[0].group_id: future}


def move(partition: int, action: str) -> PartitionMove:
    return PartitionMove("A.t", partition, None, 10 + partition, 12, 12, 12, 2, "offset-sync", action)


@pytest.fixture
def plan(monkeypatch: pytest.MonkeyPatch) -> FailoverPlan:
    monkeypatch.setattr(failover, "AdminClient", FakeAdmin)
    FakeAdmin.state, FakeAdmin.alter_error, FakeAdmin.altered = ConsumerGroupState.EMPTY, None, []
    return FailoverPlan("g", "A", {"bootstrap.servers": "b:9092"}, "EMPTY",
                        [move(0, "commit"), move(1, "unchanged"), move(2, "skip (would rewind)")])


def test_writes_only_the_commit_partitions(plan: FailoverPlan) -> None:
    assert apply_failover(plan) == [plan.partitions[0]]
    assert [(tp.topic, tp.partition, tp.offset) for tp in FakeAdmin.altered] == [("A.t", 0, 10)]


@pytest.mark.parametrize("state", [ConsumerGroupState.STABLE, ConsumerGroupState.PREPARING_REBALANCING,
                                   ConsumerGroupState.COMPLETING_REBALANCING])
def test_refuses_an_active_group_without_writing(plan: FailoverPlan, state: ConsumerGroupState) -> None:
    FakeAdmin.state = state
    with pytest.raises(GroupActiveError, match=state.name):
        apply_failover(plan)
    assert FakeAdmin.altered == []


def test_broker_refusal_is_a_group_active_error(plan: FailoverPlan) -> None:
    FakeAdmin.alter_error = KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID))
    with pytest.raises(GroupActiveError, match="active members"):
        apply_failover(plan)


def test_plan_active_flag_and_render(plan: FailoverPlan) -> None:
    assert not plan.active and [p.partition for p in plan.changes] == [0]
    assert FailoverPlan("g", "A", {}, "STABLE").active
    lines = plan.render().splitlines()
    assert lines[0].split() == ["TOPIC", "PARTITION", "CURRENT", "NEW", "REPLAY<=", "ACTION"]
    assert lines[3].split() == ["A.t", "2", "-", "12", "2", "skip", "(would", "rewind)"]
