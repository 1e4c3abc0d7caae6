"""ReplicationPolicy semantics, including the Java String.split edge cases and cycles."""

from __future__ import annotations

import pytest

from mirror.client.replication_policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    is_cycle,
    java_split,
    load_policy_class,
    policy_from_config,
)


class ReversePolicy(DefaultReplicationPolicy):
    """A custom policy, loaded by dotted path in the tests below."""

    configured_with: dict[str, str] | None = None

    def configure(self, config):  # type: ignore[no-untyped-def]
        super().configure(config)
        self.configured_with = dict(config)


class NotAPolicy:
    pass


# ------------------------------------------------------------------------------------ Java split semantics


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("a.b.c", ["a", "b", "c"]),
        ("abc", ["abc"]),
        ("a.", ["a"]),
        (".b", ["", "b"]),
        (".", []),
        ("a..b", ["a", "", "b"]),
        ("a..", ["a"]),
        ("", []),
    ],
)
def test_java_split_drops_only_trailing_empty_parts(text: str, parts: list[str]) -> None:
    assert java_split(text, ".") == parts


@pytest.mark.parametrize(
    ("topic", "source", "upstream"),
    [
        ("a.b.c", "a", "b.c"),
        ("abc", None, None),
        ("a.", None, None),  # Python's split would make this remote
        (".b", "", "b"),  # the empty alias
        (".", None, None),
        ("a..b", "a", ".b"),
        ("us-west.orders", "us-west", "orders"),
    ],
)
def test_default_topic_source_and_upstream(topic: str, source: str | None, upstream: str | None) -> None:
    policy = DefaultReplicationPolicy()
    assert policy.topic_source(topic) == source
    assert policy.upstream_topic(topic) == upstream


def test_original_topic_strips_every_hop() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.original_topic("a.b.c") == "c"
    assert policy.original_topic("c") == "c"
    assert policy.original_topic("a.") == "a."


def test_format_remote_topic_uses_separator() -> None:
    assert DefaultReplicationPolicy().format_remote_topic("us-west", "orders") == "us-west.orders"
    assert DefaultReplicationPolicy("__").format_remote_topic("us-west", "orders") == "us-west__orders"


def test_multi_character_separator_splits_left_to_right() -> None:
    policy = DefaultReplicationPolicy("__")
    assert policy.topic_source("a___b") == "a"
    assert policy.upstream_topic("a___b") == "_b"
    assert policy.topic_source("a.b") is None


# ------------------------------------------------------------------------------------- interface defaults


def test_interface_defaults_of_the_abc() -> None:
    class Minimal(ReplicationPolicy):
        def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
            return f"{source_cluster_alias}.{topic}"

        def topic_source(self, topic: str) -> str | None:
            return None

        def upstream_topic(self, topic: str) -> str | None:
            return None

    policy = Minimal()
    assert policy.heartbeats_topic() == "heartbeats"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"
    assert policy.is_checkpoints_topic("A.checkpoints.internal")
    assert not policy.is_checkpoints_topic("checkpoints.internal")
    assert policy.is_mm2_internal_topic("x.internal")
    assert policy.original_topic("t") == "t"


@pytest.mark.parametrize("topic", ["heartbeats", "a.heartbeats", "b.a.heartbeats"])
def test_heartbeats_topics_at_any_depth(topic: str) -> None:
    assert DefaultReplicationPolicy().is_heartbeats_topic(topic)


@pytest.mark.parametrize(
    "topic", ["heartbeats!", "!heartbeats", "source1heartbeats", "source1-heartbeats", "heartbeats.a"]
)
def test_not_heartbeats_topics(topic: str) -> None:
    assert not DefaultReplicationPolicy().is_heartbeats_topic(topic)


@pytest.mark.parametrize(
    ("topic", "internal"),
    [
        ("__consumer_offsets", True),
        (".hidden", True),
        ("mm2-configs.a.internal", True),
        ("connect-offsets-internal", True),
        ("a.checkpoints.internal", True),
        ("orders", False),
        ("a.orders", False),
        ("internal", False),
    ],
)
def test_is_internal_topic(topic: str, internal: bool) -> None:
    assert DefaultReplicationPolicy().is_internal_topic(topic) is internal


def test_internal_suffixes_are_hard_coded_whatever_the_separator() -> None:
    policy = DefaultReplicationPolicy("__")
    assert not policy.is_mm2_internal_topic("x.internal")
    assert policy.is_internal_topic("x.internal")
    assert policy.is_internal_topic("x-internal")


# ----------------------------------------------------------------------------------- custom separators


def test_custom_separator_applies_to_internal_topics_by_default() -> None:
    policy = policy_from_config({"replication.policy.separator": "__"})
    assert policy.offset_syncs_topic("C") == "mm2-offset-syncs__C__internal"
    assert policy.checkpoints_topic("C") == "C__checkpoints__internal"
    assert policy.is_checkpoints_topic("C__checkpoints__internal")
    assert not policy.is_checkpoints_topic("C.checkpoints.internal")
    assert policy.is_mm2_internal_topic("x__internal")
    assert policy.heartbeats_topic() == "heartbeats"


def test_internal_separator_can_be_disabled_for_pre_3_1_names() -> None:
    policy = policy_from_config(
        {"replication.policy.separator": "__", "replication.policy.internal.topic.separator.enabled": "false"}
    )
    assert policy.offset_syncs_topic("C") == "mm2-offset-syncs.C.internal"
    assert policy.checkpoints_topic("C") == "C.checkpoints.internal"
    assert policy.format_remote_topic("C", "t") == "C__t"


def test_internal_separator_flag_is_ignored_without_explicit_separator() -> None:
    policy = policy_from_config({"replication.policy.internal.topic.separator.enabled": "false"})
    assert policy.checkpoints_topic("C") == "C.checkpoints.internal"
    # ... and with an explicit "." the flag makes no visible difference either.
    policy = policy_from_config(
        {"replication.policy.separator": ".", "replication.policy.internal.topic.separator.enabled": "false"}
    )
    assert policy.offset_syncs_topic("C") == "mm2-offset-syncs.C.internal"


def test_underscore_separator_means_dotted_heartbeats_are_not_heartbeats() -> None:
    policy = policy_from_config({"replication.policy.separator": "_"})
    assert not policy.is_heartbeats_topic("us-west.heartbeats")
    assert policy.is_heartbeats_topic("us-west_heartbeats")


def test_empty_separator_is_rejected() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        policy_from_config({"replication.policy.separator": ""})


# ------------------------------------------------------------------------------------------- identity


def identity(source: str | None = "primary") -> ReplicationPolicy:
    config = {"replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"}
    if source is not None:
        config["source.cluster.alias"] = source
    return policy_from_config(config)


def test_identity_keeps_names_and_reports_configured_source() -> None:
    policy = identity()
    assert isinstance(policy, IdentityReplicationPolicy)
    assert policy.format_remote_topic("primary", "topic1") == "topic1"
    assert policy.topic_source("topic1") == "primary"
    assert policy.upstream_topic("topic1") == "topic1"
    assert policy.original_topic("topic1") == "topic1"


def test_identity_without_alias_has_no_source() -> None:
    assert identity(None).topic_source("topic1") is None


@pytest.mark.parametrize("topic", ["heartbeats", "backup.heartbeats", "app-heartbeats"])
def test_identity_delegates_anything_ending_in_heartbeats(topic: str) -> None:
    policy = identity()
    default = DefaultReplicationPolicy()
    assert policy.format_remote_topic("backup", topic) == f"backup.{topic}"
    assert policy.topic_source(topic) == default.topic_source(topic)
    assert policy.upstream_topic(topic) == default.upstream_topic(topic)


def test_identity_heartbeat_examples() -> None:
    policy = identity()
    assert policy.format_remote_topic("backup", "heartbeats") == "backup.heartbeats"
    assert policy.topic_source("backup.heartbeats") == "backup"
    assert policy.is_heartbeats_topic("a.b.heartbeats")


# -------------------------------------------------------------------------------------------- cycles


@pytest.mark.parametrize(
    "topic",
    [
        "target.topic1",
        "target.source.topic1",
        "source.target.topic1",
        "target.source.target.topic1",
        "source.target.source.topic1",
    ],
)
def test_cycles_are_detected(topic: str) -> None:
    assert is_cycle(DefaultReplicationPolicy(), topic, "target")


@pytest.mark.parametrize("topic", ["topic1", "source.topic1", "heartbeats", "us-west.heartbeats", "a."])
def test_non_cycles(topic: str) -> None:
    assert not is_cycle(DefaultReplicationPolicy(), topic, "target")


@pytest.mark.parametrize(
    ("topic", "cycle"),
    [
        ("target.heartbeats", True),
        ("source.target.heartbeats", True),
        ("heartbeats", False),
        ("othersource.heartbeats", False),
        ("topic1", False),
        ("target.topic1", False),  # identity cannot see cycles of ordinary topics
    ],
)
def test_identity_only_prevents_heartbeat_cycles(topic: str, cycle: bool) -> None:
    assert is_cycle(identity("source"), topic, "target") is cycle


def test_identity_with_source_equal_to_target_sees_everything_as_cycle() -> None:
    assert is_cycle(identity("target"), "topic1", "target")


# ----------------------------------------------------------------------------------------- loading


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("org.apache.kafka.connect.mirror.DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("org.apache.kafka.connect.mirror.IdentityReplicationPolicy", IdentityReplicationPolicy),
        (" org.apache.kafka.connect.mirror.IdentityReplicationPolicy ", IdentityReplicationPolicy),
        ("mirror.client.replication_policy.IdentityReplicationPolicy", IdentityReplicationPolicy),
        ("mirror.client.replication_policy:DefaultReplicationPolicy", DefaultReplicationPolicy),
        (f"{__name__}.ReversePolicy", ReversePolicy),
    ],
)
def test_load_policy_class(name: str, cls: type) -> None:
    assert load_policy_class(name) is cls


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("org.apache.kafka.connect.mirror.NoSuchPolicy", "cannot import module"),
        ("mirror.client.replication_policy.NoSuch", "has no attribute"),
        (f"{__name__}.NotAPolicy", "not a subclass"),
        ("NoDots", "unknown replication policy class"),
        ("", "empty"),
    ],
)
def test_load_policy_class_errors_are_value_errors(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_policy_class(name)


def test_policy_from_config_defaults_to_default_policy() -> None:
    policy = policy_from_config({})
    assert type(policy) is DefaultReplicationPolicy
    assert policy.format_remote_topic("a", "t") == "a.t"


def test_custom_policy_receives_the_whole_config() -> None:
    config = {"replication.policy.class": f"{__name__}:ReversePolicy", "my.key": "v"}
    policy = policy_from_config(config)
    assert isinstance(policy, ReversePolicy)
    assert policy.configured_with == config
