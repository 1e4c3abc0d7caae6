"""What the brokers must offer a flow: transactions, KIP-848 groups where the source has them, and the
exactly-once prerequisites.

Transactions are needed on every target, not only with exactly-once: each flow's group leader writes the
Connect configs topic through the transactional id ``connect-cluster-<group.id>`` (docs/acls.md), so a
cluster whose transaction state log cannot be created (``transaction.state.log.replication.factor`` above its
brokers) leaves every flow into it without connectors. The brokers' own configs tell that, when the principal
may read them (DESCRIBE_CONFIGS on the cluster); without that right the broker settings are a note, not a
warning: nothing a flow needs was found missing.

KIP-848: consumer groups of the new protocol on the source fail over to the target only if the target's
brokers offer it too (``group.coordinator.rebalance.protocols``, Kafka 4.0's default includes it).
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from mirror.filters import load_group_filter
from mirror.preflight.cluster_session import ClusterSession
from mirror.preflight.findings import BROKER, EXACTLY_ONCE, Report, Severity
from mirror.preflight.needs import FlowNeeds

TXN_REPLICATION_FACTOR = "transaction.state.log.replication.factor"
TXN_MIN_ISR = "transaction.state.log.min.isr"
GROUP_PROTOCOLS = "group.coordinator.rebalance.protocols"


def check_broker_configs(report: Report, session: ClusterSession) -> None:
    """Once per cluster: can it run transactions (the leader's config writer needs them)?"""
    alias, brokers = session.alias, len(session.brokers)
    configs = session.broker_configs()
    if isinstance(configs, KafkaError):
        report.add(Severity.NOTE, BROKER, alias, None,
                   f"the broker configs of {alias} are not readable ({configs.name()}): its transaction log settings "
                   f"and KIP-848 support are not checked",
                   f"grant DescribeConfigs on the CLUSTER of {alias} to check them")
        return
    if TXN_REPLICATION_FACTOR not in configs or TXN_MIN_ISR not in configs:
        report.add(Severity.NOTE, BROKER, alias, None,
                   f"the brokers of {alias} do not report {TXN_REPLICATION_FACTOR} and {TXN_MIN_ISR} (not Apache "
                   f"Kafka?): whether they can run transactions is not checked")
        return
    rf, isr = int(configs[TXN_REPLICATION_FACTOR]), int(configs[TXN_MIN_ISR])
    if rf > brokers or isr > brokers:
        report.add(Severity.ERROR, BROKER, alias, None,
                   f"transactions cannot start on {alias}: {TXN_REPLICATION_FACTOR}={rf}, {TXN_MIN_ISR}={isr} with "
                   f"{brokers} broker(s); each flow's group leader writes its configs in transactions (and "
                   f"exactly-once tasks produce in them)",
                   f"set {TXN_REPLICATION_FACTOR} and {TXN_MIN_ISR} to at most {brokers} on the brokers of {alias}")
    else:
        report.add(Severity.OK, BROKER, alias, None,
                   f"{alias} can run transactions ({TXN_REPLICATION_FACTOR}={rf}, {brokers} broker(s))")


def check_consumer_protocol_groups(report: Report, source: ClusterSession, target: ClusterSession,
                                   needs: FlowNeeds) -> None:
    """KIP-848 groups the flow checkpoints on the source need the consumer protocol on the target too."""
    flow = str(needs.pair)
    listed = source.list_groups(consumer_protocol_only=True)
    if isinstance(listed, KafkaError):
        return  # a source without KIP-848's group types has no such group
    group_filter = load_group_filter(needs.checkpoint_config.replication_policy_config())
    groups = [g for g in listed if group_filter.should_replicate_group(g)]
    if not groups:
        return
    shown = ", ".join(groups[:5]) + (f" and {len(groups) - 5} more" if len(groups) > 5 else "")
    configs = target.broker_configs()
    if isinstance(configs, KafkaError):
        report.add(Severity.NOTE, BROKER, target.alias, flow,
                   f"{len(groups)} group(s) of {source.alias} use the consumer protocol (KIP-848): {shown}; whether "
                   f"{target.alias} offers it is not readable ({configs.name()})",
                   f"grant DescribeConfigs on the CLUSTER of {target.alias}, or check {GROUP_PROTOCOLS} there")
        return
    protocols = {p.strip() for p in configs.get(GROUP_PROTOCOLS, "classic").split(",")}
    if "consumer" in protocols:
        report.add(Severity.OK, BROKER, target.alias, flow,
                   f"{target.alias} offers the consumer protocol (KIP-848) that {len(groups)} group(s) use on "
                   f"{source.alias}")
    else:
        report.add(Severity.WARNING, BROKER, target.alias, flow,
                   f"{len(groups)} group(s) of {source.alias} use the consumer protocol (KIP-848): {shown}; "
                   f"{target.alias} does not offer it ({GROUP_PROTOCOLS}={','.join(sorted(protocols))}): after a "
                   f"failover their consumers must use group.protocol=classic",
                   f"add consumer to {GROUP_PROTOCOLS} on the brokers of {target.alias} (Kafka 4.0+)")


def check_exactly_once(report: Report, needs: FlowNeeds) -> None:
    """With ``exactly.once.source.support = enabled`` on the target: what else it needs besides the rights and
    transactions checked elsewhere."""
    flow, target = str(needs.pair), needs.pair.target
    support = str(needs.worker["exactly.once.source.support"]).strip().lower()
    if support == "preparing":
        report.add(Severity.NOTE, EXACTLY_ONCE, target, flow,
                   f"{target}.exactly.once.source.support = preparing: the flow runs at least once (the first "
                   f"rolling restart of an upgrade)", f"set {target}.exactly.once.source.support = enabled next")
        return
    if not needs.exactly_once or not needs.replicates:
        return
    consumer = needs.source_config.source_consumer_config()
    isolation = str(consumer.get("isolation.level", "read_uncommitted")).strip().lower()
    if isolation != "read_committed":
        report.add(Severity.NOTE, EXACTLY_ONCE, needs.pair.source, flow,
                   f"exactly-once is on, but the source consumer reads {isolation}: records of aborted or open "
                   f"source transactions are copied (docs/exactly-once.md)",
                   f"{needs.pair.source}.consumer.isolation.level = read_committed")
    else:
        report.add(Severity.OK, EXACTLY_ONCE, target, flow,
                   "exactly-once: transactional tasks, and the source read read_committed")
