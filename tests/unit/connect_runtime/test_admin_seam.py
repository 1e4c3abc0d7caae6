"""TopicAdmin through a fake AdminClient: the paths Tansu cannot exercise.

Tansu does not support CreatePartitions and librdkafka aborts the process on its CreateAcls answer
(docs/tansu.md), and error tolerances need errors a healthy broker does not give. The shared fake
client (tests/support/fakes.py) records calls and answers with prepared futures.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.clients.admin import (
    CREATE_BATCH_PARTITIONS,
    GROUP_OFFSETS_IN_FLIGHT,
    THROTTLE_BACKOFF_S,
    TopicAdmin,
    TopicSpec,
    create_batches,
)
from connect_runtime.clients.errors import kafka_error_of
from tests.support.fakes import FakeAdminClient, calls_to


def make(fake: FakeAdminClient) -> TopicAdmin:
    client: AdminClient = fake  # type: ignore[assignment]
    return TopicAdmin({}, client=client, timeout_s=5)


def test_create_partitions_on_a_cluster_without_support_warns_once_per_topic(
        caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeAdminClient(answers={"create_partitions": {"tansu-topic": KafkaError._UNSUPPORTED_FEATURE,
                                                          "full": KafkaError.INVALID_PARTITIONS}})
    admin = make(fake)
    with caplog.at_level(logging.DEBUG, logger="connect_runtime.clients.admin"):
        grown = admin.create_partitions({"tansu-topic": 8, "grows": 4, "full": 2})
    assert grown == {"grows"}
    assert [[(p.topic, p.new_total_count) for p in request] for request in calls_to(fake, "create_partitions")] == [
        [("tansu-topic", 8), ("grows", 4), ("full", 2)]]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'tansu-topic'" in warnings[0] and "8" in warnings[0]


def test_create_partitions_raises_on_other_errors() -> None:
    admin = make(FakeAdminClient(answers={"create_partitions": {"t": KafkaError.INVALID_REQUEST}}))
    with pytest.raises(ConnectError, match="creating partitions for topic t"):
        admin.create_partitions({"t": 3})
    assert make(FakeAdminClient()).create_partitions({}) == set()


def test_create_acls_sends_the_bindings_and_maps_errors() -> None:
    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    fake = FakeAdminClient()
    make(fake).create_acls([binding])
    assert fake.calls == [("create_acls", [binding])]

    denied = FakeAdminClient(answers={"create_acls": {binding: KafkaError.CLUSTER_AUTHORIZATION_FAILED}})
    with pytest.raises(ConnectError, match="creating ACL"):
        make(denied).create_acls([binding])
    empty = FakeAdminClient()
    make(empty).create_acls([])
    assert empty.calls == []


def test_create_topic_tolerates_what_mm2_tolerates(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeAdminClient(answers={"create_topics": {"exists": KafkaError.TOPIC_ALREADY_EXISTS,
                                                      "denied": KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                                      "old-broker": KafkaError.UNSUPPORTED_VERSION}})
    admin = make(fake)
    assert admin.create_topic("new", 1, 3, {"retention.ms": "1"}, compacted=True) is True
    [request] = calls_to(fake, "create_topics")
    assert [(t.topic, t.num_partitions, t.replication_factor, t.config) for t in request] == [
        ("new", 1, 3, {"retention.ms": "1", "cleanup.policy": "compact"})]
    with caplog.at_level(logging.WARNING, logger="connect_runtime.clients.admin"):
        assert admin.create_topic("exists", 1, 3) is False
        assert admin.create_topic("denied", 1, 3) is False
        assert admin.create_topic("old-broker", 1, 3) is False
    assert len(caplog.records) == 2  # "already exists" is only a debug line


@pytest.mark.parametrize(("code", "error", "text"), [
    (KafkaError.INVALID_CONFIG, ConnectError, "Unable to create topic 'bad'"),
    (KafkaError.REQUEST_TIMED_OUT, ConnectError, "Timed out"),
    (KafkaError.POLICY_VIOLATION, ConnectError, "Unable to create topic 'bad'"),
])
def test_create_topic_raises_on_invalid_config_and_timeouts(code: int, error: type[Exception],
                                                            text: str) -> None:
    admin = make(FakeAdminClient(answers={"create_topics": {"bad": code}}))
    with pytest.raises(error, match=text):
        admin.create_topic("bad", 1, 3)


def test_alter_group_offsets_raises_on_a_partition_error() -> None:
    # TopicPartition.error is read-only in confluent-kafka: a stand-in with the same attributes.
    bad = type("TP", (), {"topic": "t", "partition": 1, "offset": 5,
                          "error": KafkaError(KafkaError.UNKNOWN_MEMBER_ID)})()
    answer = type("Answer", (), {"topic_partitions": [TopicPartition("t", 0, 5), bad]})()
    fake = FakeAdminClient(answers={"alter_consumer_group_offsets": {"g": answer}})
    with pytest.raises(ConnectError, match="t-1"):
        make(fake).alter_consumer_group_offsets("g", {("t", 0): 5, ("t", 1): (5, "meta")})
    assert [[(r.group_id, [(tp.topic, tp.partition, tp.offset) for tp in r.topic_partitions]) for r in request]
            for request in calls_to(fake, "alter_consumer_group_offsets")] == [[("g", [("t", 0, 5), ("t", 1, 5)])]]


def test_transient_client_errors_are_retriable() -> None:
    fake = FakeAdminClient(answers={"create_partitions": {"t": KafkaError._TRANSPORT}})
    with pytest.raises(RetriableError):
        make(fake).create_partitions({"t": 3})


def test_a_group_the_cluster_refuses_can_be_reported_in_a_given_state() -> None:
    """The health probe reads a group the cluster answers with an error as DEAD; a timeout still raises."""
    from types import SimpleNamespace

    from confluent_kafka import ConsumerGroupState

    fake = FakeAdminClient(answers={"describe_consumer_groups": {
        "live": SimpleNamespace(state=ConsumerGroupState.STABLE), "gone": KafkaError.GROUP_ID_NOT_FOUND}})
    assert make(fake).describe_consumer_groups(["live", "gone"], refused_state="DEAD") == {
        "live": "STABLE", "gone": "DEAD"}
    with pytest.raises(ConnectError, match="describing group gone"):
        make(fake).describe_consumer_groups(["live", "gone"])
    fake.answers["describe_consumer_groups"]["slow"] = TimeoutError()  # the future's wait runs out
    with pytest.raises(ConnectError, match="timed out"):
        make(fake).describe_consumer_groups(["slow"], refused_state="DEAD")


def test_create_topics_sends_batches_of_at_most_the_partition_limit() -> None:
    fake = FakeAdminClient()
    per_topic = 4
    count = CREATE_BATCH_PARTITIONS // per_topic * 2 + 3  # two full batches and three topics
    topics = {f"t{i:05d}": TopicSpec(per_topic, 1, {"retention.ms": "1000"}) for i in range(count)}
    outcome = make(fake).create_topics(topics)
    requests = calls_to(fake, "create_topics")
    assert [len(r) for r in requests] == [CREATE_BATCH_PARTITIONS // per_topic] * 2 + [3]
    assert [t.topic for r in requests for t in r] == list(topics)
    assert {(t.num_partitions, t.replication_factor) for r in requests for t in r} == {(per_topic, 1)}
    assert requests[0][0].config == {"retention.ms": "1000"}
    assert outcome.created == list(topics)
    assert (outcome.existed, outcome.throttled, outcome.failed, outcome.skipped) == ([], [], {}, [])


def test_create_batches_count_a_default_partition_count_as_one_and_never_split_a_topic() -> None:
    batches = create_batches({"big": TopicSpec(5_000), "a": TopicSpec(), "b": TopicSpec(1_999), "c": TopicSpec(1)})
    assert [[name for name, _ in batch] for batch in batches] == [["big"], ["a", "b"], ["c"]]


class ThrottlingAdminClient(FakeAdminClient):
    """Answers THROTTLING_QUOTA_EXCEEDED for ``throttled`` topics the first ``times`` times they are sent."""

    def __init__(self, throttled: set[str], times: int) -> None:
        super().__init__()
        self.left = dict.fromkeys(throttled, times)

    def create_topics(self, new_topics: list[Any], **kwargs: Any) -> dict[str, Any]:
        self.answers["create_topics"] = {}
        for topic in new_topics:
            if self.left.get(topic.topic, 0) > 0:
                self.left[topic.topic] -= 1
                self.answers["create_topics"][topic.topic] = KafkaError.THROTTLING_QUOTA_EXCEEDED
        return super().create_topics(new_topics, **kwargs)


class RecordedWaits(threading.Event):
    """A stop event that is never set and records the backoffs waited on it, without waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return False


def test_create_topics_sends_throttled_topics_again_after_a_doubling_backoff() -> None:
    fake = ThrottlingAdminClient({"b", "c"}, times=2)
    stop = RecordedWaits()
    outcome = make(fake).create_topics({name: TopicSpec(1, 1) for name in "abc"}, deadline_s=60, stop=stop)
    assert [[t.topic for t in r] for r in calls_to(fake, "create_topics")] == [["a", "b", "c"], ["b", "c"], ["b", "c"]]
    assert stop.waits == [THROTTLE_BACKOFF_S[0], THROTTLE_BACKOFF_S[0] * 2]
    assert outcome.created == ["a", "b", "c"] and outcome.throttled == []


def test_create_topics_reports_what_is_still_throttled_at_the_deadline_and_sorts_the_rest() -> None:
    fake = ThrottlingAdminClient({"slow"}, times=100)
    outcome = make(fake).create_topics({"slow": TopicSpec(1, 1), "fine": TopicSpec(1, 1)}, deadline_s=0)
    assert outcome.throttled == ["slow"] and outcome.created == ["fine"]
    existing = FakeAdminClient(answers={"create_topics": {"old": KafkaError.TOPIC_ALREADY_EXISTS,
                                                          "denied": KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                                          "bad": KafkaError.INVALID_CONFIG}})
    outcome = make(existing).create_topics({"old": TopicSpec(), "denied": TopicSpec(), "bad": TopicSpec(),
                                            "new": TopicSpec()})
    assert outcome.existed == ["old", "denied"] and outcome.created == ["new"]
    assert list(outcome.failed) == ["bad"] and "INVALID_CONFIG" in outcome.failed["bad"]


def test_create_topics_stops_between_batches_and_during_a_backoff() -> None:
    stop = threading.Event()
    stop.set()
    fake = FakeAdminClient()
    outcome = make(fake).create_topics({"a": TopicSpec(1), "b": TopicSpec(1)}, stop=stop)
    assert calls_to(fake, "create_topics") == [] and outcome.skipped == ["a", "b"]
    throttling = ThrottlingAdminClient({"b"}, times=1)
    waited = threading.Timer(0.2, stop.set)
    stop.clear()
    waited.start()
    outcome = make(throttling).create_topics({"a": TopicSpec(1), "b": TopicSpec(1)}, deadline_s=60, stop=stop)
    waited.join()
    assert outcome.created == ["a"] and outcome.skipped == ["b"] and outcome.throttled == []
    assert len(calls_to(throttling, "create_topics")) == 1


class AnsweredOnWait(Future[Any]):
    """A future that stays pending until someone waits on it: the order of sends and answers is the caller's."""

    def __init__(self, answer: Callable[[AnsweredOnWait], None]) -> None:
        super().__init__()
        self._answer = answer

    def result(self, timeout: float | None = None) -> Any:
        if not self.done():
            self._answer(self)
        return super().result(timeout)


class GroupOffsetsClient(FakeAdminClient):
    """ListConsumerGroupOffsets as librdkafka takes it (one group per call), answered only when waited on.

    ``committed[group]`` is the group's committed offset on partition 0 of topic ``t``; ``refused[group]`` a
    KafkaError code its request fails with; a group in ``silent`` is never answered. ``events`` holds
    ("sent", group) and ("answered", group) in the order they happened; ``most_in_flight`` the most requests
    sent and not yet answered at any time.
    """

    def __init__(self, committed: dict[str, int], refused: dict[str, int] | None = None,
                 silent: set[str] | None = None) -> None:
        super().__init__()
        self.committed = committed
        self.refused = refused or {}
        self.silent = silent or set()
        self.events: list[tuple[str, str]] = []
        self.in_flight: set[str] = set()
        self.most_in_flight = 0

    def list_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                    **kwargs: Any) -> dict[str, Future[Any]]:
        [request] = requests  # confluent-kafka refuses more than one group per call
        group = request.group_id
        self.events.append(("sent", group))
        if group in self.silent:
            return {group: Future()}
        self.in_flight.add(group)
        self.most_in_flight = max(self.most_in_flight, len(self.in_flight))

        def answer(future: AnsweredOnWait) -> None:
            self.events.append(("answered", group))
            self.in_flight.discard(group)
            if group in self.refused:
                future.set_exception(KafkaException(KafkaError(self.refused[group])))
            else:
                future.set_result(ConsumerGroupTopicPartitions(
                    group, [TopicPartition("t", 0, self.committed[group], f"m-{group}")]))

        return {group: AnsweredOnWait(answer)}


def test_group_offsets_are_all_requested_before_the_first_answer_is_awaited() -> None:
    groups = [f"g{i}" for i in range(10)]
    fake = GroupOffsetsClient({g: i for i, g in enumerate(groups)})
    offsets = make(fake).list_consumer_group_offsets(groups)
    assert fake.events == [("sent", g) for g in groups] + [("answered", g) for g in groups]
    assert offsets == {g: {("t", 0): (i, f"m-{g}")} for i, g in enumerate(groups)}


def test_group_offsets_keep_at_most_the_bound_in_flight() -> None:
    groups = [f"g{i:03d}" for i in range(GROUP_OFFSETS_IN_FLIGHT * 3 + 5)]
    fake = GroupOffsetsClient({g: i for i, g in enumerate(groups)})
    offsets = make(fake).list_consumer_group_offsets(groups)
    assert fake.most_in_flight == GROUP_OFFSETS_IN_FLIGHT
    sent = [g for event, g in fake.events if event == "sent"]
    first_answer = fake.events.index(("answered", groups[0]))
    assert sent == groups and first_answer == GROUP_OFFSETS_IN_FLIGHT  # the bound sent, then answers and sends
    assert list(offsets) == groups and offsets[groups[-1]] == {("t", 0): (len(groups) - 1, f"m-{groups[-1]}")}


def test_a_group_whose_offsets_cannot_be_read_is_that_groups_error_alone() -> None:
    fake = GroupOffsetsClient({"a": 1, "b": 2, "c": 3}, refused={"b": KafkaError.GROUP_AUTHORIZATION_FAILED})
    errors: dict[str, ConnectError] = {}
    assert make(fake).list_consumer_group_offsets(["a", "b", "c"], errors=errors) == {
        "a": {("t", 0): (1, "m-a")}, "c": {("t", 0): (3, "m-c")}}
    assert list(errors) == ["b"] and "listing offsets of group b" in str(errors["b"])
    cause = kafka_error_of(errors["b"].__cause__) if errors["b"].__cause__ is not None else None
    assert cause is not None and cause.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    with pytest.raises(ConnectError, match="listing offsets of group b"):  # without errors: the first one raises
        make(fake).list_consumer_group_offsets(["a", "b", "c"])


def test_a_group_the_cluster_never_answers_times_out_alone() -> None:
    fake = GroupOffsetsClient({"a": 1, "c": 3}, silent={"slow"})
    admin = TopicAdmin({}, client=fake, timeout_s=0.05)  # type: ignore[arg-type]
    errors: dict[str, ConnectError] = {}
    assert admin.list_consumer_group_offsets(["a", "slow", "c"], errors=errors) == {
        "a": {("t", 0): (1, "m-a")}, "c": {("t", 0): (3, "m-c")}}
    assert list(errors) == ["slow"] and "timed out" in str(errors["slow"])


class RefusingToSend(GroupOffsetsClient):
    """The client itself refuses one group's request (librdkafka raises at the call, e.g. its queue is full)."""

    def list_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                    **kwargs: Any) -> dict[str, Future[Any]]:
        if requests[0].group_id == "full":
            raise KafkaException(KafkaError(KafkaError._QUEUE_FULL))
        return super().list_consumer_group_offsets(requests, **kwargs)


def test_a_request_the_client_refuses_to_send_is_that_groups_error_alone() -> None:
    fake = RefusingToSend({"a": 1, "c": 3})
    errors: dict[str, ConnectError] = {}
    assert list(make(fake).list_consumer_group_offsets(["a", "full", "c"], errors=errors)) == ["a", "c"]
    assert list(errors) == ["full"]
    with pytest.raises(ConnectError, match="listing offsets of group full"):
        make(fake).list_consumer_group_offsets(["a", "full", "c"])
