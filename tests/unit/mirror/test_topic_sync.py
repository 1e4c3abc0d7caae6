"""Pure rules of the source connector, with recording fake admins at the seam.

ACL creation cannot be exercised on Tansu (create_acls aborts the client process, docs/tansu.md), nor can
partition growth (CreatePartitions unsupported), so those paths are checked here through fakes that
record the calls TopicSync makes on the TopicAdmin seam.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.admin import ConfigOp, CreateOutcome, TopicConfigEntry, TopicSpec
from mirror.client.replication_policy import DefaultReplicationPolicy, IdentityReplicationPolicy
from mirror.filters import DefaultConfigPropertyFilter, DefaultTopicFilter
from mirror.source.topic_sync import (
    TopicSync,
    assign_by_topic,
    assign_round_robin,
    creation_configs,
    incremental_config_ops,
    ops_in_effect,
    should_replicate_topic,
    target_acl_binding,
)


class RejectAll:
    def should_replicate_topic(self, topic: str) -> bool:
        return False


def accepts(topic: str, *, policy: Any = None, topic_filter: Any = None, heartbeats: bool = True) -> bool:
    return should_replicate_topic(topic, policy or DefaultReplicationPolicy(),
                                  topic_filter or DefaultTopicFilter({"topics": ".*"}), "target", heartbeats)


# ---- topic selection and cycles ------------------------------------------------------------------------


@pytest.mark.parametrize("topic", ["target.topic1", "target.source.topic1", "source.target.topic1",
                                   "target.source.target.topic1", "source.target.source.topic1"])
def test_cycles_are_rejected(topic: str) -> None:
    assert not accepts(topic)


@pytest.mark.parametrize("topic", ["topic1", "source.topic1", "heartbeats", "us-west.heartbeats"])
def test_non_cycles_are_accepted(topic: str) -> None:
    assert accepts(topic)


def test_internal_topics_are_never_replicated_even_if_the_filter_accepts_them() -> None:
    everything = DefaultTopicFilter({"topics": ".*", "topics.exclude": ""})
    for topic in ("__consumer_offsets", ".hidden", "x-internal", "mm2-offset-syncs.a.internal",
                  "a.checkpoints.internal"):
        assert not accepts(topic, topic_filter=everything)


def test_heartbeats_bypass_the_topic_filter_only_when_enabled() -> None:
    assert accepts("heartbeats", topic_filter=RejectAll())
    assert accepts("source.heartbeats", topic_filter=RejectAll())
    assert not accepts("heartbeats", topic_filter=RejectAll(), heartbeats=False)
    assert accepts("heartbeats", heartbeats=False)  # a configured topics=.* filter accepts it anyway
    assert not accepts("target.heartbeats", topic_filter=RejectAll())  # the cycle check still applies
    assert not accepts("topic1", topic_filter=RejectAll())


def test_custom_separator_changes_what_a_heartbeats_topic_is() -> None:
    assert not accepts("us-west.heartbeats", policy=DefaultReplicationPolicy(separator="_"),
                       topic_filter=RejectAll())


def test_identity_policy_prevents_heartbeat_cycles_only() -> None:
    identity = IdentityReplicationPolicy(source_cluster_alias="source")
    assert not accepts("target.heartbeats", policy=identity)
    assert not accepts("source.target.heartbeats", policy=identity)
    assert accepts("heartbeats", policy=identity)
    assert accepts("othersource.heartbeats", policy=identity)
    assert accepts("target.topic1", policy=identity)  # ordinary topics: the identity policy cannot tell


# ---- task assignment -----------------------------------------------------------------------------------


def test_round_robin_assignment_matches_mm2_example() -> None:
    partitions = [("t0", p) for p in range(8)] + [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)]
    tasks = assign_round_robin(partitions, 3)
    as_text = [",".join(f"{t}-{p}" for t, p in task) for task in tasks]
    assert as_text == ["t0-0,t0-3,t0-6,t1-1", "t0-1,t0-4,t0-7,t2-0", "t0-2,t0-5,t1-0,t2-1"]


def test_assignment_never_creates_more_tasks_than_partitions() -> None:
    assert assign_round_robin([("a", 0), ("a", 1)], 5) == [[("a", 0)], [("a", 1)]]
    assert assign_round_robin([], 5) == []


def test_by_topic_assignment_gives_contiguous_runs_of_whole_topics() -> None:
    partitions = [(f"t{t}", p) for p in range(4) for t in range(10)]  # interleaved, as Java may list them
    tasks = assign_by_topic(partitions, 4)
    assert [len(task) for task in tasks] == [10, 10, 10, 10]
    assert sorted(tp for task in tasks for tp in task) == sorted(partitions)
    assert tasks[0] == [("t0", 0), ("t0", 1), ("t0", 2), ("t0", 3), ("t1", 0), ("t1", 1), ("t1", 2), ("t1", 3),
                        ("t2", 0), ("t2", 1)]
    topics = [{t for t, _ in task} for task in tasks]
    assert [len(names) for names in topics] == [3, 3, 3, 3]  # round-robin: 10 topics in every task
    split = [t for t in {t for t, _ in partitions} if sum(t in names for names in topics) > 1]
    assert len(split) <= len(tasks) - 1


def test_by_topic_assignment_balances_uneven_topics_and_spreads_one_large_topic() -> None:
    partitions = [("big", p) for p in range(32)] + [("small", 0), ("other", 0), ("other", 1)]
    tasks = assign_by_topic(partitions, 4)
    assert [len(task) for task in tasks] == [9, 9, 9, 8]
    assert {t for t, _ in tasks[0]} == {"big"} and {t for t, _ in tasks[3]} == {"big", "small", "other"}
    assert assign_by_topic([("a", 1), ("a", 0)], 5) == [[("a", 0)], [("a", 1)]]
    assert assign_by_topic([], 5) == []


# ---- config filtering ---------------------------------------------------------------------------------


def entry(name: str, value: str | None, source: str = "DYNAMIC_TOPIC_CONFIG", *, read_only: bool = False,
          sensitive: bool = False) -> TopicConfigEntry:
    return TopicConfigEntry(name, value, source, source == "DEFAULT_CONFIG", read_only, sensitive)


KAFKA_DESCRIBE = [  # what Apache Kafka reports for a topic created with two overrides
    entry("retention.bytes", "1000"),
    entry("delete.retention.ms", "1000"),
    entry("cleanup.policy", "delete", "DEFAULT_CONFIG"),
    entry("min.insync.replicas", "1", "DEFAULT_CONFIG"),
    entry("segment.bytes", "1073741824", "STATIC_BROKER_CONFIG"),
    entry("retention.ms", "86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
    entry("ssl.password", "secret", sensitive=True),
    entry("message.format.version", "3.0", read_only=True),
]

# Tansu reports only the explicit keys, each flagged DEFAULT_CONFIG / is_default (docs/tansu.md), while
# Kafka flags them DYNAMIC_TOPIC_CONFIG and lists every default too. The client may also hand the source
# over as its numeric code ("5" = DEFAULT_CONFIG).
TANSU_DESCRIBE = [entry("retention.bytes", "1000", "5"), entry("delete.retention.ms", "1000", "5")]


def config_filter(**config: str) -> DefaultConfigPropertyFilter:
    return DefaultConfigPropertyFilter({k.replace("_", "."): v for k, v in config.items()})


def test_creation_copies_non_defaults_and_dynamic_broker_defaults_only() -> None:
    assert creation_configs(KAFKA_DESCRIBE, config_filter()) == {
        "retention.bytes": "1000", "delete.retention.ms": "1000", "retention.ms": "86400000"}


def test_creation_honours_exclude_and_use_defaults_from_source() -> None:
    configs = creation_configs(KAFKA_DESCRIBE, config_filter(config_properties_exclude=r"delete\.retention\..*",
                                                             use_defaults_from="source"))
    # defaults copied (min.insync.replicas is excluded by the default exclude list, which was replaced)
    assert configs == {"retention.bytes": "1000", "cleanup.policy": "delete", "min.insync.replicas": "1",
                       "retention.ms": "86400000"}


def test_creation_on_tansu_like_describe_depends_on_use_defaults_from() -> None:
    assert creation_configs(TANSU_DESCRIBE, config_filter()) == {}  # all "defaults": nothing copied
    assert creation_configs(TANSU_DESCRIBE, config_filter(use_defaults_from="source")) == {
        "retention.bytes": "1000", "delete.retention.ms": "1000"}


def test_incremental_sync_sets_overrides_and_deletes_defaults() -> None:
    ops = incremental_config_ops(KAFKA_DESCRIBE, config_filter())
    assert ops == [("retention.bytes", "SET", "1000"), ("delete.retention.ms", "SET", "1000"),
                   ("cleanup.policy", "DELETE", None), ("retention.ms", "SET", "86400000")]
    # min.insync.replicas is in the default exclude list; static, sensitive and read-only never synced


def test_incremental_sync_with_source_defaults_sets_everything() -> None:
    ops = incremental_config_ops(KAFKA_DESCRIBE, config_filter(use_defaults_from="source",
                                                               config_properties_exclude=""))
    assert ("cleanup.policy", "SET", "delete") in ops and ("min.insync.replicas", "SET", "1") in ops
    assert all(name not in ("segment.bytes", "ssl.password", "message.format.version") for name, _, _ in ops)


def test_incremental_sync_on_tansu_like_describe_deletes_with_target_defaults() -> None:
    assert incremental_config_ops(TANSU_DESCRIBE, config_filter(config_properties_exclude=r"delete\..*")) == [
        ("retention.bytes", "DELETE", None)]


# ---- the stateful sync through recording fakes ----------------------------------------------------------


class FakeAdmin:
    """Records every call TopicSync makes; topics are {name: partitions}."""

    def __init__(self, topics: dict[str, int] | None = None, configs: dict[str, list[TopicConfigEntry]] | None = None,
                 acls: list[AclBinding] | None = None, acl_error: BaseException | None = None) -> None:
        self.topics = dict(topics or {})
        self.configs = configs or {}
        self.acls = acls or []
        self.acl_error = acl_error
        self.throttled: frozenset[str] = frozenset()
        self.calls: list[tuple[str, Any]] = []

    def list_topics(self, include_internal: bool = False) -> set[str]:
        return set(self.topics)

    def describe_topics(self, names: Iterable[str]) -> dict[str, int]:
        return {n: self.topics[n] for n in names if n in self.topics}

    def describe_configs(self, topics: Iterable[str]) -> dict[str, list[TopicConfigEntry]]:
        return {t: self.configs.get(t, []) for t in topics}

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        self.calls.append(("describe_acls", acl_filter))
        if self.acl_error is not None:
            raise self.acl_error
        return list(self.acls)

    def create_topics(self, topics: Mapping[str, TopicSpec], deadline_s: float | None = None,
                      stop: threading.Event | None = None) -> CreateOutcome:
        """Creates every topic except the ``throttled`` ones, which the target's quota holds back."""
        self.calls.append(("create_topics", dict(topics)))
        created = [name for name in topics if name not in self.throttled]
        self.topics.update((name, topics[name].partitions) for name in created)
        return CreateOutcome(created, [], [name for name in topics if name in self.throttled], {}, [])

    def create_partitions(self, counts: Mapping[str, int]) -> set[str]:
        self.calls.append(("create_partitions", dict(counts)))
        return set()  # like a target that cannot add partitions (Tansu)

    def incremental_alter_configs(self, changes: Mapping[str, Sequence[ConfigOp]]) -> None:
        self.calls.append(("incremental_alter_configs", {k: list(v) for k, v in changes.items()}))

    def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        self.calls.append(("create_acls", list(bindings)))

    def called(self, name: str) -> list[Any]:
        return [args for call, args in self.calls if call == name]


def make_sync(source: FakeAdmin, target: FakeAdmin, **config: str) -> TopicSync:
    props = {"topics": ".*", **{k.replace("_", "."): v for k, v in config.items()}}
    return TopicSync("source", "target", DefaultReplicationPolicy(), DefaultTopicFilter(props),
                     DefaultConfigPropertyFilter(props), source, target, replication_factor=2,
                     heartbeats_replication_enabled=True)


def test_new_topics_are_created_with_source_partitions_rf_and_filtered_configs() -> None:
    source = FakeAdmin({"orders": 3, "target.loop": 1, "__consumer_offsets": 50},
                       configs={"orders": KAFKA_DESCRIBE})
    target = FakeAdmin({"source.checkpoints.internal": 1, "other.x": 1})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.compute_and_create_topic_partitions()
    assert sync.known_source_topic_partitions == (("orders", 0), ("orders", 1), ("orders", 2))
    assert target.called("create_topics") == [{"source.orders": TopicSpec(3, 2, {
        "retention.bytes": "1000", "delete.retention.ms": "1000", "retention.ms": "86400000"})}]


def test_new_topics_are_created_in_one_call_and_throttled_ones_at_the_next_refresh(
        caplog: pytest.LogCaptureFixture) -> None:
    source = FakeAdmin({"orders": 3, "payments": 2}, configs={"orders": KAFKA_DESCRIBE})
    target = FakeAdmin()
    target.throttled = frozenset({"source.payments"})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    with caplog.at_level(logging.INFO, logger="mirror.source.topic_sync"):
        sync.compute_and_create_topic_partitions()
    assert target.called("create_topics") == [{
        "source.orders": TopicSpec(3, 2, {"retention.bytes": "1000", "delete.retention.ms": "1000",
                                          "retention.ms": "86400000"}),
        "source.payments": TopicSpec(2, 2, {})}]
    lines = [r.getMessage() for r in caplog.records]
    assert any("created 1 remote topic(s) (3 partitions" in line and "1 still throttled" in line for line in lines)
    assert any("still throttles" in line and "source.payments" in line for line in lines)
    target.throttled = frozenset()
    assert sync.refresh_topic_partitions()  # payments is missing on the target: created now
    assert list(target.called("create_topics")[-1]) == ["source.payments"]
    assert not sync.refresh_topic_partitions()


def test_refresh_reconfigures_on_source_changes_but_not_on_target_only_partitions() -> None:
    source = FakeAdmin({"orders": 2})
    target = FakeAdmin({"source.orders": 2})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    assert not sync.refresh_topic_partitions()
    target.topics["source.orders"] = 4  # partitions that exist only on the target
    assert not sync.refresh_topic_partitions()
    source.topics["orders"] = 3  # a new source partition: grow the remote topic, never shrink it
    target.topics["source.orders"] = 2
    assert sync.refresh_topic_partitions()
    assert target.called("create_partitions") == [{"source.orders": 3}]
    target.topics["source.orders"] = 2  # the fake target refused to grow it (like Tansu)
    assert not sync.refresh_topic_partitions()  # refused once: not retried, no reconfiguration loop
    assert len(target.called("create_partitions")) == 1
    source.topics["payments"] = 1
    assert sync.refresh_topic_partitions()
    assert [list(c) for c in target.called("create_topics")] == [["source.payments"]]
    del source.topics["payments"]  # deleted upstream: reconfigure, but nothing is deleted downstream
    assert sync.refresh_topic_partitions()
    assert "source.payments" in target.topics


def test_config_sync_alters_only_topics_being_replicated() -> None:
    source = FakeAdmin({"orders": 1, "fresh": 1}, configs={"orders": TANSU_DESCRIBE, "fresh": TANSU_DESCRIBE})
    target = FakeAdmin({"source.orders": 1})
    sync = make_sync(source, target, use_defaults_from="source", config_properties_exclude=r"delete\..*")
    sync.load_topic_partitions()
    sync.sync_topic_configs()
    assert target.called("incremental_alter_configs") == [{"source.orders": [("retention.bytes", "SET", "1000")]}]


class KafkaLikeTarget(FakeAdmin):
    """A target that applies alters as Kafka reports them afterwards: a SET becomes the topic's override
    (``DYNAMIC_TOPIC_CONFIG``), a DELETE leaves the broker's default (``DEFAULT_CONFIG``). ``alter_error``
    fails the next alter and applies nothing; ``describe_error`` fails every describe."""

    def __init__(self, topics: dict[str, int]) -> None:
        super().__init__(topics)
        self.configs = {topic: [] for topic in topics}
        self.alter_error: ConnectError | None = None
        self.describe_error: ConnectError | None = None

    def describe_configs(self, topics: Iterable[str]) -> dict[str, list[TopicConfigEntry]]:
        if self.describe_error is not None:
            raise self.describe_error
        return super().describe_configs(topics)

    def incremental_alter_configs(self, changes: Mapping[str, Sequence[ConfigOp]]) -> None:
        super().incremental_alter_configs(changes)
        if self.alter_error is not None:
            error, self.alter_error = self.alter_error, None
            raise error
        for topic, ops in changes.items():
            for name, op, value in ops:
                self.override(topic, name, value if op == "SET" else None)

    def override(self, topic: str, name: str, value: str | None) -> None:
        """Someone (this sync, or an operator behind its back) sets ``name`` on ``topic``; None removes it."""
        kept = [e for e in self.configs.get(topic, []) if e.name != name]
        kept.append(entry(name, value) if value is not None else entry(name, "broker-default", "DEFAULT_CONFIG"))
        self.configs[topic] = kept

    def altered(self) -> list[set[str]]:
        """The topics of each alter sent so far."""
        return [set(call) for call in self.called("incremental_alter_configs")]


def kafka_describe(retention_bytes: str = "1000") -> list[TopicConfigEntry]:
    return [entry("retention.bytes", retention_bytes), entry("cleanup.policy", "delete", "DEFAULT_CONFIG"),
            entry("min.insync.replicas", "2")]


def test_ops_in_effect_only_for_the_topics_own_overrides() -> None:
    ops = [("retention.bytes", "SET", "1000"), ("cleanup.policy", "DELETE", None)]
    assert ops_in_effect(ops, [entry("retention.bytes", "1000"), entry("cleanup.policy", "delete", "DEFAULT_CONFIG")])
    assert not ops_in_effect(ops, [entry("retention.bytes", "2000")])  # changed on the target
    assert not ops_in_effect(ops, [entry("retention.bytes", "1000"), entry("cleanup.policy", "compact")])
    # an equal value from a broker default is not the override a SET leaves
    assert not ops_in_effect(ops, [entry("retention.bytes", "1000", "DYNAMIC_DEFAULT_BROKER_CONFIG")])
    assert not ops_in_effect(ops, [])
    # Tansu reports its overrides as DEFAULT_CONFIG (code 5): a SET is never seen in effect there
    assert not ops_in_effect(ops, [entry("retention.bytes", "1000", "5")])
    assert ops_in_effect([("retention.bytes", "DELETE", None)], [entry("retention.bytes", "1000", "5")])


def test_config_sync_sends_only_topics_whose_ops_changed() -> None:
    source = FakeAdmin({"orders": 1, "payments": 1},
                       configs={"orders": kafka_describe(), "payments": kafka_describe()})
    target = KafkaLikeTarget({"source.orders": 1, "source.payments": 1})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.sync_topic_configs()
    assert target.altered() == [{"source.orders", "source.payments"}]
    assert target.called("incremental_alter_configs")[0]["source.orders"] == [
        ("retention.bytes", "SET", "1000"), ("cleanup.policy", "DELETE", None)]  # min.insync.replicas excluded
    sync.sync_topic_configs()
    sync.sync_topic_configs()
    assert len(target.altered()) == 1  # nothing changed: no request
    source.configs["payments"] = kafka_describe("5000")
    sync.sync_topic_configs()
    assert target.called("incremental_alter_configs")[-1] == {"source.payments": [
        ("retention.bytes", "SET", "5000"), ("cleanup.policy", "DELETE", None)]}  # all of its ops, as Java
    source.topics["fresh"], source.configs["fresh"] = 1, kafka_describe()
    assert sync.refresh_topic_partitions()  # creates source.fresh on the target
    sync.sync_topic_configs()  # not replicated yet: the target is known as listed before the creation
    assert len(target.altered()) == 2
    assert not sync.refresh_topic_partitions()
    sync.sync_topic_configs()
    assert target.altered()[-1] == {"source.fresh"}
    sync.sync_topic_configs()
    assert len(target.altered()) == 3


def test_config_sync_overwrites_a_synced_key_changed_on_the_target_but_not_an_excluded_one() -> None:
    source = FakeAdmin({"orders": 1, "payments": 1},
                       configs={"orders": kafka_describe(), "payments": kafka_describe()})
    target = KafkaLikeTarget({"source.orders": 1, "source.payments": 1})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.sync_topic_configs()
    target.override("source.orders", "retention.bytes", "2000")  # Java's testSyncTopicConfigs
    target.override("source.payments", "min.insync.replicas", "1")  # excluded: stays
    sync.sync_topic_configs()
    assert target.altered()[-1] == {"source.orders"}
    assert {e.name: e.value for e in target.configs["source.orders"]}["retention.bytes"] == "1000"
    target.override("source.payments", "cleanup.policy", "compact")  # a source default: its override goes
    sync.sync_topic_configs()
    assert target.altered()[-1] == {"source.payments"}
    assert ("cleanup.policy", "DELETE", None) in target.called("incremental_alter_configs")[-1]["source.payments"]
    sync.sync_topic_configs()
    assert len(target.altered()) == 3


def test_config_sync_sends_a_failed_topic_again_even_where_the_target_cannot_show_it() -> None:
    """On Tansu every source entry is a 'default', so with use.defaults.from=target the ops are DELETEs,
    which a Tansu target always seems to have in effect: only the memory of a failed alter resends them."""
    source = FakeAdmin({"orders": 1}, configs={"orders": TANSU_DESCRIBE})
    target = KafkaLikeTarget({"source.orders": 1})
    target.alter_error = ConnectError("altering configs of topic source.orders: broker not available")
    sync = make_sync(source, target, config_properties_exclude="")
    sync.load_topic_partitions()
    sync.sync_topic_configs()
    sync.sync_topic_configs()
    sync.sync_topic_configs()
    delete_both = {"source.orders": [("retention.bytes", "DELETE", None), ("delete.retention.ms", "DELETE", None)]}
    assert target.called("incremental_alter_configs") == [delete_both, delete_both]


def test_config_sync_sends_every_topic_while_the_target_cannot_be_described(
        caplog: pytest.LogCaptureFixture) -> None:
    source = FakeAdmin({"orders": 1, "payments": 1},
                       configs={"orders": kafka_describe(), "payments": kafka_describe()})
    target = KafkaLikeTarget({"source.orders": 1, "source.payments": 1})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.sync_topic_configs()
    target.describe_error = ConnectError("describing configs of source.orders: Topic authorization failed")
    with caplog.at_level(logging.INFO, logger="mirror.source.topic_sync"):
        sync.sync_topic_configs()
        sync.sync_topic_configs()
    assert target.altered()[1:] == [{"source.orders", "source.payments"}] * 2  # Java's behaviour
    assert sum("could not describe the remote topics' configs" in r.getMessage() for r in caplog.records) == 1
    target.describe_error = None
    sync.sync_topic_configs()
    assert len(target.altered()) == 3


def test_config_sync_forgets_a_topic_no_longer_replicated() -> None:
    source = FakeAdmin({"orders": 1, "payments": 1},
                       configs={"orders": TANSU_DESCRIBE, "payments": TANSU_DESCRIBE})
    target = KafkaLikeTarget({"source.orders": 1, "source.payments": 1})
    sync = make_sync(source, target)
    sync.load_topic_partitions()
    sync.sync_topic_configs()
    del source.topics["payments"]
    sync.refresh_topic_partitions()
    sync.sync_topic_configs()
    source.topics["payments"] = 1  # back with the same configs: sent again, it may have changed meanwhile
    sync.refresh_topic_partitions()
    sync.sync_topic_configs()
    assert target.altered() == [{"source.orders", "source.payments"}, {"source.payments"}]


def acl(name: str, operation: AclOperation, permission: AclPermissionType = AclPermissionType.ALLOW,
        pattern: ResourcePatternType = ResourcePatternType.LITERAL,
        restype: ResourceType = ResourceType.TOPIC) -> AclBinding:
    return AclBinding(restype, name, pattern, "User:alice", "*", operation, permission)


def test_acl_sync_filters_and_transforms_bindings() -> None:
    source = FakeAdmin({"orders": 1}, acls=[
        acl("orders", AclOperation.ALL),  # ALLOW ALL -> ALLOW READ
        acl("orders", AclOperation.WRITE),  # ALLOW WRITE is never mirrored
        acl("orders", AclOperation.WRITE, AclPermissionType.DENY),  # DENY WRITE is
        acl("orders", AclOperation.DESCRIBE),
        acl("ord", AclOperation.READ, pattern=ResourcePatternType.PREFIXED),  # only LITERAL patterns
        acl("target.orders", AclOperation.READ),  # a cycle: filtered like the topic
        acl("__consumer_offsets", AclOperation.READ),  # internal
    ])
    target = FakeAdmin()
    make_sync(source, target).sync_topic_acls()
    [created] = target.called("create_acls")
    assert created == [
        acl("source.orders", AclOperation.READ),
        acl("source.orders", AclOperation.WRITE, AclPermissionType.DENY),
        acl("source.orders", AclOperation.DESCRIBE),
    ]
    assert target_acl_binding(acl("x", AclOperation.ALL, AclPermissionType.DENY), "s.x") == acl(
        "s.x", AclOperation.ALL, AclPermissionType.DENY)


def test_acl_sync_without_authorizer_is_skipped_quietly() -> None:
    error = KafkaException(KafkaError(KafkaError.SECURITY_DISABLED))
    wrapped = ConnectError("describing ACLs")
    wrapped.__cause__ = error
    source = FakeAdmin({"orders": 1}, acl_error=wrapped)
    target = FakeAdmin()
    sync = make_sync(source, target)
    sync.sync_topic_acls()
    sync.sync_topic_acls()
    assert target.called("create_acls") == []


def test_acl_sync_with_nothing_to_copy_never_calls_create_acls() -> None:
    source = FakeAdmin({"orders": 1}, acls=[acl("orders", AclOperation.WRITE)])
    target = FakeAdmin()
    make_sync(source, target).sync_topic_acls()
    assert target.calls == []


def test_acl_sync_refused_by_the_source_is_named_once_with_the_fix(caplog: pytest.LogCaptureFixture) -> None:
    """Without DESCRIBE on the source's CLUSTER, Kafka answers CLUSTER_AUTHORIZATION_FAILED: one warning
    naming the grant and the switch, not a stack trace every interval (Java's behaviour)."""
    error = KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED))
    wrapped = ConnectError("describing ACLs")
    wrapped.__cause__ = error
    source = FakeAdmin({"orders": 1}, acl_error=wrapped)
    target = FakeAdmin()
    sync = make_sync(source, target)
    with caplog.at_level(logging.WARNING, logger="mirror.source.topic_sync"):
        sync.sync_topic_acls()
        sync.sync_topic_acls()
    named = [r.getMessage() for r in caplog.records if "topic ACL sync skipped" in r.getMessage()]
    assert len(named) == 1, named
    assert "DESCRIBE on the CLUSTER resource" in named[0] and "sync.topic.acls.enabled = false" in named[0]
    assert target.called("create_acls") == []


def test_acl_sync_with_an_empty_answer_says_once_what_it_may_mean(caplog: pytest.LogCaptureFixture) -> None:
    """Kafka lists no ACL, without an error, to a principal without DESCRIBE on the cluster."""
    source = FakeAdmin({"orders": 1}, acls=[])
    sync = make_sync(source, FakeAdmin())
    with caplog.at_level(logging.INFO, logger="mirror.source.topic_sync"):
        for _ in range(3):
            sync.sync_topic_acls()
    named = [r.getMessage() for r in caplog.records if "lists no topic ACL" in r.getMessage()]
    assert len(named) == 1 and "DESCRIBE on the CLUSTER resource" in named[0], named
