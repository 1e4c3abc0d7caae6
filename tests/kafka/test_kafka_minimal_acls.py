"""The replication principal running with exactly the ACLs docs/acls.md documents, on Apache Kafka's
StandardAuthorizer (Tansu has no ACLs, so this exists only in the Kafka tier).

A fresh SCRAM user per test gets, on each shared broker, the documented ACLs for a default A->B flow and
nothing else; the driver runs as that user on both clusters. With all of them, records, heartbeats and
checkpoints arrive. Without one representative ACL (parametrized: the source topic's READ, the Connect
group's READ, the leader's transactional id), the driver names the refusal in its log.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.support.mm2_process import MirrorMakerProcess, aliases
from tests.kafka.acls import MECHANISM, bindings, create_user, grant, minimal_acls
from tests.kafka.flows import Endpoint, wait_for_records, write_mm2
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import admin, create_topic, produce, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

RECORDS = 20
_T, _LIT, _O = ResourceType.TOPIC, ResourcePatternType.LITERAL, AclOperation


def _acls_of(broker: KafkaBroker, topic: str) -> set[tuple[str, str]]:
    client = admin(broker.bootstrap_servers)  # kept: a destroyed client fails its pending futures
    found = client.describe_acls(AclBindingFilter(
        _T, topic, _LIT, None, None, AclOperation.ANY, AclPermissionType.ANY)).result(timeout=15)
    return {(b.principal, b.operation.name) for b in found}


def _commit_group(bootstrap: str, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def _run_as_minimal_user(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path,
                         without: str | None) -> tuple[MirrorMakerProcess, dict[str, str]]:
    """Set up the flow with every documented ACL but ``without``; the node is returned unstarted."""
    a, b = aliases("A", "B")
    user, password = unique("mm2"), uuid.uuid4().hex
    topic = create_topic(kafka_a.bootstrap_servers, unique("minacl"), 1)
    produce(kafka_a.bootstrap_servers, topic, RECORDS)
    group = unique("app")
    _commit_group(kafka_a.bootstrap_servers, group, topic, RECORDS // 2)
    grant(kafka_a, bindings("alice", (_T, topic, _LIT, (_O.READ,))))  # for ACL sync to copy
    acls = minimal_acls(a, b, topic)
    assert without is None or without in acls
    for broker in (kafka_a, kafka_b):
        create_user(broker, user, password)
    for side, broker in (("source", kafka_a), ("target", kafka_b)):
        grant(broker, [binding for label, (cluster, row) in acls.items() if cluster == side and label != without
                       for binding in bindings(user, row)])
    body = f"{a}->{b}.enabled = true\ntopics = {topic}\ngroups = {group}\n{b}->{a}.emit.heartbeats.enabled = false\n" \
           "sync.topic.acls.interval.seconds = 2\n"
    props = write_mm2(tmp_path / "mm2.properties",
                      {a: Endpoint(kafka_a, "SASL_PLAINTEXT", MECHANISM, user, password),
                       b: Endpoint(kafka_b, "SASL_PLAINTEXT", MECHANISM, user, password)}, body)
    names = {"a": a, "b": b, "topic": topic, "group": group, "user": user}
    return MirrorMakerProcess(props, log=tmp_path / "mm2.log"), names


def test_the_documented_acls_are_enough(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    """With exactly docs/acls.md's ACLs on each cluster, records, heartbeats and checkpoints arrive, and the
    source topic's ACLs are synced to the remote topic."""
    node, names = _run_as_minimal_user(kafka_a, kafka_b, tmp_path, None)
    a = names["a"]
    with node:
        node.wait_running(1)
        copied = wait_for_records(kafka_b.bootstrap_servers, f"{a}.{names['topic']}", RECORDS, 90)
        assert [r.value() for r in copied] == [f"value-{i}".encode() for i in range(RECORDS)]
        checkpoints = wait_for_records(kafka_b.bootstrap_servers, f"{a}.checkpoints.internal", 1, 60)
        assert any(names["group"].encode() in (r.key() or b"") for r in checkpoints)
        wait_until(lambda: any(a.encode() in (r.key() or b"")
                               for r in wait_for_records(kafka_b.bootstrap_servers, "heartbeats", 1, 30)),
                   60, f"a heartbeat from {a}", interval_s=1)
        wait_until(lambda: ("User:alice", "READ") in _acls_of(kafka_b, f"{a}.{names['topic']}"), 60,
                   "alice's READ synced to the remote topic", interval_s=1)
        assert node.terminate() == 0
    log = node.log_text()
    assert "AUTHORIZATION_FAILED" not in log, [line for line in log.splitlines() if "AUTHORIZATION_FAILED" in line]


#: One representative ACL per part of the flow, and what the driver's log says without it ({a}: the source
#: alias): the replication consumer, the Connect group membership, the leader's config-topic writer.
REMOVED = {
    "source topics read": "TOPIC_AUTHORIZATION_FAILED",
    "target connect group": "worker cannot join Connect group {a}-mm2: GroupAuthorizationFailedError",
    "target transactional id": "grant this worker's principal WRITE and DESCRIBE on TRANSACTIONAL_ID "
                               "connect-cluster-{a}-mm2",
}


@pytest.mark.parametrize("without", list(REMOVED))
def test_without_one_documented_acl_the_refusal_is_named(kafka_a: KafkaBroker, kafka_b: KafkaBroker,
                                                        tmp_path: Path, without: str) -> None:
    """Each of these ACLs is needed: without it the driver's log names what was refused, and no record
    reaches the target."""
    node, names = _run_as_minimal_user(kafka_a, kafka_b, tmp_path, without)
    refusal = REMOVED[without].format(a=names["a"])
    with node:
        wait_until(lambda: refusal in node.log_text(), 60, f"{refusal!r} in the driver's log without {without!r}",
                   interval_s=1)
    remote = f"{names['a']}.{names['topic']}"
    if remote in admin(kafka_b.bootstrap_servers).list_topics(timeout=10).topics:
        assert wait_for_records(kafka_b.bootstrap_servers, remote, 0, 5) == []


def test_without_cluster_describe_on_the_source_acl_sync_is_named_and_the_flow_runs(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    """The source CLUSTER DESCRIBE serves ACL sync only: without it records still flow; Kafka then lists no
    ACL, without an error, and the driver says once (not every interval) which grant may be missing and how
    to turn the sync off."""
    node, names = _run_as_minimal_user(kafka_a, kafka_b, tmp_path, "source cluster")
    a = names["a"]
    with node:
        node.wait_running(1)
        copied = wait_for_records(kafka_b.bootstrap_servers, f"{a}.{names['topic']}", RECORDS, 90)
        assert len(copied) == RECORDS
        wait_until(lambda: "lists no topic ACL" in node.log_text(), 60, "the ACL sync's empty answer named",
                   interval_s=1)
        time.sleep(5)  # sync.topic.acls.interval.seconds = 2: two more refused rounds
        assert ("User:alice", "READ") not in _acls_of(kafka_b, f"{a}.{names['topic']}")
        assert node.terminate() == 0
    skipped = [line for line in node.log_text().splitlines() if "lists no topic ACL" in line]
    assert len(skipped) == 1, skipped
    assert "DESCRIBE on the CLUSTER resource" in skipped[0] and "sync.topic.acls.enabled = false" in skipped[0]
    assert "caught exception in scheduled task" not in node.log_text()
