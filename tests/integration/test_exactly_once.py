"""Exactly-once replication (KIP-618) on real brokers: kill -9 and restart lose nothing and copy nothing twice.

Counts are transaction-aware and do NOT trust the broker's read_committed: Tansu delivers the records of
aborted transactions to read_committed consumers (docs/tansu.md), so
:func:`tests.support.transactions.read_transactions` reads raw record batches and drops aborted
transactions itself, as a correct read_committed consumer on Apache Kafka would. On Apache Kafka the same
kill -9 is judged by a plain read_committed consumer (tests/kafka/test_kafka_exactly_once.py).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import create_topic, produce, topics, unique, wait_until
from tests.support.transactions import TopicTransactions, read_transactions

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _eos_properties(tmp_path: Path, a: str, b: str, cluster_a: Cluster, cluster_b: Cluster, topic: str,
                   extra: str = "") -> Path:
    body = (f"{a}->{b}.enabled = true\ntopics = {topic}\n{extra}"
            f"{b}.exactly.once.source.support = enabled\n"
            f"{a}.consumer.isolation.level = read_committed\n"
            f"{a}->{b}.exactly.once.support = required\n")
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap}, body))
    return props


def _copied(bootstrap: str, topic: str) -> TopicTransactions | None:
    return read_transactions(bootstrap, topic) if topic in topics(bootstrap) else None


def _paced(bootstrap: str, topic: str, first: int, last: int, chunks: int = 30) -> None:
    """Produce v<first>..v<last-1> in chunks 0.1 s apart, so that records still flow when the node dies."""
    step = (last - first) // chunks
    for start in range(first, last, step):
        produce(bootstrap, topic, [(None, f"v{i}".encode()) for i in range(start, min(last, start + step))])
        time.sleep(0.1)


@pytest.mark.parametrize("boundary", ["poll", "interval"])
def test_kill_9_and_restart_with_exactly_once_lose_and_duplicate_nothing(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path, boundary: str) -> None:
    """With transaction.boundary=interval (5 s) the kill lands inside an open transaction whose records are
    already on the target: they must stay uncounted and be copied again, once."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("eos"), 2)
    remote = f"{a}.{topic}"
    total = 30_000
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(total // 2)])
    extra = (f"{a}->{b}.transaction.boundary = interval\n{a}->{b}.transaction.boundary.interval.ms = 5000\n"
             if boundary == "interval" else "")
    props = _eos_properties(tmp_path, a, b, cluster_a, cluster_b, topic, extra)
    with MirrorMakerProcess(props, log=tmp_path / "first.log") as node:
        node.wait_running(2)
        wait_until(lambda: (c := _copied(cluster_b.bootstrap, remote)) is not None and len(c.committed) >= 2_000,
                   90, "the first records copied in committed transactions", interval_s=0.5)
        producing = threading.Thread(target=_paced, args=(cluster_a.bootstrap, topic, total // 2, total))
        producing.start()
        if boundary == "interval":
            # the kill lands once records of an open transaction are on the target (a fixed sleep missed
            # them under load: the kill fell between two transactions), seconds before its commit
            wait_until(lambda: read_transactions(cluster_b.bootstrap, remote).pending > 0, 60,
                       "records of an open transaction on the target", interval_s=0.1)
        else:
            time.sleep(1.5)  # not synchronisation: the kill should land while the second half flows
        node.kill()  # SIGKILL mid-stream
        before = read_transactions(cluster_b.bootstrap, remote)
        producing.join()
        assert "runs exactly-once" in node.log_text()
    assert len(before.committed) < total, "the kill came after everything was copied: it tested nothing"
    with MirrorMakerProcess(props, log=tmp_path / "second.log") as node:
        node.wait_running(2)
        wait_until(lambda: len(read_transactions(cluster_b.bootstrap, remote).committed) >= total, 120,
                   f"{total} committed records on the target after the restart", interval_s=1)
        after = read_transactions(cluster_b.bootstrap, remote)
        assert node.terminate() == 0
    lost, duplicated = after.lost_and_duplicated(total)
    print(f"\nEOS kill -9: {len(before.committed)} committed before the kill; after the restart "
          f"{len(after.committed)} committed, {after.aborted} aborted in {after.aborts} transactions, "
          f"{after.commits} commits, {after.pending} pending")
    assert not lost, f"{len(lost)} records lost, e.g. {sorted(lost)[:5]}"
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {list(duplicated.items())[:5]}"
    assert len(after.committed) == total
    assert after.pending == 0
    if boundary == "interval":
        assert after.aborted > 0, "the kill hit no open transaction: the test did not exercise the abort"


@pytest.mark.parametrize("how", ["SIGSTOP", "SIGKILL"])
def test_one_of_two_nodes_stopped_or_killed_inside_a_transaction(
        cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path, how: str) -> None:
    """SIGSTOP (or kill -9) the node running the source task inside an open transaction (interval
    boundary, 3 s); the other node takes the task over and fences its transactional id. A stopped node
    resumed with SIGCONT is a zombie: its commit fails and its records never count. Either way every
    record once, none lost."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("zombie"), 1)
    remote = f"{a}.{topic}"
    total = 20_000
    extra = f"{a}->{b}.transaction.boundary = interval\n{a}->{b}.transaction.boundary.interval.ms = 3000\n"
    props = _eos_properties(tmp_path, a, b, cluster_a, cluster_b, topic, extra)
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(total // 2)])
    with MirrorMakerProcess(props, log=tmp_path / "one.log") as one, \
            MirrorMakerProcess(props, log=tmp_path / "two.log") as two:
        one.wait_running(2)
        two.wait_running(2)
        wait_until(lambda: (c := _copied(cluster_b.bootstrap, remote)) is not None and len(c.committed) > 0, 90,
                   "the first transaction committed", interval_s=0.5)
        [(_, owner)] = one.task_states(a, b, "MirrorSourceConnector")
        zombie, survivor = (one, two) if owner == one.url.removeprefix("http://") else (two, one)
        producing = threading.Thread(target=_paced, args=(cluster_a.bootstrap, topic, total // 2, total))
        producing.start()
        time.sleep(1.0)  # not synchronisation: the stop should land inside a transaction with records in it
        assert zombie.proc is not None
        os.kill(zombie.proc.pid, signal.SIGSTOP if how == "SIGSTOP" else signal.SIGKILL)
        try:
            producing.join()
            wait_until(lambda: [s for s, w in survivor.task_states(a, b, "MirrorSourceConnector")]
                       == ["RUNNING"] and survivor.task_states(a, b, "MirrorSourceConnector")[0][1]
                       == survivor.url.removeprefix("http://"), 90, "the task moved to the other node")
        finally:
            if how == "SIGSTOP":
                os.kill(zombie.proc.pid, signal.SIGCONT)
        wait_until(lambda: len(read_transactions(cluster_b.bootstrap, remote).committed) >= total, 120,
                   f"{total} committed records on the target", interval_s=1)
        if how == "SIGSTOP":
            # The resumed zombie's next produce or commit is refused (its epoch is fenced): its task fails.
            wait_until(lambda: "MirrorSourceConnector-0 failed" in zombie.log_text(), 60,
                       "the resumed zombie's task failed")
        after = read_transactions(cluster_b.bootstrap, remote)
    lost, duplicated = after.lost_and_duplicated(total)
    print(f"\nEOS {how}: {len(after.committed)} committed, {after.aborted} aborted in {after.aborts} "
          f"transactions, {after.pending} pending")
    assert not lost, f"{len(lost)} records lost, e.g. {sorted(lost)[:5]}"
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {list(duplicated.items())[:5]}"
    assert after.aborted > 0, "the zombie held no open transaction: the test did not exercise fencing"


def test_a_target_stalled_longer_than_the_flush_timeout_delays_the_commit_and_the_task_runs_on(
        cluster_a: Cluster, fresh_cluster: Callable[[str], Cluster], tmp_path: Path) -> None:
    """SIGSTOP the target broker for several times offset.flush.timeout.ms while records flow: the commit of
    the open transaction waits (KIP-618: that timeout does not apply to exactly-once tasks, and Java's
    commit blocks until it completes); the task stays RUNNING and after SIGCONT every record is committed
    once. Kept under the group session timeout (6 s), so the stall is not also a rebalance."""
    a, b = aliases("A", "B")
    target = fresh_cluster(b)
    assert target.broker is not None
    topic = create_topic(cluster_a.bootstrap, unique("eos-stall"), 1)
    remote = f"{a}.{topic}"
    total = 20_000
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(total // 2)])
    props = _eos_properties(tmp_path, a, b, cluster_a, target, topic, f"{b}.offset.flush.timeout.ms = 500\n")
    with MirrorMakerProcess(props, log=tmp_path / "node.log") as node:
        node.wait_running(2)
        wait_until(lambda: (c := _copied(target.bootstrap, remote)) is not None and len(c.committed) > 0, 90,
                   "the first transaction committed", interval_s=0.5)
        producing = threading.Thread(target=_paced, args=(cluster_a.bootstrap, topic, total // 2, total))
        producing.start()
        time.sleep(1.0)  # not synchronisation: the stall should land while records flow
        target.broker.pause()
        try:
            time.sleep(3.0)  # six times offset.flush.timeout.ms
        finally:
            target.broker.resume()
        producing.join()
        wait_until(lambda: len(read_transactions(target.bootstrap, remote).committed) >= total, 120,
                   f"{total} committed records on the target", interval_s=1)
        after = read_transactions(target.bootstrap, remote)
        states = node.task_states(a, b, "MirrorSourceConnector")
        log = node.log_text()
    assert "keeps waiting until the target completes it" in log, "no commit outlasted the timeout: nothing tested"
    assert "MirrorSourceConnector-0 failed" not in log and "transaction commit failed" not in log
    assert [s for s, _ in states] == ["RUNNING"]
    lost, duplicated = after.lost_and_duplicated(total)
    assert not lost, f"{len(lost)} records lost, e.g. {sorted(lost)[:5]}"
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {list(duplicated.items())[:5]}"
    assert len(after.committed) == total and after.pending == 0


def test_a_commit_request_commits_the_open_transaction(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    """With transaction.boundary=interval at 10 minutes the copied records wait on the target in an open
    transaction; the driver's commit route (what ``mirror failover --execute`` calls) commits it at once,
    the records with their source offsets."""
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("eos-request"), 1)
    remote = f"{a}.{topic}"
    produce(cluster_a.bootstrap, topic, [(None, f"v{i}".encode()) for i in range(500)])
    extra = f"{a}->{b}.transaction.boundary = interval\n{a}->{b}.transaction.boundary.interval.ms = 600000\n"
    props = _eos_properties(tmp_path, a, b, cluster_a, cluster_b, topic, extra)
    with MirrorMakerProcess(props, log=tmp_path / "node.log") as node:
        node.wait_running(2)
        wait_until(lambda: (c := _copied(cluster_b.bootstrap, remote)) is not None and c.pending >= 500, 60,
                   "500 records in an open transaction on the target", interval_s=0.5)
        assert not read_transactions(cluster_b.bootstrap, remote).committed
        response = node.request("POST", f"/mirror/flows/{a}/{b}/commit")
        after = read_transactions(cluster_b.bootstrap, remote)
        offsets = read_transactions(cluster_b.bootstrap, f"mm2-offsets.{a}.internal")
        assert node.terminate() == 0
    assert response.status_code == 200, response.text
    assert [(t["id"], t["committed"]) for t in response.json()["tasks"]] == [(0, True)]
    assert sorted(after.values()) == sorted(f"v{i}".encode() for i in range(500)) and after.pending == 0
    stored = [json.loads(v)["offset"] for _, _, k, v in offsets.committed
              if k is not None and v is not None and json.loads(k)[1].get("topic") == topic]
    assert stored and stored[-1] == 499
