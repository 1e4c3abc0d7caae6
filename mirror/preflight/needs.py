"""What one herder of an mm2.properties needs from its clusters: docs/acls.md and the internal topics, as data.

:func:`flow_needs` reads the same configs the driver builds for the herder of ``A->B`` (its worker config and
its three connector configs) and lists:

* the :class:`Grant` s its principal needs on each cluster, each with the concrete names ``mirror check``
  asks the cluster about, the ACL docs/acls.md writes for it (a literal name or a prefix), why the flow
  needs it and how bad its absence is (``ERROR``: the flow or one of its tasks does not run; ``WARNING``: a
  feature degrades, records still flow);
* the :class:`InternalTopic` s the herder creates, with the partitions, replication factor and compaction
  it creates them with, and the key that sets the replication factor.

The rights that depend on what the clusters hold (the replicated topics and their remote topics, the
checkpointed groups) are added by :mod:`mirror.preflight.runner` once it has listed them, through
:meth:`FlowNeeds.source_topic_grants` and :meth:`FlowNeeds.group_grants`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka.admin import AclOperation, ResourcePatternType, ResourceType

from connect_runtime.runtime import worker_config as wc
from mirror.backfill_markers.markers import marker_topic
from mirror.client.offset_map import offset_map_topic
from mirror.client.replication_policy import ReplicationPolicy, policy_from_config
from mirror.config import checkpoint as checkpoint_keys
from mirror.config import heartbeat as heartbeat_keys
from mirror.config import source as source_keys
from mirror.config.checkpoint import MirrorCheckpointConfig
from mirror.config.heartbeat import MirrorHeartbeatConfig
from mirror.config.mirror_maker_config import (
    CHECKPOINT_CONNECTOR_CLASS,
    HEARTBEAT_CONNECTOR_CLASS,
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    connector_simple_name,
    parse_boolean,
)
from mirror.config.source import MirrorSourceConfig
from mirror.preflight.authorizer_rules import CLUSTER_NAME
from mirror.preflight.findings import Severity

_O = AclOperation
#: What every internal topic of the flow needs (created, written, read back, its configs read).
TOPIC_OPS = (_O.CREATE, _O.READ, _O.WRITE, _O.DESCRIBE, _O.DESCRIBE_CONFIGS)
#: What the remote topics need besides: their configs synced and partitions added.
REMOTE_TOPIC_OPS = (*TOPIC_OPS, _O.ALTER_CONFIGS, _O.ALTER)
_LITERAL, _PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
#: The suffix of the group ids ``mirror check`` describes to learn a prefix's rights (never joined).
PROBE_SUFFIX = "mirror-check"


@dataclass(frozen=True)
class Grant:
    """A right the replication principal needs on one cluster."""

    cluster: str
    resource: ResourceType
    names: tuple[str, ...]
    acl_name: str
    pattern: ResourcePatternType
    operations: tuple[AclOperation, ...]
    purpose: str
    if_missing: Severity = Severity.ERROR


@dataclass(frozen=True)
class InternalTopic:
    """A topic the herder creates if missing, as it creates it."""

    cluster: str
    name: str
    partitions: int
    replication_factor: int
    key: str
    purpose: str
    #: how bad a topic that exists without ``cleanup.policy=compact`` is
    if_not_compacted: Severity = Severity.WARNING


@dataclass
class FlowNeeds:
    """Everything :func:`flow_needs` knows about one herder pair."""

    pair: SourceAndTarget
    replicates: bool
    policy: ReplicationPolicy
    source_config: MirrorSourceConfig
    checkpoint_config: MirrorCheckpointConfig
    worker: wc.DistributedWorkerConfig
    grants: list[Grant] = field(default_factory=list)
    topics: list[InternalTopic] = field(default_factory=list)

    @property
    def exactly_once(self) -> bool:
        return self.worker.exactly_once_source_enabled

    def remote_acl(self, name: str) -> tuple[str, ResourcePatternType]:
        """The ACL docs/acls.md writes for a topic named like a remote topic: the policy's prefix (``A.``),
        which also covers ``A.checkpoints.internal``; the name itself under a policy without prefix."""
        sample = self.policy.format_remote_topic(self.pair.source, "t")
        prefix = sample[:-1] if sample != "t" and sample.endswith("t") else ""
        return (prefix, _PREFIXED) if prefix and name.startswith(prefix) else (name, _LITERAL)

    def source_topic_grants(self, topics: list[str]) -> list[Grant]:
        """The rights on the replicated ``topics`` (source) and on their remote topics (target)."""
        source, target = self.pair.source, self.pair.target
        grants = []
        for topic in topics:
            grants += [Grant(source, ResourceType.TOPIC, (topic,), topic, _LITERAL, (_O.READ,),
                             "the replication consumer reads it"),
                       Grant(source, ResourceType.TOPIC, (topic,), topic, _LITERAL, (_O.DESCRIBE_CONFIGS,),
                             "topic config sync reads its configs", Severity.WARNING)]
        by_acl: dict[tuple[str, ResourcePatternType], list[str]] = {}
        for topic in topics:
            remote = self.policy.format_remote_topic(source, topic)
            by_acl.setdefault(self.remote_acl(remote), []).append(remote)
        for (name, pattern), remotes in by_acl.items():
            grants.append(Grant(target, ResourceType.TOPIC, tuple(remotes), name, pattern, REMOTE_TOPIC_OPS,
                                "the remote topics are created, written, their configs synced and partitions "
                                "added"))
        return grants

    def group_grants(self, groups: list[str]) -> list[Grant]:
        """The rights on the checkpointed consumer ``groups``."""
        grants = [Grant(self.pair.source, ResourceType.GROUP, tuple(groups), "*", _LITERAL, (_O.DESCRIBE,),
                        "the checkpoint connector lists the groups and reads their offsets")] if groups else []
        if groups and self.checkpoint_config.sync_group_offsets_enabled:
            grants.append(Grant(self.pair.target, ResourceType.GROUP, tuple(groups), "*", _LITERAL,
                                (_O.READ, _O.DESCRIBE), "sync.group.offsets.enabled commits their offsets there",
                                Severity.WARNING))
        return grants


def _name_acl(name: str, prefix: str = "mm2-") -> tuple[str, ResourcePatternType]:
    return (prefix, _PREFIXED) if name.startswith(prefix) else (name, _LITERAL)


def flow_needs(config: MirrorMakerConfig, pair: SourceAndTarget) -> FlowNeeds:
    """What the herder of ``pair`` needs (see the module docstring)."""
    def connector(cls: str) -> dict[str, str]:
        return config.resolved(config.connector_base_config(pair, cls))

    source_props = connector(SOURCE_CONNECTOR_CLASS)
    source_cfg = MirrorSourceConfig(source_props)
    checkpoint_cfg = MirrorCheckpointConfig(connector(CHECKPOINT_CONNECTOR_CLASS))
    heartbeat_cfg = MirrorHeartbeatConfig(connector(HEARTBEAT_CONNECTOR_CLASS))
    worker = wc.DistributedWorkerConfig(config.worker_config(pair))
    needs = FlowNeeds(pair, parse_boolean(source_props.get("enabled")), policy_from_config(source_props),
                      source_cfg, checkpoint_cfg, worker)
    _herder(needs, config, heartbeat_cfg)
    if needs.replicates:
        _replication(needs, config)
    return needs


def _herder(needs: FlowNeeds, config: MirrorMakerConfig, heartbeat_cfg: MirrorHeartbeatConfig) -> None:
    """What every herder needs on its target: the Connect topics, group and leader's transactional id."""
    pair, worker, target = needs.pair, needs.worker, needs.pair.target
    group = worker.group_id
    for topic_key, rf_key, partitions, purpose in (
            (wc.CONFIG_TOPIC, wc.CONFIG_RF, 1, "the Connect configs topic"),
            (wc.OFFSET_TOPIC, wc.OFFSET_RF, int(worker[wc.OFFSET_PARTITIONS]), "the Connect offsets topic"),
            (wc.STATUS_TOPIC, wc.STATUS_RF, int(worker[wc.STATUS_PARTITIONS]), "the Connect status topic")):
        name = str(worker[topic_key])
        acl, pattern = _name_acl(name)
        needs.grants.append(Grant(target, ResourceType.TOPIC, (name,), acl, pattern, TOPIC_OPS, purpose))
        needs.topics.append(InternalTopic(target, name, partitions, int(worker[rf_key]),
                                          config.key_origin(rf_key, pair, worker=True) or rf_key, purpose,
                                          Severity.ERROR))
    needs.grants += [
        Grant(target, ResourceType.GROUP, (group,), group, _LITERAL, (_O.READ, _O.DESCRIBE),
              f"the flow's workers join the Connect group {group}"),
        Grant(target, ResourceType.GROUP, (f"connect-log-{worker[wc.CONFIG_TOPIC]}-{PROBE_SUFFIX}",), "connect-log-",
              _PREFIXED, (_O.DESCRIBE,), "the Connect topic readers' group ids", Severity.WARNING),
        Grant(target, ResourceType.TRANSACTIONAL_ID, (f"connect-cluster-{group}",), f"connect-cluster-{group}",
              _LITERAL, (_O.WRITE, _O.DESCRIBE), "the group leader's config-topic writer"),
    ]
    if heartbeat_cfg.emit_heartbeats_enabled:
        name = needs.policy.heartbeats_topic()
        needs.grants.append(Grant(target, ResourceType.TOPIC, (name,), name, _LITERAL, TOPIC_OPS,
                                  "the heartbeat connector writes heartbeats"))
        needs.topics.append(InternalTopic(target, name, 1, heartbeat_cfg.heartbeats_topic_replication_factor,
                                          _key(config, pair, heartbeat_keys.HEARTBEATS_TOPIC_REPLICATION_FACTOR),
                                          "the heartbeats topic"))
    if needs.exactly_once:
        ids = tuple(f"{group}-{connector_simple_name(c)}-0" for c in (SOURCE_CONNECTOR_CLASS, HEARTBEAT_CONNECTOR_CLASS,
                                                                       CHECKPOINT_CONNECTOR_CLASS))
        needs.grants.append(Grant(target, ResourceType.TRANSACTIONAL_ID, ids, f"{group}-", _PREFIXED,
                                  (_O.WRITE, _O.DESCRIBE), "exactly-once: each task's transactional producer"))


def _replication(needs: FlowNeeds, config: MirrorMakerConfig) -> None:
    """What a replicating flow needs besides: offset syncs, checkpoints, offset map, markers, groups, ACL sync."""
    pair, policy, cfg = needs.pair, needs.policy, needs.source_config
    source, target = pair.source, pair.target
    checkpoints_on = needs.checkpoint_config.emit_checkpoints_enabled and cfg.emit_offset_syncs_enabled
    if cfg.emit_offset_syncs_enabled:
        on_source = cfg.offset_syncs_topic_location == "source"
        cluster = source if on_source else target
        name = policy.offset_syncs_topic(target if on_source else source)
        needs.grants.append(Grant(cluster, ResourceType.TOPIC, (name,), name, _LITERAL, TOPIC_OPS,
                                  "offset syncs, which Java's MirrorClient and a Java MM2 taking over read",
                                  Severity.WARNING))
        needs.topics.append(InternalTopic(cluster, name, 1, cfg.offset_syncs_topic_replication_factor,
                                          _key(config, pair, source_keys.OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR),
                                          "the offset-syncs topic"))
    if checkpoints_on:
        name = policy.checkpoints_topic(source)
        acl, pattern = needs.remote_acl(name)
        needs.grants.append(Grant(target, ResourceType.TOPIC, (name,), acl, pattern, TOPIC_OPS,
                                  "the checkpoint connector writes checkpoints and reads them back"))
        needs.topics.append(InternalTopic(
            target, name, 1, needs.checkpoint_config.checkpoints_topic_replication_factor,
            _key(config, pair, checkpoint_keys.CHECKPOINTS_TOPIC_REPLICATION_FACTOR), "the checkpoints topic"))
    extra = [(marker_topic(source), cfg.replication_factor, source_keys.REPLICATION_FACTOR, "the backfill markers")]
    if cfg.emit_offset_map_enabled:
        extra.append((offset_map_topic(policy, source), cfg.offset_syncs_topic_replication_factor,
                      source_keys.OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR, "the exact offset map"))
    for name, rf, key, purpose in extra:
        acl, pattern = _name_acl(name)
        needs.grants.append(Grant(target, ResourceType.TOPIC, (name,), acl, pattern, TOPIC_OPS, purpose))
        needs.topics.append(InternalTopic(target, name, 1, rf, _key(config, pair, key), purpose))
    task_cfg = MirrorSourceConfig({**cfg.replication_policy_config(), "task.index": "0"})
    replication_consumer = task_cfg.source_consumer_config()["client.id"]  # task 0's, as the task builds it
    needs.grants += [
        Grant(source, ResourceType.GROUP, (replication_consumer,), "*", _LITERAL, (_O.DESCRIBE,),
              "the replication consumer's group id, whose coordinator librdkafka looks up"),
        Grant(target, ResourceType.GROUP, (f"mm2-reader-{policy.checkpoints_topic(source)}-{PROBE_SUFFIX}",),
              "mm2-", _PREFIXED, (_O.DESCRIBE,), "the group ids of the checkpoint, offset-map and marker readers"),
    ]
    if cfg.sync_topic_acls_enabled:
        needs.grants += [
            Grant(source, ResourceType.BROKER, (CLUSTER_NAME,), CLUSTER_NAME, _LITERAL, (_O.DESCRIBE,),
                  "sync.topic.acls.enabled reads the source's ACLs", Severity.WARNING),
            Grant(target, ResourceType.BROKER, (CLUSTER_NAME,), CLUSTER_NAME, _LITERAL, (_O.ALTER,),
                  "sync.topic.acls.enabled creates the synced ACLs", Severity.WARNING),
        ]


def _key(config: MirrorMakerConfig, pair: SourceAndTarget, key: str) -> str:
    """The mm2.properties key that sets ``key`` for ``pair`` (the file's own, else the top-level name)."""
    return config.key_origin(key, pair) or key
