"""``mirror check``'s pass over every herder of an mm2.properties: reach each cluster once, then per flow
its topics, its rights, its internal topics and what its brokers must offer.

Every cluster is asked at once (:class:`~mirror.preflight.cluster_session.ClusterSession` sends its first
request without waiting), each within its own timeout: an unreachable cluster is one finding, and only the
checks that need it are skipped. A request that fails half-way through a flow's checks is one finding naming
it, never a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from mirror.client.mirror_client import reader_config
from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget
from mirror.filters import load_group_filter
from mirror.preflight.broker_checks import check_broker_configs, check_consumer_protocol_groups, check_exactly_once
from mirror.preflight.cluster_session import ClusterSession
from mirror.preflight.findings import BROKER, CONNECTIVITY, Report, Severity
from mirror.preflight.needs import FlowNeeds, flow_needs
from mirror.preflight.rights import check_grants
from mirror.preflight.topic_checks import (
    check_internal_topics,
    check_topic_configs,
    internal_topic_spec,
    replicated_topics,
)

DEFAULT_TIMEOUT_S = 10.0


def preflight(config: MirrorMakerConfig, pairs: Iterable[SourceAndTarget], report: Report | None = None,
              timeout_s: float = DEFAULT_TIMEOUT_S) -> Report:
    """Check every herder of ``pairs`` against its clusters; findings are added to ``report``."""
    report = report if report is not None else Report()
    needs = [flow_needs(config, pair) for pair in pairs]
    aliases = dict.fromkeys(a for n in needs for a in (n.pair.source, n.pair.target))
    sessions = {a: ClusterSession(a, reader_config(config.client_config(a), "admin"), timeout_s) for a in aliases}
    started = time.monotonic()
    for session in sessions.values():
        session.start()
    for session in sessions.values():
        _reach(report, config, session, started)
    for flow in needs:
        try:
            _check_flow(report, sessions, flow)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else exc
            report.add(Severity.ERROR, CONNECTIVITY, None, str(flow.pair),
                       f"the checks of flow {flow.pair} stopped on a request that failed: {error}",
                       "run mirror check again; if it fails the same way, check the clusters' health")
    report.clusters = {alias: _summary(s) for alias, s in sessions.items()}
    return report


def _reach(report: Report, config: MirrorMakerConfig, session: ClusterSession, started: float) -> None:
    alias = session.alias
    why = session.finish()
    if why is not None:
        report.add(Severity.ERROR, CONNECTIVITY, alias, None, f"cannot use cluster {alias}: {why}",
                   _connection_fix(config, session, why))
        return
    seconds = time.monotonic() - started
    try:
        session.load_authorization()
    except KafkaException as exc:
        report.add(Severity.WARNING, CONNECTIVITY, alias, None, f"the ACLs of {alias} could not be read: {exc}")
    who = session.principal or "a principal the brokers map from the certificate or token"
    rights = ("no authorizer: every operation is allowed" if session.authorizer is False else
              "a super user" if session.super_user else
              "ACLs readable" if session.acls is not None else
              "ACLs not readable (no DESCRIBE on the cluster): rights read per resource")
    report.add(Severity.OK, CONNECTIVITY, alias, None,
               f"reached {alias} in {seconds:.1f} s as {who}: cluster {session.cluster_id}, "
               f"{len(session.brokers)} broker(s); {rights}")
    if session.describe_cluster_unsupported:
        report.add(Severity.WARNING, BROKER, alias, None,
                   f"the brokers of {alias} do not offer DescribeCluster (KIP-700): they are older than Kafka 2.8, "
                   f"which this tool is not tested against; the flows may fail on requests the brokers lack",
                   f"upgrade the brokers of {alias}")
    check_broker_configs(report, session)


def _connection_fix(config: MirrorMakerConfig, session: ClusterSession, why: str) -> str:
    raw = config.raw_properties()
    alias = session.alias

    def key(name: str) -> str:
        written = next((k for k in (f"{alias}.{name}", name) if k in raw), f"{alias}.{name}")
        source = config.properties_file
        return f"{written} ({config.location(written)})" if source and source.line_of(written) else written

    if why.startswith("authentication failed"):
        return (f"check the user and password in {key('sasl.jaas.config')} and the mechanism "
                f"({session.mechanism or 'sasl.mechanism'}); with SCRAM, the user's credentials on {alias} "
                f"(kafka-configs.sh --describe --entity-type users)")
    if why.startswith("the TLS handshake failed"):
        return (f"check {key('ssl.truststore.location')} (the brokers' CA) and, for mutual TLS, "
                f"{key('ssl.keystore.location')}")
    return (f"check {key('bootstrap.servers')}, that the brokers listen there with {key('security.protocol')}, "
            f"and the network between this machine and them")


def _check_flow(report: Report, sessions: dict[str, ClusterSession], needs: FlowNeeds) -> None:
    flow, pair = str(needs.pair), needs.pair
    source, target = sessions[pair.source], sessions[pair.target]
    grants = list(needs.grants)
    specs: dict[str, NewTopic] = {t.name: internal_topic_spec(t) for t in needs.topics}
    if needs.replicates and source.reached:
        topics = replicated_topics(report, source, needs)
        grants += needs.source_topic_grants(topics)
        grants += needs.group_grants(_checkpointed_groups(source, needs))
        if target.reached:
            specs.update(check_topic_configs(report, source, target, needs, topics))
            check_consumer_protocol_groups(report, source, target, needs)
    check_internal_topics(report, sessions, needs)
    check_grants(report, sessions, grants, flow, specs)
    if target.reached:
        check_exactly_once(report, needs)
        _live_group(report, target, needs)


def _checkpointed_groups(source: ClusterSession, needs: FlowNeeds) -> list[str]:
    """The source's consumer groups the checkpoint connector would checkpoint (those this principal sees)."""
    listed = source.list_groups()
    if isinstance(listed, KafkaError) or not needs.checkpoint_config.emit_checkpoints_enabled:
        return []
    group_filter = load_group_filter(needs.checkpoint_config.replication_policy_config())
    return [g for g in listed if group_filter.should_replicate_group(g)]


def _live_group(report: Report, target: ClusterSession, needs: FlowNeeds) -> None:
    """Say when a fleet already runs the flow: this check described its group, it did not join it."""
    group = needs.worker.group_id
    state = target.groups([group])[group]
    if state.visible and state.members:
        report.add(Severity.NOTE, CONNECTIVITY, target.alias, str(needs.pair),
                   f"the Connect group {group} on {target.alias} is {state.state} with {state.members} member(s): "
                   f"nodes run this flow now (this check only described the group)")


def _summary(session: ClusterSession) -> dict[str, Any]:
    return {"reached": session.reached, "bootstrap": session.bootstrap, "cluster_id": session.cluster_id,
            "brokers": len(session.brokers), "principal": session.principal,
            "authorizer": session.authorizer, "acls_readable": session.acls is not None,
            "super_user": session.super_user}
