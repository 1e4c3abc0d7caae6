"""``mirror check`` against Apache Kafka 4.4's StandardAuthorizer, as a SCRAM user with docs/acls.md's ACLs.

With every documented ACL the check exits 0 and creates nothing; without one of them (the source topic's
READ, WRITE on the target's remote topics, the Connect group, the leader's transactional id) it exits 2 with
one error line naming exactly that ACL and the kafka-acls.sh line that grants it. An unreachable cluster and a
wrong password are each named, within the timeout. Beside a running node of the flow, the check leaves the
node's group and records alone. As a super user it reads the broker configs (transactions) and judges the
internal topics: a replication factor above the brokers, a Connect topic that is not compacted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AclOperation, NewTopic

from tests.integration.support.mm2_process import ROOT, MirrorMakerProcess, aliases
from tests.kafka.acls import MECHANISM, bindings, create_user, grant, minimal_acls
from tests.kafka.flows import Endpoint, wait_for_records, write_mm2
from tests.support.apache_kafka import KafkaBroker, listener_port
from tests.support.kafka import admin, create_topic, produce, unique

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

RECORDS = 10
_O = AclOperation


def check(props: Path, *flags: str, timeout_s: float = 120) -> tuple[int, dict[str, Any], str]:
    """``mirror check props --json``: exit code, the report, stderr."""
    done = subprocess.run([sys.executable, "-m", "mirror.cli", "check", str(props), "--json", *flags], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout_s, check=False)
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def of(report: dict[str, Any], severity: str) -> list[dict[str, Any]]:
    return [f for f in report.get("findings", []) if f["severity"] == severity]


def lines(report: dict[str, Any], *severities: str) -> list[str]:
    """The findings of these severities as ``mirror check`` prints them, for failure messages."""
    return [f"{f['severity']}: {f['cluster']} ({f['flow']}): {f['message']}; fix: {f['fix']}"
            for f in report.get("findings", []) if f["severity"] in severities]


def setup_flow(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path,
               without: tuple[str, AclOperation | None] | None = None) -> tuple[Path, dict[str, str]]:
    """A flow A->B of one topic, and a fresh SCRAM user holding docs/acls.md's ACLs on both clusters, but
    ``without`` = (row, operation): that row's operation (every operation of the row when None)."""
    a, b = aliases("A", "B")
    user, password = unique("mm2"), uuid.uuid4().hex
    topic = create_topic(kafka_a.bootstrap_servers, unique("pre"), 1)
    produce(kafka_a.bootstrap_servers, topic, RECORDS)
    acls = minimal_acls(a, b, topic)
    for broker in (kafka_a, kafka_b):
        create_user(broker, user, password)
    for side, broker in (("source", kafka_a), ("target", kafka_b)):
        rows = []
        for label, (cluster, (kind, name, pattern, ops)) in acls.items():
            if cluster != side:
                continue
            if without is not None and label == without[0]:
                ops = tuple(op for op in ops if without[1] is not None and op != without[1])
            rows += bindings(user, (kind, name, pattern, ops))
        grant(broker, rows)
    body = f"{a}->{b}.enabled = true\ntopics = {topic}\n{b}->{a}.emit.heartbeats.enabled = false\n"
    props = write_mm2(tmp_path / "mm2.properties",
                      {a: Endpoint(kafka_a, "SASL_PLAINTEXT", MECHANISM, user, password),
                       b: Endpoint(kafka_b, "SASL_PLAINTEXT", MECHANISM, user, password)}, body)
    return without_tansu_acl_line(props), {"a": a, "b": b, "topic": topic, "user": user}


def without_tansu_acl_line(props: Path) -> Path:
    """The file without the Tansu part's ``sync.topic.acls.enabled = false``, which write_mm2's ``true`` sets
    again: the check reports a key set twice as a warning about the file, as the driver logs it."""
    text = props.read_text(encoding="utf-8").replace("sync.topic.acls.enabled = false\n", "", 1)
    props.write_text(text, encoding="utf-8")
    return props


def flow_topics(broker: KafkaBroker, a: str) -> set[str]:
    return {t for t in admin(broker.bootstrap_servers).list_topics(timeout=10).topics if a in t}


def test_the_documented_acls_pass_and_the_check_creates_nothing(kafka_a: KafkaBroker, kafka_b: KafkaBroker,
                                                                tmp_path: Path) -> None:
    props, names = setup_flow(kafka_a, kafka_b, tmp_path)
    a, b = names["a"], names["b"]
    code, report, stderr = check(props)
    assert code == 0, "\n".join([stderr, *lines(report, "error", "warning")])
    assert report["verdict"] == "ready" and not of(report, "error") and not of(report, "warning")
    passed = [f["message"] for f in of(report, "ok")]
    user = f"User:{names['user']}"
    for expected in (f"{user} holds READ on TOPIC {names['topic']}",
                     f"{user} holds CREATE, READ, WRITE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, ALTER on TOPIC "
                     f"{a}.{names['topic']}",
                     f"{user} holds READ, DESCRIBE on GROUP {a}-mm2",
                     f"{user} holds WRITE, DESCRIBE on TRANSACTIONAL_ID connect-cluster-{a}-mm2"):
        assert any(m.startswith(expected) for m in passed), (expected, passed)
    assert report["clusters"][a]["reached"] and report["clusters"][b]["principal"] == user
    # validate_only: nothing of the flow was created on either cluster
    assert flow_topics(kafka_b, a) == set() and flow_topics(kafka_a, b) == set()


#: what is taken away: (docs/acls.md row, the operation removed, or None for the whole row), the cluster the
#: error names, what it says (every part), and the kafka-acls.sh arguments of its fix
MISSING = {
    "source topic READ": (("source topics read", _O.READ), "a", ("lacks READ on TOPIC {topic} of {a} ",),
                          "--operation Read --topic {topic}"),
    "target WRITE": (("target remote topics", _O.WRITE), "b",
                     ("lacks WRITE on TOPIC ", "{a}.{topic}", "{a}.checkpoints.internal", " of {b} "),
                     "--operation Write --topic {a}. --resource-pattern-type prefixed"),
    "Connect group": (("target connect group", None), "b", ("lacks READ, DESCRIBE on GROUP {a}-mm2 of {b} ",),
                      "--operation Read --operation Describe --group {a}-mm2"),
    "transactional id": (("target transactional id", None), "b",
                         ("lacks WRITE, DESCRIBE on TRANSACTIONAL_ID connect-cluster-{a}-mm2 of {b} ",),
                         "--operation Write --operation Describe --transactional-id connect-cluster-{a}-mm2"),
}


@pytest.mark.parametrize("missing", list(MISSING))
def test_each_missing_acl_is_named_with_its_fix(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path,
                                               missing: str) -> None:
    """One error line per missing ACL (WRITE under ``A.`` is the remote topics' and the checkpoints topic's,
    and one ACL grants it: one line), and nothing else blamed."""
    without, cluster, parts, fix = MISSING[missing]
    props, names = setup_flow(kafka_a, kafka_b, tmp_path, without)
    code, report, stderr = check(props)
    errors = of(report, "error")
    assert code == 2 and report["verdict"] == "will not work", "\n".join([stderr, *lines(report, "error")])
    assert len(errors) == 1, "\n".join(lines(report, "error"))
    error = errors[0]
    assert error["check"] == "acl" and error["cluster"] == names[cluster]
    assert error["message"].startswith(f"User:{names['user']} lacks "), error
    for part in parts:
        assert part.format(**names) in error["message"], (part, error["message"])
    broker = kafka_a if cluster == "a" else kafka_b
    assert error["fix"].startswith(f"kafka-acls.sh --bootstrap-server {broker.bootstrap('SASL_PLAINTEXT')} "), error
    assert f"--allow-principal User:{names['user']} {fix.format(**names)}" in error["fix"], error["fix"]
    # the text output carries the same line
    done = subprocess.run([sys.executable, "-m", "mirror.cli", "check", str(props)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2
    errors_text = [line for line in done.stdout.splitlines() if line.startswith("error: ")]
    assert len(errors_text) == 1 and error["message"] in errors_text[0], errors_text
    assert errors_text[0].endswith(f"; fix: {error['fix']}"), errors_text


def test_an_unreachable_cluster_and_a_wrong_password_are_named(kafka_a: KafkaBroker, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    user, password = unique("mm2"), uuid.uuid4().hex
    create_user(kafka_a, user, password)
    closed = listener_port()  # nothing listens there
    props = write_mm2(tmp_path / "mm2.properties",
                      {a: Endpoint(kafka_a, "SASL_PLAINTEXT", MECHANISM, user, "not-" + password),
                       b: Endpoint(kafka_a, "PLAINTEXT")}, f"{a}->{b}.enabled = true\n")
    text = props.read_text(encoding="utf-8").replace(f"{b}.bootstrap.servers = {kafka_a.bootstrap_servers}",
                                                     f"{b}.bootstrap.servers = 127.0.0.1:{closed}")
    props.write_text(text, encoding="utf-8")
    code, report, stderr = check(props, "--timeout", "5")
    assert code == 2, (stderr, report)
    errors = {f["cluster"]: f for f in of(report, "error") if f["check"] == "connectivity"}
    assert set(errors) == {a, b}, of(report, "error")
    assert errors[a]["message"].startswith(f"cannot use cluster {a}: authentication failed")
    assert "invalid credentials" in errors[a]["message"] and f"{a}.sasl.jaas.config" in errors[a]["fix"]
    assert errors[b]["message"].startswith(f"cannot use cluster {b}: no broker at 127.0.0.1:{closed} answered "
                                           f"within 5 s")
    assert f"{b}.bootstrap.servers" in errors[b]["fix"]
    assert not report["clusters"][a]["reached"] and not report["clusters"][b]["reached"]


def test_a_running_fleet_is_left_alone(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    """The check beside a running node of the flow: the node keeps its group membership and copies on."""
    props, names = setup_flow(kafka_a, kafka_b, tmp_path)
    a, topic = names["a"], names["topic"]
    with MirrorMakerProcess(props, log=tmp_path / "mm2.log") as node:
        node.wait_running(1)
        wait_for_records(kafka_b.bootstrap_servers, f"{a}.{topic}", RECORDS, 90)
        before = node.log_text()
        code, report, stderr = check(props)
        assert code == 0, "\n".join([stderr, *lines(report, "error", "warning")])
        notes = [f["message"] for f in of(report, "note")]
        assert any(f"the Connect group {a}-mm2 on {names['b']} is STABLE with 1 member(s)" in n for n in notes), notes
        produce(kafka_a.bootstrap_servers, topic, RECORDS)
        assert len(wait_for_records(kafka_b.bootstrap_servers, f"{a}.{topic}", 2 * RECORDS, 90)) == 2 * RECORDS
        after = node.log_text()[len(before):]
        for sign in ("fenced", "Fenced", "rebalance", "Rebalance", "AUTHORIZATION_FAILED"):
            assert sign not in after, [line for line in after.splitlines() if sign in line]
        assert node.terminate() == 0


def test_as_a_super_user_the_brokers_and_the_internal_topics_are_judged(kafka_a: KafkaBroker, kafka_b: KafkaBroker,
                                                                        tmp_path: Path) -> None:
    """The PLAINTEXT listener's principal is a super user: every right passes as such, the broker configs are
    readable (transactions judged), and the internal topics' replication factor and cleanup policy are read
    from the cluster: a factor above the brokers for a topic still to create, and an existing Connect topic
    that is not compacted, each refuse the flow."""
    a, b = aliases("A", "B")
    topic = create_topic(kafka_a.bootstrap_servers, unique("pre"), 1)
    props = write_mm2(tmp_path / "mm2.properties", {a: kafka_a, b: kafka_b},
                      f"{a}->{b}.enabled = true\ntopics = {topic}\n{b}->{a}.emit.heartbeats.enabled = false\n")
    code, report, stderr = check(without_tansu_acl_line(props))
    assert code == 0, "\n".join([stderr, *lines(report, "error", "warning")])
    passed = [f["message"] for f in of(report, "ok")]
    assert any(m.startswith(f"reached {b} ") and "as User:ANONYMOUS" in m and m.endswith("a super user")
               for m in passed), passed
    assert f"{b} can run transactions (transaction.state.log.replication.factor=1, 1 broker(s))" in passed
    # a Connect configs topic that exists without compaction, and a factor of 3 for the offsets topic
    client = admin(kafka_b.bootstrap_servers)
    client.create_topics([NewTopic(f"mm2-configs.{a}.internal", 1, 1, config={"cleanup.policy": "delete"})])[
        f"mm2-configs.{a}.internal"].result(30)
    text = props.read_text(encoding="utf-8").replace("offset.storage.replication.factor = 1",
                                                     "offset.storage.replication.factor = 3")
    props.write_text(text, encoding="utf-8")
    code, report, stderr = check(props)
    errors = {f["check"]: f for f in of(report, "error")}
    assert code == 2 and set(errors) == {"cleanup-policy", "replication-factor"}, "\n".join(lines(report, "error"))
    assert errors["cleanup-policy"]["message"].startswith(
        f"mm2-configs.{a}.internal (the Connect configs topic) has cleanup.policy=delete, not compact")
    assert "--add-config cleanup.policy=compact" in errors["cleanup-policy"]["fix"]
    assert errors["replication-factor"]["message"] == (
        f"mm2-offsets.{a}.internal (the Connect offsets topic) does not exist and would be created with replication "
        f"factor 3 (offset.storage.replication.factor), but {b} has 1 broker(s)")
    assert errors["replication-factor"]["fix"].startswith("set offset.storage.replication.factor = 1")
