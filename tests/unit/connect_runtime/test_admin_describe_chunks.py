"""TopicAdmin describes thousands of topics a chunk at a time (connect_runtime.clients.admin).

A fake AdminClient stands in for the cluster: what is asserted is how many topics each call carries and
that every answer is read back before the next call, which a broker cannot show. The describes themselves
against a broker are in tests/integration/test_topic_admin.py.
"""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigEntry, ConfigResource, ConfigSource

from connect_runtime.clients.admin import DESCRIBE_CHUNK, TopicAdmin


class DescribingAdmin:
    """Answers DescribeTopics with 4 partitions a topic and DescribeConfigs with two entries a topic, each
    value a string of its own (as librdkafka's answers are); records each call's topics."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def describe_topics(self, topics: Any, **_: Any) -> dict[str, Future[Any]]:
        names = list(topics.topic_names)
        answers: dict[str, Future[Any]] = {}
        for name in names:
            answers[name] = Future()
            answers[name].set_result(SimpleNamespace(partitions=[0, 1, 2, 3]))
        self.calls.append(names)
        return answers

    def describe_configs(self, resources: list[ConfigResource], **_: Any) -> dict[ConfigResource, Future[Any]]:
        answers: dict[ConfigResource, Future[Any]] = {}
        for resource in resources:
            answers[resource] = Future()
            answers[resource].set_result({
                name: ConfigEntry(name.encode().decode(), str(604800000), source=ConfigSource.DEFAULT_CONFIG)
                for name in ("retention.ms", "segment.ms")})
        self.calls.append([r.name for r in resources])
        return answers


def admin_over(fake: DescribingAdmin) -> TopicAdmin:
    client: AdminClient = fake  # type: ignore[assignment]
    return TopicAdmin({}, client=client, timeout_s=5)


def test_topics_are_described_a_chunk_at_a_time() -> None:
    fake = DescribingAdmin()
    names = [f"t-{i:04d}" for i in range(2 * DESCRIBE_CHUNK + 7)]
    assert admin_over(fake).describe_topics(names) == dict.fromkeys(names, 4)
    assert [len(call) for call in fake.calls] == [DESCRIBE_CHUNK, DESCRIBE_CHUNK, 7]
    assert [name for call in fake.calls for name in call] == names
    assert admin_over(DescribingAdmin()).describe_topics([]) == {}


def test_configs_are_described_a_chunk_at_a_time_and_share_their_strings() -> None:
    """Equal names and values of thousands of topics are one string each."""
    fake = DescribingAdmin()
    names = [f"t-{i:04d}" for i in range(2 * DESCRIBE_CHUNK + 7)]
    described = admin_over(fake).describe_configs(names)
    assert [len(call) for call in fake.calls] == [DESCRIBE_CHUNK, DESCRIBE_CHUNK, 7]
    assert sorted(described) == names
    first, last = described[names[0]], described[names[-1]]
    assert [(e.name, e.value, e.source) for e in first] == [("retention.ms", "604800000", "DEFAULT_CONFIG"),
                                                            ("segment.ms", "604800000", "DEFAULT_CONFIG")]
    assert first[0].name is last[0].name
    assert first[0].value is last[0].value is last[1].value
    assert admin_over(DescribingAdmin()).describe_configs([]) == {}
