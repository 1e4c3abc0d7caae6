"""What MirrorSourceConnector keeps in step on the target: topics, partitions, configs, ACLs.

State: the *known source* topic-partitions (filtered, topics in the order Java's connector knows them,
which deals the tasks: :mod:`mirror.source.describe_topics_order`; partitions ascending) and the *known
target* topic-partitions (remote topics of this source). Both are replaced as a whole, never mutated, so
``task_configs`` can read them from another thread without a lock.

Rules kept from MM2:

* A source topic is replicated if the topic filter accepts it, or it is a heartbeats topic and
  ``heartbeats.replication.enabled``; and it is not internal; and replicating it would not close a cycle
  (a hop of its name chain comes from the target).
* New remote topics are created with the source's partition count, ``replication.factor``, and the
  source's configs filtered *at creation* (non-defaults, or defaults when ``use.defaults.from=source``;
  never read-only, sensitive, static-broker or excluded properties), all of them in one batch call as
  Java's ``createTopics`` (:meth:`~connect_runtime.clients.admin.TopicAdmin.create_topics`: a few requests
  for thousands of topics, throttled ones sent again); what the target still throttles or refused is
  missing on the target at the next refresh, which creates it then.
* Created remote topics and added partitions are awaited (:meth:`TopicSync.await_created_partitions`)
  before tasks produce to them. A Kafka broker shows them in its metadata some time after CreateTopics or
  CreatePartitions answered (tens of seconds for thousands of partitions). A task producer started before
  fails at once a record to a partition its metadata does not show of a topic it knows; it queues the
  records of a topic it does not know yet, but keeps asking the target for every such topic (with
  auto-creation allowed, as Java's producer asks), and tasks producing to thousands of topics while Apache
  Kafka 4.4 was still creating them slowed that creation several times over (bench/scale.py start).
* Partitions only grow. A target that cannot add partitions (Tansu) is one warning per topic, not a crash.
* Config sync is one incremental alter per round: source defaults become DELETE (the target's own
  default applies) unless ``use.defaults.from=source``, everything else SET. Java sends every replicated
  topic's ops every round; here only the topics whose ops changed or whose remote topic no longer says
  what they say (:meth:`TopicSync.sync_topic_configs`), so what the target ends up with is the same.
* ACL sync copies LITERAL topic ACLs of replicated topics, never ``ALLOW WRITE``, turns ``ALLOW ALL`` into
  ``ALLOW READ``, and never deletes anything.
* A refresh that sees source partitions added or removed, or source partitions missing on the target,
  creates what is missing and asks for a task reconfiguration. Partitions that appear only on the target
  never do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ConfigSource,
    ResourcePatternType,
    ResourceType,
)

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.admin import ConfigOp, CreateOutcome, TopicConfigEntry, TopicSpec
from connect_runtime.clients.errors import kafka_error_of
from mirror.client.replication_policy import ReplicationPolicy, is_cycle
from mirror.filters import ConfigPropertyFilter, TopicFilter
from mirror.source.describe_topics_order import describe_topics_order

logger = logging.getLogger(__name__)

TopicPartitionT = tuple[str, int]

DEFAULT_CONFIG = "DEFAULT_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
#: How Kafka reports a topic's own override; any other source means the topic does not override the key.
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
#: Topics a creation round names in an ERROR line each; the others are counted in one line.
MAX_ERRORS_LOGGED = 20
#: How often :meth:`TopicSync.await_created_partitions` describes the topics not yet shown in full.
VISIBILITY_POLL_S = 0.5

# None = "any" for name, principal and host; the stubs type them as str although the client takes None.
_ANY: Any = None
ANY_TOPIC_ACL = AclBindingFilter(ResourceType.TOPIC, _ANY, ResourcePatternType.ANY, _ANY, _ANY,
                                 AclOperation.ANY, AclPermissionType.ANY)


def should_replicate_acl(binding: AclBinding) -> bool:
    """Write permissions are never mirrored: only the source's producers may write a topic."""
    allow = binding.permission_type == AclPermissionType.ALLOW
    return not (allow and binding.operation == AclOperation.WRITE)


def target_acl_binding(binding: AclBinding, remote_topic: str) -> AclBinding:
    """The same entry on the remote topic; ``ALLOW ALL`` is downgraded to ``ALLOW READ``."""
    operation = binding.operation
    if binding.permission_type == AclPermissionType.ALLOW and operation == AclOperation.ALL:
        operation = AclOperation.READ
    return AclBinding(ResourceType.TOPIC, remote_topic, ResourcePatternType.LITERAL, binding.principal,
                      binding.host, operation, binding.permission_type)


class SourceAdmin(Protocol):
    """The admin calls made on the source cluster (a :class:`~connect_runtime.clients.admin.TopicAdmin`)."""

    def list_topics(self, include_internal: bool = False) -> set[str]: ...

    def describe_topics(self, names: Iterable[str]) -> dict[str, int]: ...

    def describe_configs(self, topics: Iterable[str]) -> dict[str, list[TopicConfigEntry]]: ...

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]: ...


class TargetAdmin(Protocol):
    """The admin calls made on the target cluster."""

    def list_topics(self, include_internal: bool = False) -> set[str]: ...

    def describe_topics(self, names: Iterable[str]) -> dict[str, int]: ...

    def create_topics(self, topics: Mapping[str, TopicSpec], deadline_s: float | None = None,
                      stop: threading.Event | None = None) -> CreateOutcome: ...

    def create_partitions(self, counts: Mapping[str, int]) -> set[str]: ...

    def describe_configs(self, topics: Iterable[str]) -> dict[str, list[TopicConfigEntry]]: ...

    def incremental_alter_configs(self, changes: Mapping[str, Sequence[ConfigOp]]) -> None: ...

    def create_acls(self, bindings: Sequence[AclBinding]) -> None: ...


# ---- pure rules ---------------------------------------------------------------------------------------


def should_replicate_topic(topic: str, policy: ReplicationPolicy, topic_filter: TopicFilter,
                           target_alias: str, heartbeats_replication_enabled: bool) -> bool:
    """Accepted by the filter (or a heartbeats topic), not internal, and not a cycle."""
    wanted = topic_filter.should_replicate_topic(topic) or (
        heartbeats_replication_enabled and policy.is_heartbeats_topic(topic))
    return wanted and not policy.is_internal_topic(topic) and not is_cycle(policy, topic, target_alias)


def config_source(entry: TopicConfigEntry) -> str:
    """The ConfigSource name of an entry; the client may report it as its numeric code (``"5"``)."""
    source = str(entry.source)
    if source.isdigit():
        try:
            return ConfigSource(int(source)).name
        except ValueError:
            return source
    return source


def _is_default(entry: TopicConfigEntry) -> bool:
    # Java's ConfigEntry.isDefault(): the source is DEFAULT_CONFIG. Dynamic broker defaults are *not*
    # defaults here and are copied as topic overrides, as MM2 does.
    return config_source(entry) == DEFAULT_CONFIG


def _replicable(entry: TopicConfigEntry, config_filter: ConfigPropertyFilter) -> bool:
    return (not entry.read_only and not entry.sensitive and config_source(entry) != STATIC_BROKER_CONFIG
            and entry.value is not None and config_filter.should_replicate_config_property(entry.name))


def creation_configs(entries: Iterable[TopicConfigEntry],
                     config_filter: ConfigPropertyFilter) -> dict[str, str]:
    """Configs for a new remote topic (Java ``targetConfig(config, incremental=false)``)."""
    result: dict[str, str] = {}
    for entry in entries:
        if _is_default(entry) and not config_filter.should_replicate_source_default(entry.name):
            continue
        if _replicable(entry, config_filter) and entry.value is not None:
            result[entry.name] = entry.value
    return result


def incremental_config_ops(entries: Iterable[TopicConfigEntry],
                           config_filter: ConfigPropertyFilter) -> list[ConfigOp]:
    """One topic's incremental alter (Java ``targetConfig(config, incremental=true)`` + SET/DELETE choice)."""
    ops: list[ConfigOp] = []
    for entry in entries:
        if entry.read_only or entry.sensitive or config_source(entry) == STATIC_BROKER_CONFIG:
            continue
        if not config_filter.should_replicate_config_property(entry.name):
            continue
        if _is_default(entry) and not config_filter.should_replicate_source_default(entry.name):
            ops.append((entry.name, "DELETE", None))
        elif entry.value is not None:
            ops.append((entry.name, "SET", entry.value))
    return ops


def ops_digest(ops: Iterable[ConfigOp]) -> int:
    """What :meth:`TopicSync.sync_topic_configs` keeps of a topic's acknowledged ops: their set's hash, which
    equal ops give whatever their order. Two different sets of ops with the same 64-bit hash would count as
    unchanged, and an unchanged topic is still sent when the target's described configs do not say what its
    ops say (:func:`ops_in_effect`)."""
    return hash(frozenset(ops))


def ops_in_effect(ops: Iterable[ConfigOp], target: Iterable[TopicConfigEntry]) -> bool:
    """Whether a remote topic's described configs (``target``) already say what ``ops`` would make them say:
    each SET is the topic's own override with that value, and no DELETEd key is overridden by the topic.

    Only Kafka's ``DYNAMIC_TOPIC_CONFIG`` counts as an override: an equal value that comes from a broker
    default is not what a SET leaves (the topic would follow a later change of that default), so it is sent.
    Tansu reports its overrides as ``DEFAULT_CONFIG`` (docs/tansu.md): there a SET is never seen in effect
    and is sent every round, as Java does, and an override added on the target behind a DELETE is not seen.
    """
    overrides = {entry.name: entry.value for entry in target if config_source(entry) == DYNAMIC_TOPIC_CONFIG}
    for name, op, value in ops:
        if op == "DELETE" and name in overrides:
            return False
        if op == "SET" and (name not in overrides or overrides[name] != value):
            return False
    return True


def assign_round_robin(partitions: Sequence[TopicPartitionT], max_tasks: int) -> list[list[TopicPartitionT]]:
    """MM2's task assignment: ``min(max_tasks, n)`` tasks; partition i goes to task ``i % tasks``."""
    num_tasks = min(max_tasks, len(partitions))
    if num_tasks <= 0:
        return []
    tasks: list[list[TopicPartitionT]] = [[] for _ in range(num_tasks)]
    for index, tp in enumerate(partitions):
        tasks[index % num_tasks].append(tp)
    return tasks


def assign_by_topic(partitions: Sequence[TopicPartitionT], max_tasks: int) -> list[list[TopicPartitionT]]:
    """``task.assignment = by-topic``: as many tasks as MM2's, each a contiguous run of the partitions grouped
    by topic (topics in the order given, each topic's partitions in order), the runs' sizes within one of each
    other. At most ``tasks - 1`` topics are split between two neighbouring tasks; every other topic is whole in
    one task, so each task's consumer and producer know about ``1/tasks`` of the topics instead of all of them
    (a librdkafka client holds state for every partition of every topic it knows, used or not)."""
    num_tasks = min(max_tasks, len(partitions))
    if num_tasks <= 0:
        return []
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    ordered = [(topic, p) for topic, numbers in by_topic.items() for p in sorted(numbers)]
    size, larger = divmod(len(ordered), num_tasks)
    tasks: list[list[TopicPartitionT]] = []
    start = 0
    for index in range(num_tasks):
        end = start + size + (1 if index < larger else 0)
        tasks.append(ordered[start:end])
        start = end
    return tasks


def _partition_counts(tps: Iterable[TopicPartitionT]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic, _ in tps:
        counts[topic] = counts.get(topic, 0) + 1
    return counts


def _expand(counts: Mapping[str, int]) -> list[TopicPartitionT]:
    return [(topic, p) for topic in sorted(counts) for p in range(counts[topic])]


# ---- stateful sync ------------------------------------------------------------------------------------


class TopicSync:
    """Topic/partition/config/ACL replication state of one source connector.

    All methods except the read-only properties run on the connector's scheduler thread.
    ``raise_error`` fails the connector (used when the target cannot do incremental config changes).
    """

    def __init__(self, source_alias: str, target_alias: str, policy: ReplicationPolicy,
                 topic_filter: TopicFilter, config_filter: ConfigPropertyFilter, source_admin: SourceAdmin,
                 target_admin: TargetAdmin, *,
                 replication_factor: int, heartbeats_replication_enabled: bool,
                 raise_error: Callable[[BaseException], None] | None = None,
                 stop: threading.Event | None = None) -> None:
        self._source = source_alias
        self._target = target_alias
        self._policy = policy
        self._topic_filter = topic_filter
        self._config_filter = config_filter
        self._source_admin = source_admin
        self._target_admin = target_admin
        self._replication_factor = replication_factor
        self._heartbeats_replication_enabled = heartbeats_replication_enabled
        self._raise_error = raise_error
        #: Set when the connector stops: a creation in progress ends at its next batch.
        self._stop = stop
        self._known_source: tuple[TopicPartitionT, ...] = ()
        self._known_target: tuple[TopicPartitionT, ...] = ()
        self._no_acl_authorizer_logged = False
        self._acl_describe_refused_logged = False
        self._no_acls_logged = False
        # (remote topic, partition count) growths the target refused (e.g. Tansu: no CreatePartitions)
        self._refused_growth: set[tuple[str, int]] = set()
        #: remote topic -> partitions: created, found existing or grown, and not yet seen in full in the
        #: target's metadata
        self._unseen: dict[str, int] = {}
        #: remote topic -> :func:`ops_digest` of the config ops the target last acknowledged for it
        #: (sync_topic_configs). A digest, not the ops: dozens of ops per topic kept for thousands of topics
        #: are megabytes (8 MiB at 2,000 topics) held for a comparison.
        self._applied_digests: dict[str, int] = {}
        self._target_describe_refused_logged = False

    @property
    def known_source_topic_partitions(self) -> tuple[TopicPartitionT, ...]:
        return self._known_source

    def formatted_remote(self, topic: str) -> str:
        return self._policy.format_remote_topic(self._source, topic)

    def should_replicate_topic(self, topic: str) -> bool:
        return should_replicate_topic(topic, self._policy, self._topic_filter, self._target,
                                      self._heartbeats_replication_enabled)

    # -- discovery --

    def find_source_topic_partitions(self) -> list[TopicPartitionT]:
        listed = self._source_admin.list_topics()
        counts = self._source_admin.describe_topics(t for t in listed if self.should_replicate_topic(t))
        return [(topic, p) for topic in describe_topics_order(listed, counts) for p in range(counts[topic])]

    def find_target_topic_partitions(self) -> list[TopicPartitionT]:
        checkpoints = self._policy.checkpoints_topic(self._source)
        topics = [t for t in self._target_admin.list_topics()
                  if self._policy.topic_source(t) == self._source and t != checkpoints]
        return _expand(self._target_admin.describe_topics(topics))

    def load_topic_partitions(self) -> None:
        self._known_source = tuple(self.find_source_topic_partitions())
        self._known_target = tuple(self.find_target_topic_partitions())
        logger.info("%s->%s found %d source topic-partitions to replicate", self._source, self._target,
                    len(self._known_source))

    def refresh_known_target_topics(self) -> None:
        self._known_target = tuple(self.find_target_topic_partitions())

    def refresh_topic_partitions(self) -> bool:
        """Re-discover both sides; create what is missing. True when the tasks must be reconfigured."""
        source = self.find_source_topic_partitions()
        target = self.find_target_topic_partitions()
        upstream_of_target: set[TopicPartitionT] = set()
        for topic, partition in target:
            upstream = self._policy.upstream_topic(topic)
            if upstream is not None:
                upstream_of_target.add((upstream, partition))
        missing_in_target = {tp for tp in set(source) - upstream_of_target if not self._growth_refused(tp)}
        self._known_target = tuple(target)
        known = set(self._known_source)
        if known == set(source) and not missing_in_target:
            return False
        added = sorted(set(source) - known)
        deleted = sorted(known - set(source))
        logger.info("%s->%s found %d new topic-partitions %s, %d deleted %s, %d missing on the target %s; "
                    "reconfiguring tasks", self._source, self._target, len(added), _short(added),
                    len(deleted), _short(deleted), len(missing_in_target), _short(sorted(missing_in_target)))
        self._known_source = tuple(source)
        self.compute_and_create_topic_partitions()
        return True

    # -- creation --

    def compute_and_create_topic_partitions(self) -> None:
        source_counts = _partition_counts(self._known_source)
        target_counts = _partition_counts(self._known_target)
        new_topics: dict[str, int] = {}
        grow: dict[str, int] = {}
        for topic, count in source_counts.items():
            remote = self.formatted_remote(topic)
            if remote not in target_counts:
                new_topics[topic] = count
            elif count > target_counts[remote]:
                grow[remote] = count
        if new_topics:
            self._create_new_topics(new_topics)
        grow = {topic: count for topic, count in grow.items() if (topic, count) not in self._refused_growth}
        if grow:
            # TopicAdmin logs one warning per topic when the target cannot add partitions (Tansu). That
            # answer is remembered: retrying the same growth on every refresh would repeat the warning
            # and request a pointless task reconfiguration each time.
            grown = self._target_admin.create_partitions(grow)
            self._refused_growth.update((topic, count) for topic, count in grow.items() if topic not in grown)
            self._unseen.update((topic, grow[topic]) for topic in grown)

    def _growth_refused(self, tp: TopicPartitionT) -> bool:
        """Whether ``tp`` is missing on the target only because the target refused to add it."""
        remote = self.formatted_remote(tp[0])
        return any(topic == remote and count > tp[1] for topic, count in self._refused_growth)

    def _create_new_topics(self, partition_counts: Mapping[str, int]) -> None:
        """Create the remote topics of ``partition_counts`` (source topic -> partitions) with the source's
        configs: one DescribeConfigs, then CreateTopics in batches; one log line per round, not two per topic
        (thousands at a large start)."""
        try:
            configs = self._source_admin.describe_configs(sorted(partition_counts))
        except ConnectError:
            logger.exception("%s->%s could not describe source topic configs; creating remote topics without "
                             "them", self._source, self._target)
            configs = {}
        specs = {self.formatted_remote(topic): TopicSpec(partition_counts[topic], self._replication_factor,
                                                         creation_configs(configs.get(topic, []),
                                                                          self._config_filter))
                 for topic in sorted(partition_counts)}
        outcome = self._target_admin.create_topics(specs, stop=self._stop)
        self._unseen.update((remote, specs[remote].partitions) for remote in (*outcome.created, *outcome.existed))
        logger.info("%s->%s created %d remote topic(s) (%d partitions, replication factor %d), %d existed, %d "
                    "still throttled by the target, %d refused", self._source, self._target, len(outcome.created),
                    sum(specs[t].partitions for t in outcome.created), self._replication_factor,
                    len(outcome.existed), len(outcome.throttled), len(outcome.failed))
        if outcome.throttled:
            logger.warning("%s->%s: the target still throttles the creation of %d remote topic(s) (its "
                           "controller_mutation_rate quota), e.g. %s; they are created at the next topic refresh "
                           "(refresh.topics.interval.seconds), or raise the quota of this principal",
                           self._source, self._target, len(outcome.throttled), ", ".join(outcome.throttled[:5]))
        for remote, error in list(outcome.failed.items())[:MAX_ERRORS_LOGGED]:
            logger.error("%s->%s could not create topic %s: %s", self._source, self._target, remote, error)
        if len(outcome.failed) > MAX_ERRORS_LOGGED:
            logger.error("%s->%s could not create %d more topic(s)", self._source, self._target,
                         len(outcome.failed) - MAX_ERRORS_LOGGED)

    def await_created_partitions(self, deadline: float) -> None:
        """Wait until the target's metadata shows every remote topic created (or found existing) and every
        partition added since the last call, or until ``deadline`` (``time.monotonic()``) or the
        connector's stop.

        The module docstring says why tasks wait for them. One DescribeTopics of the topics not yet shown
        in full every :data:`VISIBILITY_POLL_S` (a read request that shrinks as they appear). Leaders are
        not awaited apart: a KRaft broker learns a partition and its leader from the same metadata record,
        and a producer that knows a partition without a leader waits for one, it does not fail its records.
        What is not shown by the deadline is logged once and left to the task producers, which queue the
        records of a topic they do not know yet (``topic.metadata.propagation.max.ms``).
        """
        pending, self._unseen = dict(self._unseen), {}
        while pending:
            try:
                shown = self._target_admin.describe_topics(sorted(pending))
            except ConnectError as exc:  # the target answers later: it counts as not shown yet
                logger.debug("%s->%s could not describe the created remote topics yet: %s", self._source,
                             self._target, exc)
                shown = {}
            pending = {topic: count for topic, count in pending.items() if shown.get(topic, 0) < count}
            if not pending:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if self._stopped_within(min(VISIBILITY_POLL_S, left)):
                return
        if pending:
            logger.warning("%s->%s: the target does not show %d created or grown remote topic(s) in full in its "
                           "metadata yet, e.g. %s; tasks start now and their producers wait for them", self._source,
                           self._target, len(pending), ", ".join(sorted(pending)[:5]))

    def _stopped_within(self, seconds: float) -> bool:
        """Wait ``seconds``; True (at once) when the connector stops meanwhile."""
        if self._stop is None:
            time.sleep(seconds)
            return False
        return self._stop.wait(seconds)

    # -- configs --

    def topics_being_replicated(self) -> list[str]:
        target_topics = {t for t, _ in self._known_target}
        return sorted({t for t, _ in self._known_source if self.formatted_remote(t) in target_topics})

    def sync_topic_configs(self) -> None:
        """Send the remote topics whose config ops changed, or which no longer say what their ops say.

        Java's ``syncTopicConfigs`` sends an IncrementalAlterConfigs of every replicated topic each round
        (thousands of topics, dozens of ops each, every ``sync.topic.configs.interval.seconds``) although
        nothing changed in most rounds. Here a digest of the ops the target last acknowledged is kept per remote
        topic (:func:`ops_digest`) and a topic is sent when its ops differ from them: a new topic, a changed
        source config, a changed filter, or a topic whose last alter failed (forgotten then, so it is sent
        again).

        Java also overwrites, at the next round, a synced key someone changed on the target behind its back
        (``testSyncTopicConfigs`` asserts it): that is kept by describing the unchanged topics on the target
        once per round and sending those whose described configs no longer say what their ops say
        (:func:`ops_in_effect`). A re-sync of everything every N rounds would keep it too, but N intervals
        late; the describe is one read request (the principal already holds DESCRIBE_CONFIGS on the remote
        topics: ALTER_CONFIGS implies it) in place of a write of every topic. Should the target refuse it,
        the round sends every topic, as Java does.
        """
        topics = self.topics_being_replicated()
        if not topics:
            self._applied_digests = {}
            return
        described = self._source_admin.describe_configs(topics)
        wanted = {self.formatted_remote(topic): incremental_config_ops(entries, self._config_filter)
                  for topic, entries in described.items()}
        wanted = {topic: ops for topic, ops in wanted.items() if ops}
        # Topics no longer replicated leave the memory (topic churn would otherwise grow it forever).
        self._applied_digests = {t: d for t, d in self._applied_digests.items() if t in wanted}
        changes = self._config_changes(wanted)
        if not changes:
            return
        try:
            self._target_admin.incremental_alter_configs(changes)
        except ConnectError as exc:
            # Which topics of the request were applied is not known: all of them are sent again next round.
            for topic in changes:
                self._applied_digests.pop(topic, None)
            error = kafka_error_of(exc.__cause__) if exc.__cause__ is not None else None
            if error is not None and error.code() in (KafkaError.UNSUPPORTED_VERSION,
                                                      KafkaError._UNSUPPORTED_FEATURE):
                logger.error("%s->%s the target cluster does not support incremental topic config changes; "
                             "brokers older than 2.3 are not supported", self._source, self._target)
                if self._raise_error is not None:
                    self._raise_error(exc)
                return
            logger.warning("%s->%s could not alter topic configs: %s", self._source, self._target, exc)
            return
        self._applied_digests.update((topic, ops_digest(ops)) for topic, ops in changes.items())
        logger.debug("%s->%s altered the configs of %d of %d remote topic(s)", self._source, self._target,
                     len(changes), len(wanted))

    def _config_changes(self, wanted: Mapping[str, list[ConfigOp]]) -> dict[str, list[ConfigOp]]:
        """The topics of ``wanted`` to send: ops changed since the last acknowledged alter, or not in
        effect on the target (every unchanged one when the target cannot be described)."""
        digests = {t: ops_digest(ops) for t, ops in wanted.items()}
        unchanged = sorted(t for t, digest in digests.items() if self._applied_digests.get(t) == digest)
        send = {t: ops for t, ops in wanted.items() if self._applied_digests.get(t) != digests[t]}
        if not unchanged:
            return send
        try:
            target = self._target_admin.describe_configs(unchanged)
        except ConnectError as exc:
            if not self._target_describe_refused_logged:
                self._target_describe_refused_logged = True
                logger.info("%s->%s could not describe the remote topics' configs (%s); every replicated topic's "
                            "configs are sent each round until it can", self._source, self._target, exc)
            return dict(wanted)
        self._target_describe_refused_logged = False
        send.update((t, wanted[t]) for t in unchanged if not ops_in_effect(wanted[t], target.get(t, [])))
        return send

    # -- ACLs --

    def sync_topic_acls(self) -> None:
        try:
            bindings = self._source_admin.describe_acls(ANY_TOPIC_ACL)
        except ConnectError as exc:
            error = kafka_error_of(exc.__cause__) if exc.__cause__ is not None else None
            if error is not None and error.code() == KafkaError.SECURITY_DISABLED:
                if not self._no_acl_authorizer_logged:
                    self._no_acl_authorizer_logged = True
                    logger.info("No ACL authorizer is configured on the source Kafka cluster, so no topic "
                                "ACL syncing will take place. Consider disabling topic ACL syncing by "
                                "setting sync.topic.acls.enabled to 'false'.")
                return
            if error is not None and error.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
                self._acl_listing_refused("refused to list its ACLs (CLUSTER_AUTHORIZATION_FAILED)")
                return
            raise
        if not bindings:
            # Kafka answers a principal without DESCRIBE on its cluster with an empty list, no error: say
            # so once, or the sync would copy nothing and say nothing.
            if not self._no_acls_logged:
                self._no_acls_logged = True
                logger.info("%s->%s: topic ACL sync: the source cluster %s lists no topic ACL. If it has some, "
                            "this principal lacks DESCRIBE on the CLUSTER resource of %s (Kafka then answers "
                            "with none): grant it, or set sync.topic.acls.enabled = false (docs/acls.md)",
                            self._source, self._target, self._source, self._source)
            return
        self._acl_describe_refused_logged = False
        wanted = [target_acl_binding(b, self.formatted_remote(b.name)) for b in bindings
                  if b.restype == ResourceType.TOPIC
                  and b.resource_pattern_type == ResourcePatternType.LITERAL
                  and should_replicate_acl(b) and self.should_replicate_topic(b.name)]
        if not wanted:
            return
        try:
            self._target_admin.create_acls(wanted)
        except ConnectError as exc:
            logger.warning("%s->%s could not create ACLs on the target: %s", self._source, self._target, exc)

    def _acl_listing_refused(self, why: str) -> None:
        """Once, not every interval (Java logs a stack trace each time); again only after a success."""
        if self._acl_describe_refused_logged:
            return
        self._acl_describe_refused_logged = True
        logger.warning("%s->%s: topic ACL sync skipped: the source cluster %s %s. Grant this principal DESCRIBE "
                       "on the CLUSTER resource of %s, or set sync.topic.acls.enabled = false (docs/acls.md)",
                       self._source, self._target, self._source, why, self._source)


def _short(items: Sequence[TopicPartitionT], limit: int = 10) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in items[:limit])
    return f"[{shown}{', ...' if len(items) > limit else ''}]"
