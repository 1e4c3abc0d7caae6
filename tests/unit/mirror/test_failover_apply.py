"""apply_failover's refusal rules through a recording fake AdminClient (no sockets).

The broker-side refusal (UNKNOWN_MEMBER_ID when a member joins between the state check and the write)
cannot be provoked deterministically on a real broker, so it is tested here.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import ConsumerGroupState, KafkaError

from mirror.client import failover
from mirror.client.failover import FailoverPlan, GroupActiveError, PartitionMove, apply_failover
from tests.support.fakes import FakeAdminClient, calls_to, factory_of


def move(partition: int, action: str) -> PartitionMove:
    return PartitionMove("A.t", partition, None, 10 + partition, 12, 12, 12, 2, "offset-sync", action)


def answer_state(admin: FakeAdminClient, state: ConsumerGroupState) -> None:
    admin.answers["describe_consumer_groups"] = {"g": SimpleNamespace(state=state)}


def altered(admin: FakeAdminClient) -> list[tuple[str, int, int]]:
    return [(tp.topic, tp.partition, tp.offset)
            for requests in calls_to(admin, "alter_consumer_group_offsets")
            for request in requests for tp in request.topic_partitions]


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> FakeAdminClient:
    fake = FakeAdminClient()
    answer_state(fake, ConsumerGroupState.EMPTY)
    monkeypatch.setattr(failover, "new_admin", factory_of(fake))
    return fake


@pytest.fixture
def plan(admin: FakeAdminClient) -> FailoverPlan:
    return FailoverPlan("g", "A", {"bootstrap.servers": "b:9092"}, "EMPTY",
                        [move(0, "commit"), move(1, "unchanged"), move(2, "skip (would rewind)")])


def test_writes_only_the_commit_partitions(plan: FailoverPlan, admin: FakeAdminClient) -> None:
    assert apply_failover(plan) == [plan.partitions[0]]
    assert altered(admin) == [("A.t", 0, 10)]
    assert admin.config["bootstrap.servers"] == "b:9092"


@pytest.mark.parametrize("state", [ConsumerGroupState.STABLE, ConsumerGroupState.PREPARING_REBALANCING,
                                   ConsumerGroupState.COMPLETING_REBALANCING])
def test_refuses_an_active_group_without_writing(plan: FailoverPlan, admin: FakeAdminClient,
                                                 state: ConsumerGroupState) -> None:
    answer_state(admin, state)
    with pytest.raises(GroupActiveError, match=state.name):
        apply_failover(plan)
    assert altered(admin) == []


def test_broker_refusal_is_a_group_active_error(plan: FailoverPlan, admin: FakeAdminClient) -> None:
    admin.answers["alter_consumer_group_offsets"] = {"g": KafkaError.UNKNOWN_MEMBER_ID}
    with pytest.raises(GroupActiveError, match="active members"):
        apply_failover(plan)


def test_plan_active_flag_and_render(plan: FailoverPlan) -> None:
    assert not plan.active and [p.partition for p in plan.changes] == [0]
    assert FailoverPlan("g", "A", {}, "STABLE").active
    lines = plan.render().splitlines()
    assert lines[0].split() == ["TOPIC", "PARTITION", "CURRENT", "NEW", "REPLAY<=", "ACTION"]
    assert lines[3].split() == ["A.t", "2", "-", "12", "2", "skip", "(would", "rewind)"]
