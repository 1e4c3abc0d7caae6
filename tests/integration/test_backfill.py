"""``mirror backfill`` on real brokers with pyspark: copy, hand over to streaming, resume, translate.

cluster_a is the source, cluster_b the target; each test uses its own aliases and topics. Streaming
replication is the real MirrorSourceConnector plus MirrorSourceTasks run through the production
WorkerSourceTask (``connect_runtime.testing.harness``) with the flow's Kafka offsets topic, and a small
stand-in for the herder that restarts the tasks when the connector asks for a reconfiguration.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from connect_runtime.api.config_provider import build_providers, resolve
from connect_runtime.storage.kafka_offset_store import KafkaOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.backfill.command import BackfillOptions, BackfillSummary, run_backfill
from mirror.backfill.copier import HANG_AFTER_ENV, ChunkResult
from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import BACKFILLING, DONE, STARTED, STOPPED, PartitionMarker, marker_topic
from mirror.checkpoint.connector import MirrorCheckpointConnector
from mirror.checkpoint.task import MirrorCheckpointTask
from mirror.cli.main import main
from mirror.client.models import Checkpoint
from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS, MirrorMakerConfig, SourceAndTarget
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.integration.support.leak_scan import SPECIAL, properties_escaped, read_whole_topic
from tests.integration.support.leak_scan import scan as leak_scan
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import (
    Consumed,
    commit_group_offsets,
    consume_all,
    create_topic,
    produce,
    topics,
    unique,
    wait_until,
)
from tests.support.mm2 import RecordingConnectorContext, flow_config, start_connector

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CONNECTOR = "MirrorSourceConnector"


def write_mm2(tmp_path: Path, src: str, tgt: str, a: Cluster, b: Cluster, topic: str, **extra: str) -> Path:
    lines = [f"clusters = {src}, {tgt}", f"{src}.bootstrap.servers = {a.bootstrap}",
             f"{tgt}.bootstrap.servers = {b.bootstrap}", f"{src}->{tgt}.enabled = true",
             f"{src}->{tgt}.topics = {topic}", "replication.factor = 1",
             "offset-syncs.topic.replication.factor = 1", "offset.storage.replication.factor = 1",
             "status.storage.replication.factor = 1", "config.storage.replication.factor = 1",
             "checkpoints.topic.replication.factor = 1", "heartbeats.topic.replication.factor = 1",
             "sync.topic.acls.enabled = false"]  # create_acls aborts the process on Tansu (docs/tansu.md)
    lines += [f"{k.replace('__', '.')} = {v}" for k, v in extra.items()]
    path = tmp_path / "mm2.properties"
    path.write_text("\n".join(lines) + "\n")
    return path


def flow_props(path: Path, src: str, tgt: str) -> tuple[dict[str, str], dict[str, str]]:
    """The flow's connector and worker configs, derived exactly as the driver and the CLI do."""
    mm = MirrorMakerConfig.from_file(str(path))
    pair = SourceAndTarget(src, tgt)
    props = resolve(mm.connector_base_config(pair, SOURCE_CONNECTOR_CLASS), build_providers(mm.raw_properties()))
    return props, mm.worker_config(pair)


def offsets_store(b: Cluster, worker: dict[str, str]) -> KafkaOffsetStore:
    client = {"bootstrap.servers": b.bootstrap}
    store = KafkaOffsetStore(worker["offset.storage.topic"], producer_config=client, consumer_config=client,
                             admin_config=client, replication_factor=1)
    store.start()
    return store


class Streaming:
    """The source connector and its tasks, restarted on every reconfiguration request (a mini herder)."""

    def __init__(self, config: dict[str, str], b: Cluster, store: KafkaOffsetStore, tasks_max: int = 2,
                 throttle: bool = False) -> None:
        self.connector = MirrorSourceConnector()
        # throttled: at most 100 unacknowledged records per task and 100 ms producer batches (~1,000/s)
        self._task_options: dict[str, Any] = (
            {"producer_config": {"linger.ms": "100"}, "max_outstanding_records": 100} if throttle else {})
        self.runs: list[Any] = []
        self.written_before = 0.0
        self.context = RecordingConnectorContext()
        self._b, self._store, self._tasks_max = b, store, tasks_max
        self._stack = ExitStack()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.generations = 0
        self.assigned: set[tuple[str, int]] = set()
        start_connector(self.connector, config, self.context)
        self._seen = self.context.reconfigurations
        self._start_tasks()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _start_tasks(self) -> None:
        configs = self.connector.task_configs(self._tasks_max)
        self.assigned = {tuple(tp.rsplit("-", 1)) for c in configs  # type: ignore[misc]
                         for tp in c["task.assigned.partitions"].split(",") if tp}
        self.written_before += sum(r.records_written() for r in self.runs)
        self.runs = [self._stack.enter_context(run_source_task(
            MirrorSourceTask, config, bootstrap_servers=self._b.bootstrap, connector=CONNECTOR,
            task_number=index, offset_store=self._store, offset_flush_interval_ms=500, **self._task_options))
            for index, config in enumerate(configs)]
        self.generations += 1

    def unthrottle(self) -> None:
        self._task_options = {}

    def written(self) -> float:
        with self._lock:
            return self.written_before + sum(r.records_written() for r in self.runs)

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                if self.context.reconfigurations != self._seen:
                    self._seen = self.context.reconfigurations
                    self._stack.close()  # stop: flush + final offset commit, as a herder does
                    self._stack = ExitStack()
                    self._start_tasks()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        with self._lock:
            self._stack.close()
        self.connector.stop()


class BackgroundProducer:
    """Keeps writing to every partition of the source topic until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate_per_s: int = 2000) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self._topic, self._partitions, self._rate = topic, partitions, rate_per_s
        self._stop = threading.Event()
        self.sent = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(self._rate // 10):
                p = self.sent % self._partitions
                self._producer.produce(self._topic, f"live-{self.sent}".encode(), f"lk-{self.sent}".encode(),
                                       partition=p, headers=[("live", b"1")])
                self.sent += 1
            self._producer.poll(0)
            time.sleep(0.1)  # deliberate rate pacing: rate_per_s / 10 records every tenth of a second

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        assert self._producer.flush(30) == 0
        return self.sent


def by_partition(records: list[Consumed]) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        out.setdefault(r.partition, []).append((r.key, r.value, r.headers, r.timestamp))
    return out


def assert_same(a: Cluster, b: Cluster, topic: str, remote: str, timeout_s: float = 90.0) -> int:
    """The remote topic equals the source, partition by partition, in order, each record once."""
    source = consume_all(a.bootstrap, topic, timeout_s=60)
    replicated = wait_until(lambda: (r := consume_all(b.bootstrap, remote, timeout_s=60)) and
                            len(r) >= len(source) and r, timeout_s, f"{len(source)} records on {remote}",
                            interval_s=1.0)
    expected, actual = by_partition(source), by_partition(replicated)
    assert sorted(actual) == sorted(expected)
    for partition, records in expected.items():
        got = actual[partition]
        assert len(got) == len(records), f"partition {partition}: {len(got)} records, expected {len(records)}"
        assert got == records, f"partition {partition} differs"
    return len(source)


def seed(a: Cluster, topic: str, count: int, partitions: int) -> None:
    per = count // partitions
    for p in range(partitions):
        records = [(f"k{p}-{i}".encode(), f"value-{p}-{i}-{'x' * 40}".encode()) for i in range(per)]
        produce(a.bootstrap, topic, records, partition=p, headers=[("h", str(p).encode()), ("n", None)])


def copied_from_output(out: str) -> int:
    line = next(line for line in out.splitlines() if line.startswith("backfill:"))
    return int(line.split()[1].replace(",", ""))


def copied_of_topic(out: str, topic: str) -> int:
    """One topic's count from the summary's per-topic lines (the total also counts the ``heartbeats`` topic,
    which MM2 always copies and which other tests' heartbeat connectors write on the shared source cluster)."""
    line = next(line for line in out.splitlines() if line.strip().startswith(f"{topic}:"))
    return int(line.split(":", 1)[1].replace(",", ""))


@pytest.mark.slow
def test_backfill_hands_over_to_running_streaming_while_producers_write(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """200,000 records in 8 partitions, streaming running and producers writing throughout: exactly once."""
    src, tgt = unique("bfs"), unique("bft")
    topic = create_topic(cluster_a.bootstrap, unique("backlog"), partitions=8)
    seed(cluster_a, topic, 200_000, 8)
    path = write_mm2(tmp_path, src, tgt, cluster_a, cluster_b, topic)
    props, worker = flow_props(path, src, tgt)
    store = offsets_store(cluster_b, worker)
    # streaming is throttled, so that it is still copying the backlog when the backfill claims it
    streaming = Streaming(props, cluster_b, store, throttle=True)
    live = BackgroundProducer(cluster_a.bootstrap, topic, 8, rate_per_s=400)
    try:
        wait_until(lambda: streaming.written() >= 2_000, 30, "streaming under way")
        streaming.unthrottle()  # tasks started from now on (after the claim, the handover) run at full speed
        code = main(["backfill", str(path), "--flow", f"{src}->{tgt}", "--master", "local[2]", "--no-progress",
                     "--batch-records", "5000"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert copied_from_output(out) > 0  # the backfill, not only streaming, copied part of the backlog
        # streaming got every partition back (the connector saw the done markers)
        wait_until(lambda: len(streaming.assigned) == 8, 30, "all 8 partitions assigned to streaming again")
        assert streaming.generations >= 2  # the claim and the handover reassigned the tasks (maybe coalesced)
        live.stop()
        total = assert_same(cluster_a, cluster_b, topic, f"{src}.{topic}")
        assert total >= 200_000 + live.sent
    finally:
        live.stop()
        streaming.close()
        store.stop()
    state = MarkerLog(marker_topic(src), {"bootstrap.servers": cluster_b.bootstrap}).read_to_end()
    assert {m.state for m in state.partitions.values()} == {DONE}


@pytest.mark.slow
def test_killed_backfill_resumes_without_duplicates(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """kill -9 of the command half-way (records on the target past the last progress marker), then re-run."""
    src, tgt = unique("bfs"), unique("bft")
    topic = create_topic(cluster_a.bootstrap, unique("backlog"), partitions=4)
    seed(cluster_a, topic, 120_000, 4)
    path = write_mm2(tmp_path, src, tgt, cluster_a, cluster_b, topic)
    args = ["backfill", str(path), "--flow", f"{src}->{tgt}", "--master", "local[2]", "--no-progress",
            "--batch-records", "1000"]
    remote = f"{src}.{topic}"
    markers = MarkerLog(marker_topic(src), {"bootstrap.servers": cluster_b.bootstrap})
    # The copy is too fast to be caught half-way by chance: the test hook makes each Spark task write
    # 15,500 records (15 progress markers at most) and hang; then the whole process group is killed.
    with (tmp_path / "killed.log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mirror.cli", *args], start_new_session=True, stdout=log,
                                stderr=subprocess.STDOUT, env={**os.environ, HANG_AFTER_ENV: "15500"})
        try:
            def two_partitions_hung() -> bool:
                counts = Counter(r.partition for r in consume_all(cluster_b.bootstrap, remote, timeout_s=10))
                return sum(1 for c in counts.values() if c >= 15_500) >= 2
            wait_until(two_partitions_hung, 180, "two Spark tasks half-way", interval_s=0.5)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    state = markers.read_to_end()
    counts = Counter(r.partition for r in consume_all(cluster_b.bootstrap, remote))
    claimed = {p: m for (t, p), m in state.partitions.items() if t == topic}
    assert {m.state for m in claimed.values()} == {BACKFILLING}  # interrupted: still claimed
    # records landed after the last progress marker: a naive resume would write them twice
    assert any(counts[p] > m.next for p, m in claimed.items())
    assert main([*args]) == 0
    # nothing written twice, nothing missing, before streaming even starts
    assert len(consume_all(cluster_b.bootstrap, remote)) == 120_000
    produce(cluster_a.bootstrap, topic, [(b"after", b"backfill")], partition=0)
    props, worker = flow_props(path, src, tgt)
    store = offsets_store(cluster_b, worker)
    streaming = Streaming(props, cluster_b, store)
    try:
        assert assert_same(cluster_a, cluster_b, topic, remote) == 120_001
    finally:
        streaming.close()
        store.stop()


def checkpoints(b: Cluster, src: str) -> list[Checkpoint]:
    return [Checkpoint.from_record(r.key, r.value) for r in consume_all(b.bootstrap, f"{src}.checkpoints.internal")]


def chunks_of(summary: BackfillSummary, topic: str) -> list[ChunkResult]:
    """The chunks that copied ``topic``; any other chunk copied a heartbeats topic.

    A flow replicates every heartbeats topic on its source whatever its ``topics`` filter says (as Java's
    MirrorSourceConnector does), and the shared session broker holds other tests' ``<alias>.heartbeats``
    topics once driver tests ran in the same test process (in parallel runs, in any order).
    """
    others = {r.topic for r in summary.results} - {topic}
    assert all(t == "heartbeats" or t.endswith(".heartbeats") for t in others), others
    return [r for r in summary.results if r.topic == topic]


def test_checkpoints_translate_groups_across_the_backfilled_range(cluster_a: Cluster, cluster_b: Cluster,
                                                                  tmp_path: Path) -> None:
    src, tgt = unique("bfs"), unique("bft")
    topic = create_topic(cluster_a.bootstrap, unique("ck"), partitions=2)
    seed(cluster_a, topic, 2_000, 2)
    path = write_mm2(tmp_path, src, tgt, cluster_a, cluster_b, topic, offset__lag__max="10")
    props, worker = flow_props(path, src, tgt)
    summary = run_backfill(props, worker, BackfillOptions(src, tgt, master="local[2]", progress=False,
                                                          batch_records=300))
    assert sum(r.copied for r in chunks_of(summary, topic)) == 2_000
    group = unique("ck-group")
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 555, (topic, 1): 1000})
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, name="MirrorCheckpointConnector",
                         overrides={"topics": topic, "groups": group, "emit.checkpoints.interval.seconds": "1",
                                    "refresh.groups.interval.seconds": "1"})
    connector = MirrorCheckpointConnector()
    start_connector(connector, config)
    try:
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorCheckpointTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorCheckpointConnector"):
            found = wait_until(lambda: {c.partition: c for c in checkpoints(cluster_b, src)
                                        if c.consumer_group_id == group} if len(
                {c.partition for c in checkpoints(cluster_b, src) if c.consumer_group_id == group}) == 2 else None,
                30, "checkpoints for both partitions")
    finally:
        connector.stop()
    # translated through the backfill's offset syncs: never past the group's true position (the store keeps
    # syncs exponentially spaced, so an offset in the middle of the range may translate to an older sync)
    assert 0 < found[0].downstream_offset <= 555
    assert found[1].downstream_offset == 1000  # the last record's sync: the end translates to the end


@pytest.mark.slow
def test_multi_process_spark_cluster(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """local-cluster: a Spark master and 2 executor JVMs with their own Python workers; chunks in waves."""
    src, tgt = unique("bfs"), unique("bft")
    topic = create_topic(cluster_a.bootstrap, unique("mp"), partitions=4)
    seed(cluster_a, topic, 8_000, 4)
    path = write_mm2(tmp_path, src, tgt, cluster_a, cluster_b, topic)
    props, worker = flow_props(path, src, tgt)
    summary: BackfillSummary = run_backfill(props, worker, BackfillOptions(
        src, tgt, master="local-cluster[2,1,1024]", max_records_per_task=700, batch_records=250, progress=False))
    chunks = chunks_of(summary, topic)
    assert sum(r.copied for r in chunks) == 8_000
    assert len(chunks) == 4 * 3  # 2,000 records per partition in chunks of 700
    assert len({r.worker.rsplit(":", 1)[1] for r in chunks}) >= 2  # more than one worker process
    assert assert_same(cluster_a, cluster_b, topic, f"{src}.{topic}") == 8_000


BACKLOG = 600_000


def test_a_task_whose_config_predates_a_claim_leaves_the_claimed_partitions_alone(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """The connector computed the task's config, then a backfill claimed partition 1, then the task
    started (a rebalance in flight while the backfill began). The backfill may already have found no
    STARTED task holding partition 1; the task, reading the marker topic after writing STARTED, must
    leave partition 1 alone: it copies partition 0 only and records STARTED and STOPPED without 1."""
    src, tgt = unique("bfc"), unique("bfd")
    topic = create_topic(cluster_a.bootstrap, unique("late"), partitions=2)
    seed(cluster_a, topic, 2_000, 2)
    remote = f"{src}.{topic}"
    props, worker = flow_props(write_mm2(tmp_path, src, tgt, cluster_a, cluster_b, topic), src, tgt)
    connector = MirrorSourceConnector()
    start_connector(connector, props)
    store = offsets_store(cluster_b, worker)
    markers = MarkerLog(marker_topic(src), {"bootstrap.servers": cluster_b.bootstrap},
                        {"bootstrap.servers": cluster_b.bootstrap})
    try:
        [config] = connector.task_configs(1)
        assert {f"{topic}-0", f"{topic}-1"} <= set(config["task.assigned.partitions"].split(","))
        markers.write_partition(topic, 1, PartitionMarker(BACKFILLING, 0, 1_000, -1, -1))
        markers.flush()
        with run_source_task(MirrorSourceTask, config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                             offset_store=store, offset_flush_interval_ms=500):
            wait_until(lambda: len(consume_all(cluster_b.bootstrap, remote, timeout_s=10)) >= 1_000, 60,
                       "partition 0 copied")
            started = [e for e in markers.read_to_end().tasks.values() if e.state == STARTED]
            time.sleep(2)  # a task that copied partition 1 would have written some of it by now
        copied = by_partition(consume_all(cluster_b.bootstrap, remote, timeout_s=10))
        assert len(copied.get(0, [])) == 1_000 and not copied.get(1), {p: len(r) for p, r in copied.items()}
        assert [[tp for tp in e.partitions if tp[0] == topic] for e in started] == [[(topic, 0)]], started
        stopped = [e for e in markers.read_to_end().tasks.values() if e.state == STOPPED]
        assert [[tp for tp in e.partitions if tp[0] == topic] for e in stopped] == [[(topic, 0)]], stopped
    finally:
        markers.close()
        store.stop()
        connector.stop()


@pytest.mark.slow
def test_backfill_hands_over_to_a_running_connect_mirror_maker(cluster_a: Cluster, cluster_b: Cluster,
                                                               tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The real driver streams the flow; the backfill claims what it has not copied yet, hands it back.

    The node is frozen (SIGSTOP) from the moment streaming is under way until the backfill's claim is on
    the marker topic, so the claim covers every partition whatever the machine's speed (unfrozen, a fast
    machine streamed the whole backlog before the backfill read the ends). Once thawed, streaming keeps
    copying until it sees the claim and releases: how much is left for the backfill is that race's
    outcome, and either way the hand-back must be exact.
    """
    src, tgt = aliases("bfa", "bfb")
    topic = create_topic(cluster_a.bootstrap, unique("drv"), partitions=8)
    seed(cluster_a, topic, BACKLOG, 8)
    path = tmp_path / "mm2.properties"
    path.write_text(mm2_properties({src: cluster_a.bootstrap, tgt: cluster_b.bootstrap},
                                   f"{src}->{tgt}.enabled = true\n{src}->{tgt}.topics = {topic}\n"
                                   "emit.heartbeats.enabled = false\n"
                                   # a session longer than the freeze: a node frozen past its session
                                   # fences its tasks, and what they had in flight is copied again
                                   f"{tgt}.session.timeout.ms = 30000\n"))
    remote = f"{src}.{topic}"
    markers = MarkerLog(marker_topic(src), {"bootstrap.servers": cluster_b.bootstrap})
    with MirrorMakerProcess(path) as node:
        node.wait_running(1)
        # The remote topic exists once the connector runs. (Reading the remote topic instead would keep
        # streaming going at full speed for seconds per check.)
        wait_until(lambda: remote in topics(cluster_b.bootstrap), 60, "streaming under way")
        live = BackgroundProducer(cluster_a.bootstrap, topic, 8, rate_per_s=400)
        outcome: dict[str, int] = {}
        command = threading.Thread(target=lambda: outcome.update(code=main([
            "backfill", str(path), "--flow", f"{src}->{tgt}", "--master", "local[2]", "--no-progress"])))
        os.kill(node.pid, signal.SIGSTOP)
        try:
            command.start()

            def claimed() -> int:
                if not markers.exists(1.0):
                    return 0
                state = markers.read_to_end()
                return sum(1 for (t, _), m in state.partitions.items() if t == topic and m.state == BACKFILLING)

            wait_until(lambda: claimed() == 8 or not command.is_alive(), 120, "the backfill's claim")
        finally:
            os.kill(node.pid, signal.SIGCONT)
            markers.close()
        try:
            command.join(600)
            assert not command.is_alive(), "the backfill did not finish in 600 s"
            out = capsys.readouterr().out
            assert outcome.get("code") == 0, f"{out}\n{node.tail()}"
            assert "in 8 partitions" in out, out  # every partition was claimed from running streaming
        finally:
            live.stop()
        assert assert_same(cluster_a, cluster_b, topic, remote) == BACKLOG + live.sent, node.tail()
        # the driver's tasks hold every partition again
        tasks = node.get(f"/{src}/{tgt}/connectors/MirrorSourceConnector/tasks")
        assigned = {tp for t in tasks for tp in t["config"]["task.assigned.partitions"].split(",") if tp}
        mine = {tp for tp in assigned if tp.rsplit("-", 1)[0] == topic}
        assert mine == {f"{topic}-{p}" for p in range(8)}
        # anything else is a heartbeats topic (always replicated) that other tests left on the shared broker
        assert all(tp.rsplit("-", 1)[0].endswith("heartbeats") for tp in assigned - mine), assigned


@pytest.mark.slow
def test_backfill_leaks_no_secret(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """Issue 27, item 7: secrets planted in mm2.properties (literal, ``${file:...}``, ``${env:...}``, each
    holding ``"\\$%+/=``) appear nowhere a Spark backfill writes: the command's output with Spark's own
    logs (``--verbose``), the marker, offset-syncs and offsets topics, each read to its end."""
    src, tgt = unique("bfs"), unique("bft")
    topic = create_topic(cluster_a.bootstrap, unique("leak"), partitions=2)
    seed(cluster_a, topic, 2_000, 2)
    planted = {"literal sasl.jaas.config password": "BF$%+/=jaas-3d9b71",  # JAAS quoting: no quote or backslash
               "literal ssl.key.password": f"BF{SPECIAL}key-c04e28",
               "file-provided truststore password": f"BF{SPECIAL}file-6a1f53",
               "env-provided keystore password": f"BF{SPECIAL}env-e2b847"}
    secrets_file = tmp_path / "secrets.properties"
    secrets_file.write_text(f"ts = {properties_escaped(planted['file-provided truststore password'])}\n")
    path = write_mm2(tmp_path, src, tgt, cluster_a, cluster_b, topic)
    path.write_text(path.read_text() + f"""configs.topic.compatibility = python
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
{src}.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="bf" \\
password="{planted['literal sasl.jaas.config password']}";
ssl.key.password = {properties_escaped(planted['literal ssl.key.password'])}
{tgt}.ssl.truststore.password = ${{file:{secrets_file}:ts}}
{src}.ssl.keystore.password = ${{env:BACKFILL_SCAN_SECRET}}
""")
    env = {**os.environ, "BACKFILL_SCAN_SECRET": planted["env-provided keystore password"]}
    run = subprocess.run([sys.executable, "-m", "mirror.cli", "backfill", str(path), "--flow", f"{src}->{tgt}",
                          "--master", "local[2]", "--no-progress", "--verbose"],
                         capture_output=True, text=True, timeout=600, env=env, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert copied_of_topic(run.stdout, topic) == 2_000
    assert assert_same(cluster_a, cluster_b, topic, f"{src}.{topic}") == 2_000
    found = leak_scan("the backfill's output", run.stdout + run.stderr, planted)
    assert "log4j" in run.stderr  # --verbose: Spark's own log lines were there to scan
    written = {cluster_b.bootstrap: [marker_topic(src), f"mm2-offsets.{src}.internal"],
               cluster_a.bootstrap: [f"mm2-offset-syncs.{tgt}.internal"]}
    scanned = 0
    for bootstrap, names in written.items():
        for name in names:
            if name in topics(bootstrap):
                found += leak_scan(name, read_whole_topic(bootstrap, name), planted)
                scanned += 1
    assert scanned >= 2, written  # the marker topic and at least one of the others exist
    assert found == []
