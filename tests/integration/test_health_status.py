"""``mirror status`` and ``mirror offsets translate --apply`` as subprocesses, against a running replication.

The replication is the stand-in process of ``tests/integration/support/replicate.py`` (MirrorSource,
heartbeat and checkpoint tasks through the real WorkerSourceTask), so it can be SIGSTOPped. Every test
uses its own aliases and topics on the shared session brokers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, Message
from confluent_kafka.admin import AdminClient

from mirror.client.models import Heartbeat
from tests.conftest import Cluster
from tests.integration.support.replication import (
    mirror,
    mirror_maker,
    replication,
    status,
    write_properties,
)
from tests.support.kafka import commit_group_offsets, create_topic, produce, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Degraded from 3 s of heartbeat age, down from 12 s (within the driver's 20 s session, see driver_extra):
# each `mirror status` is a fresh process, and on a loaded machine a narrower window can pass unseen.
FLAGS = ("--max-heartbeat-age-ms", "3000", "--down-heartbeat-age-ms", "12000", "--max-lag-ms", "600000")


def driver_extra(src: str, tgt: str) -> str:
    """Worker settings for the real driver: a session timeout longer than the SIGSTOP of the tests.

    A stop longer than session.timeout.ms (Connect default 10 s) makes the herders fence themselves; at
    the time of writing they then never rejoined (reported to the lead). That is a runtime concern, not
    what these tests are about. Tansu holds joins for session.timeout.ms / 2, so not longer than needed.
    """
    return "".join(f"{alias}.session.timeout.ms = 20000\n" for alias in (src, tgt))


def flow(report: dict[str, Any] | None) -> dict[str, Any]:
    assert report is not None
    [only] = report["flows"]
    result: dict[str, Any] = only
    return result


def lag_of(report: dict[str, Any] | None, remote_topic: str) -> int | None:
    lags = [p["lag_records"] for p in flow(report)["partitions"] if p["remote_topic"] == remote_topic]
    return None if not lags or None in lags else sum(lags)


@contextmanager
def replicating(kind: str, props: Path, src: str, tgt: str, cluster_a: Cluster, cluster_b: Cluster,
                topic: str) -> Iterator[subprocess.Popen[str]]:
    """``harness``: the stand-in task process; ``driver``: the real connect-mirror-maker."""
    if kind == "driver":
        with mirror_maker(props) as proc:
            yield proc
    else:
        with replication(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic) as proc:
            yield proc


@pytest.mark.parametrize("kind", ["harness", "driver"])
def test_status_healthy_degraded_down_and_back(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path,
                                               kind: str) -> None:
    src, tgt = unique("hs"), unique("ht")
    topic = create_topic(cluster_a.bootstrap, unique("health"), partitions=2)
    remote = f"{src}.{topic}"
    produce(cluster_a.bootstrap, topic, 40)
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                             topic, extra=driver_extra(src, tgt) if kind == "driver" else "")
    with replicating(kind, props, src, tgt, cluster_a, cluster_b, topic) as proc:
        def healthy_and_caught_up() -> dict[str, Any] | None:
            assert proc.poll() is None, f"the replication process exited with {proc.returncode}"
            code, report = status(props, tgt, *FLAGS)
            # Healthy can be judged from the target's own heartbeats before the first heartbeat
            # replicated from the source arrives; the figures below are about the replicated one.
            replicated = flow(report)["heartbeat_basis"] == "replicated"
            # The heartbeats topic is found by a topic refresh; under load that can be tens of seconds
            # after the first heartbeat, and while its backlog is copied the newest replicated heartbeat
            # is old: the latency then reported is true, but the steady state is what is checked here.
            latency = flow(report)["latency_seconds"]
            fresh = latency is not None and latency < 3
            return report if code == 0 and replicated and fresh and lag_of(report, remote) == 0 else None

        report = wait_until(healthy_and_caught_up, 90, "healthy, caught up, heartbeats fresh", interval_s=1)
        f = flow(report)
        assert f["state"] == "healthy" and f["heartbeat_basis"] == "replicated"
        assert f["heartbeat_age_seconds"] < 3 * f["heartbeat_interval_seconds"]
        assert f["rpo_seconds"] == 0 and sum(p["source_end_offset"] for p in f["partitions"]) == 40
        assert f["latency_seconds"] is not None and 0 <= f["latency_seconds"] < 3

        os.kill(proc.pid, signal.SIGSTOP)
        stopped_at = time.time()
        produce(cluster_a.bootstrap, topic, 25, partition=1)  # produced while nothing replicates
        def with_exit_code(expected: int) -> dict[str, Any] | None:
            code, result = status(props, tgt, *FLAGS, "--latency-window", "0")
            return result if code == expected else None

        report = wait_until(lambda: with_exit_code(1), 30, "degraded", interval_s=0.5)
        assert lag_of(report, remote) == 25
        lagging = [p for p in flow(report)["partitions"] if p["lag_records"]]
        assert [(p["partition"], p["lag_records"]) for p in lagging] == [(1, 25)]
        assert 0 < lagging[0]["lag_seconds"] <= time.time() - stopped_at + 1
        assert flow(report)["rpo_seconds"] == pytest.approx(lagging[0]["lag_seconds"], abs=5)
        assert any("heartbeat age" in r for r in flow(report)["reasons"])
        report = wait_until(lambda: with_exit_code(2), 60, "down", interval_s=1)
        assert flow(report)["state"] == "down" and report is not None and report["state"] == "down"

        os.kill(proc.pid, signal.SIGCONT)
        report = wait_until(healthy_and_caught_up, 90, "healthy again after SIGCONT", interval_s=1)
        assert flow(report)["heartbeat_age_seconds"] < 3 * flow(report)["heartbeat_interval_seconds"]
        text = mirror("status", str(props), "--clusters", tgt, *FLAGS)
        assert text.returncode == 0 and "HEALTHY" in text.stdout and remote in text.stdout


def group_state(bootstrap: str, group: str) -> ConsumerGroupState:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    state: ConsumerGroupState = admin.describe_consumer_groups([group])[group].result(timeout=10).state
    return state


def consumer(bootstrap: str, group: str, topic: str) -> Consumer:
    # session.timeout.ms 6000: Tansu joins take session.timeout.ms / 2 (docs/tansu.md)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    c.subscribe([topic])
    return c


@pytest.mark.parametrize("kind", ["harness", "driver"])
def test_failover_moves_group_to_the_next_record(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path,
                                                  kind: str) -> None:
    src, tgt = unique("fs"), unique("ft")
    topic = create_topic(cluster_a.bootstrap, unique("orders"), partitions=2)
    remote = f"{src}.{topic}"
    group = unique("billing")
    produce(cluster_a.bootstrap, topic, [(f"k{i}".encode(), f"{i}".encode()) for i in range(100)], partition=0)
    committed = 63
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): committed})  # consumed 0..62 on A
    # partition 1 stays empty: no offset sync, so MM2 emits no checkpoint for a group committed there
    idle = f"{group}-idle"
    commit_group_offsets(cluster_a.bootstrap, idle, {(topic, 0): 10, (topic, 1): 0})
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                             topic)
    args = ["offsets", "translate", str(props), "--group", group, "--source", src, "--target", tgt]
    process = (mirror_maker(props) if kind == "driver"
               else replication(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic, groups=f"{group}.*"))
    with process:
        def groups_checkpointed() -> dict[str, Any] | None:
            _, report = status(props, tgt, "--latency-window", "0")
            groups = {g["group"]: g for g in flow(report)["groups"]}
            ready = group in groups and groups[group]["translatable"] and idle in groups and groups[idle][
                "checkpointed_partitions"] == 1 and groups[group]["exact_partitions"] == 1
            return groups if ready else None

        groups = wait_until(groups_checkpointed, 90, "groups checkpointed in mirror status", interval_s=1)
    assert groups[idle]["translatable"] is False and groups[idle]["missing"] == [f"{topic}-1"]
    assert groups[group]["checkpoint_age_seconds"] is not None and groups[group]["behind"] == 0
    assert groups[group]["sync"] == "off"  # sync.group.offsets.enabled is false in these properties
    # the replication is stopped: B holds the data and the checkpoints, as after losing A

    dry = mirror(*args, "--json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    [move] = plan["partitions"]
    assert (move["topic"], move["partition"], move["action"], move["current_offset"]) == (remote, 0, "commit", None)
    # the exact offset map: the group resumes at the very next record (a dense topic: the same offset)
    assert move["committed_upstream"] == committed and move["basis"] == "offset-map"
    assert move["new_offset"] == committed and move["replay_bound"] == 0
    assert "add --apply" in dry.stderr

    active = consumer(cluster_b.bootstrap, group, remote)  # a member on B: --apply must refuse
    try:
        wait_until(lambda: active.poll(0.5) is not None or active.assignment(), 30, "member assigned")
        wait_until(lambda: group_state(cluster_b.bootstrap, group) == ConsumerGroupState.STABLE, 30, "stable")
        refused = mirror(*args, "--apply")
        assert refused.returncode == 1 and "refused" in refused.stderr and "STABLE" in refused.stderr
    finally:
        active.close()
    wait_until(lambda: group_state(cluster_b.bootstrap, group) != ConsumerGroupState.STABLE, 30, "group empty")

    applied = mirror(*args, "--apply")
    assert applied.returncode == 0, applied.stderr
    assert "committed 1 offset" in applied.stderr

    resumed = consumer(cluster_b.bootstrap, group, remote)
    try:
        def next_record() -> Message | None:
            msg = resumed.poll(0.5)
            return msg if msg is not None and msg.error() is None else None

        first: Message = wait_until(next_record, 60, "first record on B")
    finally:
        resumed.close()
    assert first.offset() == move["new_offset"]
    assert int(first.value() or b"-1") == committed  # records 0..committed-1 were processed on A: none again
    assert mirror(*args, "--json").returncode == 0  # now unchanged
    again = json.loads(mirror(*args, "--json").stdout)
    assert again["partitions"][0]["action"] == "unchanged"


def test_status_down_when_the_source_hangs(fresh_cluster: Callable[[str], Cluster], cluster_b: Cluster,
                                           tmp_path: Path) -> None:
    """A hung source: the flow is down and the RPO falls back to the heartbeat age."""
    source = fresh_cluster("a")
    assert source.broker is not None
    src, tgt = unique("ds"), unique("dt")
    topic = create_topic(source.bootstrap, unique("hang"), partitions=1)
    produce(source.bootstrap, topic, 10)
    props = write_properties(tmp_path / "mm2.properties", src, tgt, source.bootstrap, cluster_b.bootstrap, topic)
    with replication(src, tgt, source.bootstrap, cluster_b.bootstrap, topic):
        wait_until(lambda: status(props, tgt, *FLAGS)[0] == 0, 90, "healthy", interval_s=1)
        source.broker.pause()
        try:
            code, report = status(props, tgt, *FLAGS, "--timeout", "3", "--latency-window", "0")
        finally:
            source.broker.resume()
    f = flow(report)
    assert code == 2 and f["state"] == "down"
    assert any(f"source cluster {src} unreachable" in e for e in f["errors"])
    assert f["rpo_basis"] == "heartbeat" and f["rpo_seconds"] == pytest.approx(f["heartbeat_age_seconds"], abs=1)
    assert f["lag_records"] is None


def test_stale_heartbeats_on_an_unfed_source_do_not_degrade_the_flow(fresh_cluster: Callable[[str], Cluster],
                                                                     cluster_b: Cluster, tmp_path: Path) -> None:
    """Nobody emits into A any more (``--clusters`` names only B), but A's heartbeats topic keeps the
    heartbeats of a flow that once targeted A. The flow copies them at once: its newest replicated
    heartbeat is then minutes old although nothing is behind. The age must come from B's own heartbeats
    (the herder is alive, A has nothing left to copy), not from when A was last fed."""
    source = fresh_cluster("a")
    src, tgt = unique("ss"), unique("st")
    topic = create_topic(source.bootstrap, unique("stale"), partitions=1)
    produce(source.bootstrap, topic, 10)
    create_topic(source.bootstrap, "heartbeats", partitions=1)
    old = Heartbeat(unique("gone"), src, int((time.time() - 300) * 1000))
    produce(source.bootstrap, "heartbeats", [(old.key_bytes(), old.value_bytes())])
    props = write_properties(tmp_path / "mm2.properties", src, tgt, source.bootstrap, cluster_b.bootstrap, topic)

    def caught_up() -> dict[str, Any] | None:
        _, report = status(props, tgt, *FLAGS, "--latency-window", "0")
        f = flow(report)
        # the old heartbeat copied (the topic exists on B) and the topic's records too
        copied = any(p["remote_topic"] == f"{src}.{topic}" and p["lag_records"] == 0 for p in f["partitions"])
        return report if copied and f["heartbeat_basis"] != "none" else None

    with mirror_maker(props, "--clusters", tgt) as proc:
        wait_until(lambda: status(props, tgt, *FLAGS)[1]["flows"][0]["heartbeat_basis"] != "none" or None,
                   90, "a heartbeat seen", interval_s=1)
        remote_hb = f"{src}.heartbeats"
        wait_until(lambda: remote_hb in AdminClient({"bootstrap.servers": cluster_b.bootstrap})
                   .list_topics(timeout=10).topics or None, 90, f"{remote_hb} on B", interval_s=1)
        wait_until(caught_up, 90, "caught up", interval_s=1)
        time.sleep(2)  # one more heartbeat interval: the copied heartbeat is surely read by now
        code, report = status(props, tgt, *FLAGS, "--latency-window", "0")
        assert proc.poll() is None
    f = flow(report)
    assert f["heartbeat_basis"] == "emitted", f
    assert f["heartbeat_age_seconds"] < 10, f
    assert code == 0 and f["state"] == "healthy", f


def test_latency_is_reported_when_every_read_is_slower_than_the_resolution(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """On a loaded machine each heartbeat read can take longer than LATENCY_RESOLUTION_S: the finest
    coarse sample of the window is kept (an upper bound still), not none at all. Here the probe's clock
    makes every read look a second after the previous one."""
    from mirror.config.mirror_maker_config import MirrorMakerConfig
    from mirror.health.probe import LATENCY_RESOLUTION_S, HealthProbe, cluster_io, flow_specs

    src, tgt = unique("hl"), unique("hm")
    topic = create_topic(cluster_a.bootstrap, unique("health-slow"), partitions=1)
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic)
    config = MirrorMakerConfig.from_file(props)
    specs = flow_specs(config, config.herder_pairs([tgt]), None)
    ticks = [0]

    def slow_clock() -> float:
        ticks[0] += 1
        return time.time() + ticks[0] * (LATENCY_RESOLUTION_S + 0.5)

    probe = HealthProbe(specs, {a: cluster_io(config, a) for a in (src, tgt)}, clock=slow_clock)
    try:
        with replication(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic):
            def sampled_by_passes_alone() -> float | None:  # the monitor when a pass fills its interval
                [only] = probe.check().flows
                return only.latency_seconds

            latency = wait_until(sampled_by_passes_alone, 90, "a latency sample from the passes' coarse reads",
                                 interval_s=0.5)
            assert latency is not None and latency >= 0

            def sampled_by_a_watch() -> float | None:
                before = probe.check().flows[0].latency_seconds
                probe.watch_latency(3.0)
                after = probe.check().flows[0].latency_seconds
                return after if after is not None and after != before else None

            wait_until(sampled_by_a_watch, 90, "a latency sample from a watch's coarse reads", interval_s=0.5)
    finally:
        probe.close()


def test_the_latency_watch_reads_heartbeats_without_asking_for_every_topic(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """Between passes the monitor reads the replicated heartbeats five times a second; the topics come
    from the last pass, not from a metadata request for the whole target cluster each time (that cost a
    copy of 100-byte records 15% of its rate: bench/results.md, "where the brokers' extra CPU goes")."""
    from mirror.config.mirror_maker_config import MirrorMakerConfig
    from mirror.health.probe import HealthProbe, cluster_io, flow_specs

    src, tgt = unique("hw"), unique("hx")
    topic = create_topic(cluster_a.bootstrap, unique("health-watch"), partitions=1)
    props = write_properties(tmp_path / "mm2.properties", src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic)
    config = MirrorMakerConfig.from_file(props)
    specs = flow_specs(config, config.herder_pairs([tgt]), None)
    clusters = {a: cluster_io(config, a) for a in (src, tgt)}
    asked: list[str] = []
    target_topics = clusters[tgt].topics

    def counted(timeout_s: float) -> dict[str, int]:
        asked.append("topics")
        return target_topics(timeout_s)

    clusters[tgt].topics = counted  # type: ignore[method-assign]
    probe = HealthProbe(specs, clusters)
    try:
        with replication(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, topic):
            def watched() -> float | None:
                probe.check()
                asked.clear()
                probe.watch_latency(3.0)
                assert asked == [], "a watch asked the target for its topics"
                return probe.check().flows[0].latency_seconds

            latency = wait_until(watched, 90, "a latency sample from a watch", interval_s=0.5)
            assert latency is not None and latency >= 0
    finally:
        probe.close()
