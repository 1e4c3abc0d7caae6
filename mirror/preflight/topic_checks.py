"""The topics of a flow before it starts: which source topics it would replicate, whether its internal topics
can be created (replication factor against the cluster's brokers) or, where they exist, are compacted and
replicated enough, and whether the source topics' configs can be created and synced on the target.

The topic rules are the connector's own (:mod:`mirror.source.topic_sync`: the topic filter, the configs a
remote topic is created with and the incremental changes of a sync), sent to the target with
``validate_only``: the broker judges them as it would judge the real requests, and creates or changes
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from confluent_kafka import KafkaError
from confluent_kafka.admin import NewTopic

from mirror.filters import load_config_property_filter, load_topic_filter
from mirror.preflight.cluster_session import ClusterSession
from mirror.preflight.findings import CLEANUP_POLICY, REPLICATION_FACTOR, SOURCE_TOPICS, TOPIC_CONFIG, Report, Severity
from mirror.preflight.needs import FlowNeeds, InternalTopic
from mirror.source.topic_sync import creation_configs, incremental_config_ops, should_replicate_topic

#: An entry of ``topics`` that names one topic (a regular expression without special characters but dots).
_LITERAL_NAME = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")
_AUTHORIZATION = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED)
#: Kafka's recommended replication factor for internal topics (its own defaults are 3).
_SAFE_REPLICAS = 3


def replicated_topics(report: Report, source: ClusterSession, needs: FlowNeeds) -> list[str]:
    """The source topics the flow would replicate now: visible to the principal and accepted by the filter,
    as the connector finds them. A topic ``topics`` names that the principal cannot see is a finding."""
    flow, alias = str(needs.pair), source.alias
    visible = source.list_topics()
    topic_filter = load_topic_filter(needs.source_config.replication_policy_config())
    topics = sorted(t for t in visible if should_replicate_topic(
        t, needs.policy, topic_filter, needs.pair.target, needs.source_config.heartbeats_replication_enabled))
    named = [n for n in needs.source_config.topics if _LITERAL_NAME.fullmatch(n) and n not in visible]
    for name, state in source.topics(named).items():
        if not state.visible:
            report.add(Severity.ERROR, SOURCE_TOPICS, alias, flow,
                       f"topic {name} (named in topics) is not visible to {source.principal or 'the principal'} on "
                       f"{alias}: it does not exist, or the principal lacks DESCRIBE (and READ) on it",
                       f"create it, or grant READ on TOPIC {name} of {alias} (docs/acls.md)")
        elif not state.exists:
            report.add(Severity.WARNING, SOURCE_TOPICS, alias, flow,
                       f"topic {name} (named in topics) does not exist on {alias}: nothing of it is replicated until "
                       f"it is created", "create it on the source, or correct topics")
    if topics:
        shown = ", ".join(topics[:5]) + (f" and {len(topics) - 5} more" if len(topics) > 5 else "")
        report.add(Severity.OK, SOURCE_TOPICS, alias, flow, f"{len(topics)} topic(s) of {alias} to replicate: {shown}")
    elif not named:
        report.add(Severity.WARNING, SOURCE_TOPICS, alias, flow,
                   f"no topic of {alias} visible to {source.principal or 'the principal'} matches topics = "
                   f"{', '.join(needs.source_config.topics)}: the flow would replicate nothing",
                   "correct topics (and topics.exclude), or grant READ on the topics (docs/acls.md)")
    return topics


def internal_topic_spec(topic: InternalTopic) -> NewTopic:
    """The topic as the herder creates it: compacted, with its partitions and replication factor."""
    return NewTopic(topic.name, num_partitions=topic.partitions, replication_factor=topic.replication_factor,
                    config={"cleanup.policy": "compact"})


def check_internal_topics(report: Report, sessions: Mapping[str, ClusterSession], needs: FlowNeeds) -> None:
    """Each internal topic: creatable with its replication factor, or, where it exists, compacted and
    replicated on as many brokers as the cluster allows (up to 3)."""
    flow = str(needs.pair)
    for topic in needs.topics:
        session = sessions[topic.cluster]
        if not session.reached:
            continue
        state = session.topics([topic.name])[topic.name]
        if not state.visible:
            continue  # the principal may not DESCRIBE it: the ACL check says so
        if state.exists:
            _existing(report, session, topic, state.replicas, flow)
        else:
            _to_create(report, session, topic, flow)


def _existing(report: Report, session: ClusterSession, topic: InternalTopic, replicas: int, flow: str) -> None:
    alias, brokers = session.alias, len(session.brokers)
    if replicas < min(_SAFE_REPLICAS, brokers):
        report.add(Severity.WARNING, REPLICATION_FACTOR, alias, flow,
                   f"{topic.name} ({topic.purpose}) has replication factor {replicas} on a cluster of {brokers} "
                   f"brokers: losing one broker can lose it",
                   f"raise it to {min(_SAFE_REPLICAS, brokers)} with kafka-reassign-partitions.sh")
    else:
        report.add(Severity.OK, REPLICATION_FACTOR, alias, flow,
                   f"{topic.name} exists with replication factor {replicas} ({brokers} broker(s))")
    configs = session.topic_configs([topic.name])[topic.name]
    if isinstance(configs, KafkaError):
        return  # DESCRIBE_CONFIGS refused: the ACL check says so
    policy = next((e.value for e in configs if e.name == "cleanup.policy"), None) or "delete"
    if "compact" in {p.strip() for p in policy.split(",")}:
        report.add(Severity.OK, CLEANUP_POLICY, alias, flow, f"{topic.name} is compacted")
        return
    consequence = ("Java's Connect refuses such a topic; here retention would delete the flow's "
                   "configs, offsets or statuses and a restart would copy again from the start"
                   if topic.if_not_compacted is Severity.ERROR else
                   "retention deletes its records, which the flow reads back")
    report.add(topic.if_not_compacted, CLEANUP_POLICY, alias, flow,
               f"{topic.name} ({topic.purpose}) has cleanup.policy={policy}, not compact: {consequence}",
               f"kafka-configs.sh --bootstrap-server {session.bootstrap.split(',')[0]} --alter --entity-type "
               f"topics --entity-name {topic.name} --add-config cleanup.policy=compact")


def _to_create(report: Report, session: ClusterSession, topic: InternalTopic, flow: str) -> None:
    alias, brokers, rf = session.alias, len(session.brokers), topic.replication_factor
    if rf > brokers:
        report.add(Severity.ERROR, REPLICATION_FACTOR, alias, flow,
                   f"{topic.name} ({topic.purpose}) does not exist and would be created with replication factor "
                   f"{rf} ({topic.key}), but {alias} has {brokers} broker(s)",
                   f"set {topic.key} = {brokers} (or -1 for the brokers' default.replication.factor)")
        return
    error = session.validate_create([internal_topic_spec(topic)])[topic.name]
    if error is not None and error.code() not in _AUTHORIZATION and error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
        report.add(Severity.ERROR, REPLICATION_FACTOR, alias, flow,
                   f"{topic.name} ({topic.purpose}) cannot be created on {alias}: {error.str()}",
                   f"set {topic.key} to at most {brokers}, or fix what the broker names")
    elif error is None:
        report.add(Severity.OK, REPLICATION_FACTOR, alias, flow,
                   f"{topic.name} will be created (replication factor {rf if rf > 0 else 'broker default'}, "
                   f"compacted)")


def check_topic_configs(report: Report, source: ClusterSession, target: ClusterSession, needs: FlowNeeds,
                        topics: list[str]) -> dict[str, NewTopic]:
    """Remote topics that do not exist: created with the source's configs (``validate_only``); those that do:
    their config sync applied (``validate_only``). Returns the creation of each missing remote topic."""
    flow, cfg = str(needs.pair), needs.source_config
    config_filter = load_config_property_filter(cfg.replication_policy_config())
    described = source.topic_configs(topics)
    partitions = source.list_topics()
    remotes = {t: needs.policy.format_remote_topic(needs.pair.source, t) for t in topics}
    states = target.topics(remotes.values())
    specs: dict[str, NewTopic] = {}
    refused = 0
    for topic, remote in remotes.items():
        entries = described.get(topic)
        if isinstance(entries, KafkaError) or entries is None or not states[remote].visible:
            continue  # DESCRIBE_CONFIGS on the source or DESCRIBE on the target refused: the ACL check says so
        if not states[remote].exists:
            spec = NewTopic(remote, num_partitions=partitions.get(topic, 1), replication_factor=cfg.replication_factor,
                            config=creation_configs(entries, config_filter))
            specs[remote] = spec
            refused += _creation(report, target, needs, topic, spec, flow)
        elif cfg.sync_topic_configs_enabled:
            refused += _sync(report, target, topic, remote, incremental_config_ops(entries, config_filter), flow,
                             cfg.config_properties_exclude)
    if topics and not refused:
        report.add(Severity.OK, TOPIC_CONFIG, target.alias, flow,
                   f"the configs of {len(topics)} source topic(s) can be created and synced on {target.alias}")
    return specs


def _creation(report: Report, target: ClusterSession, needs: FlowNeeds, topic: str, spec: NewTopic, flow: str) -> int:
    error = target.validate_create([spec])[spec.topic]
    if error is None or error.code() in _AUTHORIZATION or error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
        return 0
    brokers = len(target.brokers)
    if error.code() == KafkaError.INVALID_REPLICATION_FACTOR:
        report.add(Severity.ERROR, REPLICATION_FACTOR, target.alias, flow,
                   f"remote topic {spec.topic} would be created with replication factor {spec.replication_factor} "
                   f"(replication.factor), but {target.alias} has {brokers} broker(s): {error.str()}",
                   f"set {needs.pair}.replication.factor = {brokers} (or -1 for the brokers' default)")
    else:
        report.add(Severity.ERROR, TOPIC_CONFIG, target.alias, flow,
                   f"remote topic {spec.topic} cannot be created with the configs of {topic}: {error.str()}",
                   f"exclude the config it names: {needs.pair}.config.properties.exclude = "
                   f"{', '.join(needs.source_config.config_properties_exclude)}, <name>; or change it on the source")
    return 1


def _sync(report: Report, target: ClusterSession, topic: str, remote: str,
          ops: list[tuple[str, str, str | None]], flow: str, excluded: list[str]) -> int:
    if not ops or target.validate_alter(remote, ops) is None:
        return 0
    failing = []
    for op in ops:  # the broker names one config per refusal: find every one
        error = target.validate_alter(remote, [op])
        if error is not None and error.code() not in _AUTHORIZATION:
            failing.append((op, error))
    for (name, _, value), error in failing:
        report.add(Severity.WARNING, TOPIC_CONFIG, target.alias, flow,
                   f"topic config sync cannot apply {name}={value} of {topic} to {remote}: {error.str()} (the "
                   f"sync fails on every interval; records still flow)",
                   f"exclude it: {flow}.config.properties.exclude = {', '.join([*excluded, name])}; or change "
                   f"it on the source")
    return len(failing)

