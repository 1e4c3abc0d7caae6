"""Topic, group and config-property filters: defaults and Java regex semantics."""

from __future__ import annotations

import pytest

from connect_runtime.api.errors import ConfigError
from mirror.filters import (
    ConfigPropertyFilter,
    DefaultConfigPropertyFilter,
    DefaultGroupFilter,
    DefaultTopicFilter,
    GroupFilter,
    TopicFilter,
    load_config_property_filter,
    load_group_filter,
    load_topic_filter,
)


class OnlyOrders:
    """A custom topic filter loaded by dotted path."""

    def __init__(self) -> None:
        self.config: dict[str, str] = {}

    def configure(self, config: dict[str, str]) -> None:
        self.config = dict(config)

    def should_replicate_topic(self, topic: str) -> bool:
        return topic == "orders"


class NotAFilter:
    pass


@pytest.mark.parametrize(
    ("topic", "replicated"),
    [
        ("orders", True),
        ("us-west.orders", True),
        ("heartbeats", True),
        ("mm2-offsets.a.internal", False),
        ("connect-configs-internal", False),
        ("orders.replica", False),
        ("__consumer_offsets", False),
        ("a.checkpoints.internal", False),
    ],
)
def test_default_topic_filter_defaults(topic: str, replicated: bool) -> None:
    assert DefaultTopicFilter().should_replicate_topic(topic) is replicated


def test_topic_patterns_must_match_the_whole_name() -> None:
    f = DefaultTopicFilter({"topics": "ord.*, pay", "topics.exclude": ""})
    assert f.should_replicate_topic("orders")
    assert f.should_replicate_topic("pay")
    assert not f.should_replicate_topic("payments")  # "pay" does not match the whole name
    assert not f.should_replicate_topic("xorders")


def test_entries_are_joined_with_alternation() -> None:
    f = DefaultTopicFilter({"topics": "a|b,c", "topics.exclude": ""})
    assert [f.should_replicate_topic(t) for t in ("a", "b", "c", "ab")] == [True, True, True, False]


def test_empty_include_list_matches_nothing() -> None:
    f = DefaultTopicFilter({"topics": "  "})
    assert not f.should_replicate_topic("orders")
    assert not f.should_replicate_topic("")


def test_empty_exclude_list_excludes_nothing() -> None:
    f = DefaultTopicFilter({"topics.exclude": ""})
    assert f.should_replicate_topic("__consumer_offsets")


def test_exclude_wins_over_include() -> None:
    f = DefaultTopicFilter({"topics": "orders.*", "topics.exclude": "orders-secret"})
    assert f.should_replicate_topic("orders-public")
    assert not f.should_replicate_topic("orders-secret")


def test_invalid_regex_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        DefaultTopicFilter({"topics": "orders[", "topics.exclude": ""})
    assert info.value.key == "topics"


@pytest.mark.parametrize(
    ("group", "replicated"),
    [
        ("my-app", True),
        ("console-consumer-123", False),
        ("connect-mm2", False),
        ("__internal", False),
    ],
)
def test_default_group_filter_defaults(group: str, replicated: bool) -> None:
    assert DefaultGroupFilter().should_replicate_group(group) is replicated


def test_group_filter_include_and_exclude() -> None:
    f = DefaultGroupFilter({"groups": "app-.*", "groups.exclude": "app-test"})
    assert f.should_replicate_group("app-prod")
    assert not f.should_replicate_group("app-test")
    assert not f.should_replicate_group("other")
    assert not DefaultGroupFilter({"groups": ""}).should_replicate_group("app")


@pytest.mark.parametrize(
    ("prop", "replicated"),
    [
        ("follower.replication.throttled.replicas", False),
        ("leader.replication.throttled.replicas", False),
        ("message.timestamp.difference.max.ms", False),
        ("message.timestamp.type", False),
        ("unclean.leader.election.enable", False),
        ("min.insync.replicas", False),
        ("retention.ms", True),
        ("cleanup.policy", True),
        ("min.insync.replicasX", True),
        ("minXinsync.replicas", True),  # the dots are escaped
    ],
)
def test_default_config_property_filter_defaults(prop: str, replicated: bool) -> None:
    assert DefaultConfigPropertyFilter().should_replicate_config_property(prop) is replicated


def test_config_property_exclude_can_be_replaced() -> None:
    f = DefaultConfigPropertyFilter({"config.properties.exclude": r"retention\..*"})
    assert not f.should_replicate_config_property("retention.ms")
    assert f.should_replicate_config_property("min.insync.replicas")
    assert DefaultConfigPropertyFilter({"config.properties.exclude": ""}).should_replicate_config_property(
        "min.insync.replicas"
    )


def test_use_defaults_from() -> None:
    assert not DefaultConfigPropertyFilter().should_replicate_source_default("retention.ms")
    assert DefaultConfigPropertyFilter({"use.defaults.from": "source"}).should_replicate_source_default("x")
    assert not DefaultConfigPropertyFilter({"use.defaults.from": "target"}).should_replicate_source_default(
        "x"
    )
    with pytest.raises(ConfigError) as info:
        DefaultConfigPropertyFilter({"use.defaults.from": "both"})
    assert info.value.key == "use.defaults.from"


def test_default_filters_satisfy_the_protocols() -> None:
    assert isinstance(DefaultTopicFilter(), TopicFilter)
    assert isinstance(DefaultGroupFilter(), GroupFilter)
    assert isinstance(DefaultConfigPropertyFilter(), ConfigPropertyFilter)


def test_loaders_map_java_default_class_names() -> None:
    config = {"topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter", "topics": "a"}
    topic_filter = load_topic_filter(config)
    assert isinstance(topic_filter, DefaultTopicFilter)
    assert topic_filter.should_replicate_topic("a") and not topic_filter.should_replicate_topic("b")
    assert isinstance(load_group_filter({}), DefaultGroupFilter)
    assert isinstance(
        load_config_property_filter({"use.defaults.from": "source"}), DefaultConfigPropertyFilter
    )


def test_custom_filter_by_dotted_path_is_configured_with_the_whole_config() -> None:
    config = {"topic.filter.class": f"{__name__}.OnlyOrders", "x": "y"}
    topic_filter = load_topic_filter(config)
    assert isinstance(topic_filter, OnlyOrders)
    assert topic_filter.config == config
    assert topic_filter.should_replicate_topic("orders") and not topic_filter.should_replicate_topic("x")


@pytest.mark.parametrize(
    "name", ["org.apache.kafka.connect.mirror.NoSuchFilter", f"{__name__}.NotAFilter", f"{__name__}:Missing"]
)
def test_bad_filter_classes_are_config_errors(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_topic_filter({"topic.filter.class": name})
    assert info.value.key == "topic.filter.class"
