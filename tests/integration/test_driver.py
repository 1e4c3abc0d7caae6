"""End-to-end tests of the MM2 driver: the real ``connect-mirror-maker`` CLI as a subprocess.

Every test gives its clusters aliases of its own (``A<uuid8>``...) on the shared session brokers: MM2
names its internal topics (``mm2-configs.<src>.internal``, ``<src>.heartbeats``...) after the aliases, so
shared aliases would mix tests. The example-file test uses brokers of its own instead, because its
``topics = .*`` would otherwise replicate every other test's topics.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, ConsumerGroupState, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror.client.mirror_client import MirrorClient
from mirror.client.models import Heartbeat
from mirror.local.broker import LocalBroker, free_port
from tests.conftest import Cluster
from tests.integration.support.mm2_process import ROOT, MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import consume_all, create_topic, produce, topics, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONNECTORS = ("MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector")


def write(tmp_path: Path, text: str, name: str = "mm2.properties") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def values(bootstrap: str, topic: str, expect: int | None = None, timeout_s: float = 10) -> list[bytes]:
    return [r.value or b"" for r in consume_all(bootstrap, topic, timeout_s, expect=expect)]


def wait_count(bootstrap: str, topic: str, count: int, timeout_s: float = 60) -> int:
    """Wait until ``topic`` holds at least ``count`` records; the count (equal means no duplicates)."""
    def enough() -> int:
        if topic not in topics(bootstrap):
            return 0
        n = len(consume_all(bootstrap, topic, 10))
        return n if n >= count else 0

    result = wait_until(enough, timeout_s, f"{count} records in {topic}", interval_s=0.5)
    return result


def committed(bootstrap: str, group: str, topic: str, partition: int = 0) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        [tp] = consumer.committed([TopicPartition(topic, partition)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def all_running(node: MirrorMakerProcess, source: str, target: str, names: tuple[str, ...] = CONNECTORS,
                tasks: int = 1) -> Callable[[], bool]:
    def check() -> bool:
        for name in names:
            response = node.request("GET", f"/{source}/{target}/connectors/{name}/status")
            if response.status_code == 404:  # the leader has not written this connector's config yet
                return False
            assert response.status_code == 200, response.text
            status = response.json()
            if status["connector"]["state"] != "RUNNING" or len(status["tasks"]) != tasks:
                return False
            if any(t["state"] != "RUNNING" for t in status["tasks"]):
                return False
        return True
    return check


# -- 1. the example file -------------------------------------------------------------------------------
def test_example_mm2_properties_runs_unmodified(fresh_cluster: Callable[[str], Cluster], tmp_path: Path) -> None:
    """etc/mm2.properties, bootstrap servers pointed at three local brokers; overrides appended, not edited."""
    primary, secondary, backup = fresh_cluster("primary"), fresh_cluster("secondary"), fresh_cluster("backup")
    text = (ROOT / "etc" / "mm2.properties").read_text(encoding="utf-8")
    for cluster in (primary, secondary, backup):
        text, n = re.subn(rf"(?m)^{cluster.alias}\.bootstrap\.servers = .*$",
                          f"{cluster.alias}.bootstrap.servers = {cluster.bootstrap}", text)
        assert n == 1
    # Test-broker necessities, appended so that the example's own lines stay as they are (in a
    # .properties file the last occurrence of a key wins, as in Java):
    text += (
        "\n# --- test-broker overrides ---\n"
        # The test broker (Tansu) speaks neither TLS nor SASL: backup is reached in plaintext.
        "backup.security.protocol = PLAINTEXT\n"
        # One broker per cluster: replication factor 1 instead of 3.
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
        "offset.storage.replication.factor = 1\nstatus.storage.replication.factor = 1\n"
        "config.storage.replication.factor = 1\n"
        # create_acls aborts the test broker (docs/tansu.md).
        "sync.topic.acls.enabled = false\n"
        # Tansu holds each group join for session.timeout.ms / 2 (45 s by default).
        + "".join(f"{a}.session.timeout.ms = 6000\n{a}.heartbeat.interval.ms = 1000\n"
                  for a in ("primary", "secondary", "backup"))
        # The example's REST port 8083 may be taken on a shared test machine.
        + "listeners = http://127.0.0.1:0\n")
    orders, payments, other = "orders-eu", "payments", "inventory"
    for name in (orders, payments, other):
        create_topic(primary.bootstrap, name, 2)
        produce(primary.bootstrap, name, 12)
    props = write(tmp_path, text)
    # The example takes its secrets from the environment (config providers); they must resolve.
    env = {"MM2_BACKUP_PASSWORD": "secret-pw", "MM2_BACKUP_TRUSTSTORE_PASSWORD": "secret-ts"}
    with MirrorMakerProcess(props, env=env) as node:
        node.wait_running(2, 120)
        assert {tuple(f["namespace"]) for f in node.get("/flows")} == {("primary", "secondary"),
                                                                     ("primary", "backup")}
        for name in (orders, payments, other):
            assert wait_count(secondary.bootstrap, f"primary.{name}", 12) == 12
        for name in (orders, payments):
            assert wait_count(backup.bootstrap, f"primary.{name}", 12) == 12
        # The flow into backup only takes orders.* and payments.*; it has seen the other topic by now.
        assert f"primary.{other}" not in topics(backup.bootstrap)
        assert "secret-pw" not in node.log_text()
        assert node.terminate() == 0


# -- 2. active/active ---------------------------------------------------------------------------------
def test_active_active_replicates_both_ways_without_cycles(cluster_a: Cluster, cluster_b: Cluster,
                                                           tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    prefix = unique("aa")
    topic = f"{prefix}-t"
    create_topic(cluster_a.bootstrap, topic)
    create_topic(cluster_b.bootstrap, topic)
    produce(cluster_a.bootstrap, topic, [(b"k", f"a-{i}".encode()) for i in range(7)])
    produce(cluster_b.bootstrap, topic, [(b"k", f"b-{i}".encode()) for i in range(5)])
    # The topic filter also matches the remote topics: only cycle prevention keeps A.B.t from existing.
    body = f"{a}->{b}.enabled = true\n{b}->{a}.enabled = true\ntopics = .*{prefix}.*\n"
    props = write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    with MirrorMakerProcess(props) as node:
        node.wait_running(2)
        assert wait_count(cluster_b.bootstrap, f"{a}.{topic}", 7) == 7
        assert wait_count(cluster_a.bootstrap, f"{b}.{topic}", 5) == 5
        # Sentinels created after the remote topics exist: once they are replicated, each source
        # connector has refreshed its topic list with the remote topic in it and skipped it.
        sentinel = f"{prefix}-sentinel"
        create_topic(cluster_a.bootstrap, sentinel)
        create_topic(cluster_b.bootstrap, sentinel)
        wait_until(lambda: f"{a}.{sentinel}" in topics(cluster_b.bootstrap), 30, "sentinel on B")
        wait_until(lambda: f"{b}.{sentinel}" in topics(cluster_a.bootstrap), 30, "sentinel on A")
        assert f"{a}.{b}.{topic}" not in topics(cluster_a.bootstrap)
        assert f"{b}.{a}.{topic}" not in topics(cluster_b.bootstrap)
        assert values(cluster_b.bootstrap, f"{a}.{topic}") == [f"a-{i}".encode() for i in range(7)]
        assert values(cluster_a.bootstrap, f"{b}.{topic}") == [f"b-{i}".encode() for i in range(5)]
        health = node.request("GET", "/health")
        assert health.status_code == 200 and health.json()["status"] == "healthy", health.text
        assert node.terminate(signum=signal.SIGINT) == 0  # Ctrl-C stops as cleanly as SIGTERM


# -- 3. --clusters ------------------------------------------------------------------------------------
def test_clusters_flag_runs_only_flows_into_that_cluster(cluster_a: Cluster, cluster_b: Cluster,
                                                         tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("only-b"))
    back = create_topic(cluster_b.bootstrap, unique("only-b-back"))
    produce(cluster_a.bootstrap, topic, 4)
    produce(cluster_b.bootstrap, back, 4)
    body = f"{a}->{b}.enabled = true\n{b}->{a}.enabled = true\ntopics = {topic}, {back}\n"
    props = write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    with MirrorMakerProcess(props, "--clusters", b) as node:
        node.wait_running(1)
        assert [f["namespace"] for f in node.get("/flows")] == [[a, b]]
        assert node.request("GET", f"/{b}/{a}/connectors").status_code == 404
        assert wait_count(cluster_b.bootstrap, f"{a}.{topic}", 4) == 4
        # A->B is fully up (and its heartbeats flow); the B->A herder never ran: none of its internal
        # topics, heartbeats or replicated topics exist on A.
        wait_until(lambda: f"{a}.checkpoints.internal" in topics(cluster_b.bootstrap), 30, "A->B checkpoints")
        on_a = topics(cluster_a.bootstrap)
        assert not {t for t in on_a if b in t} - {f"mm2-offset-syncs.{b}.internal"}, sorted(
            t for t in on_a if b in t)
        if "heartbeats" in on_a:  # shared with other tests: none of its heartbeats come from B
            emitted = [Heartbeat.from_record(r.key, r.value) for r in consume_all(cluster_a.bootstrap, "heartbeats")]
            assert b not in {h.source_cluster_alias for h in emitted}
        assert node.terminate() == 0


# -- 4. chain ---------------------------------------------------------------------------------------
def test_chain_heartbeats_count_two_hops(cluster_a: Cluster, cluster_b: Cluster, cluster_c: Cluster,
                                         tmp_path: Path) -> None:
    a, b, c = aliases("A", "B", "C")
    topic = create_topic(cluster_a.bootstrap, unique("chain"))
    produce(cluster_a.bootstrap, topic, 3)
    # A->B->C; B->A stays (heartbeat-only) to feed A's heartbeats topic; other pairs are switched off.
    body = (f"{a}->{b}.enabled = true\n{b}->{c}.enabled = true\n"
            f"topics = {topic}, {a}\\.{topic}\n"
            + "".join(f"{s}->{t}.emit.heartbeats.enabled = false\n" for s, t in ((a, c), (c, a), (c, b))))
    props = write(tmp_path, mm2_properties(
        {a: cluster_a.bootstrap, b: cluster_b.bootstrap, c: cluster_c.bootstrap}, body))
    with MirrorMakerProcess(props) as node:
        node.wait_running(3)
        assert wait_count(cluster_c.bootstrap, f"{b}.{a}.heartbeats", 1, 90) >= 1
        assert wait_count(cluster_b.bootstrap, f"{a}.heartbeats", 1) >= 1
        assert wait_count(cluster_c.bootstrap, f"{b}.heartbeats", 1) >= 1
        assert wait_count(cluster_c.bootstrap, f"{b}.{a}.{topic}", 3) == 3
        with MirrorClient({"bootstrap.servers": cluster_c.bootstrap}) as client:
            assert client.replication_hops(a) == 2
            assert client.replication_hops(b) == 1
            assert {a, b} <= client.upstream_clusters()
        assert node.terminate() == 0


# -- 5. two nodes -------------------------------------------------------------------------------------
def test_two_nodes_split_tasks_restart_in_place_and_survive_sigkill(cluster_a: Cluster, cluster_b: Cluster,
                                                                     tmp_path: Path) -> None:
    """Connect's default group settings (10 s sessions, work of a departed node held 5 minutes): a
    rolling restart of one node gives it back its own task and leaves the other's running; a kill -9
    of a node moves its task within the session timeout, not after five minutes."""
    a, b = aliases("A", "B")
    prefix = unique("split")
    topic = create_topic(cluster_a.bootstrap, f"{prefix}-1", 2)
    remote = f"{a}.{topic}"
    body = (f"{a}->{b}.enabled = true\n{b}->{a}.emit.heartbeats.enabled = false\ntopics = {prefix}.*\n"
            "tasks.max = 2\n"
            # Back to Connect's defaults (mm2_properties shortens sessions for the test broker).
            f"{a}.session.timeout.ms = 10000\n{b}.session.timeout.ms = 10000\n"
            f"{a}.heartbeat.interval.ms = 3000\n{b}.heartbeat.interval.ms = 3000\n")
    props = write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    # The second node's file differs in one setting: it only takes effect when that node becomes the
    # leader (here: after the first node dies), as in Java.
    newer = write(tmp_path, props.read_text(encoding="utf-8") + "refresh.topics.interval.seconds = 3\n",
                  "mm2-newer.properties")
    source_config = f"/{a}/{b}/connectors/MirrorSourceConnector/config"
    two = MirrorMakerProcess(newer, log=tmp_path / "node2.log")  # started once the first node leads
    with MirrorMakerProcess(props, log=tmp_path / "node1.log") as one, contextlib.ExitStack() as stack:
        stack.callback(two.stop)
        one.wait_running(1)
        wait_until(lambda: one.get(source_config)["refresh.topics.interval.seconds"] == "2", 30,
                   "the first node's config")
        two.start().wait_running(1)

        def split() -> list[tuple[str, str]]:
            workers = {one.url.removeprefix("http://"), two.url.removeprefix("http://")}
            states = one.task_states(a, b, "MirrorSourceConnector")
            ok = len(states) == 2 and all(s == "RUNNING" for s, _ in states) and {w for _, w in states} == workers
            return states if ok else []

        wait_until(split, 90, "source tasks on two different workers", interval_s=0.5)
        # A new topic makes the source connector produce new task configs on whichever node runs it; a
        # follower hands them to the leader through the internal REST endpoint (KIP-710).
        second = create_topic(cluster_a.bootstrap, f"{prefix}-2")
        produce(cluster_a.bootstrap, second, 3)
        assert wait_count(cluster_b.bootstrap, f"{a}.{second}", 3) == 3

        # -- rolling restart of node two: its task waits for it; node one's task is not touched -------
        starts_on_one = one.log_text().count("Starting task MirrorSourceConnector")
        assert two.terminate() == 0
        two = MirrorMakerProcess(newer, log=tmp_path / "node2-restarted.log")
        stack.callback(two.stop)
        two.start().wait_running(1)
        wait_until(split, 90, "the restarted node runs a source task again", interval_s=0.5)
        assert one.log_text().count("Starting task MirrorSourceConnector") == starts_on_one, (
            "a clean restart of node two moved work onto node one")

        # -- kill -9 of node one while records flow: its partitions flow again within 60 s ------------
        keys = [f"key-{i}".encode() for i in range(60)]
        produced: list[bytes] = []

        def produce_slowly() -> None:
            for key in keys:
                produce(cluster_a.bootstrap, topic, [(key, key)])
                produced.append(key)
                time.sleep(0.1)  # deliberate pacing: records keep arriving before, during and after the kill

        producer = threading.Thread(target=produce_slowly, daemon=True)
        producer.start()
        wait_until(lambda: len(produced) >= 20, 30, "records produced before the kill")
        one.kill()  # the first node: whether it led the group or not, the survivor takes everything
        killed = time.monotonic()
        producer.join(60)
        assert len(produced) == len(keys)
        # Both partitions carry keys produced after the kill (the keys hash to both partitions), so
        # every key on the target means every partition flows again. Java holds the dead node's task
        # for scheduled.rebalance.max.delay.ms (5 minutes); here it moves once the session expires.
        wait_until(lambda: set(values(cluster_b.bootstrap, remote)) >= set(keys), 60,
                   "every key on the target within 60 s of SIGKILL of one node (default settings)")
        print(f"\nkill -9 -> every partition replicated again: {time.monotonic() - killed:.1f} s")
        wait_until(lambda: {w for _, w in two.task_states(a, b, "MirrorSourceConnector")}
                   == {two.url.removeprefix("http://")}, 60, "both tasks on the surviving node")
        assert two.get(source_config)["refresh.topics.interval.seconds"] == "3"  # the new leader's file
        assert two.terminate() == 0
    for log in tmp_path.glob("node*.log"):
        assert "refused the task configs" not in log.read_text(errors="replace")


# -- 6. SIGTERM ---------------------------------------------------------------------------------------
def test_sigterm_exits_0_with_offsets_flushed(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("term"))
    remote = f"{a}.{topic}"
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(30)])
    body = f"{a}->{b}.enabled = true\ntopics = {topic}\n"
    props = write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    with MirrorMakerProcess(props, log=tmp_path / "first.log") as node:
        node.wait_running(2)
        assert wait_count(cluster_b.bootstrap, remote, 30) == 30
        started = time.monotonic()
        code = node.terminate(30)
        assert code == 0, node.tail()
        stopping_took = time.monotonic() - started
        # The node left its group on the way out (without a LeaveGroup it would stay a member, and
        # the group Stable, until its 6 s session expired).
        admin = AdminClient({"bootstrap.servers": cluster_b.bootstrap})  # referenced until the result
        group = admin.describe_consumer_groups([f"{a}-mm2"])[f"{a}-mm2"].result(timeout=10)
        assert group.state == ConsumerGroupState.EMPTY and not group.members, group
    assert "connect-mirror-maker stopped" in node.log_text()
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(30, 40)])
    with MirrorMakerProcess(props, log=tmp_path / "second.log") as again:
        again.wait_running(2)
        # One partition: a re-copied record would arrive before the new ones.
        assert wait_count(cluster_b.bootstrap, remote, 40) == 40, "records replicated twice after a clean stop"
        assert values(cluster_b.bootstrap, remote) == [f"v{i}".encode() for i in range(40)]
        assert again.terminate() == 0
    assert stopping_took < 30


def test_requests_during_shutdown_get_a_clean_answer_and_no_traceback(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """REST stops before the herders (Java's MirrorMaker.stop): a request sent while the node stops is
    answered by a running herder or finds the port closed, never "The herder is not running" with an
    "Uncaught error" traceback. The request (a restart of an unknown connector: 404, nothing changes)
    goes through the herder's request queue, as a follower's PUT .../fence does."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("stopreq"))
    props = write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap},
                                           f"{a}->{b}.enabled = true\ntopics = {topic}\n"))
    answers: list[int | str] = []
    with MirrorMakerProcess(props, log=tmp_path / "node.log") as node:
        node.wait_running(2)
        path = f"/{a}/{b}/connectors/NoSuchConnector/restart"
        assert node.request("POST", path).status_code == 404
        done = threading.Event()

        def hammer() -> None:
            while not done.is_set():
                try:
                    answers.append(httpx.post(node.url + path, timeout=10).status_code)
                except httpx.TransportError as exc:  # the port closed: a clean answer too
                    answers.append(type(exc).__name__)
                    time.sleep(0.02)

        sender = threading.Thread(target=hammer)
        sender.start()
        try:
            time.sleep(0.5)
            assert node.terminate(30) == 0, node.tail()
        finally:
            done.set()
            sender.join()
        log = node.log_text()
    assert "connect-mirror-maker stopped" in log
    assert "Uncaught error" not in log and "Traceback" not in log, log[-3000:]
    statuses = {x for x in answers if isinstance(x, int)}
    assert statuses <= {404, 503}, answers
    assert any(isinstance(x, str) for x in answers), "no request met the closed port: the stop was not probed"


def test_rest_port_in_use_is_a_start_failure(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        a, b = aliases("A", "B")
        body = f"{a}->{b}.enabled = true\nlisteners = http://127.0.0.1:{port}\n"
        props = write(tmp_path, mm2_properties({a: "127.0.0.1:1", b: "127.0.0.1:1"}, body))
        result = subprocess.run([sys.executable, "-m", "mirror.cli.connect_mirror_maker", str(props)], cwd=ROOT,
                                capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "error: failed to start" in result.stderr and "Traceback" not in result.stderr


# -- 7. quickstart ------------------------------------------------------------------------------------
def test_quickstart_command(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mirror.cli", "quickstart", "--records", "300",
                             "--timeout", "90", "--workdir", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr[-3000:]
    assert re.search(r"remote topic\s+A\.orders: 300 records", out), out
    assert re.search(r"heartbeat\s+A->B, \d+ ms old; upstream clusters of B: A", out), out
    rows = re.findall(r"A\.orders\[(\d)\]\s+A:\s+(\d+)\s+B:\s+(\d+)", out)
    assert sorted(p for p, _, _ in rows) == ["0", "1", "2"], out
    assert all(src == tgt for _, src, tgt in rows), out
    assert sum(int(src) for _, src, _ in rows) == 300
    assert "exit code 0" in out


# -- 8. unreachable cluster ---------------------------------------------------------------------------
def test_unreachable_cluster_is_retried_without_stopping_other_flows(cluster_a: Cluster, cluster_b: Cluster,
                                                                      tmp_path: Path) -> None:
    """C's address has no broker at first; A->B replicates meanwhile; once C appears, A->C starts."""
    late = LocalBroker(name="c", port=free_port(), log_dir=tmp_path)  # nothing listens there yet
    a, b, c = aliases("A", "B", "C")
    topic = create_topic(cluster_a.bootstrap, unique("unreach"))
    produce(cluster_a.bootstrap, topic, 5)
    # Herders: A->B (replicates) and A->C (heartbeats into C).
    body = (f"{a}->{b}.enabled = true\ntopics = {topic}\n"
            + "".join(f"{s}->{t}.emit.heartbeats.enabled = false\n"
                      for s, t in ((b, a), (b, c), (c, a), (c, b))))
    props = write(tmp_path, mm2_properties(
        {a: cluster_a.bootstrap, b: cluster_b.bootstrap, c: late.bootstrap_servers}, body))
    with MirrorMakerProcess(props) as node, contextlib.ExitStack() as stack:
        stack.callback(late.stop)
        assert wait_count(cluster_b.bootstrap, f"{a}.{topic}", 5, 90) == 5
        # (no group has offsets on the topic, so the checkpoint connector has no task)
        wait_until(all_running(node, a, b, CONNECTORS[::2]), 60, "A->B source and heartbeats running")
        pair = re.escape(f"{a}->{c}")

        def two_retries() -> list[str]:
            found: list[str] = re.findall(rf"{pair}: .*; retrying in (\d+)s", node.log_text())
            return found if len(found) >= 2 else []

        retries = wait_until(two_retries, 120, "two retries of A->C")
        assert int(retries[1]) > int(retries[0]), retries  # exponential backoff
        health = node.request("GET", "/health")
        assert health.status_code != 200
        message = health.json()["message"]
        assert f"{a}->{c}" in message and "unreachable" in message and "retrying" in message, message
        assert node.request("GET", f"/{a}/{c}/connectors").status_code == 409
        assert "All 2 herder(s) running" not in node.log_text()
        produce(cluster_a.bootstrap, topic, 3)
        assert wait_count(cluster_b.bootstrap, f"{a}.{topic}", 8) == 8

        late.start()  # the cluster comes up: the next attempt succeeds
        node.wait_running(2, 90)
        wait_until(all_running(node, a, c, ("MirrorHeartbeatConnector",)), 60, "A->C heartbeats running")
        assert wait_count(late.bootstrap_servers, "heartbeats", 1) >= 1
        assert node.request("GET", "/health").status_code == 200
        assert node.terminate() == 0


# -- 9. MM2 scenarios through the driver's REST API ----------------------------------------------------
def test_rest_restart_group_sync_and_kip875_offsets(cluster_a: Cluster, cluster_b: Cluster,
                                                    tmp_path: Path) -> None:
    """Java's testRestartReplication and offset-syncs on target, then its stop/PATCH/resume re-copy."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("rest"), 2)
    remote = f"{a}.{topic}"
    group = unique("rest-group")
    produce(cluster_a.bootstrap, topic, [(None, f"p0-{i}".encode()) for i in range(5)], partition=0)
    produce(cluster_a.bootstrap, topic, [(None, f"p1-{i}".encode()) for i in range(5)], partition=1)
    commit(cluster_a.bootstrap, group, topic, 5)
    body = (f"{a}->{b}.enabled = true\n{b}->{a}.emit.heartbeats.enabled = false\n"
            f"topics = {topic}\ngroups = {group}\n"
            "sync.group.offsets.enabled = true\noffset.lag.max = 0\n"
            f"{a}->{b}.offset-syncs.topic.location = target\n")
    props = write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    with MirrorMakerProcess(props) as node:
        node.wait_running(1)
        assert wait_count(cluster_b.bootstrap, remote, 10) == 10
        # Offset syncs live on the target; the group (never active on B) gets the translated offset.
        assert f"mm2-offset-syncs.{a}.internal" in topics(cluster_b.bootstrap)
        assert f"mm2-offset-syncs.{b}.internal" not in topics(cluster_a.bootstrap)
        wait_until(lambda: committed(cluster_b.bootstrap, group, remote) == 5, 60, "group synced to 5")

        for name in CONNECTORS:
            r = node.request("POST", f"/{a}/{b}/connectors/{name}/restart",
                             params={"includeTasks": "true", "onlyFailed": "false"})
            assert r.status_code == 202, r.text  # includeTasks=true: 202 + the RESTARTING states
        wait_until(all_running(node, a, b), 60, "connectors running after restart")
        produce(cluster_a.bootstrap, topic, [(None, f"p0-{i}".encode()) for i in range(5, 9)], partition=0)
        commit(cluster_a.bootstrap, group, topic, 9)
        assert wait_count(cluster_b.bootstrap, remote, 14) == 14
        wait_until(lambda: committed(cluster_b.bootstrap, group, remote) == 9, 60, "group synced to 9")

        # KIP-875: stop, rewind every partition to "offset 0 copied", resume: all but each first
        # record are copied again (100 + 9*10 = 190 in Java's test; here 14 + 8 + 4 = 26).
        source = f"/{a}/{b}/connectors/MirrorSourceConnector"
        assert node.request("PUT", source + "/stop").status_code == 204
        wait_until(lambda: node.get(source + "/status")["connector"]["state"] == "STOPPED", 30, "STOPPED")
        stored = node.get(source + "/offsets")["offsets"]
        assert {(o["partition"]["topic"], o["partition"]["partition"], o["offset"]["offset"])
                for o in stored if o["partition"]["topic"] == topic} == {(topic, 0, 8), (topic, 1, 4)}
        patch = {"offsets": [{"partition": {"cluster": a, "topic": topic, "partition": p},
                              "offset": {"offset": 0}} for p in (0, 1)]}
        r = node.request("PATCH", source + "/offsets", json=patch)
        assert r.status_code == 200, r.text
        assert node.request("PUT", source + "/resume").status_code == 202
        assert wait_count(cluster_b.bootstrap, remote, 14 + 8 + 4) == 26

        # Step 2: stop all three, DELETE their offsets, resume: everything is copied once more.
        for name in CONNECTORS:
            assert node.request("PUT", f"/{a}/{b}/connectors/{name}/stop").status_code == 204
        wait_until(lambda: all(node.get(f"/{a}/{b}/connectors/{n}/status")["connector"]["state"] == "STOPPED"
                               for n in CONNECTORS), 30, "all STOPPED")
        for name in CONNECTORS:
            r = node.request("DELETE", f"/{a}/{b}/connectors/{name}/offsets")
            assert r.status_code == 200, r.text
            assert node.get(f"/{a}/{b}/connectors/{name}/offsets") == {"offsets": []}
        for name in CONNECTORS:
            assert node.request("PUT", f"/{a}/{b}/connectors/{name}/resume").status_code == 202
        assert wait_count(cluster_b.bootstrap, remote, 26 + 14) == 40
        wait_until(all_running(node, a, b), 60, "all three running again")
        assert node.terminate() == 0


def test_a_node_paused_longer_than_its_session_resumes_replication(cluster_a: Cluster, cluster_b: Cluster,
                                                                   tmp_path: Path) -> None:
    """SIGSTOP for longer than session.timeout.ms, then SIGCONT: the node must take its work back.

    Regression test: a member that fenced itself (no heartbeat acknowledged for a session) dropped its
    work but kept its group seat without rejoining, so the leader (itself, here) never reassigned
    anything and replication stayed stopped for good.
    """
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("pause"))
    remote = f"{a}.{topic}"
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(10)])
    body = f"{a}->{b}.enabled = true\ntopics = {topic}\n{b}->{a}.emit.heartbeats.enabled = false\n"
    props = write(tmp_path, mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    with MirrorMakerProcess(props, log=tmp_path / "node.log") as node:
        node.wait_running(1)
        assert wait_count(cluster_b.bootstrap, remote, 10) == 10
        os.kill(node.pid, signal.SIGSTOP)
        try:
            # Deliberate time passing, not a wait for an event: the session is 6 s, so after 10 s stopped
            # the broker and the node itself have given up on it.
            time.sleep(10)
        finally:
            os.kill(node.pid, signal.SIGCONT)
        produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(10, 20)])
        assert wait_count(cluster_b.bootstrap, remote, 20, timeout_s=90) == 20, node.tail()
        assert values(cluster_b.bootstrap, remote) == [f"v{i}".encode() for i in range(20)]
