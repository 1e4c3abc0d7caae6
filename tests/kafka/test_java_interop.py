"""Java MirrorMaker 2 beside ours on Apache Kafka 4.4 brokers: Java's MirrorClient reads what we write, and a
flow moves from Java's MirrorMaker to ours and back without losing a record.

Java's side is **MirrorMaker 4.3.1** (connect-mirror and its kafka-clients 4.3.1; the Maven repository these
tests fetch from serves no connect-mirror 4.4.0), run from tests/support/java_mm2.py. The brokers are 4.4.0.

* ``test_java_mirror_client_agrees_with_ours``: our driver runs A->B and B->C (three aliases, C being A's
  broker again, so that a heartbeat travels two hops); Java's ``RemoteClusterUtils`` and our
  ``mirror.client`` read the same heartbeats and checkpoints and give the same answers, and the expected ones.
* ``test_takeover``: one implementation replicates a flow under load (500 records/s,
  ``B.offset.flush.interval.ms = 5000``), stops on SIGTERM, and the other continues it from the same internal
  topics with the same mm2.properties: every record arrives, at most :data:`IN_FLIGHT` twice (what a clean stop
  may leave in flight, below), and the consumer group's checkpoints go on, never past a record the group
  has not read (in B's offsets, which run ahead of A's where records arrived twice). B is reached over
  SASL_PLAINTEXT with the password from a file (Kafka's FileConfigProvider): ours stores the connector configs
  as Java does, the password as its ``${file:...}`` reference; Java's leader writes them again unchanged (it
  compares with the stored configs resolved, as it does after a Java leader) and finds our task configs equal
  to its own (it writes none).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from mirror.client import mirror_client
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases
from tests.kafka.conftest import Stoppable
from tests.support.apache_kafka import KafkaBroker
from tests.support.chaos import Arrival, Checker, LoadGenerator, analyse, safe_checkpoints
from tests.support.java_mm2 import MIRRORMAKER_VERSION, JavaMirrorMaker, run_probe
from tests.support.kafka import commit_group_offsets, consume_all, create_topic, produce, topics, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

PARTITIONS = 4
RATE_PER_S = 500.0
FLUSH_INTERVAL_MS = 5000
#: What a clean stop may copy again: both implementations flush their producer and commit what the target
#: acknowledged when they stop, so the second one starts where the first stopped; only records in flight when
#: that final commit was taken (sent, their acknowledgement not seen) can arrive twice, a moment of load on
#: loopback. One second of load allows for that. A stop that lost its final commit would copy again up to
#: ``FLUSH_INTERVAL_MS`` of load (2,500 records): it does not fit.
IN_FLIGHT = int(RATE_PER_S)
#: how long each implementation replicates under load (two offset flushes each)
RUN_S = 11.0


def _lines(prefix: str, config: Mapping[str, str]) -> list[str]:
    return [f"{prefix}{key} = {value}" for key, value in config.items()]


def mm2_properties(clusters: Mapping[str, Mapping[str, str]], body: list[str]) -> str:
    """An mm2.properties both implementations run unchanged: RF 1, short intervals, a free REST port."""
    lines = [f"clusters = {', '.join(clusters)}"]
    for alias, client in clusters.items():
        lines += _lines(f"{alias}.", client)
    lines += [
        "listeners = http://127.0.0.1:0",
        "replication.factor = 1", "offset-syncs.topic.replication.factor = 1",
        "checkpoints.topic.replication.factor = 1", "heartbeats.topic.replication.factor = 1",
        "config.storage.replication.factor = 1", "offset.storage.replication.factor = 1",
        "status.storage.replication.factor = 1",
        "emit.heartbeats.interval.seconds = 1", "emit.checkpoints.interval.seconds = 1",
        "refresh.topics.interval.seconds = 2", "refresh.groups.interval.seconds = 2",
        "sync.topic.acls.enabled = false",
        # Java only: find Connect's plugins through their ServiceLoader manifests (KIP-898), not by scanning
        # the class path by reflection, 5 s and more per start on this machine; Java itself suggests it
        "plugin.discovery = service_load",
    ]
    return "\n".join([*lines, *body]) + "\n"


def _client(broker: KafkaBroker) -> dict[str, str]:
    return {"bootstrap.servers": broker.bootstrap_servers}


# ---------------------------------------------------------------------------------------- MirrorClient


def _ours(config: Mapping[str, str], hops: list[str], remote: str, group: str) -> dict[str, object]:
    """What our mirror.client reads, in the probe's JSON shape."""
    translated = mirror_client.translate_offsets(config, remote, group, 20)
    return {"heartbeatTopics": sorted(mirror_client.heartbeat_topics(config)),
            "checkpointTopics": sorted(mirror_client.checkpoint_topics(config)),
            "upstreamClusters": sorted(mirror_client.upstream_clusters(config)),
            "replicationHops": {alias: mirror_client.replication_hops(config, alias) for alias in hops},
            "translateOffsets": {f"{remote}:{group}": {f"{tp.topic}-{tp.partition}": om.offset
                                                       for tp, om in sorted(translated.items())}}}


@pytest.mark.timeout(600)
def test_java_mirror_client_agrees_with_ours(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    a, b, c = aliases("A", "B", "C")
    source = kafka_a.bootstrap_servers
    topic = create_topic(source, unique("interop"), 3)
    group = unique("interop-group")
    committed = {(topic, p): produce(source, topic, 50 * (p + 1), partition=p) for p in range(3)}
    commit_group_offsets(source, group, committed)  # a consumer that read every partition to its end
    properties = tmp_path / "mm2.properties"
    properties.write_text(mm2_properties(
        {a: _client(kafka_a), b: _client(kafka_b), c: _client(kafka_a)},
        [f"{a}->{b}.enabled = true", f"{b}->{c}.enabled = true", f"topics = {topic}", f"groups = {group}",
         # two herders only: no heartbeat-only pairs (four more herders on two cores)
         "emit.heartbeats.enabled = false", f"{a}->{b}.emit.heartbeats.enabled = true",
         f"{b}->{c}.emit.heartbeats.enabled = true",
         "offset.lag.max = 0"]), encoding="utf-8")  # a sync per record: every checkpoint is exact
    on_b, on_c = _client(kafka_b), _client(kafka_a)
    with MirrorMakerProcess(properties, log=tmp_path / "ours.log") as ours:
        ours.wait_running(2)
        wait_until(lambda: f"{b}.{a}.heartbeats" in topics(kafka_a.bootstrap_servers), 180,
                   "a heartbeat two hops away (A -> B -> C)")

        def checkpointed() -> bool:
            translated = mirror_client.translate_offsets(on_b, a, group, 10)
            return sorted(om.offset for om in translated.values()) == sorted(committed.values())
        wait_until(checkpointed, 120, "checkpoints of the group's 3 partitions on B")
    # stopped: what both read no longer changes
    java_b = run_probe(on_b, tmp_path / "b.properties", [a, b, c], [(a, group)])
    java_c = run_probe(on_c, tmp_path / "c.properties", [a, b, c], [(b, group)])
    print(f"\nJava MirrorClient {MIRRORMAKER_VERSION} on B: {json.dumps(java_b)}\non C: {json.dumps(java_c)}")

    assert java_b == _ours(on_b, [a, b, c], a, group)
    assert java_c == _ours(on_c, [a, b, c], b, group)
    # and what both should say: B hears A one hop away, C hears B at one hop and A at two
    assert {a} <= set(java_b["upstreamClusters"]) and b not in java_b["upstreamClusters"]
    assert {a, b} <= set(java_c["upstreamClusters"])
    assert java_b["replicationHops"] == {a: 1, b: -1, c: -1}
    assert java_c["replicationHops"] == {a: 2, b: 1, c: -1}
    assert f"{a}.checkpoints.internal" in java_b["checkpointTopics"]
    assert {f"{a}.heartbeats"} <= set(java_b["heartbeatTopics"])
    assert {f"{b}.heartbeats", f"{b}.{a}.heartbeats"} <= set(java_c["heartbeatTopics"])
    translated = java_b["translateOffsets"][f"{a}:{group}"]
    assert set(translated) == {f"{a}.{topic}-{p}" for p in range(3)}
    # the remote partitions hold the same offsets: the group resumes on B exactly where it stopped on A
    assert translated == {f"{a}.{t}-{p}": offset for (t, p), offset in committed.items()}


# -------------------------------------------------------------------------------------------- takeover


def node_of_kind(kind: str, properties: Path, log: Path, clusters: str) -> JavaMirrorMaker | MirrorMakerProcess:
    """Either implementation, started and stopped the same way."""
    if kind == "java":
        return JavaMirrorMaker(properties, "--clusters", clusters, log=log)
    return MirrorMakerProcess(properties, "--clusters", clusters, log=log)


def _largest_gap_s(arrivals: list[Arrival], after_ms: float) -> float:
    """The longest time after ``after_ms`` during which no record arrived on the target."""
    times = sorted(x.arrived_ms for x in arrivals if x.arrived_ms >= after_ms)
    return max((later - earlier for earlier, later in itertools.pairwise(times)), default=0.0) / 1000


def _copied_again_across(arrivals: list[Arrival], stop_ms: float) -> dict[int, int]:
    """Per partition, the records that arrived before ``stop_ms`` and again after it."""
    before = {(x.partition, x.sequence) for x in arrivals if x.arrived_ms < stop_ms}
    again = {(x.partition, x.sequence) for x in arrivals if x.arrived_ms >= stop_ms} & before
    return {p: sum(1 for q, _ in again if q == p) for p in range(PARTITIONS)}


def _takeover_evidence(target: str, alias: str, topic: str, logs: list[Path]) -> str:
    """What a failed takeover assertion needs to be explained: every source offset either implementation
    stored for the topic (in write order: offsets-topic partition and offset, the source partition, the
    offset), and each node's lines about where its task started and what it warned of."""
    lines = [f"source offsets stored for {topic} (offsets-topic partition/offset: source partition -> offset):"]
    try:
        for record in consume_all(target, f"mm2-offsets.{alias}.internal", 10):
            key = (record.key or b"").decode(errors="replace")
            if topic in key:
                lines.append(f"  {record.partition}/{record.offset} at {record.timestamp}: {key} -> "
                             f"{(record.value or b'').decode(errors='replace')}")
    except (AssertionError, KafkaException) as exc:
        lines.append(f"  (not readable: {exc})")
    wanted = ("resuming after stored offsets", "offsets read so far", "Stopping", "Starting task", "WARN", "ERROR",
              "Loaded", "Committing offsets", "commitOffsets", "Resetting offset", "reset")
    for log in logs:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        picked = [line[:300] for line in text.splitlines() if any(w in line for w in wanted)]
        lines.append(f"{log.name} ({len(picked)} lines of note, the last 40):")
        lines += [f"  {line}" for line in picked[-40:]]
    return "\n".join(lines)


def _records_on(bootstrap: str, topic: str) -> int:
    """The records a topic holds (the sum of its partitions' end offsets)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("watermarks")})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS))
    finally:
        consumer.close()


def _checkpoints(bootstrap: str, alias: str, group: str) -> dict[int, int]:
    translated = mirror_client.translate_offsets({"bootstrap.servers": bootstrap}, alias, group, 10)
    return {tp.partition: om.offset for tp, om in translated.items()}


def _commit_read_position(load: LoadGenerator, bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """The group commits, per partition, what the source has acknowledged so far (as a caught-up consumer)."""
    position = {p: len(s) for p, s in load.acked_snapshot().items()}
    commit_group_offsets(bootstrap, group, {(topic, p): n for p, n in position.items()})
    return position


def _rewrites(bootstrap: str, alias: str, prefix: bytes) -> list[tuple[str, list[str]]]:
    """Each rewrite of a config record under ``prefix``: its key, and the properties whose values it changed."""
    last: dict[bytes, dict[str, str]] = {}
    rewrites = []
    for record in consume_all(bootstrap, f"mm2-configs.{alias}.internal", 10):
        key = record.key or b""
        if key.startswith(prefix) and record.value:
            properties = json.loads(record.value).get("properties", {})
            if key in last:
                before = last[key]
                rewrites.append((key.decode(), sorted(k for k in set(before) | set(properties)
                                                      if before.get(k) != properties.get(k))))
            last[key] = properties
    return rewrites


def _connector_records(bootstrap: str, alias: str, prefix: bytes = b"connector-") -> list[tuple[int, str]]:
    return [(r.offset, (r.key or b"").decode()) for r in consume_all(bootstrap, f"mm2-configs.{alias}.internal", 10)
            if (r.key or b"").startswith(prefix)]


def _password_from_a_file(client: dict[str, str], directory: Path) -> dict[str, str]:
    """``client`` with its SASL password read from a file by Kafka's FileConfigProvider (Java's too): both kinds
    store the reference in the configs topic and resolve it themselves, and ours refuses a literal one."""
    match = re.search(r'password="([^"]*)"', client["sasl.jaas.config"])
    assert match is not None
    secrets = directory / "secrets.properties"
    secrets.write_text(f"sasl.password = {match.group(1)}\n", encoding="utf-8")
    reference = "${file:" + str(secrets) + ":sasl.password}"
    return {**client, "sasl.jaas.config": client["sasl.jaas.config"].replace(match.group(0), f'password="{reference}"')}


@pytest.mark.slow
@pytest.mark.timeout(600)  # two JVM and two driver start-ups on a loaded 2-core machine: minutes at worst
@pytest.mark.parametrize("first", ["java", "ours"])
def test_takeover(kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path, first: str,
                  running: list[Stoppable]) -> None:
    second = "ours" if first == "java" else "java"
    a, b = aliases("A", "B")
    source, target = kafka_a.bootstrap_servers, kafka_b.bootstrap_servers
    topic = create_topic(source, unique("takeover"), PARTITIONS)
    remote, group = f"{a}.{topic}", unique("takeover-group")
    properties = tmp_path / "mm2.properties"
    properties.write_text(mm2_properties(
        {a: _client(kafka_a), b: _password_from_a_file(kafka_b.client("SASL_PLAINTEXT", "PLAIN"), tmp_path)},
        [f"{a}->{b}.enabled = true", f"topics = {topic}", f"groups = {group}", "emit.heartbeats.enabled = false",
         f"{b}.offset.flush.interval.ms = {FLUSH_INTERVAL_MS}", "config.providers = file",
         "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider",
         f"{b}.plugin.discovery = service_load"]),  # Java: its herder's worker config (see mm2_properties)
        encoding="utf-8")
    figures: dict[str, float] = {}

    load = LoadGenerator(source, topic, PARTITIONS, RATE_PER_S)
    running.append(load)
    load.start()
    node = node_of_kind(first, properties, tmp_path / f"1-{first}.log", b)
    running.append(node)
    began = time.monotonic()
    node.start()
    wait_until(lambda: remote in topics(target) and _records_on(target, remote) > 0, 180,
               f"{first}: records on B", retry_on=(KafkaException,))  # a new topic's leaders, being elected
    figures[f"{first}: start to first record on B (s)"] = time.monotonic() - began
    checker = Checker(target, remote, PARTITIONS)  # reads the remote topic from its beginning
    running.append(checker)
    checker.start()
    committed_1 = _commit_read_position(load, source, topic, group)
    wait_until(lambda: len(_checkpoints(target, a, group)) == PARTITIONS, 120, f"{first}: checkpoints of the group")
    before = _checkpoints(target, a, group)
    configs_1 = _connector_records(target, a)
    tasks_1 = _connector_records(target, a, b"task-")
    time.sleep(max(0.0, RUN_S - (time.monotonic() - began)))  # deliberate: replicate under load
    # stopped in its steady state, not while it copies a start-up backlog (on a loaded machine, tens of
    # seconds of load): what a stop may copy twice is then what followed the last offset flush
    sent = load.acked_snapshot()
    wait_until(lambda: checker.has_all(sent), 180, f"{first}: caught up with the load", interval_s=0.5)

    stop_ms = time.time() * 1000
    stopping = time.monotonic()
    assert node.terminate(60) in (0, 130, 143), f"{first} did not stop cleanly:\n{node.tail()}"
    figures[f"{first}: SIGTERM to exit (s)"] = time.monotonic() - stopping
    arrived_at_stop = len(checker.snapshot())

    node = node_of_kind(second, properties, tmp_path / f"2-{second}.log", b)
    running.append(node)
    began = time.monotonic()
    node.start()
    wait_until(lambda: len(checker.snapshot()) > arrived_at_stop + RATE_PER_S, 180,
               f"{second}: replicating after the takeover")
    figures[f"{second}: start to replicating (s)"] = time.monotonic() - began
    committed_2 = _commit_read_position(load, source, topic, group)

    def checkpoints_advanced() -> bool:
        now = _checkpoints(target, a, group)
        return len(now) == PARTITIONS and all(now[p] > before[p] for p in range(PARTITIONS))
    wait_until(checkpoints_advanced, 120, f"{second}: checkpoints past {first}'s")
    after = _checkpoints(target, a, group)
    time.sleep(max(0.0, RUN_S - (time.monotonic() - began)))  # deliberate: replicate under load
    load.stop()
    wait_until(lambda: checker.has_all(load.acked), 180, "every acknowledged record on B", interval_s=0.5)
    checker.stop()
    configs_2 = _connector_records(target, a)
    tasks_2 = _connector_records(target, a, b"task-")

    assert not load.errors, load.errors[:3]
    arrivals = checker.snapshot()  # the checker has stopped: every later read would be this one
    report = analyse(f"{first} -> {second}", load.acked, arrivals, stop_ms)

    def evidence() -> str:  # read only when an assertion fails (assert evaluates its message lazily)
        return _takeover_evidence(target, a, topic, [tmp_path / f"1-{first}.log", tmp_path / f"2-{second}.log"])
    # "time to recover" in the table: from the SIGTERM to the first record sent after it arriving on B
    figures["takeover gap: longest time without an arrival on B (s)"] = _largest_gap_s(arrivals, stop_ms - 10_000)
    print(f"\n{report.table()}\n" + "\n".join(f"{k}: {v:.2f}" for k, v in figures.items()))
    assert report.lost == 0, f"{report.table()}\n{evidence()}"
    assert report.duplicated <= IN_FLIGHT, f"{report.table()}\n{evidence()}"
    # A stop copies again the same span of time on every partition (one offset flush covers them all): a
    # partition copied again far beyond its share was started by the second implementation elsewhere
    # than where the first one's offsets say (copies before the stop are the first one's own restarts).
    again = _copied_again_across(arrivals, stop_ms)
    assert all(n <= IN_FLIGHT for n in again.values()), f"{again}\n{report.table()}\n{evidence()}"
    assert report.out_of_order == 0, f"{report.table()}\n{evidence()}"
    # checkpoints went on: the second implementation translated the group's later commit, never past it
    # (in offsets of B: past it is where a consumer resuming on B would skip a record it had not read)
    bound_1, bound_2 = safe_checkpoints(arrivals, committed_1), safe_checkpoints(arrivals, committed_2)
    assert all(before[p] <= bound_1[p] and before[p] < after[p] <= bound_2[p] for p in range(PARTITIONS)), \
        f"{(committed_1, bound_1, before, committed_2, bound_2, after)}\n{report.table()}\n{evidence()}"
    if isinstance(node, JavaMirrorMaker):
        # Java started the connectors and task configs we stored (a reference where the password should be
        # fails the connectors' start). Its newly elected leader compares its file's connector configs with the
        # stored ones resolved through the config providers, so with the password from a file it writes every
        # connector config again, whoever stored it: unchanged, each rewrite equal to ours. The task configs it
        # found equal to its own: it rewrote none.
        start_failures = [e for e in node.errors() if "Failed to start" in e or "Error while starting" in e]
        assert not start_failures, "\n".join(start_failures[:5])
        rewrites = _rewrites(target, a, b"connector-")
        assert len(configs_2) > len(configs_1) and all(not changed for _, changed in rewrites), rewrites
        assert tasks_2 == tasks_1, _rewrites(target, a, b"task-")
