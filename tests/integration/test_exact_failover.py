"""Exact failover and failback on real brokers: groups resume on the target at exactly the next record.

cluster_a is the source, cluster_b the target. The source topic is written in transactions, so every
commit marker is a hole in its offsets: Tansu never compacts (docs/tansu.md), and transaction markers are
the real way to get offsets that do not move together. A second task lifetime starts from an older
stored Connect offset, as after a crash whose last offset flush was lost: it re-sends records, which
land on the target a second time.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
import time
import warnings
from datetime import datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning

from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.checkpoint.connector import MirrorCheckpointConnector
from mirror.checkpoint.group_sync import GroupOffsetSync
from mirror.checkpoint.task import MirrorCheckpointTask
from mirror.cli.main import main
from mirror.client.cutover import CutoverReport, write_again_what_moved_back
from mirror.client.mirror_client import mirror_client_config
from mirror.client.models import Checkpoint, OffsetAndMetadata, TopicPartition
from mirror.client.translation import OffsetTranslator
from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget
from mirror.maker.translation_routes import translation_routes
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.integration.support.replication import write_properties
from tests.integration.test_mirror_checkpoint import checkpoint_config, committed_on, started
from tests.support.kafka import commit_group_offsets, consume_all, create_topic, produce, topics, unique, wait_until
from tests.support.mm2 import flow_config

with warnings.catch_warnings():
    # Starlette 1.x nudges towards the httpx2 package for its TestClient; httpx is what we ship with.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

pytestmark = pytest.mark.integration


def produce_transactions(bootstrap: str, topic: str, sizes: list[int], prefix: str) -> None:
    """One committed transaction per size: each commit marker takes an offset (a hole downstream)."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("txn"), "linger.ms": 5})
    producer.init_transactions(30)
    index = 0
    for size in sizes:
        producer.begin_transaction()
        for _ in range(size):
            producer.produce(topic, value=f"{prefix}-{index}".encode(), partition=0)
            index += 1
        producer.commit_transaction(30)
    producer.flush(30)


def log_of(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value or b"") for r in consume_all(bootstrap, topic)]


def check_resumes_exactly(source: list[tuple[int, bytes]], target: list[tuple[int, bytes]], g: int,
                          d: int) -> None:
    """A consumer at upstream ``g`` moved to downstream ``d`` replays nothing and skips nothing."""
    before = {v for o, v in source if o < g}
    after = {v for o, v in source if o >= g}
    read_from_d = [v for o, v in target if o >= d]
    assert not before & set(read_from_d), f"replayed at {d} for {g}"
    assert after & {v for _, v in target} <= set(read_from_d), f"skipped at {d} for {g}"


def check_fails_back_exactly(source: list[tuple[int, bytes]], target: list[tuple[int, bytes]], d: int,
                             u: int) -> None:
    read = {v for o, v in target if o < d}
    assert all(v in read for o, v in source if o < u and v in {tv for _, tv in target}), f"skipped {d}->{u}"
    assert not any(v in read for o, v in source if o >= u), f"replayed {d}->{u}"


def java_checkpoint(key: bytes, value: bytes) -> tuple[str, str, int, int, int]:
    """MM2's Checkpoint layout (Java's ``Checkpoint``), decoded without our models, as a Java reader would."""
    group_len = struct.unpack(">h", key[:2])[0]
    group = key[2:2 + group_len].decode()
    topic_len = struct.unpack(">h", key[2 + group_len:4 + group_len])[0]
    topic = key[4 + group_len:4 + group_len + topic_len].decode()
    partition = struct.unpack(">i", key[4 + group_len + topic_len:])[0]
    version, upstream, downstream = struct.unpack(">hqq", value[:18])
    assert version == 0
    return group, topic, partition, upstream, downstream


def exact_position(source: list[tuple[int, bytes]], target: list[tuple[int, bytes]], g: int) -> int:
    """Where a group at upstream ``g`` must resume: the newest copy of the first record at or after ``g``."""
    following = [v for o, v in source if o >= g and v in {tv for _, tv in target}]
    if not following:
        return len(target)
    return max(o for o, v in target if v == following[0])


@pytest.mark.slow
def test_groups_resume_exactly_at_any_lag_across_holes_and_restarts(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Groups committed before replication, at a marker, in records re-sent after a restart and after
    replication end up on the target at exactly the next record; failback is exact at every position."""
    src, tgt = unique("xs"), unique("xt")
    topic = create_topic(cluster_a.bootstrap, unique("exact"), 1)
    remote = f"{src}.{topic}"
    produce_transactions(cluster_a.bootstrap, topic, [7, 13, 5, 20, 15], "txn")  # 60 records, 5 markers
    first_part = log_of(cluster_a.bootstrap, topic)
    prefix = unique("grp")
    before, hole, mid, after = (f"{prefix}-{name}" for name in ("before", "hole", "mid", "after"))
    marker = next(o + 1 for (o, _), (n, _) in itertools.pairwise(first_part) if n != o + 1)
    commit_group_offsets(cluster_a.bootstrap, before, {(topic, 0): first_part[31][0]})  # before replication
    commit_group_offsets(cluster_a.bootstrap, hole, {(topic, 0): marker})  # at a commit marker
    commit_group_offsets(cluster_a.bootstrap, mid, {(topic, 0): 0})  # moves on while replication runs
    commit_group_offsets(cluster_a.bootstrap, after, {(topic, 0): 0})  # moves to the end afterwards

    source_config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    ck_config = checkpoint_config(cluster_a, cluster_b, src, tgt, topic, prefix,
                                  **{"sync.group.offsets.enabled": "true",
                                     "sync.group.offsets.interval.seconds": "1"})
    store = MemoryOffsetStore()
    task = MirrorCheckpointTask()
    source_connector, ck_connector = MirrorSourceConnector(), MirrorCheckpointConnector()
    with started(source_connector, source_config), started(ck_connector, ck_config):
        [task_config] = source_connector.task_configs(1)
        [ck_task_config] = ck_connector.task_configs(1)
        with run_source_task(task, ck_task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorCheckpointConnector") as checkpointing:
            with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                                 offset_store=store) as run:
                wait_until(lambda: run.records_written() >= 60, 30, "the transactional part replicated")
            produce(cluster_a.bootstrap, topic, [(None, f"dense-{i}".encode()) for i in range(80)])
            source = log_of(cluster_a.bootstrap, topic)
            commit_group_offsets(cluster_a.bootstrap, mid, {(topic, 0): source[50][0]})  # re-sent below
            # a crash lost the last offset flush: the next lifetime resumes after record 39, re-sending 40..59
            store.put("test-connector", [({"cluster": src, "partition": 0, "topic": topic},
                                          {"offset": source[39][0]})], timeout_s=10)
            with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                                 offset_store=store) as run:
                wait_until(lambda: run.records_written() >= 100, 30, "the re-sent and the dense part replicated")
            end = source[-1][0] + 1
            commit_group_offsets(cluster_a.bootstrap, after, {(topic, 0): end})  # long after replication
            target = log_of(cluster_b.bootstrap, remote)
            assert len(target) == 160  # 140 records, 20 of them twice
            groups = {before: first_part[31][0], hole: marker, mid: source[50][0], after: end}
            expected = {g: exact_position(source, target, o) for g, o in groups.items()}

            def synced() -> bool:
                return all(committed_on(cluster_b.bootstrap, g, remote) == d for g, d in expected.items())

            wait_until(synced, 60, f"every group synced onto the target at {expected}")
            exact = checkpointing.registry.get_sample_value(
                "mirror_checkpoint_translations_total", {"source": src, "target": tgt, "basis": "offset-map"})
            assert exact is not None and exact >= len(groups)
            assert {s.outcome for g, s in task.group_sync_status().items() if g in groups} <= {"written", "synced"}
    for g, g_offset in groups.items():
        check_resumes_exactly(source, target, g_offset, expected[g])
    assert expected[after] == 160
    raw = consume_all(cluster_b.bootstrap, f"{src}.checkpoints.internal")
    decoded = {java_checkpoint(r.key or b"", r.value or b"") for r in raw}
    for g, g_offset in groups.items():  # Java's layout reads what the exact path wrote
        assert (g, remote, 0, g_offset, expected[g]) in decoded
    assert all(Checkpoint.from_record(r.key, r.value) for r in raw)

    # the same answers from Python, then failback: every target position goes back exactly
    with OffsetTranslator({"bootstrap.servers": cluster_b.bootstrap}, src) as translator:
        by_group = translator.groups_to_target(list(groups), {"bootstrap.servers": cluster_a.bootstrap})
        assert {g: by_group[g][(remote, 0)].downstream for g in groups} == expected
        assert {t.basis for tps in by_group.values() for t in tps.values()} == {"offset-map"}
        for d in range(0, 161):
            back = translator.to_source({(remote, 0): d})[(remote, 0)]
            assert back.basis == "offset-map" and back.upstream is not None
            check_fails_back_exactly(source, target, d, back.upstream)

    # the CLI answers the same, in batches: failback of explicit positions, and a point in time
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic)
    base = ["offsets", "translate", str(props), "--source", src, "--target", tgt, "--json"]
    capsys.readouterr()
    assert main([*base, "--reverse", "--offset", f"{remote}:0:70", "--offset", f"{remote}:0:160"]) == 0
    rows = json.loads(capsys.readouterr().out)["translations"]
    # at 70 a consumer on the target read records 0..59, then 40..49 again: it goes on with record 60
    assert [(r["downstream"], r["upstream"], r["basis"]) for r in rows] == [
        (70, source[60][0], "offset-map"), (160, end, "offset-map")]
    dense = consume_all(cluster_b.bootstrap, remote)[80]  # the first dense record: newer than all before it
    assert main([*base, "--at", str(dense.timestamp), "--topic", topic]) == 0
    [row] = json.loads(capsys.readouterr().out)["translations"]
    assert (row["downstream"], row["upstream"]) == (80, source[60][0])
    assert main([*base, "--group", before, "--group", after]) == 0
    rows = json.loads(capsys.readouterr().out)["translations"]
    assert {r["group"]: r["downstream"] for r in rows} == {before: expected[before], after: expected[after]}
    assert main([*base, "--at", "yesterday", "--topic", topic]) == 2  # one clear line, no traceback
    assert "expected epoch milliseconds or an ISO-8601 time" in capsys.readouterr().err

    # and over REST, as the driver serves it
    mm = MirrorMakerConfig.from_file(str(props))
    client = TestClient(Starlette(routes=translation_routes(mm, [SourceAndTarget(src, tgt)])))
    answer = client.post("/mirror/offsets/translate", json={
        "source": src, "target": tgt, "groups": [mid], "offsets": [{"topic": topic, "partition": 0, "offset": 0}]})
    assert answer.status_code == 200, answer.text
    assert [(r["group"], r["downstream"], r["basis"]) for r in answer.json()["translations"]] == [
        (None, 0, "offset-map"), (mid, expected[mid], "offset-map")]
    back = client.post("/mirror/offsets/translate", json={"source": src, "target": tgt, "reverse": True,
                                                          "offsets": [{"topic": remote, "partition": 0, "offset": 70}]})
    assert back.json()["translations"][0]["upstream"] == source[60][0]
    bad = client.post("/mirror/offsets/translate", json={"source": src, "target": "nowhere"})
    assert bad.status_code == 400 and "must name a flow" in bad.json()["message"]



def test_failover_drill_and_failback(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``mirror failover`` waits for the lag to drain and moves the group exactly; what was not
    replicated is its RPO; ``mirror failback`` moves the group's target position back exactly."""
    src, tgt = unique("ds"), unique("dt")
    topic = create_topic(cluster_a.bootstrap, unique("drill"), 1)
    remote = f"{src}.{topic}"
    group = unique("drill-group")
    produce_transactions(cluster_a.bootstrap, topic, [10, 10, 10], "d")  # holes at 10, 21, 32
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 15})  # consumed records 0..14 on A
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic)
    base = ["--source", src, "--target", tgt, "--group", group, "--json"]
    create_topic(cluster_b.bootstrap, f"{src}.checkpoints.internal", 1)  # as the checkpoint connector does
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    connector = MirrorSourceConnector()
    with started(connector, config):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap):
            # runs while the task replicates: it waits for the lag to drain, then writes
            assert main(["failover", str(props), *base, "--execute", "--max-wait", "60"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["drained"] and report["rpo_records"] == 0 and report["reread_records"] == 0
    assert 0 <= report["drained_after_s"] <= report["exact_after_s"] <= report["seconds"]
    [move] = report["groups"]
    assert move["written"] and move["partitions"] == [
        {"topic": remote, "partition": 0, "from": 15, "to": 14, "basis": "offset-map", "reread": 0}]
    assert committed_on(cluster_b.bootstrap, group, remote) == 14  # record d-14 at 15 on A is at 14 on B
    [first_after] = [r for r in consume_all(cluster_b.bootstrap, remote) if r.offset == 14]
    assert first_after.value == b"d-14"
    cps = [Checkpoint.from_record(r.key, r.value) for r in consume_all(cluster_b.bootstrap,
                                                                        f"{src}.checkpoints.internal")]
    assert any(c.consumer_group_id == group and (c.upstream_offset, c.downstream_offset) == (15, 14) for c in cps)

    # the consumers run on B up to record d-25 (at 24 on B), then fail back
    commit_group_offsets(cluster_b.bootstrap, group, {(remote, 0): 25})
    assert main(["failback", str(props), *base, "--execute"]) == 0
    back = json.loads(capsys.readouterr().out)
    assert back["groups"][0]["partitions"][0]["to"] == 27  # d-25 sits at 27 on A (after the markers at 10, 21)
    assert 0 <= back["exact_after_s"] <= back["seconds"]
    assert committed_on(cluster_a.bootstrap, group, topic) == 27

    # not replicated at cutover = the RPO; --require-drained writes nothing then
    produce(cluster_a.bootstrap, topic, [(None, f"late-{i}".encode()) for i in range(7)])
    assert main(["failover", str(props), *base, "--execute", "--max-wait", "1", "--require-drained"]) == 1
    late = json.loads(capsys.readouterr().out)
    assert late["rpo_records"] == 7 and not late["drained"] and not late["executed"]
    assert late["drained_after_s"] is None and late["exact_after_s"] is None
    assert committed_on(cluster_b.bootstrap, group, remote) == 25  # untouched


@pytest.mark.slow
def test_exact_across_kill_and_restart_of_the_driver(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """The real driver, killed with SIGKILL while records flow and started again: groups committed
    before, during and after are synced onto the target at exactly their next record. This holds because
    source offsets are written only once the offset map's runs for them were delivered
    (``MirrorSourceTask.before_offset_commit``): records past the stored offsets are sent again and
    mapped anew, records before them have durable runs."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("kill"), 1)
    remote = f"{a}.{topic}"
    produce_transactions(cluster_a.bootstrap, topic, [40, 25, 60], "t")  # holes before replication starts
    prefix = unique("kg")
    early, during, late = (f"{prefix}-{n}" for n in ("early", "during", "late"))
    for group in (early, during, late):
        commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 50})
    body = (f"{a}->{b}.enabled = true\ntopics = {topic}\ngroups = {prefix}.*\n"
            "sync.group.offsets.enabled = true\n")
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    with MirrorMakerProcess(props) as node:
        node.wait_running(2)  # A->B and the heartbeat-only B->A herder
        wait_until(lambda: len(consume_all(cluster_b.bootstrap, remote)) >= 125
                   if remote in topics(cluster_b.bootstrap) else False, 60, "the first part replicated")
        produce(cluster_a.bootstrap, topic, [(None, f"flowing-{i}".encode()) for i in range(300)])
        node.kill()  # SIGKILL while the second part is being replicated
    commit_group_offsets(cluster_a.bootstrap, during, {(topic, 0): 300})
    with MirrorMakerProcess(props) as node:
        node.wait_running(2)  # A->B and the heartbeat-only B->A herder
        produce_transactions(cluster_a.bootstrap, topic, [30, 30], "after")
        source = log_of(cluster_a.bootstrap, topic)
        wait_until(lambda: {v for _, v in log_of(cluster_b.bootstrap, remote)} >= {v for _, v in source}, 90,
                   "everything replicated after the restart")
        end = source[-1][0] + 2  # past the last commit marker
        commit_group_offsets(cluster_a.bootstrap, late, {(topic, 0): end})
        target = log_of(cluster_b.bootstrap, remote)
        groups = {early: 50, during: 300, late: end}
        expected = {g: exact_position(source, target, o) for g, o in groups.items()}
        wait_until(lambda: all(committed_on(cluster_b.bootstrap, g, remote) == d for g, d in expected.items()),
                   90, f"groups synced at {expected}")
        assert node.terminate() == 0
    for group, offset in groups.items():
        check_resumes_exactly(source, target, offset, expected[group])


def target_offsets(cluster_b: Cluster, remote: str, values: dict[int, bytes | None]) -> dict[int, int]:
    """Per partition: the target offset of the record with the given value (None: the partition's end)."""
    records = consume_all(cluster_b.bootstrap, remote)
    at = {(r.partition, r.value): r.offset for r in records}
    ends = {p: 1 + max(r.offset for r in records if r.partition == p) for p in values}
    return {p: ends[p] if v is None else at[(p, v)] for p, v in values.items()}


def translate_cli(props: Path, a: str, b: str, groups: list[str],
                  capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, int], tuple[int | None, str]]:
    """``mirror offsets translate --group ...``: per (group, partition) its downstream offset and basis."""
    capsys.readouterr()
    assert main(["offsets", "translate", str(props), "--source", a, "--target", b, "--json",
                 *[arg for g in groups for arg in ("--group", g)]]) == 0
    rows = json.loads(capsys.readouterr().out)["translations"]
    return {(r["group"], r["partition"]): (r["downstream"], r["basis"]) for r in rows}


@pytest.mark.slow
def test_with_default_intervals_translation_checkpoints_and_failover_are_exact_within_seconds(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a 60 s offset flush and a 60 s checkpoint interval, a lagging group is translated exactly by
    ``mirror offsets translate``, checkpointed exactly and synced onto the target within seconds of its
    records' arrival, and ``mirror failover --execute`` writes exact offsets within seconds of the lag
    draining: the offset map is sent on its own clock and checkpoints follow it. The time bounds are
    loose (half the intervals); what is asserted exactly is where each group resumes."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("secs"), 2)
    remote = f"{a}.{topic}"
    prefix = unique("sg")
    lagging, caught_up = f"{prefix}-lagging", f"{prefix}-caught-up"
    for group in (lagging, caught_up):  # known to the checkpoint connector from its first group listing
        commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 0, (topic, 1): 0})
    body = f"{a}->{b}.enabled = true\ntopics = {topic}\ngroups = {prefix}.*\nsync.group.offsets.enabled = true\n"
    props = tmp_path / "mm2.properties"
    # the offset flush and the checkpoint interval of the code under test (60 s each), not the harness's 1 s
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body,
                                    defaults=("offset.flush.interval.ms", "emit.checkpoints.interval.seconds")))
    assert "flush.interval" not in props.read_text() and "emit.checkpoints" not in props.read_text()

    def burst(name: str, count: int) -> None:
        for p in (0, 1):
            produce(cluster_a.bootstrap, topic, [(None, f"{name}-{p}-{i}".encode()) for i in range(count)],
                    partition=p)

    def arrived(total: int) -> bool:
        return remote in topics(cluster_b.bootstrap) and len(consume_all(cluster_b.bootstrap, remote)) >= total

    with MirrorMakerProcess(props) as node:
        node.wait_running(2)  # A->B and the heartbeat-only B->A herder
        burst("first", 200)
        wait_until(lambda: arrived(400), 60, "the first burst replicated")
        since = time.monotonic()
        # lagging has read 150 records of each partition, caught_up all 200
        commit_group_offsets(cluster_a.bootstrap, lagging, {(topic, 0): 150, (topic, 1): 150})
        commit_group_offsets(cluster_a.bootstrap, caught_up, {(topic, 0): 200, (topic, 1): 200})
        wanted = {lagging: target_offsets(cluster_b, remote, {p: f"first-{p}-150".encode() for p in (0, 1)}),
                  caught_up: target_offsets(cluster_b, remote, dict.fromkeys((0, 1)))}
        expected = {(g, p): (d, "offset-map") for g, by_p in wanted.items() for p, d in by_p.items()}
        wait_until(lambda: translate_cli(props, a, b, [lagging, caught_up], capsys) == expected, 30,
                   f"mirror offsets translate exact at {expected}")

        def checkpointed_exactly() -> bool:
            cps = [Checkpoint.from_record(r.key, r.value)
                   for r in consume_all(cluster_b.bootstrap, f"{a}.checkpoints.internal")]
            newest = {(c.consumer_group_id, c.partition): c.downstream_offset for c in cps}
            return all(newest.get(key) == d for key, (d, _) in expected.items())

        wait_until(checkpointed_exactly, since + 40 - time.monotonic(), "exact checkpoints within 40 s")
        wait_until(lambda: all(committed_on(cluster_b.bootstrap, g, remote, p) == d
                               for (g, p), (d, _) in expected.items()), since + 45 - time.monotonic(),
                   "both groups synced exactly within 45 s")

        # A planned cutover: the producers stop, the groups stop on A, the failover runs at once. Its groups
        # are outside the flow's group filter: the flow's group sync writes into the synced groups on B too,
        # and a sync that listed a group before the failover wrote it may write an older checkpoint after.
        burst("second", 300)
        moving, ahead = (f"{unique('fo')}-{name}" for name in ("lagging", "caught-up"))
        commit_group_offsets(cluster_a.bootstrap, moving, {(topic, 0): 490, (topic, 1): 490})
        commit_group_offsets(cluster_a.bootstrap, ahead, {(topic, 0): 400, (topic, 1): 400})
        stopped = time.monotonic()
        capsys.readouterr()
        assert main(["failover", str(props), "--source", a, "--target", b, "--group", moving, "--group",
                     ahead, "--execute", "--json", "--max-wait", "120"]) == 0
        failover_s = time.monotonic() - stopped
        report = json.loads(capsys.readouterr().out)
        assert node.terminate() == 0
    wanted = {moving: target_offsets(cluster_b, remote, {p: f"second-{p}-290".encode() for p in (0, 1)}),
              ahead: target_offsets(cluster_b, remote, {p: f"second-{p}-200".encode() for p in (0, 1)})}
    assert report["drained"] and report["rpo_records"] == 0 and report["reread_records"] == 0
    assert 0 <= report["drained_after_s"] <= report["exact_after_s"] <= report["seconds"]
    for move in report["groups"]:
        assert move["written"]
        assert {(p["partition"], p["to"]) for p in move["partitions"]} == set(wanted[move["group"]].items())
    assert all(committed_on(cluster_b.bootstrap, g, remote, p) == d for g, by_p in wanted.items()
               for p, d in by_p.items())
    assert failover_s < 30, f"the failover took {failover_s:.1f}s after the producers stopped"


def stored_source_offsets(cluster_b: Cluster, source: str, topic: str) -> dict[int, int]:
    """The flow's newest stored source offset per partition of ``topic``, read from its offsets topic."""
    stored: dict[int, int] = {}
    for record in consume_all(cluster_b.bootstrap, f"mm2-offsets.{source}.internal"):
        connector, partition = json.loads(record.key or b"[]")
        if connector == "MirrorSourceConnector" and partition.get("topic") == topic and record.value:
            stored[int(partition["partition"])] = int(json.loads(record.value)["offset"])
    return stored


def first_task_start(*nodes: MirrorMakerProcess) -> datetime:
    """When the first of the flow's source tasks started on any of ``nodes`` (their logs' local time)."""
    starts = [datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f") for node in nodes
              for m in re.finditer(r"^(\S+ \S+) INFO .* MirrorSourceConnector-\d+ started \(worker",
                                   node.log_text(), re.M)]
    assert starts, "no source task start in the nodes' logs"
    return min(starts)


@pytest.mark.slow
def test_failover_commits_the_flows_source_offsets_at_once_with_the_default_flush_interval(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With ``offset.flush.interval.ms`` at its 60 s default and the flow's four source tasks on two nodes,
    ``mirror failover --execute`` has both nodes commit their tasks' offsets: they are in the offsets topic
    when the command returns, before the flow's first periodic commit could have run (60 s after a task
    started), and the group is exact. Then, with both nodes killed (their tasks' statuses still name
    them), the same command still writes the group exactly and says, in one note per node, that it could
    not be reached."""
    a, b = aliases("A", "B")
    partitions = range(4)
    topic = create_topic(cluster_a.bootstrap, unique("forced"), len(partitions))
    remote = f"{a}.{topic}"
    group = f"{unique('fc')}-group"
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, p): 0 for p in partitions})  # a checkpoint task
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap},
                                    f"{a}->{b}.enabled = true\ntopics = {topic}\n{a}->{b}.tasks.max = 4\n",
                                    defaults=("offset.flush.interval.ms",)))
    assert "offset.flush.interval.ms" not in props.read_text()
    with (MirrorMakerProcess(props, log=tmp_path / "node1.log") as one,
          MirrorMakerProcess(props, log=tmp_path / "node2.log") as two):
        one.wait_running(2)  # A->B and the heartbeat-only B->A herder
        two.wait_running(2)
        workers = {node.url.split("://", 1)[1] for node in (one, two)}

        def spread() -> bool:  # six tasks balanced three and three: each node runs a source task
            response = one.request("GET", f"/{a}/{b}/connectors/MirrorSourceConnector/status")
            states = [(t["state"], t["worker_id"]) for t in response.json().get("tasks", [])] \
                if response.status_code == 200 else []
            return len(states) == 4 and {s for s, _ in states} == {"RUNNING"} and {w for _, w in states} == workers

        wait_until(spread, 60, "the flow's four source tasks running on both nodes")
        for p in partitions:  # after the tasks settled: no task stopped (and committed) since
            produce(cluster_a.bootstrap, topic, [(None, f"r-{p}-{i}".encode()) for i in range(100)], partition=p)
        wait_until(lambda: remote in topics(cluster_b.bootstrap)
                   and len(consume_all(cluster_b.bootstrap, remote)) >= 400, 40, "400 records replicated")
        commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 60, **{(topic, p): 100 for p in (1, 2, 3)}})
        capsys.readouterr()
        assert main(["failover", str(props), "--source", a, "--target", b, "--group", group, "--execute",
                     "--json", "--max-wait", "30"]) == 0
        report = json.loads(capsys.readouterr().out)
        stored = stored_source_offsets(cluster_b, a, topic)
        elapsed = (datetime.now() - first_task_start(one, two)).total_seconds()
        one.kill()  # SIGKILL: the tasks' statuses still say RUNNING on these nodes
        two.kill()
    # a task's first periodic commit comes offset.flush.interval.ms (60 s) after its start
    assert elapsed < 60, f"inconclusive: {elapsed:.0f}s after a task started, the flow may have committed on its own"
    assert stored == dict.fromkeys(partitions, 99), f"stored {elapsed:.1f}s after the first task's start: {stored}"
    commits = report["offset_commits"]
    per_node = ", ".join(f"{c['node']} {c['committed_after_s']:.2f}s (tasks {max(t['seconds'] for t in c['tasks'])}s)"
                         for c in commits)
    with capsys.disabled():
        print(f"\nforced commit: drained after {report['drained_after_s']:.2f}s, exact after "
              f"{report['exact_after_s']:.2f}s, offsets committed after {report['offsets_committed_after_s']:.2f}s "
              f"({per_node}), command {report['seconds']:.2f}s; stored {elapsed:.1f}s after the first task started")
    assert {c["node"] for c in commits} == workers and all(c["error"] is None for c in commits)
    assert sorted(t["id"] for c in commits for t in c["tasks"] if t["committed"]) == list(partitions)
    assert 0 < report["exact_after_s"] <= report["offsets_committed_after_s"] <= report["seconds"]
    assert report["offsets_committed_after_s"] == max(c["committed_after_s"] for c in commits)
    wanted = target_offsets(cluster_b, remote, {0: b"r-0-60", 1: None, 2: None, 3: None})
    [move] = report["groups"]
    assert move["written"] and {(p["partition"], p["to"]) for p in move["partitions"]} == set(wanted.items())
    assert all(committed_on(cluster_b.bootstrap, group, remote, p) == d for p, d in wanted.items())

    capsys.readouterr()
    assert main(["failover", str(props), "--source", a, "--target", b, "--group", group, "--execute", "--json",
                 "--max-wait", "10", "--timeout", "5"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["offsets_committed_after_s"] is None and again["exact_after_s"] is not None
    unreached = {c["node"]: c["error"] for c in again["offset_commits"]}
    assert set(unreached) == workers and all(e.startswith("could not be reached") for e in unreached.values())
    assert sorted(n for n in again["notes"] if "source offsets" in n) == sorted(
        f"node {w}: source offsets not forced: {e}" for w, e in unreached.items())
    assert all(committed_on(cluster_b.bootstrap, group, remote, p) == d for p, d in wanted.items())


def test_the_group_sync_never_moves_a_group_back_over_a_write_made_during_its_pass(cluster_b: Cluster) -> None:
    """The flow's group sync reads its groups' offsets on the target, then fetches the partitions' bounds
    (once for the pass) before it writes: a ``mirror failover`` that writes the groups meanwhile (here, inside
    that fetch, on the real broker) further on than the checkpoint must not be moved back by the sync's write;
    a partition the failover left behind its checkpoint still moves forward. Both for a group the target knew
    before and one it did not."""
    topic = create_topic(cluster_b.bootstrap, unique("sync-race"), 2)
    for p in (0, 1):
        produce(cluster_b.bootstrap, topic, [(None, f"{p}-{i}".encode()) for i in range(50)], partition=p)
    known, new = unique("sr-known"), unique("sr-new")
    commit_group_offsets(cluster_b.bootstrap, known, {(topic, 0): 5, (topic, 1): 5})
    checkpoint = {TopicPartition(topic, p): OffsetAndMetadata(20, "") for p in (0, 1)}
    failover = {(topic, 0): 40, (topic, 1): 10}
    to_fail_over = [known, new]

    def failover_writes_meanwhile(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        while to_fail_over:  # after the sync's read of both groups, before its writes
            commit_group_offsets(cluster_b.bootstrap, to_fail_over.pop(0), failover)
        return {}

    sync = GroupOffsetSync(TopicAdmin({"bootstrap.servers": cluster_b.bootstrap}, timeout_s=15), {},
                           lambda: {known: dict(checkpoint), new: dict(checkpoint)}, [known, new],
                           bounds=failover_writes_meanwhile)
    written = sync.run()
    assert not to_fail_over, "the sync fetched no bounds: the race was not staged"
    for group in (known, new):
        assert committed_on(cluster_b.bootstrap, group, topic, 0) == 40, f"{group} moved back over the failover"
        assert committed_on(cluster_b.bootstrap, group, topic, 1) == 20
        assert set(written[group]) == {(topic, 1)}


def test_failover_writes_again_a_partition_another_writer_moved_back(cluster_b: Cluster) -> None:
    """The failover's read-back: a partition found below what the failover wrote (the flow's group sync wrote
    an older checkpoint after it) is written again and named in a note; one found further on is left."""
    topic = create_topic(cluster_b.bootstrap, unique("readback"), 2)
    for p in (0, 1):
        produce(cluster_b.bootstrap, topic, [(None, f"{p}-{i}".encode()) for i in range(40)], partition=p)
    group = unique("rb-group")
    commit_group_offsets(cluster_b.bootstrap, group, {(topic, 0): 10, (topic, 1): 30})  # after the failover's write
    report = CutoverReport("failover", "A", "B", executed=True)
    config = mirror_client_config({"bootstrap.servers": cluster_b.bootstrap})
    assert write_again_what_moved_back(report, config, {group: {(topic, 0): 25, (topic, 1): 20}}, 15)
    assert committed_on(cluster_b.bootstrap, group, topic, 0) == 25
    assert committed_on(cluster_b.bootstrap, group, topic, 1) == 30
    assert report.notes == [f"group {group}: another writer moved it below what was written ({topic}-0 at 10); "
                            "written again"]
