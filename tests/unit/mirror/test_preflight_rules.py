"""The pure parts of ``mirror check`` (mirror/preflight): the authorizer's rules over an ACL listing, who a
client config authenticates as, the report's verdict and exit code, and what a flow needs, against the ACL
table of docs/acls.md as the Kafka tier encodes it (tests/kafka/acls.py)."""

from __future__ import annotations

from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget
from mirror.preflight.authorizer_rules import IMPLIED_BY, Acl, allowed, kafka_acls_command
from mirror.preflight.cluster_session import principal_of
from mirror.preflight.findings import ACL, CONNECTIVITY, Report, Severity
from mirror.preflight.needs import flow_needs
from tests.kafka.acls import minimal_acls

_O, _T, _G = AclOperation, ResourceType.TOPIC, ResourceType.GROUP
_LIT, _PRE = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl(name: str, operation: AclOperation, pattern: ResourcePatternType = _LIT, principal: str = "User:mm2",
        permission: AclPermissionType = ALLOW, resource: ResourceType = _T) -> Acl:
    return Acl(resource, name, pattern, principal, operation, permission)


def test_literal_prefixed_and_wildcard_bindings_match_as_the_authorizer_matches_them() -> None:
    acls = [acl("orders", _O.READ), acl("A.", _O.WRITE, _PRE), acl("*", _O.DESCRIBE, resource=_G)]
    assert allowed(acls, "User:mm2", _T, "orders", _O.READ)
    assert not allowed(acls, "User:mm2", _T, "orders2", _O.READ)  # literal: the name only
    assert allowed(acls, "User:mm2", _T, "A.orders", _O.WRITE) and not allowed(acls, "User:mm2", _T, "B.x", _O.WRITE)
    assert allowed(acls, "User:mm2", _G, "any-group", _O.DESCRIBE)  # literal * is every name
    assert not allowed(acls, "User:other", _T, "orders", _O.READ)
    assert not allowed(acls, "User:mm2", _G, "orders", _O.READ)  # another resource type


def test_user_star_all_and_implied_operations_grant_deny_wins() -> None:
    assert allowed([acl("t", _O.ALL, principal="User:*")], "User:mm2", _T, "t", _O.ALTER_CONFIGS)
    for implying in IMPLIED_BY[_O.DESCRIBE]:
        assert allowed([acl("t", implying)], "User:mm2", _T, "t", _O.DESCRIBE), implying
    assert allowed([acl("t", _O.ALTER_CONFIGS)], "User:mm2", _T, "t", _O.DESCRIBE_CONFIGS)
    assert not allowed([acl("t", _O.DESCRIBE)], "User:mm2", _T, "t", _O.READ)  # implication goes one way
    assert not allowed([acl("t", _O.READ), acl("t", _O.READ, permission=DENY, principal="User:*")],
                       "User:mm2", _T, "t", _O.READ)
    assert not allowed([acl("t", _O.ALL), acl("t", _O.ALL, _PRE, permission=DENY)], "User:mm2", _T, "t", _O.WRITE)
    # a DENY of READ does not deny the DESCRIBE that an ALLOW of WRITE implies
    assert allowed([acl("t", _O.WRITE), acl("t", _O.READ, permission=DENY)], "User:mm2", _T, "t", _O.DESCRIBE)


def test_the_fix_is_the_kafka_acls_line_of_docs_acls_md() -> None:
    assert kafka_acls_command("b:9092", "User:mm2", _T, "A.", _PRE, [_O.WRITE, _O.DESCRIBE_CONFIGS]) == (
        "kafka-acls.sh --bootstrap-server b:9092 --command-config admin.properties --add --allow-principal "
        "User:mm2 --operation Write --operation DescribeConfigs --topic A. --resource-pattern-type prefixed")
    assert kafka_acls_command("a:9092", "User:mm2", _G, "*", _LIT, [_O.DESCRIBE]).endswith(
        "--operation Describe --group '*'")
    assert kafka_acls_command("b:9092", "User:mm2", ResourceType.BROKER, "kafka-cluster", _LIT, [_O.ALTER]).endswith(
        "--operation Alter --cluster")
    assert kafka_acls_command("b:9092", "User:mm2", ResourceType.TRANSACTIONAL_ID, "connect-cluster-A-mm2", _LIT,
                              [_O.WRITE]).endswith("--operation Write --transactional-id connect-cluster-A-mm2")


def test_the_principal_a_client_config_names() -> None:
    sasl = {"security.protocol": "SASL_SSL", "sasl.username": "mm2"}
    assert principal_of({**sasl, "sasl.mechanism": "SCRAM-SHA-512"}) == "User:mm2"
    assert principal_of({**sasl, "sasl.mechanisms": "PLAIN"}) == "User:mm2"
    assert principal_of({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}) is None
    assert principal_of({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}) is None
    assert principal_of({"security.protocol": "SSL", "ssl.certificate.pem": "..."}) is None  # the DN, mapped
    assert principal_of({"security.protocol": "SSL", "ssl.ca.pem": "..."}) == "User:ANONYMOUS"
    assert principal_of({}) == "User:ANONYMOUS"


def test_the_exit_code_follows_mirror_status_and_each_line_names_what_and_the_fix() -> None:
    report = Report()
    report.add(Severity.OK, CONNECTIVITY, "A", None, "reached A")
    assert (report.exit_code, report.verdict) == (0, "ready")
    report.add(Severity.NOTE, CONNECTIVITY, "A", None, "broker configs not readable")
    assert report.exit_code == 0
    report.add(Severity.WARNING, ACL, "B", "A->B", "cannot verify WRITE", "grant it")
    assert (report.exit_code, report.verdict) == (1, "ready, with warnings")
    report.add(Severity.ERROR, ACL, "B", "A->B", "User:mm2 lacks READ", "kafka-acls.sh ...")
    report.add(Severity.ERROR, ACL, "B", "A->B", "User:mm2 lacks READ", "kafka-acls.sh ...")  # two flows, once
    assert (report.exit_code, report.verdict) == (2, "will not work")
    lines = report.render().splitlines()
    assert lines[0] == "error: B (A->B): [acl] User:mm2 lacks READ; fix: kafka-acls.sh ..."
    assert lines[1].startswith("warning: ") and lines[-2] == "ok: A: [connectivity] reached A"
    assert lines[-1] == "will not work: 1 error(s), 1 warning(s), 1 note(s), 1 check(s) passed"
    assert report.to_dict()["counts"] == {"ok": 1, "note": 1, "warning": 1, "error": 1}


def _normalized(ops: set[AclOperation]) -> set[AclOperation]:
    """Operations with those they imply (docs/acls.md lists DESCRIBE beside READ where clients ask for it)."""
    return ops | {implied for implied, by in IMPLIED_BY.items() if ops & by}


def test_a_default_flow_needs_exactly_the_acls_docs_acls_md_lists() -> None:
    """flow_needs, with the rights the runner adds once it has listed the topics and groups, against
    docs/acls.md's table as the Kafka tier grants it (the ACLs it proves enough, one row at a time needed)."""
    config = MirrorMakerConfig({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092",
                                "A->B.enabled": "true", "topics": "orders", "B->A.emit.heartbeats.enabled": "false"})
    assert config.herder_pairs() == [SourceAndTarget("A", "B")]
    needs = flow_needs(config, SourceAndTarget("A", "B"))
    grants = needs.grants + needs.source_topic_grants(["orders"]) + needs.group_grants(["app"])
    ours: dict[tuple[str, ResourceType, str, ResourcePatternType], set[AclOperation]] = {}
    for grant in grants:
        key = (grant.cluster, grant.resource, grant.acl_name, grant.pattern)
        ours.setdefault(key, set()).update(grant.operations)
    documented: dict[tuple[str, ResourceType, str, ResourcePatternType], set[AclOperation]] = {}
    for side, (kind, name, pattern, operations) in minimal_acls("A", "B", "orders").values():
        key = ("A" if side == "source" else "B", kind, name, pattern)
        documented.setdefault(key, set()).update(operations)
    assert {k: _normalized(v) for k, v in ours.items()} == {k: _normalized(v) for k, v in documented.items()}
    # and with exactly-once, the tasks' transactional ids under the group's prefix
    eos = flow_needs(MirrorMakerConfig({**config.raw_properties(), "B.exactly.once.source.support": "enabled"}),
                     SourceAndTarget("A", "B"))
    ids = [g for g in eos.grants if g.resource == ResourceType.TRANSACTIONAL_ID and g.pattern == _PRE]
    assert [(g.acl_name, g.names[0]) for g in ids] == [("A-mm2-", "A-mm2-MirrorSourceConnector-0")]


def test_internal_topics_are_listed_with_the_key_that_sets_their_replication_factor() -> None:
    config = MirrorMakerConfig({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092",
                                "A->B.enabled": "true", "B.config.storage.replication.factor": "1",
                                "A->B.checkpoints.topic.replication.factor": "2"})
    topics = {t.name: t for t in flow_needs(config, SourceAndTarget("A", "B")).topics}
    assert (topics["mm2-configs.A.internal"].replication_factor, topics["mm2-configs.A.internal"].key) == (
        1, "B.config.storage.replication.factor")
    assert topics["mm2-configs.A.internal"].if_not_compacted is Severity.ERROR
    assert (topics["A.checkpoints.internal"].replication_factor, topics["A.checkpoints.internal"].key) == (
        2, "A->B.checkpoints.topic.replication.factor")
    assert topics["mm2-offset-syncs.B.internal"].cluster == "A" and topics["heartbeats"].cluster == "B"
    assert topics["mm2-offsets.A.internal"].partitions == 25
